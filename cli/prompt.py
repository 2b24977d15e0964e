"""Reading the user's answers at an interactive prompt, without blocking the event loop.

A prompt can be *superseded*: the run it asks about moved on without it (a verdict sent from
another terminal, the run ended). The follow loop passes a watcher — a future that completes
with the reason — and :func:`ask` races the user's line against it, so the terminal stops
asking about a turn nobody waits for as soon as the watcher notices, not when the user next
types something.
"""

from __future__ import annotations

import asyncio
import os
import sys

from durable_navigator.cli.errors import CliError, stderr

__all__ = ["LineReader", "Superseded", "ask"]


class Superseded(Exception):
    """The prompt's question is no longer open; ``str(exc)`` says why (one line for the user)."""


class LineReader:
    """Lines from stdin on the event loop itself (``add_reader``), no thread.

    A thread blocked in ``input()`` would keep ``asyncio.run`` (and interpreter
    shutdown) waiting after Ctrl-C; a reader callback is simply removed.
    Non-selectable stdin (a regular file) never blocks, so it is read directly.
    """

    def __init__(self) -> None:
        self.pending = bytearray()

    async def readline(self) -> str:
        """One line (without its newline); ``EOFError`` at the end of stdin."""
        loop = asyncio.get_running_loop()
        fd = sys.stdin.fileno()
        while b"\n" not in self.pending:
            ready: asyncio.Future[None] = loop.create_future()
            try:
                loop.add_reader(fd, lambda fut=ready: fut.done() or fut.set_result(None))
            except (PermissionError, OSError, NotImplementedError):
                chunk = os.read(fd, 4096)  # a regular file: ready by definition
            else:
                try:
                    await ready
                finally:
                    loop.remove_reader(fd)
                chunk = os.read(fd, 4096)
            if not chunk:
                raise EOFError
            self.pending += chunk
        line, _, rest = bytes(self.pending).partition(b"\n")
        self.pending = bytearray(rest)
        return line.decode("utf-8", "replace")


async def _read(reader: LineReader) -> str:
    try:
        return (await reader.readline()).strip()
    except EOFError:
        raise CliError(
            "stdin closed while the run waits for a verdict; answer from another terminal with "
            "`navigator approve|reject|stop ID`"
        ) from None


async def ask(reader: LineReader, prompt: str, superseded: asyncio.Future[str] | None = None) -> str:
    """Print ``prompt`` and read one line; :class:`Superseded` if ``superseded`` completes first.

    The read is cancelled then (no byte is lost: a partial line stays in the reader), and the
    cursor is moved off the prompt's line so what is printed next starts on its own line.
    """
    stderr.print(prompt, end="", markup=False)
    stderr.file.flush()
    if superseded is None:
        return await _read(reader)
    line = asyncio.ensure_future(_read(reader))
    try:
        await asyncio.wait({line, superseded}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not line.done():
            line.cancel()
            await asyncio.wait({line})
    if line.done() and not line.cancelled():
        return line.result()
    stderr.print()  # the prompt's line was left open
    raise Superseded(superseded.result())
