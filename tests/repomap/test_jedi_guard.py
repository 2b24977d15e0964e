"""Jedi's in-process module lookup swaps the process-wide ``sys.path``: other threads' imports must not see it,
and two lookups at once must not leave the process with a shadow tree as its path.

Found by ``navigator eval`` (a worker exploring several checkouts at once): while one activity's
callers/callees query ran jedi, a new exploration's workflow sandbox failed to import
``durable_navigator`` ("No module named 'durable_navigator'") and its workflow task kept failing.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from jedi.inference.compiled.subprocess import functions

from durable_navigator.repomap import jedi_guard


def _misses(lookup: Callable[..., Any], probe: str, rounds: int) -> int:
    """How often ``probe`` (importable from sys.path) was not found while another thread runs jedi's lookup."""
    stop = threading.Event()

    def jedi_lookups() -> None:
        while not stop.is_set():
            lookup(None, sys_path=["/nonexistent-shadow-tree"], full_name="no_such_mod", string="no_such_mod",
                   is_global_search=True)

    thread = threading.Thread(target=jedi_lookups)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as possible: the race shows within a few rounds
    thread.start()
    try:
        return sum(importlib.util.find_spec(probe) is None for _ in range(rounds))
    finally:
        stop.set()
        thread.join()
        sys.setswitchinterval(interval)


@pytest.fixture
def probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A module on sys.path that is never imported (so every find_spec searches the path)."""
    (tmp_path / "jedi_guard_probe_mod.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    return "jedi_guard_probe_mod"


def test_imports_in_other_threads_never_see_jedis_path(probe: str) -> None:
    jedi_guard.install()
    assert jedi_guard.installed()
    guarded = functions.get_module_info
    original = guarded.__wrapped__
    # the race is real: jedi's own lookup hides the interpreter's path from other threads' imports
    assert _misses(original, probe, 3000) > 0
    assert _misses(guarded, probe, 3000) == 0
    jedi_guard.install()  # idempotent: no second wrapper
    assert functions.get_module_info is guarded


def _parallel_lookups(lookup: Callable[..., Any], rounds: int) -> list[str]:
    """``sys.path`` after two threads ran ``rounds`` lookups each with their own path (restored after)."""
    saved = list(sys.path)
    saved_obj = sys.path

    def run(tag: str) -> None:
        for _ in range(rounds):
            lookup(None, sys_path=[f"/nonexistent-{tag}"], full_name="no_such_mod", string="no_such_mod",
                   is_global_search=True)

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    threads = [threading.Thread(target=run, args=(tag,)) for tag in ("a", "b")]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return list(sys.path)
    finally:
        sys.setswitchinterval(interval)
        sys.path = saved_obj
        sys.path[:] = saved


def test_two_lookups_at_once_leave_the_path_as_it_was() -> None:
    jedi_guard.install()
    guarded = functions.get_module_info
    before = list(sys.path)
    # unguarded, the save/restore pairs interleave and a shadow path stays behind
    assert any(_parallel_lookups(guarded.__wrapped__, 2000) != before for _ in range(5))
    assert all(_parallel_lookups(guarded, 2000) == before for _ in range(5))


def _shape(result: Any) -> Any:
    info, is_pkg = result
    if info is None:
        return None, is_pkg
    return type(info).__name__, str(getattr(info, "path", "")), list(getattr(info, "paths", [])), is_pkg


def test_the_guarded_lookup_answers_as_jedis_own(tmp_path: Path) -> None:
    """Same answers as jedi's swapping lookup: a package, a module, a namespace package, builtins, stdlib
    modules already imported, a missing name -- and sys.path is never touched."""
    (tmp_path / "alpha").mkdir()
    (tmp_path / "alpha" / "__init__.py").write_text("A = 1\n")
    (tmp_path / "beta.py").write_text("B = 1\n")
    (tmp_path / "gamma").mkdir()
    (tmp_path / "gamma" / "x.py").write_text("X = 1\n")
    jedi_guard.install()
    guarded = functions.get_module_info
    shadow = [str(tmp_path)]
    for name in ("alpha", "beta", "gamma", "os", "sys", "json", "no_such_module_here"):
        before = list(sys.path)
        want = guarded.__wrapped__(None, sys_path=shadow, full_name=name, string=name, is_global_search=True)
        got = guarded(None, sys_path=shadow, full_name=name, string=name, is_global_search=True)
        assert _shape(got) == _shape(want), name
        assert sys.path == before
    assert _shape(guarded(None, sys_path=shadow, full_name="alpha", string="alpha", is_global_search=True))[3] is True
