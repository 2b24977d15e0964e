"""The cold parallel index: the ranking structure fed while the workers run is the one a build from
the cache makes; the tasks the workers get; what a worker loads."""

from __future__ import annotations

import marshal
import random
import shutil
from pathlib import Path

from durable_navigator.repomap import EngineConfig, RepoMap
from durable_navigator.repomap.rank import RankStructure, StructureFeed
from tests.support.repomap import FIXTURES, LANGUAGES


def _bytes(rs: RankStructure) -> tuple[object, bytes]:
    """The structure's file content: its header (decoded: marshal's byte form of equal values can
    differ with object identity) and the bytes of every array."""
    prefix, *parts = rs.to_buffers()
    return marshal.loads(bytes(prefix)[len(b"repomap-ranking\n") + 8:]), b"".join(bytes(p) for p in parts)


def _repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for lang in LANGUAGES:
        shutil.copytree(FIXTURES / lang, root / lang)
    # the same bytes under two paths (one record, two rows with their own path terms), a file
    # whose content another repository put in the cache first (not indexed now: its bag comes
    # from the cache), and files the index skips (no row)
    (root / "dup").mkdir()
    for name in ("a.py", "b.py", "c.py"):
        (root / "dup" / name).write_text("def shared_helper(value):\n    return value\n")
    (root / "seen.py").write_text("class SeenBefore:\n    '''Indexed by another repository.'''\n")
    (root / "blob.py").write_bytes(b"\0binary\0")
    (root / "notes.txt").write_text("plain text, no parser\n")
    return root


def test_cold_parallel_open_feeds_the_structure_a_cache_build_makes(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    other = tmp_path / "other"
    other.mkdir()
    (other / "seen.py").write_text("class SeenBefore:\n    '''Indexed by another repository.'''\n")
    RepoMap.open(other, cache_dir=cache, jobs=1)
    root = _repo(tmp_path)

    cfg = EngineConfig(parallel_min_files=1, index_chunk_files=1)
    fed = RepoMap.open(root, config=cfg, cache_dir=cache, jobs=2)
    assert fed._rs is not None  # built at open, from the bags the workers returned
    assert fed._built.feed is None  # and its buffers released
    assert fed.stats()["parsed_this_open"] > 0

    warm = RepoMap.open(root, config=cfg, cache_dir=cache, jobs=2)
    assert warm.stats()["parsed_this_open"] == 0 and warm._rs is None
    from_cache = RankStructure.build(warm.files, warm._stream_bags(), cfg.rank)
    assert _bytes(fed._rs) == _bytes(from_cache)
    assert _bytes(warm._structure()) == _bytes(from_cache)  # the stored file is the same structure


def test_serial_open_stays_lazy(tmp_path: Path) -> None:
    rm = RepoMap.open(_repo(tmp_path), cache_dir=tmp_path / "cache", jobs=1)
    assert rm._rs is None and rm._built.feed is None


def test_feed_order_never_shows(tmp_path: Path) -> None:
    """Bags fed in any row order, with rows renumbered afterwards, give the same bytes."""
    rm = RepoMap.open(_repo(tmp_path), cache_dir=tmp_path / "cache", jobs=1)
    bags = list(rm._stream_bags())
    want = _bytes(RankStructure.build(rm.files, iter(bags), rm.config.rank))
    for seed in range(5):
        shuffled = bags[:]
        random.Random(seed).shuffle(shuffled)
        feed = StructureFeed()
        # feed under temporary row numbers (the arrival order), then map them to the real rows
        for tmp_row, (row, bag) in enumerate(shuffled):
            feed.add(tmp_row, rm.files[row], bag)
            if tmp_row % 3 == 0:
                feed.split_new()  # names split in batches, as a cold index does
        import numpy as np

        feed.renumber_rows(np.asarray([row for row, _ in shuffled], dtype=np.int32))
        assert _bytes(feed.finish(rm.files, rm.config.rank)) == want, seed


def test_guided_chunks_shrink_and_cover_every_file_once() -> None:
    from durable_navigator.repomap.build import _guided_chunks

    rng = random.Random(7)
    paths = [f"f{i:04d}.py" for i in range(1500)]
    sizes = {p: int(rng.paretovariate(1.2) * 2000) for p in paths}
    chunks = _guided_chunks(paths, sizes, n_jobs=2, per_worker=16, max_files=100)
    assert sorted(p for c in chunks for p in c) == sorted(paths)
    assert max(map(len, chunks)) <= 100
    total = sum(sizes.values()) + len(paths)
    weights = [sum(sizes[p] + 1 for p in c) for c in chunks]
    # the last tasks are small (a worker is never left alone with a big one) ...
    assert max(weights[-4:]) <= total / 32
    # ... and the largest files go first
    firsts = [c[0] for c in chunks]
    assert [sizes[p] for p in firsts] == sorted((sizes[p] for p in firsts), reverse=True)
    assert _guided_chunks(paths[:1], sizes, 2, 16, 100) == [paths[:1]]


def test_an_index_worker_never_loads_the_token_length_table(tmp_path: Path) -> None:
    """Workers count with the tokenizer only; the table (≈30 ms to load) is for splitting an
    encode, which the parent does after them (it loads the table while they parse)."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from durable_navigator.repomap import build, tokens\n"
        "from durable_navigator.repomap.config import EngineConfig\n"
        "from durable_navigator.repomap.cache import IndexCache\n"
        "from durable_navigator.repomap.discover import discover\n"
        "cfg = EngineConfig(); root = Path(sys.argv[1])\n"
        "paths = [e.path for e in discover(root, cfg.discover).files]\n"
        "cache = IndexCache(Path(sys.argv[2]))\n"
        "out = build._index_chunk(str(root), paths, cfg.model_dump_json(), build.content_key_version(cfg),\n"
        "                         str(cache.path))\n"
        "assert sum(blobs is not None for _, _, blobs in out) > 3\n"
        "print(tokens.token_byte_lengths.cache_info().currsize)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(_repo(tmp_path)), str(tmp_path / "cache")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "0"


def test_names_split_at_once_equal_one_by_one() -> None:
    """The structure splits every distinct identifier of a repository in one pass
    (``split_identifiers``); each name gets exactly the terms ``split_identifier`` gives it."""
    from collections import Counter

    from durable_navigator.repomap.index import split_identifier, split_identifiers

    names = ["x", "_", "__init__", "foo_", "foo_foo", "a1", "x_y", "utf8", "utf16_codec", "HTTPServer", "URLs",
             "getURLsFor", "HTTP", "IOError", "_private", "CamelCase2D", "ALL_CAPS_9", "größe", "naïveCount",
             "s", "ss", "Ss", "sS", "ABCs", "ABCsx", "x2to3", "__", "a_b_c", "MAX_URLs_SIZE", "iOS", "CSSs"]
    rng = random.Random(3)
    alphabet = "abcXYZs_019é"
    names += ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 9))) for _ in range(3000)]
    owner, terms = split_identifiers(names)
    got = [Counter() for _ in names]
    for o, t in zip(owner.tolist(), terms):
        got[o][t] += 1
    assert got == [Counter(split_identifier(n)) for n in names]
    assert split_identifiers([])[1] == []
