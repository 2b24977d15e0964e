"""A host's source cache pruned (``navigator gc --caches``): real snapshot trees and real git checkouts."""

from __future__ import annotations

import os
import time
from pathlib import Path

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.snapshot import take_snapshot
from durable_navigator.activities.source_cache import prune
from durable_navigator.activities.sources import SourceResolver
from durable_navigator.navcore.run.sources import GitSource, locator
from tests.support.cli import invoke, json_of
from tests.support.git import commit_all, git, init_repo

WEEK_S = 7 * 86400


def _age(path: Path, seconds: float) -> None:
    old = time.time() - seconds
    os.utime(path, (old, old))


def _repo(root: Path, text: str) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "app.py").write_text(text)
    (root / "pkg" / "shared.py").write_text("SHARED = 1\n")
    return root


def test_unused_snapshot_trees_and_their_unlinked_blobs_go_and_a_used_tree_stays(tmp_path: Path) -> None:
    store, cache = LocalArtifactStore(tmp_path / "artifacts"), tmp_path / "sources"
    resolve = SourceResolver(store, cache)
    old_tree = resolve(locator(take_snapshot(_repo(tmp_path / "a", "def old():\n    return 1\n"), store).source))
    new_tree = resolve(locator(take_snapshot(_repo(tmp_path / "b", "def new():\n    return 2\n"), store).source))
    _age(old_tree, 2 * WEEK_S)
    blobs = sorted((cache / "snapshots" / "blobs").glob("*/*"))
    for blob in blobs:
        _age(blob, 2 * WEEK_S)
    dry = prune(cache, WEEK_S, dry_run=True)
    assert dry.trees == [str(old_tree)] and old_tree.is_dir()
    got = prune(cache, WEEK_S)
    assert got.trees == [str(old_tree)] and not old_tree.exists()
    assert got.blobs == 1  # old.py's blob; shared.py's is still linked by the tree in use
    assert (new_tree / "pkg" / "shared.py").read_text() == "SHARED = 1\n"
    left = sorted((cache / "snapshots" / "blobs").glob("*/*"))
    assert len(left) == len(blobs) - 1 and all(b.stat().st_nlink > 1 for b in left)
    assert not [p for p in (cache / "snapshots" / "trees").iterdir() if p.name.startswith(".")]
    # a run naming the pruned snapshot again rebuilds it, as a new host would
    again = resolve(locator(take_snapshot(tmp_path / "a", store).source))
    assert again == old_tree and (again / "pkg" / "app.py").read_text() == "def old():\n    return 1\n"


def test_resolving_a_tree_marks_it_used(tmp_path: Path) -> None:
    store, cache = LocalArtifactStore(tmp_path / "artifacts"), tmp_path / "sources"
    source = locator(take_snapshot(_repo(tmp_path / "a", "x = 1\n"), store).source)
    tree = SourceResolver(store, cache)(source)
    _age(tree, 2 * WEEK_S)
    SourceResolver(store, cache)(source)  # a later run's activity on this host
    assert prune(cache, WEEK_S).trees == []


def test_a_mirror_goes_only_with_the_last_checkout_borrowing_its_objects(tmp_path: Path) -> None:
    origin = tmp_path / "origin"
    _repo(origin, "def one():\n    return 1\n")
    init_repo(origin)
    first = commit_all(origin, "one")
    (origin / "pkg" / "app.py").write_text("def two():\n    return 2\n")
    second = commit_all(origin, "two")
    cache = tmp_path / "sources"
    resolve = SourceResolver(LocalArtifactStore(tmp_path / "artifacts"), cache)
    url = f"file://{origin}"
    one = resolve(locator(GitSource(url=url, ref="HEAD", commit=first)))
    two = resolve(locator(GitSource(url=url, ref="HEAD", commit=second)))
    (mirror,) = (cache / "git" / "mirrors").glob("*.git")
    for path in (one, mirror):
        _age(path, 2 * WEEK_S)
    got = prune(cache, WEEK_S)
    assert got.trees == [str(one)] and got.mirrors == []  # the second checkout still borrows its objects
    assert git(two, "log", "-1", "--format=%s") == "two"
    _age(two, 2 * WEEK_S)
    got = prune(cache, WEEK_S)
    assert got.trees == [str(two)] and got.mirrors == [str(mirror)] and not mirror.exists()


def test_gc_caches_prunes_this_hosts_cache_without_temporal_or_a_store(tmp_path: Path) -> None:
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "XDG_CONFIG_HOME": str(tmp_path / "config"),
           "TEMPORAL_ADDRESS": "127.0.0.1:9"}  # nothing listens: the command must not need it
    cache = tmp_path / "cache" / "durable-navigator" / "sources"
    store = LocalArtifactStore(tmp_path / "artifacts")
    tree = SourceResolver(store, cache)(locator(take_snapshot(_repo(tmp_path / "a", "x = 1\n"), store).source))
    _age(tree, 2 * WEEK_S)
    kept = json_of(invoke(["gc", "--caches", "--dry-run", "--json"], env=env))
    assert kept["trees"] == [str(tree)] and kept["dry_run"] is True and tree.is_dir()
    done = json_of(invoke(["gc", "--caches", "--older-than", "1d", "--json"], env=env))
    assert done["trees"] == [str(tree)] and not tree.exists()
    bad = invoke(["gc", "--caches", "--older-than", "soon"], env=env)
    assert bad.exit_code == 2 and "write a number and a unit" in bad.stderr
