"""The quality benchmark's only imports of project code.

Everything else under ``bench/quality*`` talks to the product through its
installed commands (``navigator``, ``repo-map``), so a rename of the project's
import packages touches this file alone. Used for:

* ``count_tokens`` -- the exact counter every budget is measured with;
* ``open_engine`` -- the engine's file list (the corpus every method searches)
  and its parsed symbols (the chunk BM25 baseline's function/class chunks);
* ``chunk_ranges`` -- how a file is cut into those chunks: the learned ranker's own
  chunker (``repomap/chunkrank/chunks.py``), so the baseline and the ranker share one unit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from durable_navigator.repomap import RepoMap
from durable_navigator.repomap.chunkrank.chunks import GAP_LINES, SPLIT_LINES, chunk_ranges
from durable_navigator.repomap.tokens import count_tokens

__all__ = ["count_tokens", "open_engine", "engine_symbols", "chunk_ranges", "SPLIT_LINES", "GAP_LINES"]


def open_engine(root: Path, cache_dir: Path) -> Any:
    """The engine's view of ``root`` (``.files``), indexed through ``cache_dir``."""
    return RepoMap.open(root, cache_dir=cache_dir)


def engine_symbols(engine: Any, path: str) -> list[tuple[int, int]]:
    """``(start_line, end_line)`` (1-based, inclusive) of every definition the engine parsed in ``path``."""
    return [(sym.start_line, sym.end_line) for sym in engine.symbols(path)]
