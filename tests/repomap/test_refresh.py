"""The index is never stale: ``RepoMap.refresh`` and the on-disk cache see the tree as it is now.

Each change kind a long-running worker meets between two explorations --
delete, rename, add, modify, a same-size same-mtime rewrite, a ``git checkout``
of another commit, a copy outside git that preserves mtimes -- through both the
in-memory version (``refresh``) and the on-disk cache (a fresh ``open``). Plus
a file that vanishes or turns binary under a render of an older version.
"""

from __future__ import annotations

from tests.support import FIXTURE_REPO as FIXTURE_REPO_DIR

import os
import shutil
import threading
import time
from pathlib import Path

import pytest
from tests.support.git import commit_all, git, init_repo

from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.repomap import RepoMap
from durable_navigator.repomap import discover as discover_mod
from durable_navigator.repomap.cache import IndexCache
from durable_navigator.repomap.tokens import count_tokens

FIXTURE = FIXTURE_REPO_DIR
LEDGER = "src/budgetkit/ledger.py"
PLUGIN = "src/budgetkit/plugin.py"
FULL = FlightPlan(token_budget=6000, goal="budget plugin ledger usage", default_level=4)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    return root


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def _open(root: Path, cache: Path) -> RepoMap:
    return RepoMap.open(root, cache_dir=cache, jobs=1)


def _names(rm: RepoMap, path: str) -> list[str]:
    return [s.name for s in rm.symbols(path)]


def _same_size_same_mtime_rewrite(path: Path, old: bytes, new: bytes) -> None:
    """Replace the content, keep size and mtime (as a copy or archive that preserves mtimes does)."""
    assert len(old) == len(new) and old != new
    st = path.stat()
    path.write_bytes(new)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns


def _klass(data: bytes) -> bytes:
    """Same size, different meaning: ``class Usage`` becomes ``class Uxage``."""
    out = data.replace(b"class Usage:", b"class Uxage:", 1)
    assert len(out) == len(data) and out != data
    return out


# ---------------------------------------------------------------- change kinds


def test_unchanged_tree_keeps_the_same_version(repo: Path, cache: Path) -> None:
    rm = _open(repo, cache)
    assert rm.refresh() is rm
    assert rm.refresh().refresh() is rm


def test_delete(repo: Path, cache: Path) -> None:
    rm = _open(repo, cache)
    (repo / PLUGIN).unlink()
    new = rm.refresh()
    assert new is not rm and PLUGIN not in new.files and PLUGIN in rm.files  # the old version is untouched
    assert new.index_version != rm.index_version
    assert PLUGIN not in _open(repo, cache).files  # and through the on-disk cache


def test_rename(repo: Path, cache: Path) -> None:
    rm = _open(repo, cache)
    (repo / PLUGIN).rename(repo / "src/budgetkit/budget_plugin.py")
    new = rm.refresh()
    assert PLUGIN not in new.files and "src/budgetkit/budget_plugin.py" in new.files
    assert [s.path for s in new.find_symbol("BudgetPlugin")] == ["src/budgetkit/budget_plugin.py"]
    assert new.refresh() is new


def test_add(repo: Path, cache: Path) -> None:
    rm = _open(repo, cache)
    (repo / "src/budgetkit/streaming.py").write_text("def on_chunk(usage):\n    return usage\n")
    new = rm.refresh()
    assert "src/budgetkit/streaming.py" in new.files
    assert _names(new, "src/budgetkit/streaming.py") == ["on_chunk"]


def test_modify(repo: Path, cache: Path) -> None:
    rm = _open(repo, cache)
    (repo / LEDGER).write_text("def only_this():\n    return 1\n")
    new = rm.refresh()
    assert _names(new, LEDGER) == ["only_this"] and "Ledger" in _names(rm, LEDGER)
    assert _names(_open(repo, cache), LEDGER) == ["only_this"]


def test_rewrite_with_the_same_bytes_keeps_the_version(repo: Path, cache: Path) -> None:
    rm = _open(repo, cache)
    rm.render(FULL)
    data = (repo / LEDGER).read_bytes()
    (repo / LEDGER).write_bytes(data)  # new ctime (and maybe mtime), same content
    assert rm.refresh() is rm


def test_same_size_same_mtime_change_via_refresh_and_reopen(repo: Path, cache: Path) -> None:
    rm = _open(repo, cache)
    path = repo / LEDGER
    _same_size_same_mtime_rewrite(path, path.read_bytes(), _klass(path.read_bytes()))
    assert "Usage" not in _names(rm.refresh(), LEDGER)
    assert "Usage" not in _names(_open(repo, cache), LEDGER)


