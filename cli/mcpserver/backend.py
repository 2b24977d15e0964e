"""The MCP server's Temporal side: one session for the server's lifetime.

The server is a Temporal client like the CLI (``cli/connect.py``): the configured
cluster, or a server listening on the embedded address, or the embedded dev
server it starts itself; an in-process worker serves the task queue unless a
cluster is configured. The session is opened in the background while the
transport already answers ``initialize`` and ``tools/list`` (a cold embedded
server takes seconds, and agents time their servers' start-up); tools wait for
it. If it cannot be opened, the server stays up and every tool says why.

An embedded server started here is the process's own (``own_embedded``): never the background
server ``explore`` leaves behind for ``embedded.idle_timeout_s``, because an agent starts and kills its
MCP servers at will and nothing would ever stop it. It stops when the server stops — and, started
with a lifeline (``workers.devserver.with_lifeline``), when this process dies by any other path.

Shutdown (stdin closed, SIGTERM, Ctrl-C) marks the backend *closing* first, so
tool calls cancelled by the shutdown are not taken for a client's cancellation:
their runs are left to finish durably. Then the worker stops and the embedded
server (if this process started it) is stopped, inside the event loop, before
the process leaves through ``cli/exits.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path

from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.connect import TemporalSession, open_session
from durable_navigator.cli.errors import stderr
from durable_navigator.cli.mcpserver.paths import AllowedRoots
from durable_navigator.navtypes.errors import NavigatorError

__all__ = ["Backend", "BackendUnavailable"]


class BackendUnavailable(NavigatorError):
    """Temporal could not be reached (or the embedded server would not start)."""

    kind = "BackendUnavailable"


class Backend:
    """The Temporal session, the allowed roots and where runs write their packs."""

    def __init__(self, config: NavigatorConfig, roots: AllowedRoots, out_dir: Path) -> None:
        self.config = config
        self.roots = roots
        self.out_dir = out_dir
        #: set when the server starts shutting down: cancellations from then on are not the client's
        self.closing = False
        self._ready: asyncio.Future[TemporalSession] | None = None
        self._release: asyncio.Event | None = None

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[Backend]:
        """Open the session in the background for the duration of the block."""
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._release = asyncio.Event()
        holder = asyncio.ensure_future(self._hold())
        try:
            yield self
        finally:
            self.closing = True
            self._release.set()
            # the session's own exit (worker shutdown, embedded server stop) must run to its end
            await asyncio.shield(holder)

    async def _hold(self) -> None:
        assert self._ready is not None and self._release is not None
        try:
            async with open_session(self.config, allow_embedded=True, in_process_worker=None,
                                    own_embedded=True) as session:
                self._announce(session)
                self._ready.set_result(session)
                await self._release.wait()
        except NavigatorError as exc:
            self._fail(BackendUnavailable(str(exc)))
        except Exception as exc:  # noqa: BLE001 - reported to every tool call and on stderr
            self._fail(BackendUnavailable(f"{type(exc).__name__}: {exc}"))

    def _fail(self, exc: BackendUnavailable) -> None:
        stderr.print(f"navigator mcp: Temporal is not available: {exc}", markup=False)
        assert self._ready is not None
        if not self._ready.done():
            self._ready.set_exception(exc)
            self._ready.exception()  # retrieved: tools re-raise it when they ask

    @staticmethod
    def _announce(session: TemporalSession) -> None:
        where = (f"embedded Temporal on {session.address} (Web UI {session.ui_base})" if session.embedded
                 else f"Temporal at {session.address}")
        worker = "an in-process worker" if session.in_process_worker else f"the workers on {session.task_queue!r}"
        stderr.print(f"navigator mcp: {where}, served by {worker}", markup=False)

    async def session(self) -> TemporalSession:
        """The open session (waits while it is being opened); ``BackendUnavailable`` if it failed."""
        if self._ready is None:
            raise BackendUnavailable("the server is not running")
        if self.closing and not self._ready.done():
            raise BackendUnavailable("the server is shutting down")
        return await asyncio.shield(self._ready)
