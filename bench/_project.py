"""The quality benchmark's only imports of project code.

Everything else under ``bench/quality*`` talks to the product through its
installed commands (``navigator``, ``repo-map``), so a rename of the project's
import packages touches this file alone. Used for:

* ``count_tokens`` -- the exact counter every budget is measured with;
* ``open_engine`` -- the engine's file list (the corpus every method searches)
  and its parsed symbols (the chunk BM25 baseline's function/class chunks);
* ``chunk_ranges`` -- how a file is cut into those chunks: the learned ranker's own
  chunker (``repomap/chunkrank/chunks.py``) with ``leads=False`` (the definitions as the parser
  gives them; the ranker's chunk of a definition also holds the comments directly above it);
* ``compile_bytecode`` -- the product's modules compiled once, as ``pip install`` leaves them.
"""

from __future__ import annotations

import compileall
import importlib
import os
from pathlib import Path
from typing import Any

from durable_navigator.repomap import RepoMap
from durable_navigator.repomap.chunkrank.chunks import GAP_LINES, SPLIT_LINES, chunk_ranges
from durable_navigator.repomap.tokens import count_tokens

__all__ = ["count_tokens", "open_engine", "engine_symbols", "chunk_ranges", "SPLIT_LINES", "GAP_LINES",
           "compile_bytecode"]


def open_engine(root: Path, cache_dir: Path) -> Any:
    """The engine's view of ``root`` (``.files``), indexed through ``cache_dir``."""
    return RepoMap.open(root, cache_dir=cache_dir)


def engine_symbols(engine: Any, path: str) -> list[tuple[int, int]]:
    """``(start_line, end_line)`` (1-based, inclusive) of every definition the engine parsed in ``path``."""
    return [(sym.start_line, sym.end_line) for sym in engine.symbols(path)]


def compile_bytecode() -> dict[str, Any]:
    """Compile the product's modules to bytecode once, before a timed run, and say so in its record.

    ``pip install`` of a wheel compiles every module, so a user's ``navigator`` starts from
    bytecode. An editable checkout writes it on the first import, unless
    ``PYTHONDONTWRITEBYTECODE`` is set (as it is on the shared machine): then every CLI call
    compiled all of the project's modules again, about 0.7 s a call that no installed user pays.
    """
    tops = sorted({Path(importlib.import_module(f"durable_navigator.{name}").__file__).resolve().parent
                   for name in ("activities", "cli", "navcore", "navtypes", "repomap", "workers", "workflows")})
    ok = all(compileall.compile_dir(str(top), quiet=1, workers=1) for top in tops)
    return {"compiled": [str(t) for t in tops], "ok": ok,
            "PYTHONDONTWRITEBYTECODE": os.environ.get("PYTHONDONTWRITEBYTECODE")}
