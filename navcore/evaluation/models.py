"""The evaluation's records: a mined task, one method's score on it, the whole report (pydantic, pure)."""

from __future__ import annotations

import hashlib
import re

from pydantic import BaseModel, ConfigDict

__all__ = ["EvalTask", "MethodScore", "TaskResult", "MethodTotals", "EvalReport", "EvalRun"]


class EvalTask(BaseModel):
    """One task mined from a repository's history: a goal and where the answer lives."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    commit: str
    parent: str
    #: the commit's committer date (ISO 8601)
    date: str = ""
    goal: str
    gold_files: list[str]
    #: path -> sorted pre-change line numbers (1-based) in ``parent``
    gold_lines: dict[str, list[int]]
    #: path -> number of those lines that are insertion anchors, not changed lines
    gold_anchor_lines: dict[str, int] = {}
    #: language of the gold files (the majority one if they mix)
    language: str = ""
    #: the repository of an exported case (``eval --cases``); empty: the eval's REPO
    repo: str = ""
    #: ``repo``'s folder inside its git work tree ("" at the top): what is explored in the checkout
    subdir: str = ""


class MethodScore(BaseModel):
    """One method's context for one task at one token budget, scored against the gold lines."""

    model_config = ConfigDict(extra="forbid")

    method: str
    tokens_budget: int
    #: gold-line recall (visible gold lines / gold lines); 0 for a failed run
    line_recall: float = 0.0
    #: a gold file is shown (any visible line)
    file_hit: float = 0.0
    tokens: int = 0
    seconds: float = 0.0
    cost_usd: float = 0.0
    #: completed, or failed (a failure counts as recall 0, never as a skip)
    status: str = "completed"
    stop_reason: str | None = None
    error: str | None = None
    #: gold files with no visible line (what was missed)
    missed_files: list[str] = []
    #: gold lines not visible, of ``gold_lines``
    missed_lines: int = 0
    gold_lines: int = 0


class TaskResult(BaseModel):
    """Every method's score on one task."""

    model_config = ConfigDict(extra="forbid")

    task: EvalTask
    scores: list[MethodScore]


class MethodTotals(BaseModel):
    """A method's means at one budget over every task (failures included as zeros)."""

    model_config = ConfigDict(extra="forbid")

    method: str
    tokens_budget: int
    tasks: int
    failed: int
    line_recall: float
    file_hit: float
    mean_tokens: float
    mean_seconds: float
    cost_usd: float
    #: against chunk BM25 on line recall (None for chunk BM25 itself)
    wins: int | None = None
    ties: int | None = None
    losses: int | None = None


class EvalReport(BaseModel):
    """``eval.json``: what was run, where, and every figure."""

    model_config = ConfigDict(extra="forbid")

    repo: str
    head: str
    commit_range: str
    since: str | None = None
    models: list[str]
    budgets: list[int]
    budget_usd: str
    spent_usd: float
    prices: dict[str, str]
    machine: str
    started: str
    wall_seconds: float
    batch_id: str
    candidates: int
    tasks: list[TaskResult]
    totals: list[MethodTotals]
    #: the tasks are exported quality cases (``eval --cases``), not mined commits
    cases: bool = False


class EvalRun(BaseModel):
    """``eval-run.json``: what an eval was started with, written before its batch starts (``--resume`` reads it)."""

    model_config = ConfigDict(extra="forbid")

    repo: str
    git_dir: str
    head: str
    since: str | None = None
    models: list[str]
    budgets: list[int]
    budget_usd: str
    concurrency: int
    batch_id: str
    commits: int
    candidates: int
    started: str
    #: where the parent checkouts live (the eval's cache dir, never the user's work tree)
    checkouts: str
    tasks: list[EvalTask]
    #: the tasks are exported quality cases (``eval --cases``): each names its own repository
    cases: bool = False

    def checkout_of(self, task: EvalTask) -> str:
        """The folder (under ``checkouts``) of ``task``'s parent checkout: per repository for a case's task."""
        if not task.repo:
            return task.parent[:12]
        key = hashlib.sha256(task.repo.encode()).hexdigest()[:8]
        name = re.sub(r"[^A-Za-z0-9._-]+", "-", task.repo.rstrip("/").rsplit("/", 1)[-1]).strip("-")[:32] or "repo"
        return f"{name}-{key}/{task.parent[:12]}"

    def explore_dir(self, task: EvalTask) -> str:
        """The folder (under ``checkouts``) explored and scored for ``task``: its checkout, or the case's subfolder."""
        return f"{self.checkout_of(task)}/{task.subdir}".rstrip("/")

    def jobs(self) -> list[tuple[int, str, int]]:
        """Every exploration as (task index, model, budget), in batch job order."""
        return [(i, m, b) for i in range(len(self.tasks)) for m in self.models for b in self.budgets]
