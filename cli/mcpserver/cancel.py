"""Was a cancelled tool call cancelled by the client, or cut off by a disconnect or shutdown?

The two end the same way inside the tool (the SDK cancels its scope) but mean
different things here: a client's cancellation sends ``stop`` to the run, which
finalizes its best map; a client that went away (or a server shutting down)
leaves the run to finish durably for a later ``run_status``.

* JSON-RPC connections (stdio, and handshake-era streamable HTTP): the client
  sends ``notifications/cancelled``, which the SDK records on the request's
  dispatch context (``cancel_requested``). A dropped connection sets nothing.
* 2026-07-28 streamable HTTP: each call is one HTTP exchange and the protocol's
  only way to cancel it is to close its response stream — which is also what a
  vanished client looks like. The protocol's meaning is taken: it is a
  cancellation (the run is stopped; it still finalizes and stays readable).

The dispatch context is reached through the SDK's per-request session
(``ServerSession._request_outbound``, typed as the public ``DispatchContext``
protocol); ``tests/cli/mcpserver/test_stdio.py`` (a cancellation that ends ``stopped``)
pins that this still works with the SDK installed.
"""

from __future__ import annotations

from typing import Any

from mcp_types.version import MODERN_PROTOCOL_VERSIONS

__all__ = ["client_cancelled"]


def _cancel_requested(ctx: Any) -> bool:
    session = getattr(ctx.request_context, "session", None)
    outbound = getattr(session, "_request_outbound", None)
    event = getattr(outbound, "cancel_requested", None)
    return bool(event is not None and event.is_set())


def client_cancelled(ctx: Any, closing: bool) -> bool:
    """True when the client cancelled this call (not a disconnect, not the server's shutdown)."""
    if closing:
        return False
    if _cancel_requested(ctx):
        return True
    single_exchange_http = getattr(ctx.request_context, "request", None) is not None
    return single_exchange_http and ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
