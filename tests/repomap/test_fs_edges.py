"""Repository content at the edges (issue #29): symlink loops and names that are not UTF-8.

Each case once failed a run or printed a traceback; now the file is skipped with a
reason, or indexed and shown under its escaped display name (``repomap/fsnames.py``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from durable_navigator.navtypes.errors import PathEscapeError
from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.repomap import RepoMap
from durable_navigator.repomap.fsnames import display_name, fs_name, fs_path
from durable_navigator.repomap.safepath import resolve_inside

from tests.support.cli import invoke

LATIN1 = os.fsdecode(b"caf\xe9_latin1.py")  # a lone surrogate in Python: not valid UTF-8 on disk
SHOWN = "caf\\xe9_latin1.py"


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def alpha(x):\n    return x + 1\n")
    for i in range(30):  # enough files that a small budget renders some below full text (outlines)
        (root / f"m{i}.py").write_text(f"def f{i}(x):\n    '''doc'''\n    return x\n\nclass C{i}:\n    pass\n")
    return root


def _loop(root: Path) -> None:
    os.symlink("loop1", root / "loop2")
    os.symlink("loop2", root / "loop1")


def _latin1(root: Path) -> None:
    with open(os.path.join(os.fsencode(root), b"caf\xe9_latin1.py"), "wb") as fh:
        fh.write(b"def cafe_latin(value):\n    return value * 2\n")


def test_file_symlink_loop_is_skipped_with_a_reason(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    _loop(root)
    os.symlink(".", root / "selfdir")  # a directory loop: skipped before, still skipped
    rm = RepoMap.open(root, cache_dir=tmp_path / "c", jobs=1)
    assert rm.skipped_files["loop1"] == rm.skipped_files["loop2"] == "symlink_loop"
    assert rm.skipped_files["selfdir"] == "not_regular"
    assert "loop1" not in rm.files and rm.render(FlightPlan(token_budget=400)).text
    with pytest.raises(PathEscapeError):  # the code tools' path check: refused, not RuntimeError
        rm.read_lines("loop1", 1, 1)
    target = resolve_inside(root, "loop2/x.py")  # resolving a loop: a path (reading it fails), no RuntimeError
    assert target.parent.parent == root.resolve()
    with pytest.raises(OSError):
        target.read_bytes()


def test_dangling_symlink_is_skipped_as_dangling(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    os.symlink("missing.py", root / "dangling.py")
    rm = RepoMap.open(root, cache_dir=tmp_path / "c", jobs=1)
    assert rm.skipped_files["dangling.py"] == "dangling_symlink"


def test_non_utf8_name_is_indexed_and_shown_escaped(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    _latin1(root)
    rm = RepoMap.open(root, cache_dir=tmp_path / "c", jobs=1)
    assert SHOWN in rm.files
    for plan in (FlightPlan(token_budget=300), FlightPlan(token_budget=4000, default_level=4),
                 FlightPlan(token_budget=600, goal="cafe latin value")):
        res = rm.render(plan)  # outlines count tokens of path lines: the surrogate used to crash here
        res.text.encode("utf-8")
        json.dumps(res.metadata.model_dump(mode="json"))  # a Temporal payload: no lone surrogates
    full = rm.render(FlightPlan(token_budget=4000, default_level=4)).text
    assert f"{SHOWN} [L4" in full and "return value * 2" in full
    assert rm.read_lines(SHOWN, 1, 1) == "def cafe_latin(value):\n"
    assert [s.name for s in rm.symbols(SHOWN)] == ["cafe_latin"]
    assert any(h.path == SHOWN for h in rm.search("cafe_latin"))


def test_display_names_map_back_to_the_names_on_disk(tmp_path: Path) -> None:
    assert display_name(LATIN1) == SHOWN and fs_name(SHOWN) == LATIN1
    assert display_name("a\nb.py") == "a\\x0ab.py" and fs_name("a\\x0ab.py") == "a\nb.py"
    assert display_name("x\\y\udcff") == "x\\x5cy\\xff"  # backslashes escaped once a name is escaped
    assert display_name("plain \u00e9 name.py") == "plain \u00e9 name.py"
    assert fs_name("a\\x41.py") == "a\\x41.py"  # not an escape display_name would write: literal
    (tmp_path / "caf\\xe9_latin1.py").write_text("X = 1\n")  # literally named like the escaped form
    assert fs_path(tmp_path, SHOWN) == f"{tmp_path}/{SHOWN}"


def test_a_literal_name_clashing_with_an_escaped_one_wins(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    _latin1(root)
    (root / SHOWN).write_text("LITERAL = 1\n")
    rm = RepoMap.open(root, cache_dir=tmp_path / "c", jobs=1)
    assert SHOWN in rm.files and rm.skipped.get("name_clash") == 1
    assert rm.read_lines(SHOWN, 1, 1) == "LITERAL = 1\n"


def test_navigator_map_prints_no_traceback(tmp_path: Path) -> None:
    root = _repo(tmp_path)
    _loop(root)
    _latin1(root)
    res = invoke(["map", str(root), "--tokens", "300"], env={"NAVIGATOR_CACHE_DIR": str(tmp_path / "c")})
    assert res.exit_code == 0, res.output
    assert "Traceback" not in res.output and "a.py" in res.stdout
    res = invoke(["map", str(root), "--tokens", "4000", "--json"], env={"NAVIGATOR_CACHE_DIR": str(tmp_path / "c")})
    assert res.exit_code == 0 and SHOWN in json.loads(res.stdout)["text"]


def test_a_directory_too_deep_to_list_is_skipped_as_unreadable(tmp_path: Path) -> None:
    """A tree deeper than PATH_MAX (made with ``dir_fd``): its files were silently missing before."""
    root = _repo(tmp_path)
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(20):  # 20 x 251 bytes: past Linux's 4096-byte PATH_MAX
            os.mkdir("d" * 250, dir_fd=fd)
            sub = os.open("d" * 250, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = sub
        leaf = os.open("deep.py", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd)
        os.write(leaf, b"X = 1\n")
        os.close(leaf)
    finally:
        os.close(fd)
    rm = RepoMap.open(root, cache_dir=tmp_path / "c", jobs=1)
    unreadable = [p for p, r in rm.skipped_files.items() if r == "unreadable"]
    assert len(unreadable) == 1 and unreadable[0].startswith("d" * 250 + "/") and unreadable[0].endswith("/")
    assert "a.py" in rm.files
