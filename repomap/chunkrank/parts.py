"""Per-file chunk parts: each file chunked on its own, cached by path and content, joined into ``RepoChunks``.

A new index version (any edit) used to re-chunk and re-tokenise every file of the repository
(25 s for 20,000 files, one thread). A file's chunks depend only on its path (whose terms every
chunk counts) and its content (lines and symbols), so each file's :class:`FilePart` is stored in
the engine's cache under ``(PART_FORMAT, path, content key)``. The index's parse workers cut the
part of every file they index (``build._index_chunk``: bytes and symbols in hand); this module
reads the stored parts, chunks whatever is missing (an index of another layout, a file changed
since it was indexed) in worker processes when there are many, and joins them. A stored part is
checked before use (layout, lengths, column range); one that fails is derived again, never trusted.
"""

from __future__ import annotations

import logging
import marshal
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from durable_navigator.navtypes.errors import PathEscapeError
from durable_navigator.repomap.chunkrank.chunks import PART_FORMAT, FilePart, encode_part, file_part, part_key
from durable_navigator.repomap.fsnames import fs_path
from durable_navigator.repomap.pools import content_hash, pool_context
from durable_navigator.repomap.regular import read_regular
from durable_navigator.repomap.render import read_current
from durable_navigator.repomap.safepath import resolve_inside

__all__ = ["PART_FORMAT", "PartSource", "part_key", "encode_part", "decode_part", "file_parts"]

log = logging.getLogger("durable_navigator.repomap.chunkrank")

#: each worker task takes this share of a worker's files (the last tasks are small enough to balance)
_TASKS_PER_WORKER = 8


class PartSource(Protocol):
    """What the parts are read from: an open engine (``repomap.engine.RepoMap``)."""

    root: Any
    config: Any
    files: list[str]

    def current_text(self, path: str) -> tuple[str, str | None]: ...  # noqa: D102
    def content_keys(self, paths: list[str]) -> dict[str, tuple[str, bool]]: ...  # noqa: D102
    def symbol_spans(self, paths: list[str]) -> dict[str, list[tuple[int, int, str, str]]]: ...  # noqa: D102
    def derive_jobs(self, n_files: int) -> int: ...  # noqa: D102
    def derived_parts(self, keys: list[str]) -> dict[str, bytes]: ...  # noqa: D102
    def store_derived_parts(self, rows: list[tuple[str, bytes]]) -> None: ...  # noqa: D102


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
    """Whether ``p``'s pieces fit together (what assembling it relies on; cheap checks only: a torn
    blob fails to unmarshal, a foreign one has another format tag)."""
    n = len(p.starts)
    if not (type(p.n_lines) is int and p.n_lines >= 0 and (p.n_lines > 0 or n == 0)
            and isinstance(p.names, list) and isinstance(p.kinds, list) and isinstance(p.vocab, list)
            and len(p.ends) == len(p.names) == len(p.kinds) == n and len(p.indptr) == n + 1
            and len(p.cols) == len(p.counts)):
        return False
    if n == 0:
        return len(p.cols) == 0
    return (int(p.indptr[0]) == 0 and int(p.indptr[-1]) == len(p.cols) and int(p.starts[0]) >= 1
            and int(p.ends[-1]) <= p.n_lines and (len(p.cols) == 0 or int(p.cols.max()) < len(p.vocab)))


