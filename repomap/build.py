"""Index building: stat/hash check against the cache, parse what changed (in parallel).

Warm start touches only ``stat``; a file whose stat key changed is re-hashed and
re-parsed only when its content hash is new. Cold parsing runs in a
``ProcessPoolExecutor`` with chunks of files per task so pickling stays small
(workers read the bytes themselves and return marshal blobs).

The stat shortcut (trust the recorded content hash while the stat is unchanged)
is the one place where the index could believe something it has not read. Its
key is (size, mtime_ns, ctime_ns, inode), as git's index does: size and mtime
alone are not proof -- copies and archives preserve mtimes, and two versions
of a file can share both -- while ctime and the inode change with every write
or replacement and cannot be set back by a user. A file stat'ed within
``RACY_WINDOW_NS`` of its own last change is recorded as *racy* and re-hashed
on the next open (git's "racy clean" rule): a second write inside the same
timestamp tick leaves every stat field equal.
"""

from __future__ import annotations

import gc
import hashlib
import marshal
import os
import time
from array import array
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from durable_navigator.repomap.cache import IndexCache
from durable_navigator.repomap.config import PARSER_VERSION, EngineConfig
from durable_navigator.repomap.discover import Discovery
from durable_navigator.repomap.fsnames import fs_path
from durable_navigator.repomap.chunkrank.chunks import file_part_blob, part_key
from durable_navigator.repomap.index import SYM, index_file, parser_for
from durable_navigator.repomap.parse_treesitter import tags_query_version
from durable_navigator.repomap.layout import file_line
from durable_navigator.repomap.pools import content_hash, pool_context
from durable_navigator.repomap.rank import StructureFeed
from durable_navigator.repomap.records import HEAD_FIELDS, Records
from durable_navigator.repomap.regular import read_regular
from durable_navigator.repomap.tokens import COUNTER_NAME, count_many, preload, token_byte_lengths

__all__ = ["BuiltIndex", "Progress", "build_index", "content_key", "content_key_version", "content_hash", "pool_context",
           "SNAPSHOT_FORMAT"]

#: layout of a stored snapshot: (format, paths, heads, path-line costs as int64 bytes)
SNAPSHOT_FORMAT = "snap-2"

#: ``progress(done, total)``: files of this (re)index done so far, of how many
Progress = Callable[[int, int], None]


@dataclass
class BuiltIndex:
    """The loaded index: per path its record (symbols read on use), plus its cache key and stats."""

    records: Records
    keys: dict[str, str]
    index_hash: str
    skipped: Counter[str] = field(default_factory=Counter)
    parsed: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)
    #: files read but not indexed: ``path -> reason`` (binary, minified, generated, unreadable)
    skipped_paths: dict[str, str] = field(default_factory=dict)
    #: content key of every file that was read, skipped ones included (for re-validation)
    all_keys: dict[str, str] = field(default_factory=dict)
    #: exact cost of each indexed file's path line without a why, in path order
    line_costs: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: the ranking structure fed with the bags indexed now, as the workers returned them
    #: (rows: positions in ``feed_order``; the engine adds the other files' bags from the
    #: cache and finishes it, unless the cache holds the structure); None when nothing was indexed
    feed: StructureFeed | None = None
    feed_order: list[str] = field(default_factory=list)
    fed: set[str] = field(default_factory=set)


#: a manifest entry: (size, mtime_ns, ctime_ns, inode, content key, racy)
ManifestEntry = tuple[int, int, int, int, str, bool]


def _trusted_key(prev: tuple | None, stat_key: tuple[int, int, int, int], version: str) -> str | None:
    """The recorded content key when the stat shortcut may be trusted, else None.

    ``IndexCache.load_manifest`` drops entries of any other layout, and a key
    of another engine version never ends in this one's: those files are re-hashed.
    """
    if prev is None or prev[5] or tuple(prev[:4]) != stat_key:
        return None
    return prev[4] if prev[4].endswith(version) else None


def content_key(data: bytes, path: str, version: str) -> str:
    """A file's cache key: its bytes, the parser its path selects, the engine version.

    Files with the same bytes share a record only when the same parser reads
    them (an empty ``__init__.py`` is Python, an empty ``.txt`` has no parser).
    """
    return f"{content_hash(data)}:{parser_for(path)}:{version}"


def content_key_version(cfg: EngineConfig) -> str:
    """Everything besides content that changes a file's record."""
    h = hashlib.blake2b(digest_size=6)
    h.update(PARSER_VERSION.encode())
    h.update(COUNTER_NAME.encode())  # token costs are part of every record
    h.update(tags_query_version().encode())
    h.update(cfg.discover.model_dump_json().encode())
    h.update(str(cfg.render.doc_max_lines).encode())
    return h.hexdigest()


