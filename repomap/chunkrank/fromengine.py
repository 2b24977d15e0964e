"""The chunk ranker's inputs read from an open engine (``RepoMap``): chunks, file ranking, history."""

from __future__ import annotations

import logging
import subprocess
import threading
from pathlib import Path
from typing import Any, Protocol

from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.repomap.chunkrank.chunks import STORE_FORMAT, RepoChunks
from durable_navigator.repomap.chunkrank.features import EngineView
from durable_navigator.repomap.chunkrank.parts import PartSource, file_parts
from durable_navigator.repomap.chunkrank.history import (MAX_COMMITS, RECENT_COMMITS, History, history_from_log,
                                                         history_text, load_history)
from durable_navigator.repomap.origin import origin_of



class RepoMap(PartSource, Protocol):
    """What the ranker reads of an open engine (``repomap.engine.RepoMap``; not imported: the
    engine's search imports this module, and the import graph stays acyclic)."""

    root: Any
    files: list[str]
    index_version: str

    def symbols(self, path: str) -> list[Any]: ...  # noqa: D102
    def rank(self, plan: FlightPlan) -> list[Any]: ...  # noqa: D102
    def derived_blob(self, kind: str) -> Any: ...  # noqa: D102
    def store_derived(self, kind: str, data: bytes) -> None: ...  # noqa: D102

__all__ = ["repo_chunks", "engine_view", "repo_history", "history_log"]

log = logging.getLogger("durable_navigator.repomap.chunkrank")

_CACHE: dict[str, RepoChunks] = {}
_LOCK = threading.Lock()
_MAX_REPOS = 4


def repo_chunks(engine: "RepoMap") -> RepoChunks:
    """The chunks of every indexed file, built once per engine root and index version."""
    key = f"{engine.root}\n{engine.index_version}"
    with _LOCK:
        got = _CACHE.get(key)
    if got is not None:
        return got
    got = _stored(engine)
    if got is None:
        # each file's chunks are cached by path and content: a new index version chunks its changed files
        files, parts, derived = file_parts(engine)
        got = RepoChunks.from_parts(files, parts)
        log.debug("chunk ranker: %d of %d files chunked now", derived, len(files))
        engine.store_derived(STORE_FORMAT, got.to_bytes())
    with _LOCK:
        if len(_CACHE) >= _MAX_REPOS:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = got
    return got


def _stored(engine: "RepoMap") -> RepoChunks | None:
    """The chunks stored with this index version in the engine's cache (a warm open: 40 s of reading
    and tokenising a 20,000-file repository saved), or ``None``."""
    blob = engine.derived_blob(STORE_FORMAT)
    if blob is None:
        return None
    try:
        got = RepoChunks.from_bytes(blob)
    except ValueError as exc:
        log.warning("chunk ranker: stored chunks unusable (%s); rebuilding them", exc)
        return None
    return got if set(got.files) <= set(engine.files) else None


def engine_view(engine: "RepoMap", goal: str) -> EngineView:
    """The engine's ranking of every file for ``goal`` (score, rank, signals)."""
    ranked = engine.rank(FlightPlan(goal=goal))
    return EngineView(score={r.path: r.score for r in ranked}, rank={r.path: i for i, r in enumerate(ranked)},
                      signals={r.path: r.signals for r in ranked})


def repo_history(root: Path, git_dir: Path | None = None, rev: str = "HEAD") -> History | None:
    """History of ``root`` (its ``.git``, or ``git_dir`` at ``rev``); None without a readable one.

    The revision is resolved to its commit first, so a long-running worker reads the log again
    after new commits (``load_history`` keeps the last few by commit) and never serves a stale one.
    A ``.git`` file (a worktree or submodule) points at its git dir; git follows it.
    """
    if git_dir is None:
        git_dir = Path(root) / ".git"
        if not git_dir.exists():
            # a snapshot of a git work tree, materialized without its .git: the log it was taken with
            origin = origin_of(root)
            return history_from_log(origin.log) if origin is not None else None
    sha = _resolve(Path(git_dir), rev)
    return load_history(Path(git_dir), sha) if sha else None


def history_log(root: Path) -> str:
    """The history text :func:`repo_history` parses for a snapshot of ``root`` (``""``: no history there):
    the ``git log``, and the commits' condensed diffs when the model for a tree with history
    (``model.ranker_for``) reads them: every listed commit's for its ``history_line`` group (reading
    3,000 commits' diffs costs seconds), the newest ``RECENT_COMMITS``' for its ``history_recent`` group."""
    from durable_navigator.repomap.chunkrank.model import HISTORY_MODEL_VERSION, load_ranker

    git_dir = Path(root) / ".git"
    sha = _resolve(git_dir, "HEAD") if git_dir.exists() else None
    if sha is None:
        return ""
    try:
        ranker = load_ranker(HISTORY_MODEL_VERSION)
        diffs = MAX_COMMITS if ranker.line_history else RECENT_COMMITS if ranker.recent else 0
        return history_text(git_dir, sha, diffs=diffs)
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _resolve(git_dir: Path, rev: str) -> str | None:
    """The commit ``rev`` names in ``git_dir`` (None: not a repository, no commit yet, no git)."""
    try:
        proc = subprocess.run(["git", f"--git-dir={git_dir}", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                              capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    out = proc.stdout.decode("ascii", "replace").strip()
    return out if proc.returncode == 0 and out else None
