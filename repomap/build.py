"""Index building: stat/hash check against the cache, parse what changed (in parallel).

Warm start touches only ``stat``; a file whose (size, mtime_ns) changed is
re-hashed and re-parsed only when its content hash is new. Cold parsing runs in
a ``ProcessPoolExecutor`` with chunks of files per task so pickling stays small
(workers read the bytes themselves and return marshal blobs).
"""

from __future__ import annotations

import hashlib
import marshal
import os
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from repomap.cache import IndexCache
from repomap.config import PARSER_VERSION, EngineConfig
from repomap.discover import Discovery
from repomap.index import index_file
from repomap.parse_treesitter import tags_query_version

__all__ = ["BuiltIndex", "build_index", "content_key_version"]


@dataclass
class BuiltIndex:
    """The loaded index: per path its record, plus its cache key and stats."""

    records: dict[str, tuple]
    keys: dict[str, str]
    index_hash: str
    skipped: Counter[str] = field(default_factory=Counter)
    parsed: int = 0
    timings_ms: dict[str, float] = field(default_factory=dict)


def content_key_version(cfg: EngineConfig) -> str:
    """Everything besides content that changes a file's record."""
    h = hashlib.blake2b(digest_size=6)
    h.update(PARSER_VERSION.encode())
    h.update(tags_query_version().encode())
    h.update(cfg.discover.model_dump_json().encode())
    h.update(str(cfg.render.doc_max_lines).encode())
    return h.hexdigest()


def _hash(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _index_chunk(root: str, paths: list[str], cfg_json: str, version: str) -> list[tuple[str, str, bytes, bytes]]:
    """Worker task: read, hash and index a chunk of files (returns marshal blobs)."""
    cfg = EngineConfig.model_validate_json(cfg_json)
    out = []
    for rel in paths:
        try:
            data = (Path(root) / rel).read_bytes()
        except OSError:
            out.append((rel, "", b"", b""))
            continue
        rec, bag = index_file(rel, data, cfg.discover, cfg.render)
        out.append((rel, f"{_hash(data)}:{version}", marshal.dumps(rec), marshal.dumps(bag)))
    return out


def build_index(disc: Discovery, cache: IndexCache, cfg: EngineConfig, jobs: int | None) -> BuiltIndex:
    """Bring the cache up to date for ``disc`` and load every record."""
    t0 = time.perf_counter()
    root = str(disc.root)
    version = content_key_version(cfg)
    old = cache.load_manifest(root)
    keys: dict[str, str] = {}
    stale: list[str] = []
    for e in disc.files:
        prev = old.get(e.path)
        if prev is not None and prev[0] == e.size and prev[1] == e.mtime_ns and prev[2].endswith(version):
            keys[e.path] = prev[2]
        else:
            stale.append(e.path)
    unreadable: Counter[str] = Counter()
    to_parse = _rehash(disc.root, stale, version, keys, cache, unreadable)
    t1 = time.perf_counter()
    _parse_all(root, to_parse, cfg, version, jobs, cache, keys, unreadable)
    t2 = time.perf_counter()
    stats = {e.path: e for e in disc.files}
    manifest = {p: (stats[p].size, stats[p].mtime_ns, k) for p, k in keys.items()}
    if manifest != old:
        cache.save_manifest(root, manifest)
    built = _load_records(keys, cache, version)
    built.skipped.update(unreadable)
    built.parsed = len(to_parse)
    built.timings_ms = {"stat_hash": (t1 - t0) * 1e3, "parse": (t2 - t1) * 1e3,
                        "load": (time.perf_counter() - t2) * 1e3}
    return built


def _rehash(root: Path, stale: list[str], version: str, keys: dict[str, str],
            cache: IndexCache, unreadable: Counter[str]) -> list[str]:
    """Hash files whose stat changed; return those whose content is not cached."""
    hashed: dict[str, str] = {}
    for rel in stale:
        try:
            hashed[rel] = f"{_hash((root / rel).read_bytes())}:{version}"
        except OSError:
            unreadable["unreadable"] += 1
    have = cache.existing_keys(hashed.values())
    to_parse = []
    for rel, key in hashed.items():
        if key in have:
            keys[rel] = key
        else:
            to_parse.append(rel)
    return to_parse


def _parse_all(root: str, paths: list[str], cfg: EngineConfig, version: str, jobs: int | None,
               cache: IndexCache, keys: dict[str, str], unreadable: Counter[str]) -> None:
    if not paths:
        return
    cfg_json = cfg.model_dump_json()
    n_jobs = max(1, jobs or os.cpu_count() or 1)
    size = cfg.index_chunk_files
    # balance: at least ~4 chunks per worker so one slow chunk does not idle the others
    size = max(1, min(size, len(paths) // (n_jobs * 4) or 1))
    chunks = [paths[i:i + size] for i in range(0, len(paths), size)]
    if n_jobs == 1 or len(paths) < cfg.parallel_min_files:
        results = [_index_chunk(root, c, cfg_json, version) for c in chunks]
    else:
        with ProcessPoolExecutor(max_workers=n_jobs) as pool:
            results = list(pool.map(_index_chunk, [root] * len(chunks), chunks,
                                    [cfg_json] * len(chunks), [version] * len(chunks)))
    rows = []
    for chunk in results:
        for rel, key, rec, bag in chunk:
            if not key:
                unreadable["unreadable"] += 1
                continue
            keys[rel] = key
            rows.append((key, rec, bag))
    cache.put_blobs(rows)


def _load_records(keys: dict[str, str], cache: IndexCache, version: str) -> BuiltIndex:
    """Load all records: one snapshot read when this exact index was seen before."""
    h = hashlib.blake2b(digest_size=16)
    for p in sorted(keys):
        h.update(f"{p}\0{keys[p]}\n".encode("utf-8", "surrogateescape"))
    ihash = h.hexdigest()
    blob = cache.get_named("snapshots", ihash)
    if blob is not None:
        records = marshal.loads(blob)
    else:
        by_key = cache.get_column("rec", sorted(set(keys.values())))
        records = {p: by_key[k] for p, k in keys.items() if k in by_key}
        cache.put_named("snapshots", ihash, marshal.dumps(records))
    built = BuiltIndex(records={}, keys={}, index_hash=ihash)
    for p in sorted(records):
        rec = records[p]
        if rec[0]:
            built.skipped[rec[0]] += 1
        else:
            built.records[p] = rec
            built.keys[p] = keys[p]
    return built
