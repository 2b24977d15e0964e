"""Named pipes and other non-files in a tree (issue #29: ``repo-map generate ..`` seen stuck by the fuzzer).

``open()`` of a FIFO blocks until a writer appears. Discovery always skipped a FIFO it listed
(``lstat``: ``not_regular``), but the walk read every ``.gitignore`` with a plain open before any
check: ``mkfifo .gitignore`` wedged ``repo-map generate`` (and every exploration of the tree)
forever. A file that becomes a FIFO between the listing and the read did the same at the
indexer, the freshness check and the renderer. ``repomap/regular.py`` opens without blocking and
refuses what is not a regular file.

The subprocess bounds below are hang detectors, not speed targets: each command needs a second or two.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from durable_navigator.repomap import RepoMap
from durable_navigator.repomap.build import _index_chunk
from durable_navigator.repomap.cache import IndexCache
from durable_navigator.repomap.config import PARSER_VERSION, EngineConfig
from durable_navigator.repomap.regular import NotRegularFileError, read_regular
from durable_navigator.repomap.render import read_current

#: far above what the command needs: only a hang gets near it
HANG_S = 120

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")


def _tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("def alpha(x):\n    return x + 1\n")
    (root / "src" / "ignored.py").write_text("def hidden():\n    pass\n")
    (root / "src" / ".gitignore").write_text("ignored.py\n")  # a regular one still applies
    os.mkfifo(root / ".gitignore")
    os.mkfifo(root / "src" / "pipe.py")
    os.symlink("pipe.py", root / "src" / "link_to_pipe.py")
    return root


def _repo_map(*args: str, env_home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "XDG_CACHE_HOME": str(env_home / "cache"), "NAVIGATOR_CACHE_DIR": str(env_home / "nc")}
    code = "import sys; from durable_navigator.repomap.cli import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=HANG_S,
                          env=env, stdin=subprocess.DEVNULL)


def test_repo_map_generate_of_a_tree_with_fifos_exits_and_skips_them(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    proc = _repo_map("generate", str(root), "--format", "json", env_home=tmp_path)  # blocked forever before
    assert proc.returncode == 0, proc.stderr
    assert "src/a.py" in proc.stdout and "src/ignored.py" not in proc.stdout
    rm = RepoMap.open(root, cache_dir=tmp_path / "c", jobs=1)
    assert "src/a.py" in rm.files and "src/ignored.py" not in rm.files, rm.files
    for name in (".gitignore", "src/pipe.py", "src/link_to_pipe.py"):
        assert rm.skipped_files[name] == "not_regular", rm.skipped_files


def test_read_regular_refuses_a_fifo_at_once(tmp_path: Path) -> None:
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFileError, match="FIFO"):
        read_regular(fifo)  # no writer: a plain open() would wait for one forever
    with pytest.raises(NotRegularFileError, match="directory"):
        read_regular(tmp_path)
    (tmp_path / "f").write_bytes(b"abc")
    os.symlink("f", tmp_path / "l")
    assert read_regular(tmp_path / "l") == b"abc" and read_regular(tmp_path / "f", limit=2) == b"ab"
    with pytest.raises(OSError):
        read_regular(tmp_path / "l", follow_symlinks=False)


def test_a_file_turned_fifo_after_discovery_is_unreadable_not_a_hang(tmp_path: Path) -> None:
    """The indexer and the renderer read names discovery listed as regular files moments before."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "ok.py").write_text("def ok():\n    pass\n")
    os.mkfifo(root / "was_a_file.py")  # the state of the tree when the read comes
    cache = IndexCache(tmp_path / "cache")
    cfg = EngineConfig()
    try:
        out = _index_chunk(str(root), ["ok.py", "was_a_file.py"], cfg.model_dump_json(), PARSER_VERSION,
                           str(cache.path))
    finally:
        cache.close()
    by_path = {rel: key for rel, key, _ in out}
    assert by_path["was_a_file.py"] == "" and by_path["ok.py"]  # "" = unreadable: skipped with that reason
    assert read_current(root / "was_a_file.py", 512) == (None, "vanished")
