"""Where a run's repository comes from: a path, a snapshot in the artifact store, or a git commit.

A request names its source once, in one discriminated field (:data:`RepoSource`, validated by
pydantic when the request is built). Workflows and activities carry it on as one string, the
*locator* (``repo_root`` everywhere): the path itself for a path source (so every path request
and every recorded history reads as before), ``snapshot:<sha256>+<size>:<label>`` for a snapshot
the CLI uploaded, ``git:<commit>:<url>`` for a git commit. Any worker resolves a locator on its own
disk (``activities.sources``): a snapshot or a commit is the same tree on every host, so a run can
move between hosts; a path only means something to a host that has it.

What a user reads as "the repository" (the pack's ``Repository:`` line, an answer's header) is
:func:`display_root`: the path the snapshot was taken from, so a pack made from a snapshot is
byte-identical to one made from the same tree by path. Pure and deterministic: safe in workflows.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = ["PathSource", "SnapshotSource", "GitSource", "RepoSource", "SourcedRequest", "locator",
           "parse_locator", "display_root", "is_reference", "SNAPSHOT_MEDIA_TYPE"]

#: the media type of a snapshot's manifest blob
SNAPSHOT_MEDIA_TYPE = "application/vnd.durable-navigator.snapshot+json"

_SHA256 = r"[0-9a-f]{64}"
_COMMIT = r"[0-9a-f]{40}"
_SNAPSHOT = re.compile(rf"^snapshot:({_SHA256})\+(\d+):(.+)$", re.DOTALL)
_GIT = re.compile(rf"^git:({_COMMIT}):(.+)$", re.DOTALL)

_Text = Annotated[str, Field(min_length=1, max_length=4096)]


class PathSource(BaseModel):
    """A directory on the worker's own disk (a worker on the asking machine, or a shared mount)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["path"] = "path"
    path: _Text


class SnapshotSource(BaseModel):
    """A working tree the CLI uploaded file by file (uncommitted changes included), by its manifest."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["snapshot"] = "snapshot"
    #: SHA-256 and size of the manifest blob (path -> content hash, mode) in the artifact store
    manifest_sha256: Annotated[str, Field(pattern=rf"^{_SHA256}$")]
    manifest_size: int = Field(ge=0)
    #: where the tree was on the machine that took it: what the pack shows as the repository
    label: _Text


class GitSource(BaseModel):
    """A commit of a git repository every worker host can fetch (``https://``, ``ssh``, ``file://``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["git"] = "git"
    url: Annotated[str, Field(min_length=1, max_length=2048)]
    #: the ref the user named (branch, tag or commit), for the record
    ref: Annotated[str, Field(min_length=1, max_length=255)]
    #: the commit the ref named when the run was asked for: what every host checks out
    commit: Annotated[str, Field(pattern=rf"^{_COMMIT}$")]


RepoSource = Annotated[PathSource | SnapshotSource | GitSource, Field(discriminator="kind")]


def locator(source: PathSource | SnapshotSource | GitSource) -> str:
    """The one string workflows and activities carry for ``source`` (see the module docstring)."""
    if isinstance(source, SnapshotSource):
        return f"snapshot:{source.manifest_sha256}+{source.manifest_size}:{source.label}"
    if isinstance(source, GitSource):
        return f"git:{source.commit}:{source.url}"
    return source.path


def parse_locator(text: str) -> PathSource | SnapshotSource | GitSource:
    """The source a locator names; any string that is not a snapshot or git locator is a path."""
    snap = _SNAPSHOT.match(text)
    if snap:
        return SnapshotSource(manifest_sha256=snap.group(1), manifest_size=int(snap.group(2)), label=snap.group(3))
    git = _GIT.match(text)
    if git:
        return GitSource(url=git.group(2), ref=git.group(1), commit=git.group(1))
    return PathSource(path=text)


def is_reference(text: str) -> bool:
    """Whether ``text`` is a snapshot or git locator (resolved by a worker), not a path."""
    return bool(_SNAPSHOT.match(text) or _GIT.match(text))


def display_root(text: str) -> str:
    """What a user reads as the repository of locator ``text``: the path, the snapshot's origin, or url@commit."""
    source = parse_locator(text)
    if isinstance(source, SnapshotSource):
        return source.label
    if isinstance(source, GitSource):
        return f"{source.url}@{source.commit}"
    return source.path


class SourcedRequest(BaseModel):
    """The ``source`` field every run request has, and the locator its workflow carries.

    A request given ``repo_path`` (a path, or a locator handed on by a parent run to its child)
    is read as the source that string names, so callers and recorded histories that name a
    path keep working; ``source`` and ``repo_path`` together are refused.
    """

    source: RepoSource

    @model_validator(mode="before")
    @classmethod
    def _repo_path_names_a_source(cls, data: Any) -> Any:
        if isinstance(data, dict) and "repo_path" in data:
            if "source" in data:
                raise ValueError("give the repository as source or as repo_path, not both")
            given = data["repo_path"]
            data = {k: v for k, v in data.items() if k != "repo_path"}
            # a path is checked as the path field (an empty one is refused there)
            data["source"] = parse_locator(given) if isinstance(given, str) and is_reference(given) \
                else {"kind": "path", "path": given}
        return data

    @property
    def repo_path(self) -> str:
        """The source's locator: what the workflow carries as its repository root."""
        return locator(self.source)
