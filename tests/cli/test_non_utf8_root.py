"""A repository whose own path is not UTF-8 (a Latin-1 ``café`` folder: byte ``\\xe9``), issue #29.

Names *inside* a repository may be any bytes (``repomap/fsnames.py``); the root's path itself travels
as text — index cache, workflow input, history, ``report.json`` — and cannot. It used to fail late:
``explore`` / ``ask`` / ``investigate`` said "invalid repo_path: Input should be a valid string, unable
to parse raw data as a unicode string" (true, but no hint what to do), ``navigator map`` and
``repo-map generate|stats`` printed a ``UnicodeEncodeError`` traceback (exit 1). Every surface now
refuses it up front with one line that says to rename the folder (exit 2), nothing started or written.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from tests.support.cli import ainvoke

from durable_navigator.navtypes.errors import RepoError
from durable_navigator.repomap.cli_generate import run_generate
from durable_navigator.repomap.discover import check_root

WORDS = ("is not valid UTF-8", "caf\\xe9", "rename that folder to a UTF-8 name")


@pytest.fixture
def latin1_repo(tmp_path: Path) -> Path:
    """``<tmp>/caf\\xe9`` holding one Python file; the path as Python sees it (a lone surrogate)."""
    root = os.path.join(os.fsencode(tmp_path), b"caf\xe9")
    os.makedirs(os.path.join(root, b"src"))
    with open(os.path.join(root, b"src", b"a.py"), "w") as fh:
        fh.write("def alpha():\n    return 1\n")
    return Path(os.fsdecode(root))


def _one_error_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return " ".join(lines[0].split())


@pytest.mark.parametrize("command", [
    ["explore", "{repo}", "what does alpha return?"],
    ["ask", "{repo}", "what does alpha return?"],
    ["investigate", "{repo}", "what does alpha return?"],
    ["map", "{repo}"],
])
async def test_every_command_refuses_it_with_what_to_do(latin1_repo: Path, tmp_path: Path, isolated_config,
                                                         command: list[str]) -> None:
    out = tmp_path / "out"
    args = [a.format(repo=latin1_repo) for a in command] + (["--out", str(out)] if command[0] != "map" else [])
    result = await ainvoke(args, isolated_config())
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    line = _one_error_line(result.stderr)
    assert all(w in line for w in WORDS), line
    assert not out.exists()  # refused before anything was written


async def test_a_jobs_file_naming_it_is_refused_for_that_job(latin1_repo: Path, tmp_path: Path,
                                                            isolated_config) -> None:
    # a jobs file is UTF-8 text, so it reaches the folder through a link with a UTF-8 name
    (tmp_path / "link").symlink_to(latin1_repo)
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(yaml.safe_dump({"jobs": [{"repo": str(tmp_path / "link"), "goal": "what does alpha return?"}]}))
    result = await ainvoke(["batch", "run", str(jobs), "--out", str(tmp_path / "out")], isolated_config())
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert "job 0" in result.stderr and all(w in " ".join(result.stderr.split()) for w in WORDS), result.stderr
    assert not (tmp_path / "out").exists()


def test_repo_map_refuses_it_with_exit_2(latin1_repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for fmt in ("text", "json"):
        assert run_generate(latin1_repo, fmt=fmt, cache_dir=tmp_path / "cache") == 2
        line = _one_error_line(capsys.readouterr().err)
        assert all(w in line for w in WORDS), line
    with pytest.raises(RepoError, match="rename that folder"):
        check_root(latin1_repo)
