"""Persistent index cache: stdlib sqlite3 under the user cache dir, never in the repository.

Everything lives under one schema name, :data:`SCHEMA`, which is part of every
file name: ``repomap-<SCHEMA>.sqlite3`` and ``structures-<SCHEMA>/``. An
engine that stores anything in another layout uses another schema name, so
two engine versions sharing a cache directory (two branches, an upgrade next
to a running worker) never read each other's data; the older files are left
alone for the version that wrote them. Within one schema every value is still
checked for its shape when read (an entry of another shape is a cache miss,
never an error), and a database whose ``meta`` table names another schema is
rebuilt.

Tables (values are ``marshal`` blobs: the fastest stdlib codec for tuples):

* ``blobs``: ``key -> (record head, symbols, bag)``; key = content hash +
  parser + engine version (``build.content_key``);
* ``manifests``: one row per repository root,
  ``path -> (size, mtime_ns, ctime_ns, inode, key, racy)``, so a warm start
  only stats files (see ``build.py``);
* ``snapshots``: index hash -> every file's record *head* (the record without
  its symbols) and path-line cost: one small read loads an index; symbols are
  read per file when a render shows its outline (``records.py``);
* ``full_costs``: key -> exact whole-file (level-4) cost of a file whose record
  holds only a bound of it (``index.full_bounds``), written when a render first
  counts it (best effort: a locked or read-only cache only skips the write);
* ``parts``: key -> a blob another layer derived from one file's content (the chunk
  ranker's chunks of a file; its key names the layout, the path and the content key), so a
  new index version re-derives only changed files. Added to schema v4 without a bump: an
  older engine neither reads nor minds the extra table.

Ranking structures (sparse matrices, request-independent) are files in
``structures-<SCHEMA>/``, memory-mapped when read: a request touches the
pages of the columns it needs and of the PageRank matrix, never the rest.

A corrupt database is deleted and rebuilt with a logged warning, never a crash.
"""

from __future__ import annotations

import logging
import marshal
import mmap
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from durable_navigator.navtypes.errors import RepoError

__all__ = ["IndexCache", "default_cache_dir", "CACHE_ENV", "SCHEMA"]

log = logging.getLogger("durable_navigator.repomap.cache")

