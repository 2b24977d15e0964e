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

from durable_navigator.activities.artifacts import ArtifactStore
from durable_navigator.navcore.navigator.requests import ExplorationResult
from durable_navigator.navcore.research.research import ResearchResult
from durable_navigator.navtypes.errors import NavigatorError

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


def _read(path: str | None, ref: object, what: str, run_id: str, store: ArtifactStore) -> str:
    """A result file, from its path or (the worker wrote none here) from the configured artifact store."""
    if path:
        try:
            return Path(path).read_text(encoding="utf-8")
        except OSError:
            pass
    problem = "it has no stored copy"
    if ref is not None:
        try:
            return store.get_bytes(ref).decode("utf-8")  # type: ignore[arg-type]
        except (NavigatorError, OSError) as exc:  # OSError: the object store did not answer
            problem = str(exc)
    raise NavigatorError(
        f"the {what} of run {run_id} is not readable here ({path or 'no file'} is not on this machine and "
        f"{problem}); give this server the artifacts: settings of the workers"
    )


def read_context(result: ExplorationResult, store: ArtifactStore) -> str:
    """The run's context.md."""
    return _read(result.context_path, result.context_ref, "context pack", result.workflow_id, store)


def read_answer(result: ResearchResult, store: ArtifactStore) -> str:
    """A research run's whole answer.md."""
    return _read(result.answer_path, result.answer_ref, "answer", result.workflow_id, store)


def read_report(result: ExplorationResult | ResearchResult, store: ArtifactStore) -> str:
    """The run's report.json text."""
    return _read(result.report_path, result.report_ref, "report", result.workflow_id, store)
