"""A client process that starts an ``explore`` and then is killed (tests run it with -m).

``python -m tests.support.mcp_client_proc TARGET ARGS_JSON`` calls ``explore`` with the JSON
arguments and prints ``progress <n>`` per notification; the test SIGKILLs it mid-call, so the
server sees its client vanish, not a cancellation. TARGET is a streamable HTTP URL (then the
handshake-era protocol, ``mode="legacy"``, what today's agents speak) or ``stdio`` (then it
spawns ``navigator mcp`` itself, with this process's environment, as an agent would).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters


async def _main(target: str, arguments: dict) -> None:
    async def progress(value: float, total: float | None, message: str | None) -> None:
        print(f"progress {value:g} {message}", flush=True)

    if target == "stdio":
        navigator = Path(sys.executable).parent / "navigator"
        server: object = StdioServerParameters(command=str(navigator), args=["mcp"], env=dict(os.environ))
        client = Client(server, read_timeout_seconds=600)  # type: ignore[arg-type]
    else:
        client = Client(target, mode="legacy", read_timeout_seconds=600)
    async with client:
        print("connected", flush=True)
        result = await client.call_tool("explore", arguments, progress_callback=progress)
        print("result", json.dumps(result.structured_content), flush=True)


if __name__ == "__main__":
    anyio.run(_main, sys.argv[1], json.loads(sys.argv[2]))