def file_parts(source: PartSource) -> tuple[list[str], list[FilePart], int]:
    """The chunked files of ``source`` (those with any line, in its order), their parts, and how many
    parts were derived now (the rest came from the cache).

    A stored part is used when the file's stat proves it still holds the content indexed (the
    engine's rule); every other file is read and chunked, in worker processes when there are many,
    and its part stored when the bytes read are the ones indexed.
    """
    files = source.files
    root, sniff = str(source.root), source.config.discover.binary_sniff_bytes
    ckeys = source.content_keys(files)
    keys = {p: part_key(p, k) for p, (k, _proven) in ckeys.items()}
    stored = source.derived_parts(list(keys.values()))
    parts: dict[str, FilePart] = {}
    for path, (ckey, proven) in ckeys.items():
        blob = stored.get(keys[path])
        if blob is None or not (proven or _holds(root, sniff, path, ckey)):
            continue  # a file whose stat proves nothing (racy: just written) is read to compare
        got = decode_part(blob)
        if got is not None:
            parts[path] = got
        else:
            log.warning("chunk ranker: stored chunks of %s unusable; chunking it again", path)
    missing = [p for p in files if p not in parts]
    if missing:
        syms = source.symbol_spans(missing)
        items = [(p, ckeys[p][0] if p in ckeys else "", syms[p]) for p in missing]
        rows: list[tuple[str, bytes]] = []
        for path, blob, same in _derive(root, sniff, items, source.derive_jobs(len(missing))):
            if blob is None:  # unreadable there: the engine notes why (vanished, binary); chunk what it reads
                text, _ = source.current_text(path)
                blob = encode_part(file_part(path, text.splitlines(), syms[path]))
            elif same:
                rows.append((keys[path], blob))
            got = decode_part(blob)
            if got is None:  # what this very program encoded: a bug, not a cache problem
                raise RuntimeError(f"chunk part of {path} does not read back")
            parts[path] = got
        source.store_derived_parts(rows)
    kept = [p for p in files if parts[p].n_lines > 0]  # a file without lines has no chunk and no row
    return kept, [parts[p] for p in kept], len(missing)


Item = tuple[str, str, list[tuple[int, int, str, str]]]
#: a derived part: ``(path, encoded part or None when unreadable, whether the bytes were the indexed ones)``
Derived = tuple[str, bytes | None, bool]


def _derive(root: str, sniff: int, items: list[Item], jobs: int) -> list[Derived]:
    """Each ``(path, indexed content key, symbols)`` read and chunked, in ``jobs`` processes."""
    if jobs <= 1:
        return _chunk_task(root, sniff, items)
    from concurrent.futures import ProcessPoolExecutor, as_completed  # cold path only

    size = max(1, -(-len(items) // (jobs * _TASKS_PER_WORKER)))
    out: list[Derived] = []
    with ProcessPoolExecutor(max_workers=jobs, mp_context=pool_context()) as pool:
        futures = [pool.submit(_chunk_task, root, sniff, items[i:i + size]) for i in range(0, len(items), size)]
        for fut in as_completed(futures):
            out.extend(fut.result())
    return out


def _chunk_task(root: str, sniff: int, items: list[Item]) -> list[Derived]:
    """Worker task: read each file as ``RepoMap.read_lines`` does (inside the root, text only), chunk it.

    The indexed bytes are read where the indexer read them (no symlink resolution: discovery
    vetted that path); bytes that differ from the index are read again through
    ``resolve_inside``, which refuses a path that now leads out of the root.
    """
    out: list[Derived] = []
    for path, key, syms in items:
        data = _read_indexed(root, sniff, path)
        same = data is not None and key.split(":", 1)[0] == content_hash(data)
        if not same:
            data = _read(root, sniff, path)
        if data is None:
            out.append((path, None, False))
            continue
        part = file_part(path, data.decode("utf-8", "replace").splitlines(), syms)
        out.append((path, encode_part(part), same))
    return out


def _read_indexed(root: str, sniff: int, path: str) -> bytes | None:
    """``path``'s bytes read as the indexer reads them (text only), or None."""
    try:
        data = read_regular(fs_path(root, path))
    except (OSError, ValueError):
        return None
    return None if b"\0" in data[:sniff] else data


def _read(root: str, sniff: int, path: str) -> bytes | None:
    """``path``'s bytes as ``RepoMap.read_lines`` reads them (inside the root, text only), or None."""
    try:
        data, _reason = read_current(resolve_inside(Path(root), path), sniff)
    except PathEscapeError:
        return None
    return data


def _holds(root: str, sniff: int, path: str, key: str) -> bool:
    """Whether ``path`` holds the content ``key`` names now (read and hashed)."""
    data = _read(root, sniff, path)
    return data is not None and key.split(":", 1)[0] == content_hash(data)
