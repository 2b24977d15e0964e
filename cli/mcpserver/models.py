"""Structured outputs of the MCP tools (their ``outputSchema``), described for a model."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["RunOutcome", "AskOutcome", "RunState", "StopSent", "RunListing", "RunSummary", "KIND_EXPLORE", "KIND_ASK"]

#: what a run is: an exploration (``explore``, a context pack) or a research run (``ask``, a cited answer)
KIND_EXPLORE = "explore"  # EXPLORE.mcp_kind (navcore/run_kinds.py)
KIND_ASK = "ask"  # RESEARCH.mcp_kind


class RunOutcome(BaseModel):
    """What a finished exploration produced (the pack itself is the call's text content)."""

    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(description="Durable run id: pass it to run_status / stop_run, or read its resources.")
    stop_reason: str = Field(
        description="Why the run ended: finalized, stopped, budget_exhausted, max_iterations, loop_detected, "
        "stalled, activity_cap, approval_timeout or failed.")
    stop_detail: str | None = Field(None, description="One line on the stop reason, when there is one.")
    cost_usd: float = Field(description="USD the run spent on model calls.")
    budget_usd: float = Field(description="The run's USD limit.")
    iterations: int = Field(description="Navigator steps taken.")
    token_budget: int = Field(description="Token budget the returned pack (frame + map) was held to.")
    pack_tokens: int = Field(description="Tokens of the returned pack (cl100k_base).")
    map_tokens: int | None = Field(None, description="Tokens of the repository map inside the pack.")
    trimmed: bool = Field(description="True when the budget shortened the frame or the map; what it left out "
                          "is in report_uri.")
    context_uri: str = Field(description="Resource with the pack (context.md).")
    report_uri: str = Field(description="Resource with report.json (cost, tokens, decisions, stop reason).")
    ui_url: str | None = Field(None, description="Temporal Web UI page of the run, for a human.")


class AskOutcome(BaseModel):
    """What a finished research run produced (the cited answer itself is the call's text content)."""

    model_config = ConfigDict(extra="forbid")

    run_id: str = Field(description="Durable run id: pass it to run_status / stop_run, or read its resources.")
    stop_reason: str = Field(
        description="Why the run ended: finalized (the answer is complete), stopped, budget_exhausted, "
        "max_iterations, loop_detected, stalled, activity_cap, approval_timeout or failed.")
    stop_detail: str | None = Field(None, description="One line on the stop reason, when there is one.")
    completed_normally: bool = Field(description="True when the research judged its answer complete (not cut "
                                     "short by a cap, the budget or a stop).")
    cost_usd: float = Field(description="USD the run spent on model calls.")
    budget_usd: float = Field(description="The run's USD limit.")
    rounds: int = Field(description="Plan rounds.")
    steps: int = Field(description="Research steps planned over all rounds.")
    iterations: int = Field(description="Executor turns (model decisions).")
    citations: int = Field(description="Citations (path:start-end) in the answer, each checked against the repository.")
    citations_fixed: int = Field(description="Citations the check removed or clamped.")
    answer_uri: str = Field(description="Resource with the whole answer.md.")
    report_uri: str = Field(description="Resource with report.json (cost, tokens, decisions, stop reason).")
    ui_url: str | None = Field(None, description="Temporal Web UI page of the run, for a human.")


class RunState(BaseModel):
    """Where a run is; a finished run also carries its outcome (and its pack as text content)."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    kind: str = Field(description="explore (its result is a context pack) or ask (a cited answer).")
    state: str = Field(description="Temporal state: running, completed, failed, terminated, canceled, timed_out.")
    navigator_status: str | None = Field(None, description="The navigator's own status (scanning, thinking, …).")
    repo: str | None = None
    goal: str | None = Field(None, description="The exploration's goal, or the research run's question.")
    step: int | None = Field(None, description="Current navigator step / executor turn (running runs).")
    cost_usd: float | None = None
    budget_usd: float | None = None
    map_tokens: int | None = None
    map_token_budget: int | None = None
    outcome: RunOutcome | AskOutcome | None = Field(None, description="Set once the run has finished.")
    error: str | None = Field(None, description="Why the run failed, when it did.")
    ui_url: str | None = None


class StopSent(BaseModel):
    """The stop request was delivered; the run finalizes its best map and then finishes."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    sent: bool = True
    note: str = Field(description="What happens next.")


class RunSummary(BaseModel):
    """One run in a listing."""

    model_config = ConfigDict(extra="forbid")

    run_id: str
    kind: str = Field(description="explore or ask.")
    state: str
    navigator_status: str | None = None
    repo: str | None = None
    goal: str | None = Field(None, description="The exploration's goal, or the research run's question.")
    cost_usd: float | None = None
    iteration: int | None = None
    start_time: str | None = None
    close_time: str | None = None


class RunListing(BaseModel):
    """Navigator runs (explorations and research runs), newest first."""

    model_config = ConfigDict(extra="forbid")

    runs: list[RunSummary]
