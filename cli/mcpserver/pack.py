"""The context pack an MCP client receives: ``context.md`` as the run wrote it.

The run's worker composes ``context.md`` within the request's token budget
(:func:`activities.pack.build_pack`, the one pack builder of every surface: the
CLI's file, ``navigator result``, batch jobs and these tools), so the ``explore``
tool passes the client's ``token_budget`` to the run as it is and returns the
file unchanged. What the budget left out is in the run's ``report.json``
(:func:`report_uri`).
"""

from __future__ import annotations

from pathlib import Path

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.navcore.requests import ExplorationResult
from durable_navigator.navcore.research import ResearchResult
from durable_navigator.navtypes.errors import NavigatorError
from durable_navigator.workers.worker import default_artifact_dir

__all__ = ["read_context", "read_answer", "read_report", "context_uri", "answer_uri", "report_uri"]


def context_uri(run_id: str) -> str:
    """The resource holding a run's ``context.md``."""
    return f"navigator://runs/{run_id}/context"


def answer_uri(run_id: str) -> str:
    """The resource holding a research run's whole ``answer.md``."""
    return f"navigator://runs/{run_id}/answer"


def report_uri(run_id: str) -> str:
    """The resource holding a run's ``report.json``."""
    return f"navigator://runs/{run_id}/report"


def _read(path: str | None, ref: object, what: str, run_id: str) -> str:
    """A result file, from its path or (the worker wrote it elsewhere) from the local artifact store."""
    if path:
        try:
            return Path(path).read_text(encoding="utf-8")
        except OSError:
            pass
    if ref is not None:
        try:
            return LocalArtifactStore(default_artifact_dir()).get_text(ref)  # type: ignore[arg-type]
        except NavigatorError:
            pass
    raise NavigatorError(
        f"the {what} of run {run_id} is not readable here (written to {path or 'nowhere'} by the worker "
        "that ran it); read it on that machine, or point every worker at one artifact store"
    )


def read_context(result: ExplorationResult) -> str:
    """The run's context.md."""
    return _read(result.context_path, result.context_ref, "context pack", result.workflow_id)


def read_answer(result: ResearchResult) -> str:
    """A research run's whole answer.md."""
    return _read(result.answer_path, result.answer_ref, "answer", result.workflow_id)


def read_report(result: ExplorationResult | ResearchResult) -> str:
    """The run's report.json text."""
    return _read(result.report_path, None, "report", result.workflow_id)
