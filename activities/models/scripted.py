"""``scripted:<path>`` — answers read from a YAML/JSON file (tests and demos).

The file is a list of navigator decisions, or a mapping whose ``decisions``
key holds that list and whose ``text`` key maps the other task kinds
(``planning.analyze``, ``planning.review``, ``planning.plan``,
``stages.check_criteria``, ``stages.reflect``, ``navigator.compress``) to
lists of text answers::

    decisions:
      - action: update_flight_plan
        reasoning: zoom into the budget code
        updates: {set_rules: [{glob: "src/budget/**", level: 4}]}
        usage: {input_tokens: 1200, output_tokens: 80, thinking_tokens: 40, cached_tokens: 600}
      - action: update_flight_plan
        reasoning: flaky provider
        updates: {}
        fail_attempts: 2          # attempts 1-2 raise a retryable error, attempt 3 answers
        failed_usage: {input_tokens: 1200}   # what each failed attempt consumed
      - action: finalize_context
        summary: the budget plugin double counts cached tokens
    text:
      planning.analyze: ["We must ... \\nREFLECT: yes"]
      stages.check_criteria:
        - "C1: MET | ..."                       # stage 0
        - ["garbage", "C1: NOT MET | ..."]      # stage 1: first answer, then the re-ask's
        - {text: "...", usage: {input_tokens: 120, output_tokens: 40}}
        - {error: transient, usage: {input_tokens: 50}, retry_after_s: 1}
      research.plan: ['["find the ledger", "read its callers"]']
      research.execute:                          # keyed by the run's executor turn (1-based; entry 0 unused)
        - ""
        - {calls: [{name: search_codebase, args: {query: ledger}}]}
        - {calls: [{name: finish_step, args: {summary: ..., findings: [{claim: ..., citations: ["a.py:1-3"]}]}}]}
      research.refine: ["DECISION: FINISH\nREASON: enough"]
      research.synthesize: ["The ledger reserves first (a.py:1-3)."]

Decision *i* answers iteration ``first_iteration + i`` (``first_iteration``
defaults to 1, the workflow's first step); text entry *i* of a kind answers
that kind's call number *i* (the task's ``index``: 0 for the one-shot planning
calls, the stage index, the compression ordinal, the research round, the
research executor turn). A text entry with ``calls`` answers with function
calls (a research executor turn). Keying by the task rather
than by a cursor keeps the script right across retries, worker restarts and
continue-as-new. A list entry holds the answers of successive asks (the
corrective re-ask is the second). When the decisions run out the model
finalizes with a note.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from durable_navigator.activities.models.base import (
    CallContext,
    ModelCallError,
    ModelTransientError,
    approx_tokens,
)
from durable_navigator.navcore.run.decision import FINALIZE_FUNCTION, UPDATE_FUNCTION, TokenUsage
from durable_navigator.navtypes.errors import ConfigError, ModelError
from durable_navigator.navtypes.flightplan import FlightPlanUpdate
from durable_navigator.navcore.model.model import DecideTask, ModelRequest, ModelResponse, ToolCallOut
from durable_navigator.navcore.model.pricing import format_validation_error
from durable_navigator.navcore.run.tools import ToolCall

__all__ = ["ScriptedDecision", "ScriptedText", "DecisionScript", "ScriptedModel"]

_MAX_SCRIPT_BYTES = 5_000_000


class ScriptedDecision(BaseModel):
    """One scripted answer (plus optional failure injection for retry tests)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    action: Literal["update_flight_plan", "finalize_context", "call_tools", "invalid"]
    reasoning: Annotated[str, Field(max_length=20_000)] = ""
    updates: FlightPlanUpdate | None = None
    summary: Annotated[str | None, Field(max_length=20_000)] = None
    error: str | None = None
    usage: TokenUsage = TokenUsage()
    #: HTTP calls this answer stands for (e.g. 2 to mimic a corrective re-ask)
    calls: int = Field(1, ge=1, le=10)
    #: the first N activity attempts of this step fail with a retryable error
    fail_attempts: int = Field(0, ge=0, le=20)
    #: usage each failed attempt reports
    failed_usage: TokenUsage = TokenUsage()
    #: how the first ``fail_attempts`` attempts fail: retryable or not
    fail_kind: Literal["transient", "fatal"] = "transient"
    #: a transient failure's Retry-After (seconds), honoured as the next attempt's delay
    retry_after_s: float | None = Field(None, ge=0, le=3600)
    #: seconds each attempt waits (heartbeating) before it answers or fails: a slow model
    stall_s: float = Field(0.0, ge=0, le=3600)
    #: the code-tool calls of a ``call_tools`` answer
    tool_calls: list[ToolCall] = []

    @model_validator(mode="after")
    def _fields_match_action(self) -> "ScriptedDecision":
        if self.action == "update_flight_plan" and self.updates is None:
            raise ValueError("update_flight_plan needs 'updates' (use {} for no change)")
        if self.action == "finalize_context" and not (self.summary or "").strip():
            raise ValueError("finalize_context needs a non-empty 'summary'")
        if self.action == "call_tools" and not self.tool_calls:
            raise ValueError("call_tools needs a non-empty 'tool_calls' list of {name, args}")
        if self.action == "invalid" and not (self.error or "").strip():
            raise ValueError("invalid needs an 'error' saying what the model got wrong")
        return self


