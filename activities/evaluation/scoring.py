"""Scoring every method of one task at its parent checkout: the navigator's packs, the engine alone, chunk BM25.

The navigator's contexts come from the batch's finished runs, read by their reference from the
artifact store (the workers' bucket or the local directory: the same bytes as ``context.md``, whichever
host ran the exploration); the engine and chunk BM25 run here, on the same checkout, through the same
engine index. One scorer
(``navcore/evaluation/score.py``) reads every context: gold-line recall and gold-file hit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from durable_navigator.activities.artifacts import ArtifactStore
from durable_navigator.activities.evaluation.baseline import Doc, chunk_bm25_ranked, engine_alone, pack
from durable_navigator.activities.evaluation.checkout import read_source
from durable_navigator.navcore.run.artifacts import ArtifactRef
from durable_navigator.navcore.evaluation.models import EvalTask, MethodScore, TaskResult
from durable_navigator.navcore.evaluation.score import map_section, parse_context, score_context
from durable_navigator.navcore.evaluation.summary import CHUNK_BM25, ENGINE, navigator_method
from durable_navigator.repomap.engine import RepoMap
from durable_navigator.navtypes.errors import ArtifactError
from durable_navigator.repomap.tokens import count_tokens

__all__ = ["NavigatorRun", "score_task"]


@dataclass(frozen=True)
class NavigatorRun:
    """What the batch reports of one exploration (model x budget) of a task."""

    model: str
    tokens_budget: int
    status: str
    #: the context pack in the artifact store (``JobOutcome.context_ref``)
    context_ref: ArtifactRef | None
    seconds: float
    cost_usd: float
    stop_reason: str | None = None
    error: str | None = None


def _scored(method: str, budget: int, text: str, whole: str, task: EvalTask, root: Path, seconds: float,
            **extra: object) -> MethodScore:
    source = read_source(root)
    parsed = parse_context(text, source)
    scores = score_context(parsed, task.gold_lines, source)
    missed = [f for f in task.gold_files if not (f in parsed.files and parsed.files[f].visible)]
    total = sum(len(v) for v in task.gold_lines.values())
    found = sum(1 for f, lines in task.gold_lines.items() if f in parsed.files
                for n in lines if n in parsed.files[f].visible)
    return MethodScore(method=method, tokens_budget=budget, line_recall=float(scores["line_recall"] or 0.0),
                       file_hit=float(scores["file_hit"] or 0.0), tokens=count_tokens(whole), seconds=seconds,
                       missed_files=missed, missed_lines=total - found, gold_lines=total, **extra)  # type: ignore[arg-type]


def _pack(run: NavigatorRun, store: ArtifactStore) -> tuple[str | None, str | None]:
    """The run's context pack from the store, or why there is none (a missing or corrupt blob)."""
    if run.status != "completed":
        return None, run.error
    if run.context_ref is None:
        return None, run.error or "the run stored no context pack"
    try:
        return store.get_bytes(run.context_ref).decode("utf-8", errors="replace"), None
    except ArtifactError as exc:
        return None, str(exc)


def _navigator(run: NavigatorRun, task: EvalTask, root: Path, store: ArtifactStore) -> MethodScore:
    method = navigator_method(run.model)
    context, why = _pack(run, store)
    if context is None:
        # counted as a failure with recall 0: a task that fails is never skipped
        return MethodScore(method=method, tokens_budget=run.tokens_budget, status="failed" if run.status == "completed"
                           else run.status, stop_reason=run.stop_reason, error=why, seconds=run.seconds,
                           cost_usd=run.cost_usd, missed_files=list(task.gold_files),
                           gold_lines=sum(len(v) for v in task.gold_lines.values()),
                           missed_lines=sum(len(v) for v in task.gold_lines.values()))
    return _scored(method, run.tokens_budget, map_section(context), context, task, root, run.seconds,
                   cost_usd=run.cost_usd, stop_reason=run.stop_reason)


def score_task(task: EvalTask, root: Path, budgets: list[int], runs: list[NavigatorRun], store: ArtifactStore,
               cache_dir: Path | None = None) -> TaskResult:
    """Every method's score on ``task`` whose parent is checked out at ``root``; packs read from ``store``.

    A store that does not answer raises (an ``OSError``): the eval is resumable, nothing is scored as a zero.
    """
    scores = [_navigator(run, task, root, store) for run in runs]
    engine = RepoMap.open(root, cache_dir=cache_dir)
    try:
        source = read_source(root)
        t0 = time.perf_counter()
        ranked = chunk_bm25_ranked(engine, task.goal)
        rank_s = time.perf_counter() - t0
        costs: dict[Doc, int] = {}
        for budget in budgets:
            t0 = time.perf_counter()
            text = engine_alone(engine, task.goal, budget)
            scores.append(_scored(ENGINE, budget, text, text, task, root, time.perf_counter() - t0))
            t0 = time.perf_counter()
            text = pack(ranked, budget, source, count_tokens, costs)
            scores.append(_scored(CHUNK_BM25, budget, text, text, task, root, rank_s + time.perf_counter() - t0))
    finally:
        engine.close()
    return TaskResult(task=task, scores=scores)
