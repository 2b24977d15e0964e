"""A client process that starts an ``explore`` over streamable HTTP and then is killed (tests run it with -m).

``python -m tests.support.mcp_client_proc URL ARGS_JSON`` connects with the handshake-era
protocol (``mode="legacy"``, what today's agents speak), calls ``explore`` with the JSON
arguments and prints ``progress <n>`` per notification; the test SIGKILLs it mid-call, so
the server sees a connection vanish, not a cancellation.
"""

from __future__ import annotations

import json
import sys

import anyio
from mcp import Client


async def _main(url: str, arguments: dict) -> None:
    async def progress(value: float, total: float | None, message: str | None) -> None:
        print(f"progress {value:g} {message}", flush=True)

    async with Client(url, mode="legacy", read_timeout_seconds=600) as client:
        print("connected", flush=True)
        result = await client.call_tool("explore", arguments, progress_callback=progress)
        print("result", json.dumps(result.structured_content), flush=True)


if __name__ == "__main__":
    anyio.run(_main, sys.argv[1], json.loads(sys.argv[2]))