def test_same_size_same_mtime_change_outside_the_racy_window(repo: Path, cache: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Files long settled: the stat shortcut is trusted, and ctime is what tells the rewrite apart."""
    monkeypatch.setattr(discover_mod, "RACY_WINDOW_NS", 0)
    rm = _open(repo, cache)
    assert not rm._racy  # nothing is re-hashed on trust alone
    time.sleep(0.05)  # past the kernel's timestamp tick, so the rewrite's ctime differs
    path = repo / LEDGER
    _same_size_same_mtime_rewrite(path, path.read_bytes(), _klass(path.read_bytes()))
    assert "Usage" not in _names(rm.refresh(), LEDGER)
    assert "Usage" not in _names(_open(repo, cache), LEDGER)


def test_a_racy_manifest_entry_is_rehashed_even_when_every_stat_field_matches(repo: Path, cache: Path) -> None:
    """Git's racy-clean rule: a write within the timestamp tick of the stat can leave the stat unchanged.

    Simulated by recording the changed file's current stat against its old content key.
    """
    _open(repo, cache)
    path = repo / LEDGER
    _same_size_same_mtime_rewrite(path, path.read_bytes(), _klass(path.read_bytes()))
    db = IndexCache(cache)
    manifest = db.load_manifest(str(repo.resolve()))
    st = path.stat()
    size, mtime, ctime, ino, key, _racy = manifest[LEDGER]
    forged = {**manifest, LEDGER: (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, key, True)}
    db.save_manifest(str(repo.resolve()), forged)
    assert "Usage" not in _names(_open(repo, cache), LEDGER)  # racy: re-hashed, new content seen
    forged[LEDGER] = (*forged[LEDGER][:5], False)
    db.save_manifest(str(repo.resolve()), forged)
    # not racy and every stat field equal: the shortcut trusts the record (what the racy rule is for)
    assert "Usage" in _names(_open(repo, cache), LEDGER)


def test_a_racy_file_is_compared_by_content_on_refresh(repo: Path, cache: Path) -> None:
    rm = _open(repo, cache)
    assert LEDGER in rm._racy  # just copied: within the window
    path = repo / LEDGER
    _same_size_same_mtime_rewrite(path, path.read_bytes(), _klass(path.read_bytes()))
    st = path.stat()
    rm._stats[LEDGER] = (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)  # as if no stat field moved
    assert "Usage" not in _names(rm.refresh(), LEDGER)


def test_git_checkout_of_another_commit(tmp_path: Path, cache: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    init_repo(root)
    a = commit_all(root, "A")
    git(root, "mv", PLUGIN, "src/budgetkit/budget_plugin.py")
    git(root, "rm", "-q", LEDGER)
    (root / "src/budgetkit/streaming.py").write_text("def on_chunk(usage):\n    return usage\n")
    (root / "notes.txt").write_text("untracked, not ignored: indexed\n")
    (root / ".gitignore").write_text("build/\n")
    (root / "build").mkdir()
    (root / "build" / "out.py").write_text("ignored = True\n")
    b = commit_all(root, "B")
    rm_b = _open(root, cache)
    assert rm_b.index_version.startswith(f"git:{b[:12]}+")
    assert {"src/budgetkit/budget_plugin.py", "src/budgetkit/streaming.py"} <= set(rm_b.files)
    assert LEDGER not in rm_b.files and "build/out.py" not in rm_b.files
    (root / "scratch.py").write_text("def untracked():\n    pass\n")
    git(root, "checkout", "-q", a)
    rm_a = rm_b.refresh()
    assert rm_a.index_version.startswith(f"git:{a[:12]}+")
    assert {PLUGIN, LEDGER, "scratch.py"} <= set(rm_a.files)
    assert "src/budgetkit/budget_plugin.py" not in rm_a.files and "src/budgetkit/streaming.py" not in rm_a.files
    text = rm_a.render(FULL).text
    assert "def after_call" in text and "budget_plugin.py" not in text
    git(root, "checkout", "-q", b)
    rm_b2 = rm_a.refresh()
    assert rm_b2.index_version.startswith(f"git:{b[:12]}+")
    assert set(rm_b2.files) == set(rm_b.files) | {"scratch.py"}
    assert _open(root, cache).index_version == rm_b2.index_version


def test_a_tracked_file_deleted_from_the_work_tree_is_gone_not_skipped(tmp_path: Path, cache: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    init_repo(root)
    commit_all(root, "A")
    rm = _open(root, cache)
    (root / LEDGER).unlink()  # still in git's index: `git ls-files` lists it
    new = rm.refresh()
    assert LEDGER not in new.files and LEDGER not in new.skipped_files and "unreadable" not in new.skipped


def test_copy_outside_git_preserving_mtimes(tmp_path: Path, cache: Path) -> None:
    """Two releases unpacked into the same folder (copy2 keeps mtimes): one file differs, same size and mtime."""
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    shutil.copytree(FIXTURE, v1)
    shutil.copytree(FIXTURE, v2)
    (v2 / LEDGER).write_bytes(_klass((v1 / LEDGER).read_bytes()))
    (v2 / "src/budgetkit/cli.py").unlink()
    for src in (v1, v2):  # reproducible archives: one fixed mtime for every file
        for p in src.rglob("*"):
            os.utime(p, ns=(1_600_000_000_000_000_000, 1_600_000_000_000_000_000))
    work = tmp_path / "work"
    shutil.copytree(v1, work)
    first = _open(work, cache)
    shutil.rmtree(work)
    shutil.copytree(v2, work)
    for rm in (first.refresh(), _open(work, cache)):
        assert "Usage" not in _names(rm, LEDGER)
        assert "src/budgetkit/cli.py" not in rm.files


def test_the_root_gone_is_a_repo_error(repo: Path, cache: Path) -> None:
    from durable_navigator.navtypes.errors import RepoError

    rm = _open(repo, cache)
    shutil.rmtree(repo)
    with pytest.raises(RepoError, match="does not exist"):
        rm.refresh()


# ---------------------------------------------------------------- skipped files


def test_skipped_files_are_listed_by_path_and_reason(repo: Path, cache: Path, tmp_path: Path) -> None:
    (repo / "logo.png").write_bytes(b"\x89PNG\0\0\0binary")
    (repo / "poetry.lock").write_text("# lock\n")
    (repo / "big.txt").write_text("x" * 2_000_000)
    (tmp_path / "outside.py").write_text("secret = 1\n")
    (repo / "escape.py").symlink_to(tmp_path / "outside.py")
    rm = _open(repo, cache)
    assert rm.skipped_files == {"big.txt": "oversized", "escape.py": "symlink_escape",
                                "logo.png": "binary", "poetry.lock": "lockfile"}
    assert rm.skipped == {"binary": 1, "lockfile": 1, "oversized": 1, "symlink_escape": 1}
    (repo / "logo.png").unlink()
    assert "logo.png" not in rm.refresh().skipped_files


# ---------------------------------------------------------------- the tree changing under a version


def test_a_file_vanishing_under_a_render_is_skipped_with_a_note(repo: Path, cache: Path) -> None:
    rm = _open(repo, cache)
    before = rm.render(FULL)
    assert "def after_call" in before.text and "skipped" not in before.text.splitlines()[0]
    (repo / PLUGIN).unlink()
    result = rm.render(FULL)  # the old version still lists plugin.py
    header = result.text.splitlines()[0]
    assert '"skipped":{"src/budgetkit/plugin.py":"vanished"}' in header
    assert "def after_call" not in result.text and "class Ledger" in result.text
    assert result.metadata.skipped_files == {PLUGIN: "vanished"}
    assert count_tokens(result.text) == result.metadata.tokens_used <= FULL.token_budget
    assert PLUGIN not in [f.path for f in result.files]
    assert rm.vanished() == {PLUGIN: "vanished"}
    # queries on the old version do not fail either
    assert rm.read_lines(PLUGIN, 1, 5) == ""
    assert all(ref.path != PLUGIN for ref in rm.callers("src/budgetkit/ledger.py::Ledger"))
    assert rm.callees("src/budgetkit/plugin.py::BudgetPlugin.after_call") == []
    assert PLUGIN not in rm.refresh().files


def test_a_file_turned_binary_under_a_render_is_skipped(repo: Path, cache: Path) -> None:
    rm = _open(repo, cache)
    (repo / LEDGER).write_bytes(b"\0\1\2 not text any more")
    result = rm.render(FULL)
    assert result.metadata.skipped_files == {LEDGER: "binary"}
    assert count_tokens(result.text) <= FULL.token_budget
    assert rm.refresh().skipped_files.get(LEDGER) == "binary"


def test_everything_vanishing_under_a_tight_render_still_renders(repo: Path, cache: Path) -> None:
    rm = _open(repo, cache)
    for p in rm.files:
        (repo / p).unlink()
    for budget, level in ((150, 1), (300, 4), (5000, 4)):
        result = rm.render(FlightPlan(token_budget=budget, default_level=level))
        # nothing gone is shown, and the names of vanished files never break the budget
        assert result.metadata.files_per_level == {"0": len(rm.files)}
        assert count_tokens(result.text) == result.metadata.tokens_used <= budget
        assert result.metadata.skipped_files and set(result.metadata.skipped_files) <= set(rm.files)
    with pytest.raises(Exception, match="no indexable files"):
        rm.refresh()


def test_refresh_while_another_thread_renders_the_old_version(repo: Path, cache: Path) -> None:
    """Versions are immutable: a render on the old one finishes while the tree changes and is refreshed."""
    rm = _open(repo, cache)
    errors: list[BaseException] = []
    stop = threading.Event()
    results: list[str] = []

    def render_loop(engine: RepoMap) -> None:
        try:
            while not stop.is_set():
                r = engine.render(FULL)
                assert count_tokens(r.text) <= FULL.token_budget
                results.append(r.metadata.index_version)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=render_loop, args=(rm,))
    thread.start()
    current = rm
    try:
        for i in range(8):
            if i % 2 == 0:
                (repo / PLUGIN).rename(repo / "src/budgetkit/moved.py")
            else:
                (repo / "src/budgetkit/moved.py").rename(repo / PLUGIN)
            current = current.refresh()
            current.render(FULL)
    finally:
        stop.set()
        thread.join(30)
    assert not errors, errors
    assert results and set(results) == {rm.index_version}
    assert PLUGIN in current.files
