"""Content-addressed artifact store: maps, prompts, decisions and results by reference.

:class:`ArtifactStore` is the interface (a shared object store for multi-host
workers implements the same four methods); :class:`LocalArtifactStore` keeps
blobs in a local directory as ``<root>/<aa>/<sha256>`` with atomic writes
(temp file + ``os.replace``), so a crash never leaves a half-written blob under
its final name, and a re-put of the same bytes is a no-op (idempotent retries).
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Protocol, runtime_checkable

import platformdirs

from durable_navigator.navcore.artifacts import SUMMARY_MAX_CHARS, ArtifactRef
from durable_navigator.navtypes.errors import ArtifactError

__all__ = ["ArtifactStore", "LocalArtifactStore", "default_artifact_dir", "make_ref", "atomic_write_bytes"]


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
        if not (path.exists() and path.stat().st_size == ref.size):
            atomic_write_bytes(path, data)
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