class DecisionScript(BaseModel):
    """A validated script file."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    decisions: list[ScriptedDecision] = []
    first_iteration: int = Field(1, ge=0)
    #: answers of the other task kinds, by kind; see the module docstring
    text: dict[str, list[Any]] = {}

    @model_validator(mode="after")
    def _not_empty(self) -> "DecisionScript":
        if not self.decisions and not self.text:
            raise ValueError("a script needs at least one entry under 'decisions' or 'text'")
        return self

    @classmethod
    def from_file(cls, path: Path) -> "DecisionScript":
        """Read and validate; one-line ``ConfigError`` naming the file and each bad field."""
        origin = f"scripted decisions {path}"
        if not path.is_file():
            raise ConfigError(f"{origin}: no such file; pass an existing file as scripted:<path>")
        if path.stat().st_size > _MAX_SCRIPT_BYTES:
            raise ConfigError(f"{origin}: larger than {_MAX_SCRIPT_BYTES} bytes; is it the right file?")
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{origin}: cannot read it ({exc.__class__.__name__})") from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" line {mark.line + 1}" if mark is not None else ""
            raise ConfigError(f"{origin}:{where}: invalid YAML/JSON; fix the syntax") from None
        if isinstance(data, list):
            data = {"decisions": data}
        if isinstance(data, dict) and "decisions" not in data and "text" not in data and data and all(
                isinstance(v, list) for v in data.values()):
            data = {"text": data}  # a text-only script: kinds at the top level
        if not isinstance(data, dict):
            raise ConfigError(f"{origin}: expected a list of decisions or a mapping with 'decisions' / 'text'")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"{origin}: {format_validation_error(exc)}") from None

    def entry_for(self, iteration: int) -> ScriptedDecision | None:
        """The entry answering ``iteration``; ``None`` past the end of the script."""
        index = iteration - self.first_iteration
        if index < 0:
            raise ModelError(
                f"iteration {iteration} comes before first_iteration {self.first_iteration} "
                "of the script; lower first_iteration"
            )
        return self.decisions[index] if index < len(self.decisions) else None


class ScriptedText(BaseModel):
    """One scripted text answer, or a scripted failure of that call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = ""
    usage: TokenUsage | None = None
    error: Literal["transient", "fatal"] | None = None
    retry_after_s: float | None = Field(None, ge=0, le=3600)
    stall_s: float = Field(0.0, ge=0, le=3600)
    #: function calls of the answer (a research executor turn: code tools, finish_step, delegate, navigate)
    calls: list[ToolCallOut] = []


def _text_entry(item: Any, where: str) -> ScriptedText:
    if isinstance(item, dict):
        try:
            return ScriptedText.model_validate(item)
        except ValidationError as exc:
            raise ConfigError(f"{where}: {format_validation_error(exc)}") from None
    return ScriptedText(text=str(item))


