"""Property tests (#29): any tree the OS allows is scanned, indexed and rendered without a crash.

Trees of file names made of any bytes the OS takes (newlines, spaces, leading dashes,
invalid UTF-8, 255-byte names), symlinks of every shape (file loops, self loops,
directory loops, chains, dangling, escaping the root, absolute), empty and oversized
files, empty and deep trees; inside git and outside. The engine, as ``repo-map generate``
and ``navigator map`` run it, raises nothing but ``NavigatorError``; every file is either
in the map's file list or skipped with a known reason; nothing it hands on (map text,
metadata JSON) carries a lone surrogate.
"""

from __future__ import annotations

import contextlib
import errno
import io
import itertools
import json
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from durable_navigator.activities.skips import REASONS
from durable_navigator.navtypes.errors import NavigatorError
from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.repomap import RepoMap
from durable_navigator.repomap.cli_generate import run_generate
from durable_navigator.repomap.config import DiscoverConfig
from durable_navigator.repomap.fsnames import display_name
from durable_navigator.repomap.tokens import count_tokens

_SKIP_DIRS = {d.encode() for d in DiscoverConfig().skip_dirs}
MAX_FILE = DiscoverConfig().max_file_bytes
INTERESTING = [b"-rf", b"--help", b"a b.py", b"new\nline.py", b"tab\there.py", b"caf\xe9_latin1.py", b"\xff\xfe",
               b"x" * 255, b"\\x41.py", b"\\xe9.py", b".hidden", b"\xed\xa0\x80.py", b"\xc3\x28.js", b"back\\slash",
               b"\xe2\x80\xa8sep.md", b" lead", b"trail ", b"\x7fdel", b"\x1b[31mred.py", b"\xc2\x85nel"]
_BYTE = st.integers(1, 255).filter(lambda b: b != ord("/"))
NAMES = st.one_of(
    st.sampled_from(INTERESTING),
    st.lists(_BYTE, min_size=1, max_size=12).map(bytes),
    st.lists(_BYTE, min_size=200, max_size=255).map(bytes),
).filter(lambda n: n not in (b".", b"..", b".gitignore") and n not in _SKIP_DIRS)
SUFFIX = st.sampled_from([b"", b".py", b".js", b".md"])
CONTENT = st.sampled_from(["empty", "python", "text", "binary", "huge", "long_line"])
LINKS = st.sampled_from(["loop", "self", "dirloop", "parent", "chain", "dangling", "escape", "absolute"])


@dataclass(frozen=True)
class Entry:
    """One leaf of a generated tree: its directories, its name, and a file content or a symlink shape."""

    dirs: tuple[bytes, ...]
    name: bytes
    content: str | None
    link: str | None


ENTRIES = st.builds(
    Entry,
    dirs=st.one_of(st.lists(NAMES, max_size=3).map(tuple),
                   st.integers(10, 40).map(lambda n: (b"d",) * n)),  # deep (past PATH_MAX with long names)
    name=st.tuples(NAMES, SUFFIX).map(lambda t: t[0] + t[1] if len(t[0] + t[1]) <= 255 else t[0]),
    content=CONTENT,
    link=st.one_of(st.none(), st.none(), LINKS),
)
_PY = b"def handler(value):\n    '''Doc.'''\n    return value + 1\n\n\nclass Widget:\n    def run(self):\n        return 2\n"
_BODIES = {"empty": b"", "python": _PY, "text": b"plain words here\n" * 5, "binary": b"\x00\x01\x02" * 50,
           "huge": b"", "long_line": b"var a=" + b"1+" * 4000 + b"1;\n"}
_counter = itertools.count()


def _body(content: str) -> bytes:
    return b"x" * (MAX_FILE + 1) if content == "huge" else _BODIES[content]


def _make(root: bytes, outside: bytes, e: Entry) -> bytes | None:
    """Create one entry; its path relative to root, or None when the OS refuses it (too long, a clash)."""
    rel = b"/".join((*e.dirs, e.name))
    full = root + b"/" + rel
    try:
        os.makedirs(os.path.dirname(full), exist_ok=True)
        if os.path.lexists(full):
            return None
        if e.link is None:
            with open(full, "wb") as fh:
                fh.write(_body(e.content or "empty"))
        else:
            _link(root, outside, full, e.link)
    except OSError as exc:
        if exc.errno in (errno.ENAMETOOLONG, errno.EEXIST, errno.ENOTDIR, errno.EISDIR, errno.ENOENT):
            return None
        raise
    return rel


