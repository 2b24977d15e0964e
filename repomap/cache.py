"""Persistent index cache: stdlib sqlite3 under the user cache dir, never in the repository.

Tables (all values are ``marshal`` blobs: the fastest stdlib codec for tuples):

* ``blobs``: ``key -> (record, bag)`` where key = content hash (blake2b) + version;
* ``stat_manifest``: one row per repository root:
  ``path -> (size, mtime_ns, ctime_ns, inode, key, racy)`` so a warm start only
  stats files, re-hashing just those whose stat changed or that were racy (see
  ``build.py``). It replaces the older ``manifest`` table (``path -> (size,
  mtime_ns, key)``), which is left alone so an older engine sharing the cache
  directory keeps working;
* ``snapshots``: ``index hash -> {path: record}`` (one read loads the whole index);
* ``structures``: ``index hash -> ranking structure`` (sparse matrices, request-independent).

A corrupt database is deleted and rebuilt with a logged warning, never a crash.
"""

from __future__ import annotations

import logging
import marshal
import os
import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["IndexCache", "default_cache_dir", "CACHE_ENV"]

log = logging.getLogger("durable_navigator.repomap.cache")

CACHE_ENV = "NAVIGATOR_CACHE_DIR"
_DB_NAME = "index-v1.sqlite3"
_SQL_PARAM_CHUNK = 500
_BUSY_TIMEOUT_S = 30.0
_SCHEMA = """
CREATE TABLE IF NOT EXISTS blobs (key TEXT PRIMARY KEY, rec BLOB NOT NULL, bag BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS stat_manifest (root TEXT PRIMARY KEY, blob BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS snapshots (ihash TEXT PRIMARY KEY, blob BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS structures (ihash TEXT PRIMARY KEY, blob BLOB NOT NULL);
"""


def default_cache_dir() -> Path:
    """``$NAVIGATOR_CACHE_DIR`` or the platform user cache dir + ``durable-navigator/repomap``."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser() / "repomap"
    import platformdirs

    return Path(platformdirs.user_cache_dir("durable-navigator")) / "repomap"


class IndexCache:
    """One sqlite database; safe to share between threads of one process."""

    def __init__(self, cache_dir: Path) -> None:
        self.dir = Path(cache_dir)
        self.path = self.dir / _DB_NAME
        self._lock = threading.Lock()
        self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        self.dir.mkdir(parents=True, exist_ok=True)
        try:
            return self._connect()
        except sqlite3.DatabaseError as exc:
            log.warning("repo-map cache %s is corrupt (%s); deleting and rebuilding", self.path, exc)
            for suffix in ("", "-wal", "-shm"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)
            return self._connect()

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
            for table in ("blobs", "stat_manifest", "snapshots", "structures"):
                conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM {table} LIMIT 1)").fetchone()
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def _guard(self, fn: Any, *args: Any) -> Any:
        """Run a DB operation; a corruption detected mid-use rebuilds the DB once."""
        with self._lock:
            try:
                return fn(*args)
            except sqlite3.DatabaseError as exc:
                if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                    raise
                log.warning("repo-map cache %s failed (%s); deleting and rebuilding", self.path, exc)
                self._conn.close()
                for suffix in ("", "-wal", "-shm"):
                    Path(str(self.path) + suffix).unlink(missing_ok=True)
                self._conn = self._connect()
                return fn(*args)

    # ---- manifest -------------------------------------------------------------------
    def load_manifest(self, root: str) -> dict[str, tuple]:
        """``path -> (size, mtime_ns, ctime_ns, inode, key, racy)`` recorded for ``root`` (empty if none)."""
        row = self._guard(lambda: self._conn.execute(
            "SELECT blob FROM stat_manifest WHERE root=?", (root,)).fetchone())
        return marshal.loads(row[0]) if row else {}

    def save_manifest(self, root: str, manifest: dict[str, tuple]) -> None:
        """Replace ``root``'s manifest."""
        blob = marshal.dumps(manifest)
        self._guard(self._write, "INSERT OR REPLACE INTO stat_manifest VALUES (?, ?)", [(root, blob)])

    # ---- per-file blobs ---------------------------------------------------------------
    @staticmethod
    def existing_keys_readonly(db_path: Path, keys: list[str]) -> set[str]:
        """Which of ``keys`` the database at ``db_path`` holds, over a short read-only connection.

        Index workers call this (a connection is not shared across processes);
        a database that cannot be read yields an empty set, so the files are
        simply indexed again.
        """
        if not keys:
            return set()
        found: set[str] = set()
        try:
            conn = sqlite3.connect(f"{db_path.as_uri()}?mode=ro", uri=True, timeout=_BUSY_TIMEOUT_S)
            try:
                found.update(r[0] for r in _rows_with_keys(conn, "key", keys))
            finally:
                conn.close()
        except sqlite3.Error as exc:
            log.warning("repo-map cache %s unreadable from an index worker (%s); re-indexing", db_path, exc)
            return set()
        return found

    def put_blobs(self, rows: list[tuple[str, bytes, bytes]]) -> None:
        """Store ``(key, record_blob, bag_blob)`` rows."""
        self._guard(self._write, "INSERT OR REPLACE INTO blobs VALUES (?, ?, ?)", rows)

    def get_column(self, column: str, keys: list[str]) -> dict[str, Any]:
        """``key -> unmarshalled rec or bag`` for ``keys`` (missing keys absent)."""
        if column not in ("rec", "bag"):
            raise ValueError(f"unknown column {column!r}")
        out: dict[str, Any] = {}

        def run() -> None:
            out.update((k, marshal.loads(b)) for k, b in _rows_with_keys(self._conn, f"key, {column}", keys))

        self._guard(run)
        return out

    # ---- whole-index snapshots and ranking structures --------------------------------
    def get_named(self, table: str, ihash: str) -> bytes | None:
        """Raw blob of ``snapshots`` / ``structures`` for an index hash."""
        if table not in ("snapshots", "structures"):
            raise ValueError(f"unknown table {table!r}")
        row = self._guard(lambda: self._conn.execute(
            f"SELECT blob FROM {table} WHERE ihash=?", (ihash,)).fetchone())
        return bytes(row[0]) if row else None

    def put_named(self, table: str, ihash: str, blob: bytes) -> None:
        """Store a snapshot / structure blob."""
        if table not in ("snapshots", "structures"):
            raise ValueError(f"unknown table {table!r}")
        self._guard(self._write, f"INSERT OR REPLACE INTO {table} VALUES (?, ?)", [(ihash, blob)])

    def _write(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        with self._conn:
            self._conn.executemany(sql, rows)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()


def _rows_with_keys(conn: sqlite3.Connection, columns: str, keys: list[str]) -> Iterator[tuple[Any, ...]]:
    """``SELECT columns FROM blobs`` for ``keys``, in chunks under SQLite's parameter limit."""
    for i in range(0, len(keys), _SQL_PARAM_CHUNK):
        part = keys[i:i + _SQL_PARAM_CHUNK]
        yield from conn.execute(f"SELECT {columns} FROM blobs WHERE key IN ({','.join('?' * len(part))})", part)
