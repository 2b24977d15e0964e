"""The ranking structure fed during a cold index is the one built from the cache afterwards, byte for byte."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.repomap import EngineConfig, RepoMap
from durable_navigator.repomap.rank import RankStructure, StructureFeed


def _bytes(rs: RankStructure) -> bytes:
    return b"".join(bytes(part) for part in rs.to_buffers())


def test_a_fed_cold_index_builds_the_same_structure_and_map(tmp_path: Path, multi_repo: Path) -> None:
    # a binary file: indexed (skipped), never ranked, so never fed
    (tmp_path / "repo").mkdir()
    root = tmp_path / "repo" / "r"
    shutil.copytree(multi_repo, root)
    (root / "blob.bin").write_bytes(b"\0\1\2" * 100)
    fed = RepoMap.open(root, config=EngineConfig(parallel_min_files=1, index_chunk_files=3),
                       cache_dir=tmp_path / "fed", jobs=2)
    assert fed._built.feed is not None
    plain = RepoMap.open(root, config=EngineConfig(parallel_min_files=10**6), cache_dir=tmp_path / "plain", jobs=1)
    assert plain._built.feed is None
    assert _bytes(fed._structure()) == _bytes(plain._structure())
    assert fed._built.feed is None  # dropped once used
    plan = FlightPlan(token_budget=700, goal="queue push and cart total")
    assert fed.render(plan).text == plain.render(plan).text


def test_feed_order_and_late_bags_do_not_matter(multi_engine: RepoMap) -> None:
    rm = multi_engine
    bags = dict(rm._stream_bags(skip=StructureFeed()))  # path -> bag as cached
    files = rm.files
    reference = _bytes(RankStructure.build(files, rm._stream_bags(), rm.config.rank))
    rng = random.Random(7)
    order = list(files)
    rng.shuffle(order)
    feed = StructureFeed()
    early = order[: len(order) // 2]
    for p in early:
        feed.add(p, bags[p])
    feed.add("not/indexed.py", next(iter(bags.values())))  # a fed path the index left out
    rest = [(p, bags[p]) for p in order[len(order) // 2:]]
    assert _bytes(feed.structure(files, rest, rm.config.rank)) == reference