@contextmanager
def _no_gc() -> Iterator[None]:
    """Pause the cyclic GC: ``ast.parse`` allocates millions of short-lived nodes.

    AST nodes hold no reference cycles, so reference counting frees them; the
    cyclic collector only re-scans every live object again and again (it costs
    a quarter of the parse time on the stdlib).
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


#: what a worker returns per file: (path, key, (head, symbols, bag) marshal blobs + the file's chunk part, or None)
IndexedFile = tuple[str, str, tuple[bytes, bytes, bytes, bytes] | None]
#: a symbol's (start, end, name, kind) fields: what the chunk ranker cuts chunks by
_S0, _S1, _SN, _SK = SYM["start"], SYM["end"], SYM["name"], SYM["kind"]


def _index_chunk(root: str, paths: list[str], cfg_json: str, version: str, db_path: str,
                 chunk_parts: bool = False) -> list[IndexedFile]:
    """Worker task: read and hash a chunk of files, index those the cache lacks (and, with
    ``chunk_parts``, cut each one's chunk-ranker part).

    Returns ``(path, key, blobs)``; blobs is None when the cache already holds
    that content (or this chunk indexed the same bytes already) and key is ""
    when the file is unreadable. Hashing here rather than in the parent keeps
    the cold path to one read of each file, split over the workers.
    """
    cfg = EngineConfig.model_validate_json(cfg_json)
    keyed: list[tuple[str, str, bytes]] = []
    out: list[IndexedFile] = []
    for rel in paths:
        try:
            data = read_regular(fs_path(root, rel))  # rel is a display name (fsnames); never a FIFO
        except OSError:
            out.append((rel, "", None))
            continue
        keyed.append((rel, content_key(data, rel, version), data))
    have = IndexCache.existing_keys_readonly(Path(db_path), [k for _, k, _ in keyed])
    with _no_gc():
        for rel, key, data in keyed:
            if key in have:
                out.append((rel, key, None))
                continue
            have.add(key)
            rec, bag = index_file(rel, data, cfg.discover, cfg.render)
            # the chunk ranker's part of an indexed file, while its bytes and symbols are in hand here
            # (one read, and the workers share the chunking: it was a single-threaded pass after the index)
            part = file_part_blob(rel, data, [(s[_S0], s[_S1], s[_SN], s[_SK]) for s in rec[HEAD_FIELDS]]) \
                if chunk_parts and not rec[0] else b""
            out.append((rel, key, (marshal.dumps(rec[:HEAD_FIELDS]), marshal.dumps(rec[HEAD_FIELDS]),
                                   marshal.dumps(bag), part)))
    return out


#: each task of a cold index takes this share of the bytes left per worker (guided self-scheduling)
_GUIDED_SHARE = 4


def _guided_chunks(paths: list[str], sizes: dict[str, int], n_jobs: int, per_worker: int,
                   max_files: int) -> list[list[str]]:
    """Files cut into tasks that shrink as the work left does, largest files first.

    Parse time grows with file size. Each task takes ``1 / (_GUIDED_SHARE * n_jobs)`` of the
    bytes left (never less than ``1 / (_GUIDED_SHARE * per_worker)`` of a worker's share, nor
    more than ``max_files`` files), so the tasks handed out last are small and the workers
    finish together: with equal tasks a worker could be left alone with a whole one.
    """
    order = sorted(paths, key=lambda r: (-sizes.get(r, 0), r))
    left = sum(sizes.get(r, 0) + 1 for r in order)
    floor = left / (_GUIDED_SHARE * per_worker * n_jobs)
    chunks: list[list[str]] = []
    chunk: list[str] = []
    got = 0
    for rel in order:
        chunk.append(rel)
        got += sizes.get(rel, 0) + 1
        if got >= max(left / (_GUIDED_SHARE * n_jobs), floor) or len(chunk) >= max_files:
            chunks.append(chunk)
            left -= got
            chunk, got = [], 0
    if chunk:
        chunks.append(chunk)
    return chunks


def build_index(disc: Discovery, cache: IndexCache, cfg: EngineConfig, jobs: int | None,
                progress: Progress | None = None, chunk_parts: bool = False) -> BuiltIndex:
    """Bring the cache up to date for ``disc`` and load every record.

    ``chunk_parts``: the workers also cut each file they index into the chunk ranker's part
    (the navigator's engines; a map alone never reads them, and they cost a cold index 40% more).

    ``progress(done, total)`` hears how many of the files to (re)index are done, from
    this thread, as results arrive (a chunk at a time); nothing when all are cached.
    """
    t0 = time.perf_counter()
    root = str(disc.root)
    version = content_key_version(cfg)
    old = cache.load_manifest(root)
    keys: dict[str, str] = {}
    stale: list[str] = []
    for e in disc.files:
        key = _trusted_key(old.get(e.path), e.stat_key, version)
        if key is not None:
            keys[e.path] = key
        else:
            stale.append(e.path)
    unreadable: list[str] = []
    t1 = time.perf_counter()
    sizes = {e.path: e.size for e in disc.files}
    # Workers index: this process would only wait for them, so it builds the ranking
    # structure from their bags meanwhile (the serial step after the index shrinks to
    # the structure's finish). In-process indexing has nothing to overlap: no feed.
    order = [e.path for e in disc.files]
    feed = StructureFeed() if _parallel(len(stale), jobs, cfg) else None
    fed: set[str] = set()
    fresh, parsed = _index_stale(root, stale, sizes, cfg, version, jobs, cache, keys, unreadable, progress,
                                 (feed, {p: i for i, p in enumerate(order)}, fed) if feed is not None else None,
                                 chunk_parts)
    t2 = time.perf_counter()
    manifest = {e.path: (*e.stat_key, keys[e.path], e.racy(disc.scanned_ns)) for e in disc.files if e.path in keys}
    if manifest != old:
        cache.save_manifest(root, manifest)
    built = _load_records(keys, cache, fresh)
    for rel in unreadable:
        built.skipped["unreadable"] += 1
        built.skipped_paths[rel] = "unreadable"
    built.skipped_paths = dict(sorted(built.skipped_paths.items()))
    built.parsed = parsed
    if fed:  # nothing fed (every content was cached: a re-hash of racy files): stay lazy
        built.feed, built.feed_order, built.fed = feed, order, fed
    built.timings_ms = {"stat": (t1 - t0) * 1e3, "parse": (t2 - t1) * 1e3,
                        "load": (time.perf_counter() - t2) * 1e3}
    return built


def _index_stale(root: str, paths: list[str], sizes: dict[str, int], cfg: EngineConfig, version: str,
                 jobs: int | None, cache: IndexCache, keys: dict[str, str],
                 unreadable: list[str], progress: Progress | None = None,
                 feeding: tuple[StructureFeed, dict[str, int], set[str]] | None = None,
                 chunk_parts: bool = False) -> tuple[dict[str, tuple], int]:
    """Hash and (where the cache lacks the content) index ``paths``, storing results as they arrive.

    Returns the record heads indexed now (``key -> head``, so loading does not
    read them back; symbols and bags are not kept) and how many files were parsed.
    ``feeding = (feed, row of each path, fed paths)``: each indexed file's bag is fed to the
    ranking structure as it arrives (this process would only wait for the workers meanwhile).
    """
    if not paths:
        return {}, 0
    args = (cfg.model_dump_json(), version, str(cache.path), chunk_parts)
    fresh: dict[str, tuple] = {}
    parsed = done = 0
    feed, row, fed = feeding if feeding is not None else (None, {}, set())
    if progress is not None:
        progress(0, len(paths))

    def take(chunk: list[IndexedFile]) -> None:
        nonlocal parsed, done
        rows = []
        parts = []
        for rel, key, blobs in chunk:
            if not key:
                unreadable.append(rel)  # vanished or unreadable since discovery
                continue
            keys[rel] = key
            if blobs is not None:
                rows.append((key, *blobs[:3]))
                if blobs[3]:
                    parts.append((part_key(rel, key), blobs[3]))
                head = fresh[key] = marshal.loads(blobs[0])
                if feed is not None and not head[0]:
                    feed.add(row[rel], rel, marshal.loads(blobs[2]))
                    fed.add(rel)
        parsed += len(rows)
        if feed is not None:
            feed.split_new()
        cache.put_blobs(rows)
        cache.put_parts(parts)
        done += len(chunk)
        if progress is not None:
            progress(done, len(paths))

    if not _parallel(len(paths), jobs, cfg):
        take(_index_chunk(root, paths, *args))
        return fresh, parsed
    n_jobs = _n_jobs(jobs)
    from concurrent.futures import ProcessPoolExecutor, as_completed  # cold path only

    ctx = pool_context()
    if ctx.get_start_method() == "fork":
        preload()  # load the tokenizer once here; forked workers inherit it
    # the file cap keeps each result (and the parent's memory while it is written) small on huge trees
    chunks = _guided_chunks(paths, sizes, n_jobs, cfg.chunks_per_worker, cfg.index_chunk_files)
    with ProcessPoolExecutor(max_workers=n_jobs, mp_context=ctx) as pool:
        # no list of the futures here: as_completed drops each one it yields, so a chunk's
        # result (its record blobs) is freed once taken, not kept until every chunk is done
        results = as_completed([pool.submit(_index_chunk, root, c, *args) for c in chunks])
        # what this process needs after the workers, loaded while they parse: the token
        # length table (the path lines' counts) and the structure's imports
        token_byte_lengths()
        if feed is not None:
            feed.prepare()
        for fut in results:
            take(fut.result())
    return fresh, parsed


def _n_jobs(jobs: int | None) -> int:
    return max(1, jobs or os.cpu_count() or 1)


def _parallel(n_paths: int, jobs: int | None, cfg: EngineConfig) -> bool:
    """Whether ``n_paths`` files to (re)index go to worker processes."""
    return _n_jobs(jobs) > 1 and n_paths >= cfg.parallel_min_files and n_paths > 0


def _load_records(keys: dict[str, str], cache: IndexCache, fresh: dict[str, tuple]) -> BuiltIndex:
    """Load every record head: one snapshot read when this exact index was seen before.

    ``fresh`` holds the heads just indexed; only the rest is read back. A new
    snapshot also stores each file's path-line cost (what every render prices
    first), so a warm open counts no tokens.
    """
    h = hashlib.blake2b(digest_size=16)
    for p in sorted(keys):
        h.update(f"{p}\0{keys[p]}\n".encode("utf-8", "surrogateescape"))
    ihash = h.hexdigest()
    snap = _snapshot(cache.get_snapshot(ihash))
    if snap is None:
        by_key = dict(fresh)
        by_key.update({k: v for k, v in cache.get_column("head", sorted(set(keys.values()) - by_key.keys())).items()
                       if _head_ok(v)})
        heads = {p: by_key[k] for p, k in sorted(keys.items()) if k in by_key}
        indexed = [p for p, head in heads.items() if not head[0]]
        costs = count_many([file_line(p, 1, heads[p][2], heads[p][3], []) for p in indexed])
        snap = heads, dict(zip(indexed, costs))
        cache.put_snapshot(ihash, (SNAPSHOT_FORMAT, list(heads), list(heads.values()),
                                   array("q", [snap[1].get(p, 0) for p in heads]).tobytes()))
    heads, line_costs = snap
    indexed: dict[str, tuple] = {}
    indexed_keys: dict[str, str] = {}
    skipped: Counter[str] = Counter()
    skipped_paths: dict[str, str] = {}
    for p, head in heads.items():
        if head[0]:
            skipped[head[0]] += 1
            skipped_paths[p] = head[0]
        else:
            indexed[p] = head
            indexed_keys[p] = keys[p]
    return BuiltIndex(records=Records(indexed, indexed_keys, _symbol_loader(cache)), keys=indexed_keys,
                      index_hash=ihash, skipped=skipped, skipped_paths=skipped_paths, all_keys=keys,
                      line_costs=np.asarray([line_costs[p] for p in indexed], dtype=np.int64))


def _symbol_loader(cache: IndexCache) -> Callable[[list[str]], dict[str, tuple]]:
    def load(keys: list[str]) -> dict[str, tuple]:
        return {k: v for k, v in cache.get_column("syms", keys).items() if isinstance(v, tuple)}
    return load


def _head_ok(head: object) -> bool:
    return (isinstance(head, tuple) and len(head) == HEAD_FIELDS and isinstance(head[0], str)
            and isinstance(head[2], int) and isinstance(head[3], int) and isinstance(head[6], tuple))


def _snapshot(value: object) -> tuple[dict[str, tuple], dict[str, int]] | None:
    """A stored snapshot as ``(heads, line costs)``, or None when it has another layout."""
    if not (isinstance(value, tuple) and len(value) == 4 and value[0] == SNAPSHOT_FORMAT):
        return None
    _fmt, paths, heads, costs = value
    if not (isinstance(paths, list) and isinstance(heads, list) and isinstance(costs, bytes)
            and len(paths) == len(heads) == len(costs) // 8 and all(map(_head_ok, heads))):
        return None
    return dict(zip(paths, heads)), dict(zip(paths, array("q", costs)))
