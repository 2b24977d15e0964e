"""The two retrieval baselines of the quality benchmark, filling a token budget.

Both search the same corpus -- the files the engine indexes for the checkout
(``RepoMap.files``; the navigator sees exactly these) -- with ``bm25s`` (Okapi
BM25, Lucene variant, k1 1.5, b 0.75) and the same tokenisation: words and
identifiers lower-cased, identifiers also split into their parts
(``parseHeader`` -> ``parse``, ``header``; ``max_count`` -> ``max``, ``count``),
tokens under 2 characters, numbers and English stopwords (``bm25s``'s
``STOPWORDS_EN_PLUS``, 179 words) dropped. A document's text is its path plus
its content.

* **whole-file BM25**: whole files in rank order while they fit (a file that
  does not fit is skipped and the next one tried);
* **chunk BM25**: function/class-level chunks, from the engine's parsed
  symbols (Python ``ast``, tree-sitter tags for the others): top-level
  definitions; a definition longer than ``SPLIT_LINES`` that contains others is
  split into its members plus the lines between them; a leaf longer than
  ``2 * SPLIT_LINES`` into windows; lines outside every definition (imports,
  module code) into runs of at most ``GAP_LINES``; a file without symbols into
  ``GAP_LINES``-line windows. Chunks in rank order while they fit.

Each file or chunk is rendered as ``### path:a-b`` plus its lines in a fence,
counted with the project's exact counter; documents scoring 0 are never added (``Doc`` and
``pack``: the package's, ``activities/evaluation/baseline.py``, which ``navigator eval``'s chunk BM25
uses over the package's own BM25 -- this benchmark keeps ``bm25s`` for its published figures).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import bm25s
import numpy as np
from bm25s.stopwords import STOPWORDS_EN_PLUS

# one chunker for the baseline and the learned ranker (repomap/chunkrank/chunks.py)
from _project import GAP_LINES, SPLIT_LINES, chunk_ranges

# one block format and packing rule for the benchmark and ``navigator eval``'s chunk BM25
from durable_navigator.activities.evaluation.baseline import Doc, pack

__all__ = ["Doc", "tokenize", "file_docs", "chunk_docs", "chunk_ranges", "pack", "Retriever",
           "SPLIT_LINES", "GAP_LINES"]

_STOP = frozenset(STOPWORDS_EN_PLUS)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def tokenize(text: str) -> list[str]:
    """Words + identifier parts, lower-cased; stopwords and 1-character tokens dropped."""
    out: list[str] = []
    for word in _WORD.findall(text):
        low = word.lower()
        if len(low) >= 2 and low not in _STOP:
            out.append(low)
        parts = [p.lower() for p in _PART.findall(word)]
        if len(parts) > 1:
            out.extend(p for p in parts if len(p) >= 2 and p not in _STOP and not p.isdigit())
    return out


def file_docs(paths: Sequence[str], source: Callable[[str], list[str]]) -> list[Doc]:
    """One document per non-empty file."""
    return [Doc(p, 1, len(source(p))) for p in paths if source(p)]


def chunk_docs(paths: Sequence[str], source: Callable[[str], list[str]],
               symbols: Callable[[str], list[tuple[int, int]]]) -> list[Doc]:
    """Every chunk of every file."""
    docs = []
    for p in paths:
        src = source(p)
        if src:
            # the definitions as the parser gives them: the reference's unit stays what it was
            # (the ranker's own chunks start at a definition's leading comments, ``leads``)
            docs.extend(Doc(p, a, b) for a, b in chunk_ranges(len(src), symbols(p), src, leads=False))
    return docs


class Retriever:
    """BM25 over a list of documents (``bm25s``), built once per checkout and method."""

    def __init__(self, docs: list[Doc], source: Callable[[str], list[str]]) -> None:
        self.docs = docs
        corpus = [tokenize(d.path + "\n" + "\n".join(source(d.path)[d.start - 1:d.end])) for d in docs]
        self._bm25 = bm25s.BM25(k1=1.5, b=0.75)
        self._bm25.index(corpus, show_progress=False)

    def rank(self, query: str) -> list[tuple[Doc, float]]:
        """Documents with a positive score, best first (ties: path, then line)."""
        terms = list(dict.fromkeys(tokenize(query)))
        if not terms or not self.docs:
            return []
        scores = np.asarray(self._bm25.get_scores(terms), dtype=float)
        order = sorted((i for i in range(len(self.docs)) if scores[i] > 0),
                       key=lambda i: (-scores[i], self.docs[i].path, self.docs[i].start))
        return [(self.docs[i], float(scores[i])) for i in order]
