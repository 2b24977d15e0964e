"""The on-disk cache never breaks when another engine version wrote it.

Seen in practice: two branches sharing ``~/.cache/durable-navigator`` crashed with
``'int' object has no attribute 'endswith'`` (a manifest entry of another layout).
Another version's data is either in files this version never opens (the schema
name is part of every file name) or, within one schema, a cache miss: the entry
is rebuilt, never trusted, never an error.
"""

from __future__ import annotations

import logging
import marshal
import shutil
import sqlite3
from pathlib import Path

import pytest

from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.repomap import RepoMap, build
from durable_navigator.repomap.cache import SCHEMA, IndexCache
from durable_navigator.repomap.tokens import count_tokens
from tests.support.repomap import FIXTURES

PLAN = FlightPlan(token_budget=600, goal="how does the ledger charge an account?",
                  focus_symbols=[{"symbol": "charge"}])


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "python", root)
    return root


def _render(root: Path, cache: Path) -> str:
    rm = RepoMap.open(root, cache_dir=cache, jobs=1)
    text = rm.render(PLAN).text
    assert count_tokens(text) <= PLAN.token_budget
    return text


def _db(cache: Path) -> sqlite3.Connection:
    return sqlite3.connect(IndexCache(cache).path)


def test_an_older_engines_files_are_never_opened_or_changed(repo: Path, tmp_path: Path) -> None:
    """The layout before schema names (``index-v1.sqlite3``, whatever it holds) is left alone."""
    cache = tmp_path / "cache"
    cache.mkdir()
    old = cache / "index-v1.sqlite3"
    conn = sqlite3.connect(old)
    conn.execute("CREATE TABLE stat_manifest (root TEXT PRIMARY KEY, blob BLOB NOT NULL)")
    # the crash: a 6-field entry whose key slot is an int
    conn.execute("INSERT INTO stat_manifest VALUES (?, ?)",
                 (str(repo.resolve()), marshal.dumps({"pkg/ledger.py": (1, 2, 3, 4, 5, "x")})))
    conn.commit()
    conn.close()
    before = old.read_bytes()
    fresh = _render(repo, tmp_path / "fresh")
    assert _render(repo, cache) == fresh
    assert old.read_bytes() == before
    assert (cache / f"repomap-{SCHEMA}.sqlite3").exists()


@pytest.mark.parametrize("entry", [
    (1, 2, 3, 4, 5, "not-a-key"),  # key slot holds an int (the reported crash)
    (1, 2, "k"),  # an older 3-field layout
    "garbage",
    (1, 2, 3, 4, "k:rm-0", False, "extra"),
])
def test_manifest_entries_of_another_layout_are_rehashed(repo: Path, tmp_path: Path, entry: object) -> None:
    cache = tmp_path / "cache"
    want = _render(repo, cache)
    root = str(repo.resolve())
    db = IndexCache(cache)
    manifest = db.load_manifest(root)
    assert manifest
    db.save_manifest(root, {p: entry for p in manifest})
    assert _render(repo, cache) == want
    assert IndexCache(cache).load_manifest(root) == manifest  # rewritten in this version's layout


def test_snapshot_blob_and_structure_of_another_layout_are_rebuilt(repo: Path, tmp_path: Path,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    cache = tmp_path / "cache"
    want = _render(repo, cache)
    conn = _db(cache)
    conn.execute("UPDATE snapshots SET blob=?", (marshal.dumps({"pkg/ledger.py": ("", "python")}),))
    conn.commit()
    conn.close()
    structures = list((cache / f"structures-{SCHEMA}").glob("*.rs"))
    assert structures
    structures[0].write_bytes(b"repomap-ranking\n" + b"\x00" * 7)  # torn / another layout
    with caplog.at_level(logging.WARNING):
        assert _render(repo, cache) == want
    assert any("structure" in r.getMessage() for r in caplog.records)
    # not marshal at all
    conn = _db(cache)
    conn.execute("UPDATE snapshots SET blob=?", (b"\xff\xfe not marshal",))
    conn.commit()
    conn.close()
    structures[0].write_bytes(b"")
    assert _render(repo, cache) == want


def test_symbols_of_another_layout_never_fail_a_render(repo: Path, tmp_path: Path) -> None:
    """Symbols are read when a file is shown: a bad row shows no outline, and the budget still holds."""
    cache = tmp_path / "cache"
    _render(repo, cache)
    conn = _db(cache)
    conn.execute("UPDATE blobs SET syms=?", (marshal.dumps(["not", "a", "tuple"]),))
    conn.commit()
    conn.close()
    _render(repo, cache)


def test_a_database_that_names_another_schema_is_rebuilt(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    want = _render(repo, cache)
    conn = _db(cache)
    conn.execute("UPDATE meta SET v='v-from-another-engine' WHERE k='schema'")
    conn.execute("DELETE FROM snapshots")
    conn.execute("UPDATE blobs SET head=?, syms=?, bag=?", (b"x", b"y", b"z"))
    conn.commit()
    conn.close()
    assert _render(repo, cache) == want
    assert _db(cache).execute("SELECT v FROM meta WHERE k='schema'").fetchone() == (SCHEMA,)


def test_two_engine_versions_alternating_on_one_cache(repo: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Two versions (record layouts keyed apart by PARSER_VERSION) take turns on one cache dir."""
    cache = tmp_path / "cache"
    want = _render(repo, tmp_path / "alone")
    for version in ("rm-other", build.PARSER_VERSION, "rm-other", build.PARSER_VERSION):
        monkeypatch.setattr(build, "PARSER_VERSION", version)
        rm = RepoMap.open(repo, cache_dir=cache, jobs=1)
        text = rm.render(PLAN).text
        if version != "rm-other":
            assert text == want
