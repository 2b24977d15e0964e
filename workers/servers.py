"""The Temporal servers this tool started, so every terminal of the same user finds them.

``navigator server`` (in the foreground) and the background server ``explore``
starts (:mod:`workers.background`) each write one record, a small JSON file in
the user's state directory (``<state>/servers/<host>-<port>.json``), and remove it
when they stop. A command looking for a server reads the records, keeps the ones
whose process is still the one that wrote them (same pid *and* same process start
time, so a recycled pid is never mistaken for ours) and picks the one serving the
configured database: the database file is what makes a server "the one this
configuration uses" (tests and side-by-side setups with their own database never
see each other's servers).

A record's modification time doubles as "last used": :func:`touch` marks a use,
and the background server's idle timeout counts from the latest one.

Ownership of a port (:func:`port_owner_uid`) comes from ``/proc/net/tcp*`` on
Linux: a listener of another user is never taken for ours.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from durable_navigator.workers.devserver import default_state_dir

__all__ = [
    "ServerRecord",
    "registry_dir",
    "process_start_time",
    "process_alive",
    "write_record",
    "remove_record",
    "live_records",
    "find_record",
    "record_for_address",
    "touch",
    "last_used",
    "port_owner_uid",
    "uptime_text",
]

_CLK_FIELD = 21  # /proc/<pid>/stat: starttime, 0-based after the comm field's closing paren + 2


class ServerRecord(BaseModel):
    """One running server this tool started."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    #: the navigator process that owns the server (foreground command or background supervisor)
    pid: int
    #: that process's start time (``/proc/<pid>/stat``), guarding against a recycled pid
    pid_start: int | None = None
    #: the ``temporal`` child
    server_pid: int | None = None
    mode: Literal["foreground", "background"]
    grpc: str
    ui: str | None = None
    namespace: str = "default"
    db: str | None = None
    log: str | None = None
    uid: int
    started_at: float
    #: background only: stops after this many seconds without a worker polling or a command
    idle_timeout_s: float | None = None

    @property
    def host(self) -> str:
        """Host of the gRPC address."""
        return self.grpc.rsplit(":", 1)[0]

    @property
    def port(self) -> int:
        """Port of the gRPC address."""
        return int(self.grpc.rsplit(":", 1)[1])


def registry_dir(state_dir: Path | None = None) -> Path:
    """Where the records live (under the user's state directory)."""
    return (state_dir or default_state_dir()) / "servers"


def _record_path(record: ServerRecord, state_dir: Path | None = None) -> Path:
    return registry_dir(state_dir) / f"{record.host}-{record.port}.json"


def process_start_time(pid: int) -> int | None:
    """The start time of ``pid`` in clock ticks since boot (Linux), ``None`` if unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rfind(")") + 2:].split()
    try:
        return int(fields[_CLK_FIELD - 2])
    except (IndexError, ValueError):
        return None


def process_alive(pid: int, start_time: int | None = None) -> bool:
    """True when ``pid`` runs, belongs to this user and (if given) started at ``start_time``."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return False  # another user's process
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc (not Linux): the signal check is all we have
    fields = stat[stat.rfind(")") + 2:].split()
    if fields and fields[0] in ("Z", "X"):
        return False  # exited, not yet reaped by its parent
    if start_time is not None and process_start_time(pid) not in (None, start_time):
        return False  # the pid was recycled
    return True


def write_record(record: ServerRecord, state_dir: Path | None = None) -> Path:
    """Write ``record`` atomically (readers never see half a file)."""
    path = _record_path(record, state_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(record.model_dump_json(indent=1))
    os.replace(tmp, path)
    return path


def remove_record(record: ServerRecord, state_dir: Path | None = None) -> None:
    """Remove ``record`` if the file still describes it (never another process's record)."""
    path = _record_path(record, state_dir)
    current = _read(path)
    if current is not None and current.pid == record.pid:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _read(path: Path) -> ServerRecord | None:
    try:
        return ServerRecord.model_validate(json.loads(path.read_text()))
    except (OSError, ValueError, ValidationError):
        return None


def live_records(state_dir: Path | None = None) -> list[ServerRecord]:
    """Every record whose process still runs, newest first; stale files are removed."""
    folder = registry_dir(state_dir)
    if not folder.is_dir():
        return []
    alive: list[ServerRecord] = []
    for path in sorted(folder.glob("*.json")):
        record = _read(path)
        if record is None:
            continue  # being written, or not ours to judge
        if record.uid != os.getuid() or not process_alive(record.pid, record.pid_start):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            continue
        alive.append(record)
    return sorted(alive, key=lambda r: r.started_at, reverse=True)


def _same_file(a: str | Path | None, b: str | Path | None) -> bool:
    if a is None or b is None:
        return False
    return Path(a).expanduser().resolve() == Path(b).expanduser().resolve()


def find_record(db: Path | None, state_dir: Path | None = None) -> ServerRecord | None:
    """The live server serving database ``db``, if this tool started one."""
    for record in live_records(state_dir):
        if _same_file(record.db, db):
            return record
    return None


def record_for_address(address: str, state_dir: Path | None = None) -> ServerRecord | None:
    """The live record whose gRPC address is ``address`` (``localhost`` counts as ``127.0.0.1``)."""
    wanted = address.replace("localhost:", "127.0.0.1:")
    for record in live_records(state_dir):
        if record.grpc.replace("localhost:", "127.0.0.1:") == wanted:
            return record
    return None


def touch(record: ServerRecord, state_dir: Path | None = None) -> None:
    """Mark the server as used now (its idle timeout counts from here)."""
    with contextlib.suppress(OSError):
        os.utime(_record_path(record, state_dir))


def last_used(record: ServerRecord, state_dir: Path | None = None) -> float:
    """When a command last used the server (or it started), as a unix time."""
    try:
        return os.stat(_record_path(record, state_dir)).st_mtime
    except OSError:
        return record.started_at


def port_owner_uid(host: str, port: int) -> int | None:
    """The uid of the process listening on ``host:port`` (Linux ``/proc/net``), ``None`` if unknown."""
    wanted = f"{port:04X}"
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) < 8 or parts[3] != "0A":  # 0A: LISTEN
                continue
            local_port = parts[1].rsplit(":", 1)[1]
            if local_port == wanted and _listens_on(parts[1].rsplit(":", 1)[0], host):
                return int(parts[7])
    return None


_V6_LOOPBACK = "00000000000000000000000001000000"
_V4_MAPPED = "0000000000000000FFFF0000"


def _v4(hex8: str) -> str:
    return ".".join(str(int(hex8[i:i + 2], 16)) for i in (6, 4, 2, 0))


def _listens_on(hex_address: str, host: str) -> bool:
    """Whether a listener's address (hex, as /proc writes it) accepts connections to ``host``."""
    host = "127.0.0.1" if host == "localhost" else host
    if set(hex_address) == {"0"}:
        return True  # 0.0.0.0 / :: — every address
    if len(hex_address) == 8:
        return _v4(hex_address) == host
    if hex_address.upper().startswith(_V4_MAPPED):
        return _v4(hex_address[len(_V4_MAPPED):]) == host
    return hex_address.upper() == _V6_LOOPBACK and host == "::1"


def uptime_text(record: ServerRecord, now: float | None = None) -> str:
    """``12 min`` since the server started."""
    minutes = max(0, int(((now or time.time()) - record.started_at) // 60))
    return f"{minutes} min" if minutes < 120 else f"{minutes // 60} h"
