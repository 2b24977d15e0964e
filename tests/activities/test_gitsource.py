"""A repository by git URL: the ref resolved by the CLI, the commit checked out from a host's mirror.

Real git, ``file://`` URLs of repositories the tests make (never the network).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from durable_navigator.activities.gitsource import checkout_commit, is_git_url, resolve_ref
from durable_navigator.navtypes.errors import RepoError


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@example.com", "HOME": str(repo)}).stdout.strip()


@pytest.fixture
def origin(tmp_path: Path) -> Path:
    repo = tmp_path / "origin"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text("def one():\n    return 1\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    _git(repo, "tag", "-a", "v1", "-m", "v1")
    return repo


@pytest.mark.parametrize(("text", "url"), [("https://github.com/a/b.git", True), ("git@github.com:a/b.git", True),
                                           ("file:///srv/b", True), ("ssh://h/b", True), ("./repo", False),
                                           ("/srv/app", False), ("https:/x", False)])
def test_what_counts_as_a_git_url(text: str, url: bool) -> None:
    assert is_git_url(text) is url


def test_refs_resolve_to_commits_and_bad_ones_say_what_to_do(origin: Path, tmp_path: Path) -> None:
    url = f"file://{origin}"
    head = _git(origin, "rev-parse", "HEAD")
    assert resolve_ref(url, "main") == resolve_ref(url, "HEAD") == resolve_ref(url, "v1") == head  # tag peeled
    with pytest.raises(RepoError, match=r"--ref nope is not a branch or tag of .* \(branches: main\)"):
        resolve_ref(url, "nope")
    with pytest.raises(RepoError, match="cannot be read .*check the URL"):
        resolve_ref(f"file://{tmp_path}/missing", "main")


def test_a_host_keeps_one_mirror_and_fetches_only_new_commits(origin: Path, tmp_path: Path) -> None:
    url, cache = f"file://{origin}", tmp_path / "cache"
    first = _git(origin, "rev-parse", "HEAD")
    tree = checkout_commit(url, first, cache)
    assert (tree / "app.py").read_text() == "def one():\n    return 1\n"
    assert _git(tree, "rev-parse", "HEAD") == first  # a checkout with its own .git: history and ls-files work
    (origin / "app.py").write_text("def two():\n    return 2\n")
    _git(origin, "commit", "-qam", "two")
    second = _git(origin, "rev-parse", "HEAD")
    assert (checkout_commit(url, second, cache) / "app.py").read_text() == "def two():\n    return 2\n"
    assert checkout_commit(url, first, cache) == tree  # kept: nothing fetched or checked out again
    assert len(list((cache / "mirrors").glob("*.git"))) == 1
    with pytest.raises(RepoError, match=f"commit {'0' * 40} is not in"):
        checkout_commit(url, "0" * 40, cache)


@pytest.mark.parametrize("url", ["--upload-pack=touch /tmp/x", "ext::sh -c id", "/srv/repo"])
def test_a_worker_refuses_what_is_not_a_git_url(url: str, tmp_path: Path) -> None:
    with pytest.raises(RepoError, match="is not a git URL"):
        checkout_commit(url, "0" * 40, tmp_path / "cache")
    assert not (tmp_path / "cache").exists()
