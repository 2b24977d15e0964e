"""A repository named by git URL + ref: resolved once by the CLI, checked out by each worker host.

The CLI resolves the ref to a commit with ``git ls-remote`` before anything starts (a URL that
cannot be read, or a ref that is not a branch or tag of it, is one line); the commit is what the
run records and what every host checks out, so a run that moves between hosts, a replay and an
export all name the same tree.

Each worker host keeps one bare mirror per URL under its cache directory and fetches into it only
when the commit is missing (incremental: git sends the objects the mirror lacks), under a lock per
mirror so two activities never fetch into it at once. The commit is checked out into
``<cache>/git/trees/<commit>`` — a clone sharing the mirror's objects, with its own ``.git`` (so the
engine lists files and reads history as in any checkout) — built in a temporary directory and
renamed into place.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import subprocess
from pathlib import Path

from durable_navigator.activities.artifacts import folder_put_in_place
from durable_navigator.navtypes.errors import RepoError

__all__ = ["is_git_url", "resolve_ref", "checkout_commit", "GIT_TIMEOUT_S"]

#: a fetch of a large repository on a slow link; the activity heartbeats meanwhile
GIT_TIMEOUT_S = 1800
_URL = re.compile(r"^(https?|ssh|git|file)://\S+$|^[\w.-]+@[\w.-]+:\S+$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


def is_git_url(text: str) -> bool:
    """Whether ``text`` names a git repository by URL (``https://``, ``ssh://``, ``git@host:``, ``file://``)."""
    return bool(_URL.match(text))


def _git(*args: str, cwd: Path | None = None, timeout: float = GIT_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    # never prompt for credentials: a worker has no terminal, and a CLI's question would hang the check
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "true"}
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                              env=env, check=False)
    except FileNotFoundError:
        raise RepoError("git is not installed here; install git to use a repository by URL") from None
    except subprocess.TimeoutExpired:
        raise RepoError(f"git {args[0]} took longer than {timeout:.0f} s; check the network and the URL") from None


def _first_error(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
    return (lines[0] if lines else f"exit {proc.returncode}")[:200]


def resolve_ref(url: str, ref: str, *, named: str = "--ref") -> str:
    """The commit ``ref`` (a branch, tag, ``HEAD`` or a full commit) names at ``url``; RepoError if none
    (``named``: how the user gave the ref — the option, or a jobs file's field — for the error line)."""
    proc = _git("ls-remote", "--", url, timeout=120)
    if proc.returncode != 0:
        raise RepoError(f"git repository {url} cannot be read ({_first_error(proc)}); check the URL and "
                        f"your access to it (`git ls-remote {url}`)")
    refs: dict[str, str] = {}
    for line in proc.stdout.splitlines():
        sha, _, name = line.partition("\t")
        refs[name] = sha
    if _COMMIT.match(ref):
        return ref  # a commit is fetched by the worker; git cannot list commits without fetching them
    for name in (ref, f"refs/heads/{ref}", f"refs/tags/{ref}^{{}}", f"refs/tags/{ref}"):
        if name in refs:
            return refs[name]
    heads = sorted(n.removeprefix("refs/heads/") for n in refs if n.startswith("refs/heads/"))[:5]
    known = f" (branches: {', '.join(heads)})" if heads else ""
    given = f"{named} {ref}" if named.startswith("-") else f"{named}: {ref}"
    raise RepoError(f"{given} is not a branch or tag of {url}{known}; pass {named} with one of them or a "
                    "full commit")


def _mirror(url: str, root: Path) -> Path:
    """The host's bare mirror of ``url`` (created on first use)."""
    mirrors = root / "mirrors"
    path = mirrors / f"{hashlib.sha256(url.encode()).hexdigest()[:24]}.git"
    if path.is_dir():
        return path
    with folder_put_in_place(path, ".mirror.") as tmp:
        for args in (("init", "-q", "--bare", str(tmp)),
                     ("-C", str(tmp), "remote", "add", "--mirror=fetch", "origin", url)):
            proc = _git(*args, timeout=60)
            if proc.returncode != 0:
                raise RepoError(f"cannot create a git mirror in {mirrors} ({_first_error(proc)}); check the cache "
                                "directory's permissions")
    return path


def _has_commit(mirror: Path, commit: str) -> bool:
    return _git("--git-dir", str(mirror), "cat-file", "-e", f"{commit}^{{commit}}", timeout=60).returncode == 0


def _fetch(url: str, mirror: Path, commit: str) -> None:
    """Fetch into the mirror until it has ``commit`` (one fetcher per mirror at a time)."""
    with open(f"{mirror}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if _has_commit(mirror, commit):
            return  # another activity fetched it while this one waited
        proc = _git("--git-dir", str(mirror), "fetch", "-q", "--prune", "origin")
        if proc.returncode != 0:
            raise RepoError(f"git fetch of {url} failed ({_first_error(proc)}); check that this worker can "
                            "reach the URL")
        if not _has_commit(mirror, commit):
            # a commit no branch or tag holds: servers that allow it send it by name
            _git("--git-dir", str(mirror), "fetch", "-q", "origin", commit)
        if not _has_commit(mirror, commit):
            raise RepoError(f"commit {commit} is not in {url}; pass a --ref the repository has")


def checkout_commit(url: str, commit: str, cache: Path) -> Path:
    """``commit`` of ``url`` checked out on this host (``cache/trees/<commit>``), fetched if missing."""
    if not is_git_url(url) or not _COMMIT.match(commit):
        # a locator from a run's history, not typed here: refuse what the CLI would never have sent
        raise RepoError(f"{url!r} at {commit!r} is not a git URL and commit; start the run with a git URL REPO")
    trees = cache / "trees"
    final = trees / commit
    if final.is_dir():
        return final
    mirror = _mirror(url, cache)
    if not _has_commit(mirror, commit):
        _fetch(url, mirror, commit)
    with folder_put_in_place(final, f".{commit[:12]}.") as tmp:
        for args in (("clone", "-q", "--shared", "--no-checkout", str(mirror), str(tmp)),
                     ("-C", str(tmp), "checkout", "-q", "--detach", commit)):
            proc = _git(*args)
            if proc.returncode != 0:
                raise RepoError(f"cannot check out {commit[:12]} of {url} ({_first_error(proc)}); check the "
                                "cache directory's space and permissions")
    return final
