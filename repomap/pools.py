"""What the index and the data derived from it share below both: the worker-pool start method and
the content hash of a file's bytes (the first part of every content key).

A module of its own so that ``chunkrank`` (whose per-file chunks the index's workers also cut)
and ``build`` can both use them without importing each other.
"""

from __future__ import annotations

import hashlib
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import multiprocessing.context

__all__ = ["content_hash", "pool_context"]


def content_hash(data: bytes) -> str:
    """The content part of a cache key."""
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def pool_context() -> multiprocessing.context.BaseContext:
    """``fork`` when this process has one thread (cheapest: workers inherit the loaded
    tokenizer), else ``forkserver``: forking a multi-threaded process -- a Temporal
    worker opens engines from a thread pool -- can copy a lock some other thread
    holds and hang the child."""
    import multiprocessing  # a warm open never starts workers: not imported at start-up

    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" in methods:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["durable_navigator.repomap.build"])
        return ctx
    return multiprocessing.get_context("spawn")
