"""Per-file chunk parts: each file chunked on its own, cached by path and content, joined into ``RepoChunks``.

A new index version (any edit) used to re-chunk and re-tokenise every file of the repository
(25 s for 20,000 files). A file's chunks depend only on its path (whose terms every chunk
counts) and its content (lines and symbols), so each file's :class:`FilePart` is stored in the
engine's cache under ``(PART_FORMAT, path, content key)``: a refresh chunks the changed files
only, and a cold build chunks its files in worker processes. A stored part is checked before
use (layout, lengths, column range); one that fails is derived again, never trusted.
"""

from __future__ import annotations

import hashlib
import logging
import marshal
from typing import Any, Protocol

import numpy as np

from durable_navigator.repomap.build import pool_context
from durable_navigator.repomap.chunkrank.chunks import STORE_FORMAT, FilePart, file_part

__all__ = ["PART_FORMAT", "PartSource", "part_key", "encode_part", "decode_part", "file_parts"]

log = logging.getLogger("durable_navigator.repomap.chunkrank")

#: the layout of one stored part; it names the chunking and tokenisation (``STORE_FORMAT``)
PART_FORMAT = f"{STORE_FORMAT}-part-1"
#: each worker task takes this share of a worker's files (the last tasks are small enough to balance)
_TASKS_PER_WORKER = 8


class PartSource(Protocol):
    """What the parts are read from: an open engine (``repomap.engine.RepoMap``)."""

    files: list[str]

    def current_text(self, path: str) -> tuple[str, str | None]: ...  # noqa: D102
    def symbol_spans(self, paths: list[str]) -> dict[str, list[tuple[int, int, str, str]]]: ...  # noqa: D102
    def derive_jobs(self, n_files: int) -> int: ...  # noqa: D102
    def derived_parts(self, keys: list[str]) -> dict[str, bytes]: ...  # noqa: D102
    def store_derived_parts(self, rows: list[tuple[str, bytes]]) -> None: ...  # noqa: D102


def part_key(path: str, content_key: str) -> str:
    """The cache key of ``path``'s part when it holds the content ``content_key`` names."""
    return hashlib.blake2b(f"{PART_FORMAT}\n{path}\n{content_key}".encode(), digest_size=16).hexdigest()


def encode_part(part: FilePart) -> bytes:
    """``part`` as a marshal blob in :data:`PART_FORMAT`."""
    return marshal.dumps((PART_FORMAT, part.n_lines, part.starts.tobytes(), part.ends.tobytes(), part.names,
                          part.kinds, part.vocab, part.cols.tobytes(), part.counts.tobytes(), part.indptr.tobytes()))


def decode_part(blob: bytes) -> FilePart | None:
    """The part :func:`encode_part` wrote, or ``None`` for another layout or a torn or inconsistent blob."""
    try:
        t = marshal.loads(blob)
        if not (isinstance(t, tuple) and len(t) == 10 and t[0] == PART_FORMAT):
            return None
        _, n_lines, sb, eb, names, kinds, vocab, cb, nb, pb = t
        part = FilePart(n_lines, np.frombuffer(sb, dtype=np.int64), np.frombuffer(eb, dtype=np.int64), names,
                        kinds, vocab, np.frombuffer(cb, dtype=np.int32), np.frombuffer(nb, dtype=np.int32),
                        np.frombuffer(pb, dtype=np.int32))
    except (EOFError, ValueError, TypeError):
        return None
    return part if _consistent(part) else None


def _consistent(p: FilePart) -> bool:
    """Whether ``p``'s pieces fit together (what assembling it relies on)."""
    n = len(p.starts)
    if not (type(p.n_lines) is int and p.n_lines > 0 and isinstance(p.names, list) and isinstance(p.kinds, list)
            and isinstance(p.vocab, list) and len(p.ends) == len(p.names) == len(p.kinds) == n
            and len(p.indptr) == n + 1 and len(p.cols) == len(p.counts)
            and all(type(s) is str for s in (*p.names, *p.kinds, *p.vocab))):
        return False
    ip = p.indptr
    return (int(ip[0]) == 0 and int(ip[-1]) == len(p.cols) and bool(np.all(np.diff(ip) >= 0))
            and (len(p.cols) == 0 or (int(p.cols.min()) >= 0 and int(p.cols.max()) < len(p.vocab)))
            and bool(np.all((p.starts >= 1) & (p.starts <= p.ends) & (p.ends <= p.n_lines))))


def file_parts(source: PartSource) -> tuple[list[str], list[FilePart], int]:
    """The chunked files of ``source`` (those with any line, in its order), their parts, and how many
    parts were derived now (the rest came from the cache)."""
    texts: dict[str, str] = {}
    keys: dict[str, str] = {}
    for path in source.files:
        text, ckey = source.current_text(path)
        if text:  # an empty file has no chunks (and no row)
            texts[path] = text
            if ckey is not None:  # changed since it was indexed: chunked now, never stored under that key
                keys[path] = part_key(path, ckey)
    kept = list(texts)
    stored = source.derived_parts(list(keys.values()))
    parts: dict[str, FilePart] = {}
    for path, key in keys.items():
        blob = stored.get(key)
        got = decode_part(blob) if blob is not None else None
        if got is not None:
            parts[path] = got
        elif blob is not None:
            log.warning("chunk ranker: stored chunks of %s unusable; chunking it again", path)
    missing = [p for p in kept if p not in parts]
    if missing:
        syms = source.symbol_spans(missing)
        blobs = _derive([(p, texts[p], syms[p]) for p in missing], source.derive_jobs(len(missing)))
        source.store_derived_parts([(keys[p], b) for p, b in blobs.items() if p in keys])
        for p, b in blobs.items():
            got = decode_part(b)
            if got is None:  # what this very process encoded: a bug, not a cache problem
                raise RuntimeError(f"chunk part of {p} does not read back")
            parts[p] = got
    return kept, [parts[p] for p in kept], len(missing)


def _derive(items: list[tuple[str, str, list[tuple[int, int, str, str]]]], jobs: int) -> dict[str, bytes]:
    """``path -> encoded part`` of each ``(path, text, symbols)``, in ``jobs`` processes."""
    if jobs <= 1:
        return dict(_chunk_task(items))
    from concurrent.futures import ProcessPoolExecutor, as_completed  # cold path only

    size = max(1, -(-len(items) // (jobs * _TASKS_PER_WORKER)))
    out: dict[str, bytes] = {}
    with ProcessPoolExecutor(max_workers=jobs, mp_context=pool_context()) as pool:
        for fut in as_completed([pool.submit(_chunk_task, items[i:i + size]) for i in range(0, len(items), size)]):
            out.update(fut.result())
    return out


def _chunk_task(items: list[tuple[str, str, list[Any]]]) -> list[tuple[str, bytes]]:
    """Worker task: chunk and encode each ``(path, text, symbols)``."""
    return [(path, encode_part(file_part(path, text.splitlines(), syms))) for path, text, syms in items]
