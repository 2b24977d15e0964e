"""A working tree in the artifact store, file by file: taken by the CLI, materialized by a worker.

The CLI lists the tree the way the engine will (``repomap.discover`` with the engine's default
configuration: the same ignore rules, size limit and skips), so the snapshot holds exactly the
files a by-path run would index — uncommitted changes included — each stored under its SHA-256.
A blob the store already holds is not sent again, so the second snapshot of the same tree uploads
only its manifest (path -> hash, size, mode). Files discovery skips by name or size (lock files,
minified bundles, oversized files) and skipped symlinks travel as placeholders, so the worker's
discovery lists the same skips and the pack is byte-identical to a by-path run's.

A worker materializes a manifest into ``<cache>/trees/<manifest sha256>``: blobs are downloaded
once per host into ``<cache>/blobs`` (hash-checked by the store) and hard-linked into each tree;
the tree is built in a temporary directory and renamed into place, so two activities building the
same tree at once both end with one complete tree, and a crash leaves no half tree under the name.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from durable_navigator.activities.artifacts import ArtifactStore, folder_put_in_place, make_ref
from durable_navigator.navcore.run.artifacts import ArtifactRef
from durable_navigator.navcore.run.sources import SNAPSHOT_MEDIA_TYPE, SnapshotSource
from durable_navigator.navtypes.errors import ArtifactError, RepoError
from durable_navigator.repomap.cache import own_dirs
from durable_navigator.repomap.config import EngineConfig
from durable_navigator.repomap.chunkrank.fromengine import history_log
from durable_navigator.repomap.discover import check_root, discover, git_commit
from durable_navigator.repomap.fsnames import fs_path
from durable_navigator.repomap.origin import Origin, write_origin

__all__ = ["Manifest", "SnapshotFigures", "take_snapshot", "materialize_snapshot"]

#: parallel HEAD/PUT requests while uploading (boto3 clients are thread-safe)
UPLOAD_THREADS = 8
#: skips whose files travel as placeholders (the worker's discovery skips them the same way)
_PLACEHOLDER_SKIPS = ("oversized", "lockfile", "minified")
_LINK_SKIPS = ("symlink_escape", "dangling_symlink", "symlink_loop")
_BLOB_MEDIA = "application/octet-stream"
_LOG_MEDIA = "text/plain; charset=utf-8"


def _relative(path: str) -> str:
    parts = PurePosixPath(path).parts
    if not path or path.startswith("/") or any(p in ("..", ".", "") for p in parts) or "\0" in path:
        raise ValueError(f"{path!r} is not a relative path inside the tree")
    return path


_Path = Annotated[str, Field(min_length=1, max_length=4096)]


class Manifest(BaseModel):
    """A snapshot: every file (path, SHA-256, size, mode), skipped symlinks and placeholders."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    version: Literal[1] = 1
    files: list[tuple[_Path, Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")], int, int]] = []
    #: symlinks discovery skips (escaping, dangling, loops): (path, target)
    links: list[tuple[_Path, str]] = []
    #: files discovery skips by name or size: (path, size) — recreated empty or sparse
    placeholders: list[tuple[_Path, int]] = []
    #: the origin's git HEAD (short) and its ``git log`` blob (sha256, size): see ``repomap.origin``
    commit: Annotated[str, Field(pattern=r"^[0-9a-f]{4,64}$")] | None = None
    history: tuple[Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")], int] | None = None

    @field_validator("files", "links", "placeholders")
    @classmethod
    def _inside(cls, rows: list[tuple]) -> list[tuple]:  # type: ignore[type-arg]
        for row in rows:
            _relative(row[0])  # a manifest from the store never writes outside its tree
        return rows


@dataclass(frozen=True)
class SnapshotFigures:
    """What a snapshot holds and what taking it sent."""

    source: SnapshotSource
    files: int
    bytes_total: int
    uploaded_files: int
    #: blob bytes sent (the manifest's own bytes are in ``manifest_bytes``)
    uploaded_bytes: int
    manifest_bytes: int

    def line(self) -> str:
        """One line for the terminal."""
        return (f"snapshot {self.source.manifest_sha256[:12]} of {self.source.label}: {self.files} files, "
                f"{self.bytes_total:,} B; uploaded {self.uploaded_files} files, {self.uploaded_bytes:,} B")


def _upload(store: ArtifactStore, root: Path, rel: str, first: Callable[[str], bool]) -> tuple[str, int, int, bool]:
    """(sha256, size, mode, whether it was sent) of one file; sent only when the store lacks it and no other
    file of the tree with the same bytes is being sent (``first(sha256)``)."""
    full = fs_path(root, rel)
    with open(full, "rb") as handle:
        data = handle.read()
    mode = 0o755 if os.stat(full).st_mode & stat.S_IXUSR else 0o644
    ref = make_ref(data, _BLOB_MEDIA, "")
    if not first(ref.sha256) or store.exists(ref):
        return ref.sha256, ref.size, mode, False
    store.put_bytes(data, _BLOB_MEDIA, "")
    return ref.sha256, ref.size, mode, True


def take_snapshot(root: Path, store: ArtifactStore) -> SnapshotFigures:
    """Upload the tree at ``root`` as the engine would index it; RepoError for a bad root."""
    real = check_root(root)
    disc = discover(real, EngineConfig().discover, own_dirs())
    rels = [entry.path for entry in disc.files]
    claimed: set[str] = set()
    lock = threading.Lock()

    def first(sha: str) -> bool:
        with lock:
            new = sha not in claimed
            claimed.add(sha)
        return new

    try:
        with ThreadPoolExecutor(UPLOAD_THREADS) as pool:
            sent = list(pool.map(lambda rel: _upload(store, real, rel, first), rels))
    except OSError as exc:
        raise RepoError(f"cannot read {exc.filename or real} for the snapshot ({exc.strerror or exc}); "
                        "fix its permissions or pass another repository") from None
    links, holders = [], []
    for rel, reason in sorted(disc.skipped_paths.items()):
        full = fs_path(real, rel)
        if reason in _LINK_SKIPS and os.path.islink(full):
            links.append((rel, os.readlink(full)))
        elif reason in _PLACEHOLDER_SKIPS:
            holders.append((rel, os.lstat(full).st_size if reason == "oversized" else 0))
    log = history_log(real).encode("utf-8")
    history = store.put_bytes(log, _LOG_MEDIA, f"git log of {real.name}") if log else None
    manifest = Manifest(files=[(rel, sha, size, mode) for rel, (sha, size, mode, _) in zip(rels, sent)],
                        links=links, placeholders=holders, commit=git_commit(real),
                        history=(history.sha256, history.size) if history is not None else None)
    data = manifest.model_dump_json().encode("utf-8")
    ref = store.put_bytes(data, SNAPSHOT_MEDIA_TYPE, f"snapshot of {real.name}")
    source = SnapshotSource(manifest_sha256=ref.sha256, manifest_size=ref.size, label=str(real))
    return SnapshotFigures(source=source, files=len(rels), bytes_total=sum(s[1] for s in sent),
                           uploaded_files=sum(1 for s in sent if s[3]), uploaded_bytes=sum(s[1] for s in sent if s[3]),
                           manifest_bytes=len(data))


def _blob(store: ArtifactStore, blobs: Path, sha: str, size: int) -> Path:
    """This host's copy of one blob (downloaded once, read-only: trees hard-link it)."""
    path = blobs / sha[:2] / sha
    if path.is_file():
        return path
    data = store.get_bytes(ArtifactRef(sha256=sha, size=size, media_type=_BLOB_MEDIA))  # hash-checked
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{sha[:12]}.", dir=path.parent)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.chmod(tmp, 0o444)
    try:
        # link, not replace: a blob a tree already links to must keep its inode (a concurrent download
        # replacing it would leave that tree with a private copy, and the disk no longer shared)
        os.link(tmp, path)
    except FileExistsError:
        pass  # another download of the same bytes got there first
    finally:
        os.unlink(tmp)
    return path


def _place(blob: Path, dest: Path, mode: int) -> None:
    dest.parent.mkdir(parents=True, exist_ok=True)
    if not mode & 0o111:
        try:
            os.link(blob, dest)  # no copy: every tree of this host shares the blob's bytes
            return
        except OSError:
            pass  # another file system, or links refused: a copy is the same tree
    shutil.copyfile(blob, dest)
    os.chmod(dest, 0o555 if mode & 0o111 else 0o444)


def _build(store: ArtifactStore, manifest: Manifest, blobs: Path, tree: Path) -> None:
    for rel, sha, size, mode in manifest.files:
        _place(_blob(store, blobs, sha, size), tree / rel, mode)
    for rel, size in manifest.placeholders:
        dest = tree / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        with open(dest, "wb") as handle:
            handle.truncate(size)  # sparse: an oversized file costs no disk, and is skipped again
    for rel, target in manifest.links:  # last: no file is ever written through a link
        dest = tree / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, dest)


def materialize_snapshot(store: ArtifactStore, source: SnapshotSource, cache: Path) -> Path:
    """The snapshot's tree on this host (``cache/trees/<sha256>``), built once (see the module docstring)."""
    trees = cache / "trees"
    final = trees / source.manifest_sha256
    if final.is_dir():
        return final
    ref = ArtifactRef(sha256=source.manifest_sha256, size=source.manifest_size, media_type=SNAPSHOT_MEDIA_TYPE)
    try:
        manifest = Manifest.model_validate_json(store.get_bytes(ref))
    except (ValidationError, UnicodeDecodeError):
        raise ArtifactError(f"snapshot {source.manifest_sha256[:12]} is not a snapshot manifest; take the "
                            "snapshot again (navigator explore PATH against the cluster)") from None
    # another activity may put the same tree in place first: identical by construction
    with folder_put_in_place(final, f".{source.manifest_sha256[:12]}.") as tmp:
        _build(store, manifest, cache / "blobs", tmp)
        if manifest.commit is not None or manifest.history is not None:
            # beside the tree, written before the tree is in place: a reader never sees one without the other
            sha, size = manifest.history or (None, 0)
            log = store.get_bytes(ArtifactRef(sha256=sha, size=size)).decode("utf-8") if sha else ""
            write_origin(final, Origin(manifest.commit, log))
    return final
