"""Results come home (:mod:`cli.results_home`): a finished run's files written from the store, one by one.

The end-to-end path (a worker on another "host", an S3 bucket) is ``test_object_store_hosts.py``;
these pin the rules: a missing file is written from its stored bytes, a file already there (the
worker's, or the user's edit) is left alone, a missing blob or an unwritable path is one line.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.cli.errors import CliError
from durable_navigator.cli.results_home import bring_home, relocated, result_files
from durable_navigator.navcore.navigator.requests import ExplorationResult
from durable_navigator.navcore.research.research import ResearchResult
from durable_navigator.navtypes.errors import ArtifactError

PACK = "# context\n\nthe pack\n"
REPORT = '{"workflow_id": "nav-x"}\n'


def _result(store: LocalArtifactStore, out: Path, **extra: object) -> ExplorationResult:
    return ExplorationResult.model_validate({
        "workflow_id": "nav-x", "stop_reason": "finalized", "iterations": 1, "decisions": 1, "cost_micros": 0,
        "cost_usd": Decimal(0), "max_usd": Decimal(1), "usage": {}, "model_attempts": 1,
        "context_path": str(out / "nav-x" / "context.md"), "report_path": str(out / "nav-x" / "report.json"),
        "context_ref": store.put_text(PACK), "report_ref": store.put_text(REPORT), **extra})


def test_missing_files_are_written_from_the_store(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "blobs")
    result = _result(store, tmp_path / "out")
    written = bring_home(store, result)
    assert written == [tmp_path / "out" / "nav-x" / "context.md", tmp_path / "out" / "nav-x" / "report.json"]
    assert written[0].read_text() == PACK and written[1].read_text() == REPORT
    assert bring_home(store, result) == []  # all there now: nothing to do


def test_a_file_already_there_is_left_alone(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "blobs")
    result = _result(store, tmp_path / "out")
    edited = Path(result.context_path or "")
    edited.parent.mkdir(parents=True)
    edited.write_text("my notes on the pack\n")
    assert bring_home(store, result) == [Path(result.report_path or "")]
    assert edited.read_text() == "my notes on the pack\n"


def test_a_blob_the_store_lacks_is_one_line(tmp_path: Path) -> None:
    result = _result(LocalArtifactStore(tmp_path / "worker-blobs"), tmp_path / "out")
    with pytest.raises(ArtifactError, match="is not in .*; point every worker at the same artifact store"):
        bring_home(LocalArtifactStore(tmp_path / "cli-blobs"), result)


def test_a_path_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "blobs")
    (tmp_path / "out").write_text("a file where the folder should be")
    with pytest.raises(CliError, match=r"cannot write .*context.md .*`navigator result nav-x` writes it again"):
        bring_home(store, _result(store, tmp_path / "out"))


def test_result_out_moves_the_files_into_a_folder_of_this_machine(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "blobs")
    moved = relocated(_result(store, Path("/elsewhere/out")), tmp_path / "mine")
    assert moved.context_path == str(tmp_path / "mine" / "nav-x" / "context.md")
    assert bring_home(store, moved) == [tmp_path / "mine" / "nav-x" / "context.md",
                                        tmp_path / "mine" / "nav-x" / "report.json"]
    assert not Path("/elsewhere").exists()


def test_a_result_names_its_files_with_their_refs(tmp_path: Path) -> None:
    store = LocalArtifactStore(tmp_path / "blobs")
    answer = store.put_text("## Answer\n")
    research = ResearchResult.model_validate({
        "workflow_id": "res-x", "stop_reason": "finalized", "completed_normally": True, "rounds": 1, "steps": 1,
        "iterations": 1, "decisions": 1, "cost_micros": 0, "cost_usd": Decimal(0), "max_usd": Decimal(1),
        "usage": {}, "model_attempts": 1, "answer_path": "/o/res-x/answer.md", "answer_ref": answer,
        "report_path": "/o/res-x/report.json"})
    # a result from before report refs: the answer only (its report cannot be fetched, so it is not named)
    assert result_files(research) == [("/o/res-x/answer.md", answer)]
