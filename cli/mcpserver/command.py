"""``navigator mcp``: the navigator as an MCP server, over stdio (default) or streamable HTTP.

Lifetime, in one event loop:

1. the backend starts opening its Temporal session in the background;
2. the transport serves (stdio until the client closes stdin; HTTP until SIGTERM / Ctrl-C);
3. SIGTERM / SIGINT end the transport on either (an MCP client stops a stdio server by closing
   stdin, then SIGTERM after a grace period);
4. the backend closes: in-process worker, then the embedded server if this process started it.

The process then leaves through ``cli/exits.py`` like every command (flush, exit hooks,
``os._exit``). stdout belongs to the protocol on stdio: the SDK diverts fd 1 to stderr
while it serves, the embedded server logs to its file, and everything of ours goes to stderr.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
from collections.abc import Awaitable
from importlib import metadata
from ipaddress import ip_address
from pathlib import Path
from typing import Any

import typer

from durable_navigator.cli.options import DEFAULT_PORT

from durable_navigator.cli.common import config_of, run_async
from durable_navigator.cli.errors import CliError, handles_errors, stderr
from durable_navigator.cli.mcpserver.backend import Backend
from durable_navigator.cli.mcpserver.paths import AllowedRoots
from durable_navigator.workers.devserver import default_state_dir

__all__ = ["DEFAULT_PORT", "HTTP_PATH", "default_out_dir"]

# mcp_app and its commands' signatures and help: cli/signatures.py

HTTP_PATH = "/mcp"
#: seconds open HTTP streams get to finish when the server stops (their runs go on durably)
HTTP_GRACE_S = 3


def default_out_dir() -> Path:
    """Where runs started over MCP write context.md / report.json (not the agent's working tree)."""
    return default_state_dir() / "mcp-runs"


def _version() -> str:
    try:
        return metadata.version("durable-navigator")
    except metadata.PackageNotFoundError:
        return ""


@handles_errors
def run_mcp_command(
    ctx: typer.Context,
    http: bool,
    host: str,
    port: int,
    allow_root: list[Path] | None,
    out: Path | None,
) -> None:
    """The ``navigator mcp`` command (its options and help: :mod:`cli.signatures`)."""
    # the MCP SDK (and uvicorn, for --http) only when this command runs: importing them costs
    # ~0.6 CPU-s, which every other navigator command and --help would pay (issue 17)
    from durable_navigator.cli.mcpserver.tools import build_server

    config = config_of(ctx)
    # bound first: a host or port it cannot listen on is one error line before anything starts
    sock = _bind(host, port) if http else None
    try:
        roots = AllowedRoots.of(allow_root)
        out_dir = (out or default_out_dir()).expanduser().resolve()
        backend = Backend(config, roots, out_dir)
        server = build_server(backend, version=_version())
    except BaseException:
        if sock is not None:
            sock.close()
        raise
    stderr.print(f"navigator mcp: repositories allowed: {roots.describe()}; packs written to {out_dir}",
                 markup=False)
    if sock is not None:
        run_async(_serve(backend, _http(server, host, sock)))
    else:
        run_async(_serve(backend, server.run_stdio_async()))


async def _serve(backend: Backend, transport: Awaitable[None]) -> None:
    """Run ``transport`` with the backend open; SIGTERM / SIGINT end it cleanly."""
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        async with backend.running():
            serving = asyncio.ensure_future(transport)
            stopped = asyncio.ensure_future(stop.wait())
            await asyncio.wait({serving, stopped}, return_when=asyncio.FIRST_COMPLETED)
            # from here on, cancelled tool calls are the shutdown's, not the client's
            backend.closing = True
            for task in (serving, stopped):
                task.cancel()
            await asyncio.wait({serving, stopped})
            if not serving.cancelled() and serving.exception() is not None:
                raise serving.exception()  # type: ignore[misc]
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(sig)
    stderr.print("navigator mcp: stopped", markup=False)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except (socket.gaierror, OverflowError) as exc:
        sock.close()
        what = f"--host {host} is not an address ({exc.strerror})" if isinstance(exc, socket.gaierror) else \
            f"--port {port} is not a port"
        raise CliError(f"cannot listen on {host}:{port}: {what}; pass an address of this machine such as "
                       "127.0.0.1, and a port from 0 to 65535") from None
    except OSError as exc:
        sock.close()
        raise CliError(f"cannot listen on {host}:{port} ({exc.strerror}); pick another --port (0 = any free one)") from None
    sock.listen(128)
    sock.setblocking(False)
    return sock


def _is_loopback(host: str) -> bool:
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


async def _http(server: Any, host: str, sock: socket.socket) -> None:
    """Streamable HTTP on ``sock``, bound to ``host`` (bound first, so ``--port 0`` can be reported)."""
    import uvicorn

    class _Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Any:  # the command owns SIGTERM / SIGINT
            yield

    bound = sock.getsockname()[1]
    app = server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=HTTP_GRACE_S, lifespan="on")
    uv = _Server(config)
    if not _is_loopback(host):
        stderr.print(f"navigator mcp: WARNING: listening on {host}, beyond this machine; the server has no "
                     "authentication — anyone who reaches it can start runs", markup=False)
    shown = f"[{host}]" if ":" in host else host
    try:
        serving = asyncio.ensure_future(uv.serve(sockets=[sock]))
        while not uv.started and not serving.done():
            await asyncio.sleep(0.05)
        if uv.started:
            stderr.print(f"navigator mcp: streamable HTTP on http://{shown}:{bound}{HTTP_PATH}", markup=False)
        try:
            await asyncio.shield(serving)
        except asyncio.CancelledError:
            uv.should_exit = True
            await serving
            raise
    finally:
        sock.close()
