"""Content-addressed artifact store: maps, prompts, decisions and results by reference.

:class:`ArtifactStore` is the interface (a shared object store for multi-host
workers implements the same four methods); :class:`LocalArtifactStore` keeps
blobs in a local directory as ``<root>/<aa>/<sha256>`` with atomic writes
(temp file + ``os.replace``), so a crash never leaves a half-written blob under
its final name, and a re-put of the same bytes is a no-op (idempotent retries) but for
refreshing the time of a blob stored long ago (``navigator gc``'s age guard counts from the
last put). ``blobs`` / ``delete`` serve ``navigator gc``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Protocol, runtime_checkable

import platformdirs

from durable_navigator.navcore.run.artifacts import SUMMARY_MAX_CHARS, ArtifactRef
from durable_navigator.navtypes.errors import ArtifactError

__all__ = ["ArtifactStore", "LocalArtifactStore", "BlobInfo", "default_artifact_dir", "make_ref", "atomic_write_bytes",
           "folder_put_in_place",
           "REFRESH_AFTER_S"]

#: a re-put of a blob stored longer ago than this refreshes its time, so ``navigator gc``'s age guard
#: counts from the last put: a blob a run uses now is never "old", however long ago it was first stored
REFRESH_AFTER_S = 3600.0
_SHA = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class BlobInfo:
    """One stored blob, as ``navigator gc`` lists it."""

    sha256: str
    size: int
    #: when it was last put (a re-put older than :data:`REFRESH_AFTER_S` refreshes it)
    modified: datetime


def _summary(text: str) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= SUMMARY_MAX_CHARS else one_line[: SUMMARY_MAX_CHARS - 1] + "…"


def make_ref(data: bytes, media_type: str, summary: str) -> ArtifactRef:
    """The reference of ``data`` (hash + size + media type + one-line summary)."""
    return ArtifactRef(
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        media_type=media_type,
        summary=_summary(summary),
    )


@contextlib.contextmanager
def folder_put_in_place(final: Path, prefix: str) -> Iterator[Path]:
    """A temporary folder beside ``final`` to build in, renamed to ``final`` when the block ends.

    Readers never see a half-built ``final``. When another process put ``final`` in place first (the
    same content by construction: a cache keyed by content or commit), its folder stands and an
    ``OSError`` of ours is dropped; the temporary folder never stays behind.
    """
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=final.parent))
    try:
        yield tmp
        os.rename(tmp, final)
    except OSError:
        if not final.is_dir():
            raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temp file in the same directory + rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@runtime_checkable
class ArtifactStore(Protocol):
    """Where large data lives; workflows only ever see :class:`ArtifactRef`."""

    def put_bytes(self, data: bytes, media_type: str, summary: str = "") -> ArtifactRef:
        """Store ``data`` (idempotent) and return its reference."""
        ...

    def get_bytes(self, ref: ArtifactRef) -> bytes:
        """Return the bytes of ``ref``; raise ``ArtifactError`` if missing or corrupt."""
        ...

    def exists(self, ref: ArtifactRef) -> bool:
        """True when the store holds ``ref``'s bytes."""
        ...

    def location(self, ref: ArtifactRef) -> str:
        """A human-readable location (path or URL) for logs and reports."""
        ...


def default_artifact_dir() -> Path:
    """Where the local artifact store lives by default (user cache directory)."""
    return Path(platformdirs.user_cache_dir("durable-navigator")) / "artifacts"


class LocalArtifactStore:
    """An :class:`ArtifactStore` in a local directory."""

    def __init__(self, root: Path | str) -> None:
        self.root = Path(root).expanduser().resolve()
        self.root.mkdir(parents=True, exist_ok=True)

    def _path(self, sha256: str) -> Path:
        return self.root / sha256[:2] / sha256

    def put_bytes(self, data: bytes, media_type: str, summary: str = "") -> ArtifactRef:
        """Store ``data`` under its SHA-256 (skipped when already present)."""
        ref = make_ref(data, media_type, summary)
        path = self._path(ref.sha256)
        try:
            stat = path.stat()
        except FileNotFoundError:
            stat = None
        if stat is None or stat.st_size != ref.size:
            atomic_write_bytes(path, data)
        elif time.time() - stat.st_mtime > REFRESH_AFTER_S:
            os.utime(path)  # in use again: gc's age guard counts from now
        return ref

    def put_text(self, text: str, media_type: str = "text/plain; charset=utf-8", summary: str = "") -> ArtifactRef:
        """Store UTF-8 text."""
        return self.put_bytes(text.encode("utf-8"), media_type, summary or text[:SUMMARY_MAX_CHARS])

    def get_bytes(self, ref: ArtifactRef) -> bytes:
        """Read and verify the bytes of ``ref``."""
        path = self._path(ref.sha256)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise ArtifactError(
                f"artifact {ref.short} is not in {self.root}; point every worker at the same artifact store"
            ) from None
        if hashlib.sha256(data).hexdigest() != ref.sha256:
            raise ArtifactError(f"artifact {ref.short} at {path} is corrupt; delete it and re-run the step")
        return data

    def get_text(self, ref: ArtifactRef) -> str:
        """Read a UTF-8 text artifact."""
        return self.get_bytes(ref).decode("utf-8")

    def exists(self, ref: ArtifactRef) -> bool:
        """True when the blob is present with the right size."""
        path = self._path(ref.sha256)
        return path.exists() and path.stat().st_size == ref.size

    def location(self, ref: ArtifactRef) -> str:
        """The blob's path."""
        return str(self._path(ref.sha256))

    def blobs(self) -> Iterator[BlobInfo]:
        """Every blob in the directory (temp files and foreign names skipped)."""
        for folder in sorted(self.root.iterdir()):
            if not (folder.is_dir() and len(folder.name) == 2):
                continue
            for path in sorted(folder.iterdir()):
                if not (_SHA.match(path.name) and path.name[:2] == folder.name):
                    continue
                try:
                    stat = path.stat()
                except FileNotFoundError:  # deleted meanwhile (another gc)
                    continue
                yield BlobInfo(path.name, stat.st_size, datetime.fromtimestamp(stat.st_mtime, timezone.utc))

    def delete(self, sha256s: Iterable[str]) -> int:
        """Remove these blobs; how many were there."""
        removed = 0
        for sha in sha256s:
            try:
                self._path(sha).unlink()
                removed += 1
            except FileNotFoundError:
                pass
        return removed
