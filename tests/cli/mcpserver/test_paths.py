"""Paths from an MCP client: resolved, readable, and inside the allowed roots (symlinks followed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from durable_navigator.cli.mcpserver.paths import AllowedRoots, PathRefused


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "allowed" / "repo" / "src").mkdir(parents=True)
    (tmp_path / "allowed" / "repo" / "README.md").write_text("hi")
    (tmp_path / "outside").mkdir()
    (tmp_path / "allowed" / "link-out").symlink_to(tmp_path / "outside")
    (tmp_path / "allowed" / "link-in").symlink_to(tmp_path / "allowed" / "repo")
    (tmp_path / "allowed-sibling").mkdir()  # shares a prefix with the root, is not under it
    return tmp_path


def test_a_repository_under_a_root_resolves(tree: Path) -> None:
    roots = AllowedRoots([tree / "allowed"])
    assert roots.repository(str(tree / "allowed" / "repo")) == (tree / "allowed" / "repo").resolve()
    assert roots.repository(str(tree / "allowed" / "link-in")) == (tree / "allowed" / "repo").resolve()
    assert roots.repository(f"  {tree / 'allowed' / 'repo' / 'src' / '..'}  ") == (tree / "allowed" / "repo")


@pytest.mark.parametrize("name, words", [
    ("outside", "outside the allowed roots"),
    ("allowed/link-out", "outside the allowed roots"),
    ("allowed/repo/../../outside", "outside the allowed roots"),
    ("allowed-sibling", "outside the allowed roots"),
    ("allowed/missing", "does not exist"),
    ("allowed/repo/README.md", "not a directory"),
])
def test_refusals_say_why(tree: Path, name: str, words: str) -> None:
    roots = AllowedRoots([tree / "allowed"])
    with pytest.raises(PathRefused, match=words):
        roots.repository(str(tree / name))


@pytest.mark.parametrize("text", ["", "   ", "a\x00b", "x" * 5000])
def test_unusable_text_is_refused_before_the_filesystem(tree: Path, text: str) -> None:
    with pytest.raises(PathRefused):
        AllowedRoots([tree / "allowed"]).repository(text)


def test_without_roots_any_readable_directory_is_allowed(tree: Path) -> None:
    roots = AllowedRoots()
    assert not roots.restricted
    assert roots.repository(str(tree / "outside")) == (tree / "outside").resolve()
    roots.recorded(None, "nav-x")  # nothing to check


def test_runs_of_other_trees_are_invisible(tree: Path) -> None:
    roots = AllowedRoots([tree / "allowed"])
    roots.recorded(str(tree / "allowed" / "repo"), "nav-a")
    for recorded in (str(tree / "outside"), None):
        with pytest.raises(PathRefused, match="not a run of a repository under the allowed roots"):
            roots.recorded(recorded, "nav-b")


def test_a_root_must_exist(tree: Path) -> None:
    with pytest.raises(PathRefused, match="--allow-root"):
        AllowedRoots([tree / "nope"])


def test_a_file_argument_is_checked_the_same_way(tree: Path) -> None:
    roots = AllowedRoots([tree / "allowed"])
    assert roots.file(str(tree / "allowed" / "repo" / "README.md"), "script").name == "README.md"
    with pytest.raises(PathRefused, match="not a readable file"):
        roots.file(str(tree / "allowed" / "repo"), "script")
