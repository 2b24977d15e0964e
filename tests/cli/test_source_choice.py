"""Which source a command picks for REPO (cli/sources.py): git URL + ref, snapshot, or path — and says so.

Real git (a ``file://`` repository made here) and a real S3-compatible server (SeaweedFS) for the
snapshot; the embedded default keeps the path and says nothing.
"""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from durable_navigator.cli.config import NavigatorConfig, load_config
from durable_navigator.cli.errors import CliError
from durable_navigator.cli.sources import settle_source, source_fields
from durable_navigator.navcore.navigator.requests import ExplorationRequest
from durable_navigator.navcore.run.sources import GitSource, PathSource, SnapshotSource
from durable_navigator.navtypes.errors import RepoError
from tests.support.cli import FIXTURE_REPO, invoke
from tests.support.seaweed import BUCKET, SeaweedS3

KEYS = {"SRC_TEST_ACCESS": "navigator-test-access", "SRC_TEST_SECRET": "navigator-test-secret-0123456789"}


def _config(tmp_path: Path, body: str = "") -> NavigatorConfig:
    path = tmp_path / "navigator.yaml"
    path.write_text(body)
    return load_config(path, env=KEYS, cwd=tmp_path)


def test_a_path_stays_a_path_by_default_and_refuses_a_ref(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    fields = source_fields(FIXTURE_REPO, None)
    assert fields == {"source": PathSource(path=str(FIXTURE_REPO.resolve()))}
    request = ExplorationRequest(**fields, goal="why?")
    assert settle_source(_config(tmp_path), request) == request
    assert capsys.readouterr().err == ""  # the embedded default says nothing, as before
    with pytest.raises(CliError, match="--ref names a commit of a git URL.*drop --ref"):
        source_fields(str(FIXTURE_REPO), "main")


def test_a_git_url_is_resolved_before_anything_starts(tmp_path: Path) -> None:
    repo = tmp_path / "origin"
    repo.mkdir()
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e",
           "HOME": str(tmp_path)}
    for args in (("init", "-q", "-b", "trunk"), ("commit", "-q", "--allow-empty", "-m", "one")):
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env=env)
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()
    assert source_fields(f"file://{repo}", None) == {
        "source": GitSource(url=f"file://{repo}", ref="HEAD", commit=head)}
    with pytest.raises(RepoError, match=r"\(branches: trunk\)"):
        source_fields(f"file://{repo}", "main")


def _store_config(tmp_path: Path, s3_server: SeaweedS3, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A CLI configuration whose artifact store is a fresh prefix of the test's real S3 server."""
    for key, value in KEYS.items():
        monkeypatch.setenv(key, value)
    return _config(tmp_path, f"artifacts:\n  url: s3://{BUCKET}/choice-{uuid.uuid4().hex[:8]}\n"
                   f"  endpoint_url: {s3_server.endpoint_url}\n  access_key_env: SRC_TEST_ACCESS\n"
                   "  secret_key_env: SRC_TEST_SECRET\n")


def test_an_object_store_turns_a_path_into_a_snapshot(tmp_path: Path, s3_server: SeaweedS3,
                                                      capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    config = _store_config(tmp_path, s3_server, monkeypatch)
    request = ExplorationRequest(**source_fields(FIXTURE_REPO, None), goal="why?")
    settled = settle_source(config, request)
    assert isinstance(settled.source, SnapshotSource) and settled.source.label == str(FIXTURE_REPO.resolve())
    assert settled.model_copy(update={"source": request.source}) == request  # nothing else changed
    err = capsys.readouterr().err
    assert err.startswith("source: snapshot ") and err.count("\n") == 1 and "share no disk" in err


def test_source_path_keeps_a_path_with_an_object_store_and_says_so(tmp_path: Path, s3_server: SeaweedS3,
                                                                   capsys: pytest.CaptureFixture[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """``--source path``: workers that do see this path (a shared mount) need no upload; the line says which."""
    config = _store_config(tmp_path, s3_server, monkeypatch)
    request = ExplorationRequest(**source_fields(FIXTURE_REPO, None), goal="why?")
    assert settle_source(config, request, "path") == request
    err = capsys.readouterr().err
    assert err == f"source: path {FIXTURE_REPO.resolve()} (--source path: the workers must see it at this path)\n"
    # auto, the default, still sends the snapshot
    assert isinstance(settle_source(config, request, "auto").source, SnapshotSource)


def test_source_snapshot_freezes_the_tree_even_with_a_local_store(tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, f"artifacts:\n  dir: {tmp_path / 'store'}\n")
    request = ExplorationRequest(**source_fields(FIXTURE_REPO, None), goal="why?")
    settled = settle_source(config, request, "snapshot")
    assert isinstance(settled.source, SnapshotSource) and settled.source.label == str(FIXTURE_REPO.resolve())
    err = capsys.readouterr().err
    assert err.startswith("source: snapshot ") and err.rstrip().endswith("(--source snapshot)")
    assert err.count("\n") == 1


def test_source_other_than_auto_is_refused_for_a_git_url(tmp_path: Path) -> None:
    request = ExplorationRequest(source=GitSource(url="file:///nowhere", ref="HEAD", commit="0" * 40), goal="why?")
    for how in ("path", "snapshot"):
        with pytest.raises(CliError, match=f"--source {how} says how a local REPO travels.*drop --source"):
            settle_source(_config(tmp_path), request, how)


@pytest.mark.parametrize("command", [["explore", "GOAL"], ["ask", "QUESTION"], ["investigate", "GOAL"]])
def test_a_bad_source_value_is_refused_in_one_line(tmp_path: Path, command: list[str]) -> None:
    result = invoke([command[0], str(FIXTURE_REPO), command[1], "--source", "nfs", "--out", str(tmp_path / "out")],
                    {"NAVIGATOR_CONFIG": str(tmp_path / "none.yaml")})
    assert result.exit_code == 2, result.stderr
    assert result.stderr == "Error: --source 'nfs': expected one of auto, path, snapshot\n"
    assert not (tmp_path / "out").exists()
