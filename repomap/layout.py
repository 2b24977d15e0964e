"""Text layout of a rendered map, shared by the indexer (to price pieces) and the renderer.

One place decides how a symbol line, a docstring block or a full-source block
looks, so precomputed token costs match what the renderer emits.
"""

from __future__ import annotations

import json

__all__ = ["outline_line", "doc_block", "source_block", "file_line", "header_line", "human_size",
           "FENCE_OPEN", "FENCE_CLOSE"]

FENCE_OPEN = "```\n"
FENCE_CLOSE = "```\n"
_INDENT = "  "


def outline_line(line: int, depth: int, signature: str) -> str:
    """One symbol of a level-2 outline: line number, nesting, signature."""
    return f"{_INDENT}{line}: {_INDENT * depth}{signature}\n"


def doc_block(depth: int, doc: str, max_lines: int) -> str:
    """A symbol's docstring at level 3 (first ``max_lines`` non-blank lines)."""
    lines = [ln.strip() for ln in doc.splitlines() if ln.strip()][:max_lines]
    pad = _INDENT * (depth + 2)
    return "".join(f"{pad}| {ln}\n" for ln in lines)


def source_block(text: str) -> str:
    """Verbatim source in a fence (level 4, or an expanded focus symbol)."""
    return FENCE_OPEN + text + ("" if not text or text.endswith("\n") else "\n") + FENCE_CLOSE


def human_size(size: int) -> str:
    """Compact byte size: 812B, 4.2K, 1.3M."""
    if size < 1024:
        return f"{size}B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f}K"
    return f"{size / (1024 * 1024):.1f}M"


def file_line(path: str, level: int, size: int, n_lines: int, why: list[str]) -> str:
    """The line that opens every shown file: path, level, size, optional why."""
    tail = f" why={','.join(why)}" if why else ""
    return f"{path} [L{level} {human_size(size)} {n_lines}L]{tail}\n"


def header_line(fields: dict[str, object]) -> str:
    """The machine-readable first line: ``# repo-map {json}``."""
    return "# repo-map " + json.dumps(fields, separators=(",", ":"), sort_keys=True) + "\n"
