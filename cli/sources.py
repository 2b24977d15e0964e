"""Which source a run's repository travels as, picked by the command that asks, and said on stderr.

* ``REPO`` is a git URL (``https://``, ``ssh://``, ``git@host:``, ``file://``): the ref (``--ref``,
  default ``HEAD``) is resolved to a commit here, before anything starts, and the run names that
  commit (:class:`~navcore.run.sources.GitSource`); every worker host checks it out from its own mirror.
* ``REPO`` is a path and the artifact store is an object store (workers share no disk with this
  machine): the working tree — uncommitted changes included — is uploaded file by file by content
  (:mod:`activities.snapshot`), only what the store lacks, and the run names the snapshot.
* Otherwise (the embedded default, or a cluster whose workers see this path): the path, as before.

``--source path|snapshot`` overrides the pick for a path ``REPO`` (``auto``, the default, is the pick
above): ``path`` when the workers do see this path although the store is an object store (a shared
mount; it saves the upload), ``snapshot`` to freeze the tree as it is now even for workers on this
machine. A git URL travels as itself: ``--source`` other than ``auto`` is refused for it.

A cluster or git source is announced in one line on stderr (``source: …``); the local default says
nothing, as before.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, TypeVar

from durable_navigator.activities.gitsource import is_git_url, resolve_ref
from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.errors import CliError, stderr
from durable_navigator.cli.options import SOURCE_CHOICES
from durable_navigator.cli.runinput import check_repository
from durable_navigator.cli.stores import is_shared_store, open_artifact_store
from durable_navigator.navcore.run.sources import GitSource, PathSource, SourcedRequest
from durable_navigator.navtypes.errors import ArtifactError

__all__ = ["SOURCE_CHOICES", "source_fields", "settle_source", "settled_source"]

R = TypeVar("R", bound=SourcedRequest)


def source_fields(repo: Path | str, ref: str | None) -> dict[str, Any]:
    """The request's ``source``: a git commit (its ref resolved now) or a checked path."""
    text = str(repo) if isinstance(repo, Path) else repo
    if isinstance(repo, str) and is_git_url(text):
        name = ref or "HEAD"
        return {"source": GitSource(url=text, ref=name, commit=resolve_ref(text, name))}
    if ref is not None:
        raise CliError(f"--ref names a commit of a git URL, and {text} is a path; drop --ref or pass the "
                       "repository's URL (https://…, git@host:…, file://…)")
    return {"source": PathSource(path=str(check_repository(repo)))}


def _say(line: str) -> None:
    stderr.print(f"source: {line}", markup=False, soft_wrap=True)


def settle_source(config: NavigatorConfig, request: R, how: str = "auto") -> R:
    """``request`` with the source the workers can read, said in one line (see the module docstring).

    ``how`` (``--source``, one of :data:`SOURCE_CHOICES`): ``auto`` makes a path a snapshot when the artifact
    store is an object store (uploaded now); ``path`` / ``snapshot`` choose for a path REPO.
    """
    if how not in SOURCE_CHOICES:
        raise CliError(f"--source {how!r} is not one of {', '.join(SOURCE_CHOICES)}")
    source = request.source
    if isinstance(source, GitSource):
        if how != "auto":
            raise CliError(f"--source {how} says how a local REPO travels, and {source.url} is a git URL (each "
                           "worker fetches it); drop --source")
        _say(f"git {source.url} {source.ref} at commit {source.commit} (each worker fetches it)")
        return request
    if not isinstance(source, PathSource):
        return request
    shared = is_shared_store(config)
    if how == "snapshot" or (how == "auto" and shared):
        figures = take_snapshot_of(config, Path(source.path))
        why = "the workers share no disk with this machine" if how == "auto" else "--source snapshot"
        _say(f"{figures.line()} ({why})")
        return request.model_copy(update={"source": figures.source})
    if how == "path" and (shared or config.temporal.address is not None):
        where = f"the workers of {config.temporal.address}" if config.temporal.address else "the workers"
        _say(f"path {source.path} (--source path: {where} must see it at this path)")
    elif config.temporal.address is not None:
        _say(f"path {source.path} (the workers of {config.temporal.address} must see it at this path; configure "
             "artifacts: with an object store to send a snapshot instead)")
    return request


async def settled_source(config: NavigatorConfig, request: R, how: str = "auto") -> R:
    """:func:`settle_source` off the event loop (a snapshot reads and uploads the tree)."""
    return await asyncio.to_thread(settle_source, config, request, how)


def take_snapshot_of(config: NavigatorConfig, root: Path) -> Any:
    """Upload the tree at ``root`` to the configured store (:func:`activities.snapshot.take_snapshot`)."""
    # imported on use: the snapshot code loads the engine's discovery, which `navigator --help` must not
    from durable_navigator.activities.snapshot import take_snapshot

    store = open_artifact_store(config)
    try:
        return take_snapshot(root, store)
    except OSError as exc:  # the store went away mid-upload (StoreUnavailableError says where and what to check)
        raise ArtifactError(f"the snapshot of {root} was not uploaded: {exc}") from None
