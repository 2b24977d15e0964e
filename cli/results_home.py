"""Results come home: the command that asked writes a run's files from the artifact store.

A finished run names its files (``context.md`` / ``answer.md`` / ``report.md`` + ``report.json``
under ``<out_dir>/<workflow id>/``, ``out_dir`` resolved by the CLI that started it; a batch's
``results.jsonl`` + ``summary.json`` and every job's files) and carries each file's :class:`ArtifactRef`. With an object store the worker may run on a host that shares no
disk with the machine that asked, so it writes no files: ``explore``, ``ask``, ``investigate``,
``result``, ``batch run|results`` and ``eval`` write them here, from the stored bytes (hash-checked by the store). With the local
store the worker already wrote them. A file already there is left alone: it is this run's (the
folder is named by the workflow id), written by the worker or by an earlier command, and perhaps
edited since — bringing a result home never overwrites the user's copy.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from temporalio.client import Client

from durable_navigator.activities.artifacts import ArtifactStore, atomic_write_bytes
from durable_navigator.cli.errors import CliError
from durable_navigator.navcore.run.artifacts import ArtifactRef
from durable_navigator.navcore.batch.batch import BatchResult
from durable_navigator.navcore.batch.branches import BranchExploreResult
from durable_navigator.navcore.investigation.investigation import InvestigationResult
from durable_navigator.navcore.navigator.requests import ExplorationResult
from durable_navigator.navcore.research.research import ResearchResult

__all__ = ["result_files", "bring_home", "bring_run_home", "relocated"]


#: per result type: the (path field, ref field) of each file it names
_FILES: dict[type, tuple[tuple[str, str], ...]] = {
    ExplorationResult: (("context_path", "context_ref"), ("report_path", "report_ref")),
    ResearchResult: (("answer_path", "answer_ref"), ("report_path", "report_ref")),
    InvestigationResult: (("report_path", "report_ref"), ("report_json_path", "report_json_ref")),
}


#: a batch's own files, then each job's (a ``JobOutcome``'s pack / answer / report.md and its report)
_BATCH_FILES = (("results_path", "results_ref"), ("summary_path", "summary_ref"))
_JOB_FILES = (("context_path", "context_ref"), ("report_path", "report_ref"))


def result_files(result: Any) -> list[tuple[str, ArtifactRef]]:
    """``(path, ref)`` of every file a finished run names and stored (runs of other kinds: none).

    A batch (``navigator batch``, ``navigator eval``) names its ``results.jsonl`` and ``summary.json``
    and every job's files.
    """
    if isinstance(result, BatchResult):
        named = [(getattr(result, path), getattr(result, ref)) for path, ref in _BATCH_FILES]
        named += [(getattr(job, path), getattr(job, ref)) for job in result.outcomes for path, ref in _JOB_FILES]
    else:
        named = [(getattr(result, path), getattr(result, ref)) for path, ref in _FILES.get(type(result), ())]
    return [(path, ref) for path, ref in named if path and ref is not None]


def bring_home(store: ArtifactStore, result: Any) -> list[Path]:
    """Write the run's files missing on this machine from ``store``; the paths written.

    A store that does not answer, a missing or corrupt blob, or a path this machine cannot write
    is one :class:`CliError` line (the run itself is finished and kept: ``navigator result`` retries).
    """
    written: list[Path] = []
    for name, ref in result_files(result):
        path = Path(name)
        if path.exists():
            continue
        try:
            data = store.get_bytes(ref)
        except OSError as exc:  # the object store is down or refused: say so, no traceback
            raise CliError(f"{exc}; the run is finished and kept: `navigator result "
                           f"{getattr(result, 'workflow_id', '')}` writes its files once the store answers") from None
        try:
            atomic_write_bytes(path, data)
        except OSError as exc:
            raise CliError(f"cannot write {path} ({exc.strerror or exc}); free the path or make its folder "
                           "writable, then `navigator result "
                           f"{getattr(result, 'workflow_id', '')}` writes it again") from None
        written.append(path)
    return written


def relocated(result: Any, out: Path) -> Any:
    """``result`` with each file it names moved to ``out/<workflow id>/<file name>`` (``result --out``)."""
    folder = out.expanduser().resolve() / result.workflow_id
    return result.model_copy(update={name: str(folder / Path(getattr(result, name)).name)
                                     for name, _ in _FILES.get(type(result), ()) if getattr(result, name)})


async def bring_run_home(client: Client, store: ArtifactStore, result: Any, out: Path | None = None) -> Any:
    """:func:`bring_home` off the event loop (into ``out`` when given); the result naming the files here.

    A branches run brings its kept exploration's pack (under the kept run's id).
    """
    if isinstance(result, BranchExploreResult):
        if result.kept is None:
            return result
        kept = await client.get_workflow_handle(result.kept, result_type=ExplorationResult).result()
        kept = relocated(kept, out) if out is not None else kept
        await asyncio.to_thread(bring_home, store, kept)
        return result.model_copy(update={"context_path": kept.context_path})
    result = relocated(result, out) if out is not None else result
    await asyncio.to_thread(bring_home, store, result)
    return result
