"""Which source each job of a batch travels as: what :mod:`cli.sources` picks for one run, per repository.

* A job whose ``repo`` is a git URL: its ``ref`` (default ``HEAD``) is resolved to a commit while the
  jobs file is checked — one ``git ls-remote`` per URL and ref, a bad URL or ref is that job's problem
  line — and the job's locator names the commit (:class:`~navcore.run.sources.GitSource`); every worker
  host checks it out from its own mirror.
* A path, when the artifact store is an object store (workers share no disk with this machine): the
  tree is uploaded once per distinct path of the batch, just before the batch starts (content-addressed:
  only what the store lacks is sent), and every job of that path names the snapshot.
* A path otherwise (the embedded default, or a cluster whose workers see these paths): the path; the
  request is the one it always was.

Each snapshot and git source is said in one ``source: …`` line on stderr, as ``explore`` says its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from durable_navigator.activities.gitsource import is_git_url, resolve_ref
from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.errors import stderr
from durable_navigator.cli.runinput import check_repository
from durable_navigator.cli.sources import take_snapshot_of
from durable_navigator.cli.stores import is_shared_store
from durable_navigator.navcore.batch.batch import BatchJob, BatchRequest
from durable_navigator.navcore.run.sources import GitSource, is_reference, locator
from durable_navigator.navtypes.errors import RepoError

__all__ = ["GitRefs", "source_problems", "with_git_sources", "settle_batch_sources", "settled_batch"]


class GitRefs:
    """The commits the batch's git URL jobs name, each ``(url, ref)`` resolved once (its error too)."""

    def __init__(self) -> None:
        self._found: dict[tuple[str, str], str | RepoError] = {}

    def commit(self, url: str, ref: str) -> str:
        """The commit ``ref`` names at ``url`` (:func:`activities.gitsource.resolve_ref`); RepoError if none."""
        key = (url, ref)
        if key not in self._found:
            try:
                self._found[key] = resolve_ref(url, ref, named="ref")
            except RepoError as exc:
                self._found[key] = exc
        found = self._found[key]
        if isinstance(found, RepoError):
            raise found
        return found


def source_problems(job: BatchJob, refs: GitRefs, check_paths: bool, *, uploads: bool) -> list[tuple[str, str]]:
    """The job's repository problems as ``(jobs-file field, problem)``: a git URL whose ref names no commit,
    a ``ref`` given with a path, a path that is no repository here (when ``check_paths``; ``uploads``: the
    tree is read here to be uploaded, so the check cannot be skipped)."""
    if is_git_url(job.repo_path):
        try:
            refs.commit(job.repo_path, job.ref or "HEAD")
        except RepoError as exc:
            return [("ref" if job.ref else "repo", str(exc))]
        return []
    if job.ref is not None:
        return [("ref", f"ref names a commit of a git URL, and {job.repo_path} is a path; drop ref or give the "
                        "repository's URL (https://…, git@host:…, file://…)")]
    if not check_paths:
        return []
    try:
        check_repository(job.repo_path)
    except RepoError as exc:
        hint = ("the batch uploads each repository from this machine to the object store" if uploads
                else "or pass --no-check-repos when workers see other paths")
        return [("repo", f"{exc} ({hint})")]
    return []


def _say(line: str) -> None:
    stderr.print(f"source: {line}", markup=False, soft_wrap=True)


def with_git_sources(jobs: Sequence[BatchJob], refs: GitRefs) -> list[BatchJob]:
    """``jobs`` with each git URL job's locator naming its resolved commit (said once per URL and commit)."""
    said: set[str] = set()
    settled = []
    for job in jobs:
        if not is_git_url(job.repo_path):
            settled.append(job)
            continue
        ref = job.ref or "HEAD"
        source = GitSource(url=job.repo_path, ref=ref, commit=refs.commit(job.repo_path, ref))
        where = locator(source)
        if where not in said:
            said.add(where)
            _say(f"git {source.url} {ref} at commit {source.commit} (each worker fetches it)")
        settled.append(job.model_copy(update={"repo_path": where}))
    return settled


def settle_batch_sources(config: NavigatorConfig, req: BatchRequest) -> BatchRequest:
    """``req`` with every path job naming a snapshot when the store is an object store (one upload per
    distinct path, each said in one line); otherwise ``req`` itself (see the module docstring)."""
    paths = list(dict.fromkeys(job.repo_path for job in req.jobs if not is_reference(job.repo_path)))
    if not paths:
        return req
    if not is_shared_store(config):
        if config.temporal.address is not None:
            _say(f"paths of {len(paths)} repositor{'y' if len(paths) == 1 else 'ies'} (the workers of "
                 f"{config.temporal.address} must see them at these paths; configure artifacts: with an object "
                 "store to send snapshots instead)")
        return req
    snapshots: dict[str, str] = {}
    for path in paths:
        figures = take_snapshot_of(config, Path(path))
        _say(f"{figures.line()} (the workers share no disk with this machine)")
        snapshots[path] = locator(figures.source)
    jobs = [job.model_copy(update={"repo_path": snapshots.get(job.repo_path, job.repo_path)}) for job in req.jobs]
    return req.model_copy(update={"jobs": jobs})


async def settled_batch(config: NavigatorConfig, req: BatchRequest) -> BatchRequest:
    """:func:`settle_batch_sources` off the event loop (a snapshot reads and uploads trees)."""
    return await asyncio.to_thread(settle_batch_sources, config, req)
