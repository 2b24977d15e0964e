"""The stream guard shared by streaming providers: first-chunk and inter-chunk timeouts.

A model stream that stays silent longer than the guard allows is cut: the
wait is cancelled inside the stream's own frame (same task, so the HTTP
client's context managers unwind normally), the stream is closed — which
closes the HTTP connection — and a retryable :class:`ModelStalledError`
says which timeout fired.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TypeVar

from durable_navigator.activities.models.base import ModelStalledError
from durable_navigator.navcore.navigator.model_calls import StreamGuard

__all__ = ["guarded_chunks"]

T = TypeVar("T")


async def guarded_chunks(stream: AsyncIterator[T], guard: StreamGuard, what: str) -> AsyncIterator[T]:
    """Yield ``stream``'s chunks; raise :class:`ModelStalledError` when one is late. Always closes it."""
    first = True
    try:
        while True:
            timeout = guard.first_chunk_timeout_s if first else guard.inter_chunk_timeout_s
            try:
                async with asyncio.timeout(timeout):
                    chunk = await anext(stream)
            except StopAsyncIteration:
                return
            except TimeoutError:
                which = "the first chunk" if first else "the next chunk"
                raise ModelStalledError(
                    f"{what}: no {which} within {timeout:g} s (stream guard); the connection was closed "
                    "and the call is retried"
                ) from None
            first = False
            yield chunk
    finally:
        aclose = getattr(stream, "aclose", None)
        if aclose is not None:
            try:
                await aclose()
            except (RuntimeError, StopAsyncIteration):
                pass  # already finished or closed by the cancelled wait