CACHE_ENV = "NAVIGATOR_CACHE_DIR"
#: bump when a table's layout or a value's encoding changes (record and bag layouts are
#: versioned by PARSER_VERSION in their keys, the structure file by its own format tag)
SCHEMA = "v4"
_DB_NAME = f"repomap-{SCHEMA}.sqlite3"
_STRUCTURES = f"structures-{SCHEMA}"
_SQL_PARAM_CHUNK = 500
_BUSY_TIMEOUT_S = 30.0
_TABLES = ("meta", "blobs", "manifests", "snapshots", "full_costs", "parts")
_SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS blobs (key TEXT PRIMARY KEY, head BLOB NOT NULL, syms BLOB NOT NULL, bag BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS manifests (root TEXT PRIMARY KEY, blob BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS snapshots (ihash TEXT PRIMARY KEY, blob BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS full_costs (key TEXT PRIMARY KEY, cost INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS parts (key TEXT PRIMARY KEY, blob BLOB NOT NULL);
"""


class _ForeignSchema(sqlite3.DatabaseError):
    """The database file carries another schema's data."""


def default_cache_dir() -> Path:
    """``$NAVIGATOR_CACHE_DIR`` or the platform user cache dir + ``durable-navigator/repomap``."""
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser() / "repomap"
    import platformdirs

    return Path(platformdirs.user_cache_dir("durable-navigator")) / "repomap"


def own_dirs(cache_dir: Path | None = None) -> tuple[Path, ...]:
    """The directories the navigator writes on its own: never part of a repository's map.

    The index cache in use (``cache_dir``, else :func:`default_cache_dir`) and the user cache
    and state folders of ``durable-navigator`` (artifacts, the embedded server's database):
    discovery leaves them out (like an ignored directory), so a tree that holds them -- ``~``,
    or ``/tmp`` with the cache under it -- is explored without its own index.
    """
    import platformdirs

    app = "durable-navigator"
    return (Path(cache_dir) if cache_dir is not None else default_cache_dir(),
            Path(platformdirs.user_cache_dir(app)), Path(platformdirs.user_state_dir(app)))


def loads_or_none(blob: bytes | None) -> Any:
    """``marshal.loads``, or None for a blob that is not a marshal value (written by something else)."""
    if blob is None:
        return None
    try:
        return marshal.loads(blob)
    except (ValueError, EOFError, TypeError):
        return None


class IndexCache:
    """One sqlite database plus the structure files; safe to share between threads of one process."""

    def __init__(self, cache_dir: Path) -> None:
        # absolute: the read-only connection opens the database by file URI, which a
        # relative path cannot be (a relative --cache-dir failed every cold build)
        self.dir = Path(cache_dir).absolute()
        self.path = self.dir / _DB_NAME
        self.structures_dir = self.dir / _STRUCTURES
        self._lock = threading.Lock()
        self._conn = self._open()

    def _open(self) -> sqlite3.Connection:
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a file where the folder should be, no permission, a read-only file system
            raise RepoError(f"cache dir {str(self.dir)!r} cannot be used ({exc.strerror or exc}); pass a writable "
                            "directory (repo-map --cache-dir, or NAVIGATOR_CACHE_DIR)") from None
        try:
            return self._connect()
        except sqlite3.DatabaseError as exc:
            log.warning("repo-map cache %s is unusable (%s); deleting and rebuilding", self.path, exc)
            self._delete_db()
            return self._connect()

    def _delete_db(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            Path(str(self.path) + suffix).unlink(missing_ok=True)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA_SQL)
            for table in _TABLES:
                conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM {table} LIMIT 1)").fetchone()
            with conn:
                conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA,))
            row = conn.execute("SELECT v FROM meta WHERE k='schema'").fetchone()
            if row is None or row[0] != SCHEMA:
                raise _ForeignSchema(f"it holds schema {row[0] if row else None!r}, not {SCHEMA!r}")
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
                self._delete_db()
                self._conn = self._connect()
                return fn(*args)

    # ---- manifest -------------------------------------------------------------------
    def load_manifest(self, root: str) -> dict[str, tuple]:
        """``path -> (size, mtime_ns, ctime_ns, inode, key, racy)`` recorded for ``root`` (empty if none).

        Entries of any other shape are dropped (those files are re-hashed).
        """
        row = self._guard(lambda: self._conn.execute(
            "SELECT blob FROM manifests WHERE root=?", (root,)).fetchone())
        data = loads_or_none(row[0]) if row else None
        if not isinstance(data, dict):
            return {}
        return {p: e for p, e in data.items() if isinstance(p, str) and _manifest_entry_ok(e)}

    def save_manifest(self, root: str, manifest: dict[str, tuple]) -> None:
        """Replace ``root``'s manifest."""
        blob = marshal.dumps(manifest)
        self._guard(self._write, "INSERT OR REPLACE INTO manifests VALUES (?, ?)", [(root, blob)])

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

    def put_blobs(self, rows: list[tuple[str, bytes, bytes, bytes]]) -> None:
        """Store ``(key, head_blob, symbols_blob, bag_blob)`` rows."""
        self._guard(self._write, "INSERT OR REPLACE INTO blobs VALUES (?, ?, ?, ?)", rows)

    def get_column(self, column: str, keys: Iterable[str]) -> dict[str, Any]:
        """``key -> unmarshalled head, symbols or bag`` for ``keys`` (missing or unreadable keys absent)."""
        if column not in ("head", "syms", "bag"):
            raise ValueError(f"unknown column {column!r}")
        out: dict[str, Any] = {}
        keys = list(keys)

        def run() -> None:
            for k, b in _rows_with_keys(self._conn, f"key, {column}", keys):
                value = loads_or_none(b)
                if value is not None:
                    out[k] = value

        self._guard(run)
        return out

    # ---- whole-file costs counted at render time ------------------------------------
    def get_full_costs(self, keys: Iterable[str]) -> dict[str, int]:
        """``key -> exact level-4 cost`` for the keys counted before (others absent)."""
        keys = list(keys)
        out: dict[str, int] = {}
        if not keys:
            return out

        def run() -> None:
            for k, c in _rows_with_keys(self._conn, "key, cost", keys, table="full_costs"):
                if type(c) is int and c >= 0:
                    out[k] = c

        try:
            self._guard(run)
        except sqlite3.Error as exc:  # locked: the caller counts them itself
            log.debug("repo-map cache %s: full costs not read (%s)", self.path, exc)
        return out

    def put_full_costs(self, rows: list[tuple[str, int]]) -> None:
        """Store ``(key, cost)`` rows if that can be done now: a locked or read-only database
        skips the write (the numbers are counted again next time), a render never waits or fails."""
        if not rows:
            return
        with self._lock:
            try:
                self._conn.execute("PRAGMA busy_timeout=0")
                try:
                    with self._conn:
                        self._conn.executemany("INSERT OR REPLACE INTO full_costs VALUES (?, ?)", rows)
                finally:
                    self._conn.execute(f"PRAGMA busy_timeout={int(_BUSY_TIMEOUT_S * 1000)}")
            except sqlite3.Error as exc:
                log.debug("repo-map cache %s: full costs not written (%s)", self.path, exc)

    # ---- per-file derived parts ------------------------------------------------------
    def get_parts(self, keys: Iterable[str]) -> dict[str, bytes]:
        """``key -> blob`` of the stored parts among ``keys`` (the caller checks each blob's layout)."""
        keys = list(keys)
        out: dict[str, bytes] = {}

        def run() -> None:
            out.update((k, bytes(b)) for k, b in _rows_with_keys(self._conn, "key, blob", keys, table="parts"))

        self._guard(run)
        return out

    def put_parts(self, rows: list[tuple[str, bytes]]) -> None:
        """Store ``(key, blob)`` parts."""
        self._guard(self._write, "INSERT OR REPLACE INTO parts VALUES (?, ?)", rows)

    # ---- whole-index snapshots --------------------------------------------------------
    def get_snapshot(self, ihash: str) -> Any:
        """The unmarshalled snapshot of an index hash (None when absent or unreadable)."""
        row = self._guard(lambda: self._conn.execute(
            "SELECT blob FROM snapshots WHERE ihash=?", (ihash,)).fetchone())
        return loads_or_none(row[0]) if row else None

    def put_snapshot(self, ihash: str, value: Any) -> None:
        """Store a snapshot."""
        self._guard(self._write, "INSERT OR REPLACE INTO snapshots VALUES (?, ?)", [(ihash, marshal.dumps(value))])

    def _write(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        with self._conn:
            self._conn.executemany(sql, rows)

    # ---- ranking structures (files) ----------------------------------------------------
    def map_structure(self, key: str) -> mmap.mmap | None:
        """The structure file of ``key``, memory-mapped read-only (None when absent)."""
        try:
            with open(self.structures_dir / f"{key}.rs", "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                return mmap.mmap(fh.fileno(), size, access=mmap.ACCESS_READ) if size else None
        except (FileNotFoundError, ValueError):
            return None
        except OSError as exc:
            log.warning("repo-map structure %s unreadable (%s); rebuilding it", key, exc)
            return None

    def put_structure(self, key: str, parts: Iterable[bytes | memoryview]) -> None:
        """Write a structure file from its parts (atomically: readers see the old file or the new)."""
        self.structures_dir.mkdir(parents=True, exist_ok=True)
        import tempfile  # writes only: a warm open never loads it (nor shutil, random, bz2, lzma behind it)

        fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=self.structures_dir)
        try:
            with os.fdopen(fd, "wb") as fh:
                for part in parts:
                    fh.write(part)
            os.replace(tmp, self.structures_dir / f"{key}.rs")
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._conn.close()


def _manifest_entry_ok(e: Any) -> bool:
    return (isinstance(e, tuple) and len(e) == 6 and all(type(x) is int for x in e[:4])
            and isinstance(e[4], str) and isinstance(e[5], bool))


def _rows_with_keys(conn: sqlite3.Connection, columns: str, keys: list[str],
                    table: str = "blobs") -> Iterator[tuple[Any, ...]]:
    """``SELECT columns FROM table`` for ``keys``, in chunks under SQLite's parameter limit."""
    for i in range(0, len(keys), _SQL_PARAM_CHUNK):
        part = keys[i:i + _SQL_PARAM_CHUNK]
        yield from conn.execute(f"SELECT {columns} FROM {table} WHERE key IN ({','.join('?' * len(part))})", part)