def _link(root: bytes, outside: bytes, full: bytes, shape: str) -> None:
    if shape == "loop":
        os.symlink(full + b".2", full)
        os.symlink(full, full + b".2")  # both ends are leaves of the tree
        return
    if shape == "chain":
        with open(full + b".target", "wb") as fh:
            fh.write(_PY)
        os.symlink(full + b".target", full + b".mid")
        os.symlink(full + b".mid", full)
        return
    target = {"self": full, "dirloop": b".", "parent": b"..", "dangling": b"missing-target",
              "escape": outside, "absolute": root + b"/absolute-target.py"}[shape]
    os.symlink(target, full)


def _leaves(root: bytes) -> set[str]:
    """Display forms of every non-directory under root (what must be shown or skipped)."""
    out: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirnames[:] = [d for d in dirnames if d != b".git"]
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            rel = name if rel_dir == b"." else rel_dir + b"/" + name
            out.add(display_name(os.fsdecode(rel)))
    return out


def _check_engine(root: Path, cache: Path, budget: int) -> None:
    try:
        rm = RepoMap.open(root, cache_dir=cache, jobs=1)
    except NavigatorError as exc:
        assert "\n" not in str(exc)
        return
    try:
        leaves = _leaves(os.fsencode(root))
        listed = set(rm.files) | set(rm.skipped_files)
        assert leaves <= listed, sorted(leaves - listed)[:5]
        assert set(rm.skipped_files.values()) <= set(REASONS), rm.skipped_files
        for p in rm.files:
            p.encode("utf-8")
            rm.read_lines(p, 1, 2)  # the code tools read a listed file by its display name
        for plan in (FlightPlan(token_budget=budget), FlightPlan(token_budget=budget, goal="handler value widget")):
            res = rm.render(plan)
            res.text.encode("utf-8")
            json.loads(res.metadata.model_dump_json())  # what a Temporal payload carries: fails on surrogates
            assert count_tokens(res.text) <= budget
    finally:
        rm.close()


def _check_cli(root: Path, cache: Path, budget: int) -> None:
    for fmt in ("text", "json"):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = run_generate(root, budget=budget, fmt=fmt, cache_dir=cache, jobs=1)
        assert code in (0, 2)
        out.getvalue().encode("utf-8")


def _tree(base: Path, entries: list[Entry], git: bool) -> Path:
    work = base / f"case{next(_counter)}"
    root = work / "repo"
    root.mkdir(parents=True)
    (work / "outside.py").write_text("SECRET = 1\n")
    (root / "absolute-target.py").write_text("def target():\n    return 1\n")
    for e in entries:
        _make(os.fsencode(root), os.fsencode(work / "outside.py"), e)
    if git:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, capture_output=True)
    return root


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow, HealthCheck.data_too_large])
@given(entries=st.lists(ENTRIES, max_size=8), git=st.booleans(),
       budget=st.sampled_from([120, 600, 4000, 40000]), empty=st.booleans())
def test_any_tree_is_shown_or_skipped_never_a_crash(tmp_path: Path, entries: list[Entry], git: bool,
                                                    budget: int, empty: bool) -> None:
    root = _tree(tmp_path, entries, git)
    if empty:  # the tree without its one plain file: maybe nothing indexable at all
        (root / "absolute-target.py").unlink()
    try:
        _check_engine(root, root.parent / "cache", budget)
        _check_cli(root, root.parent / "cache-cli", budget)
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)


def test_every_symlink_shape_at_once(tmp_path: Path) -> None:
    """The shapes side by side (a fixed case the generated ones vary around)."""
    entries = [Entry((), f"link-{shape}.py".encode(), None, shape)
               for shape in ("loop", "self", "dirloop", "parent", "chain", "dangling", "escape", "absolute")]
    root = _tree(tmp_path, entries, git=False)
    rm = RepoMap.open(root, cache_dir=tmp_path / "cache", jobs=1)
    assert {p: r for p, r in rm.skipped_files.items() if p.startswith("link-")} == {
        "link-loop.py": "symlink_loop", "link-loop.py.2": "symlink_loop", "link-self.py": "symlink_loop",
        "link-dirloop.py": "not_regular", "link-parent.py": "symlink_escape", "link-dangling.py": "dangling_symlink",
        "link-escape.py": "symlink_escape"}
    assert {"link-chain.py", "link-chain.py.mid", "link-chain.py.target", "link-absolute.py"} <= set(rm.files)