class ScriptedModel:
    """Answers from a script file (implements :class:`~activities.models.base.Model`)."""

    def __init__(self, path: Path | str | None = None) -> None:
        """Load and validate the script now, so a bad file fails before any run."""
        if path is None or not str(path).strip():
            raise ModelError("the scripted model needs a file: use --model scripted:<path>")
        self.path = Path(path)
        self.script = DecisionScript.from_file(self.path)
        #: every request answered, for tests and demos to inspect
        self.requests: list[ModelRequest] = []

    async def request(self, req: ModelRequest, ctx: CallContext) -> ModelResponse:
        """The scripted answer for the request's task (by kind, index, attempt and ask)."""
        self.requests.append(req)
        if isinstance(req.task, DecideTask):
            return await self._decide(req.task, ctx)
        return await self._text(req, ctx)

    async def _decide(self, task: DecideTask, ctx: CallContext) -> ModelResponse:
        entry = self.script.entry_for(task.index)
        if entry is None:
            note = f"scripted decisions exhausted after {len(self.script.decisions)} entries; finalizing the current map"
            ctx.heartbeat("script exhausted")
            return ModelResponse(text=note, tool_calls=[ToolCallOut(name=FINALIZE_FUNCTION, args={"summary": note})],
                                 calls=0)
        failing = ctx.attempt <= entry.fail_attempts
        await _stall(entry.stall_s, ctx, entry.failed_usage if failing else entry.usage)
        if failing:
            message = f"scripted {entry.fail_kind} failure (attempt {ctx.attempt} of {entry.fail_attempts} failing)"
            if entry.fail_kind == "fatal":
                raise ModelCallError(message, entry.failed_usage)
            raise ModelTransientError(message, entry.failed_usage, retry_after_s=entry.retry_after_s)
        ctx.heartbeat(f"scripted decision for iteration {task.index}")
        if entry.action == "update_flight_plan":
            assert entry.updates is not None
            args = {"reasoning": entry.reasoning or "scripted update",
                    "updates": entry.updates.model_dump(mode="json", exclude_defaults=True)}
            calls = [ToolCallOut(name=UPDATE_FUNCTION, args=args)]
        elif entry.action == "finalize_context":
            calls = [ToolCallOut(name=FINALIZE_FUNCTION, args={"summary": entry.summary or ""})]
        elif entry.action == "call_tools":
            calls = [ToolCallOut(name=c.name, args=dict(c.args)) for c in entry.tool_calls]
        else:  # invalid: an answer without a usable function call
            calls = []
        text = entry.error if entry.action == "invalid" else entry.reasoning
        return ModelResponse(text=text or "", tool_calls=calls, usage=entry.usage, calls=entry.calls)

    async def _text(self, req: ModelRequest, ctx: CallContext) -> ModelResponse:
        kind, index = req.task.kind, req.task.index
        queue = self.script.text.get(kind) or []
        if not 0 <= index < len(queue):
            raise ModelCallError(
                f"no scripted answer #{index} for {kind!r} ({len(queue)} given); add it to {self.path}")
        item = queue[index]
        if isinstance(item, list):
            ask = 1 + sum(1 for m in req.messages if m.role == "assistant")
            # an executor turn's conversation holds the step's earlier turns: count only this turn's re-asks
            ask -= len(getattr(req.task, "transcript", []))
            if not 1 <= ask <= len(item):
                raise ModelCallError(f"no scripted answer for ask {ask} of {kind!r} #{index}; add it to {self.path}")
            item = item[ask - 1]
        entry = _text_entry(item, f"{self.path}: text.{kind}[{index}]")
        await _stall(entry.stall_s, ctx, entry.usage)
        if entry.error == "fatal":
            raise ModelCallError(f"scripted fatal failure of {kind!r} #{index}", entry.usage)
        if entry.error == "transient":
            raise ModelTransientError(f"scripted transient failure of {kind!r} #{index}", entry.usage,
                                      retry_after_s=entry.retry_after_s)
        usage = entry.usage if entry.usage is not None else TokenUsage(
            input_tokens=approx_tokens(" ".join(m.content for m in req.messages)),
            output_tokens=approx_tokens(entry.text))
        return ModelResponse(text=entry.text, tool_calls=list(entry.calls), usage=usage, calls=1)


async def _stall(seconds: float, ctx: CallContext, usage: TokenUsage | None) -> None:
    """Wait like a slow model, heartbeating (so a cancel reaches the activity meanwhile).

    The answer's usage is reported to the meter first, as a streaming backend
    reports the prompt it has read: a call cancelled while it waits is booked.
    """
    if seconds and usage is not None:
        ctx.meter.observe(usage)
    waited = 0.0
    while waited < seconds:
        ctx.heartbeat("scripted model thinking")
        step = min(0.2, seconds - waited)
        await asyncio.sleep(step)
        waited += step
