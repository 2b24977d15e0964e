"""Goal-to-code term associations learned from the training corpus's commits (the ``assoc`` group).

A goal says "comparing subclasses", the code it is about says ``__lt__`` and ``isinstance``; a
goal says "performance", the change touches ``cache``. ``bench/corpus_assoc.py`` counts, over the
training split's commits, which code terms the changed lines hold more often when the message holds
a word than they do in general, and keeps a pair seen in several tasks of several repositories,
weighted by the log of that lift. For a goal, each of its terms votes for its associated terms
(:meth:`GoalAssoc.expansion`); the features score chunks and files by BM25 over the best of them.

The table is a versioned gzip TSV in this package (``goal-assoc-v<N>.tsv.gz``); nothing is
downloaded.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

__all__ = ["ASSOC_VERSION", "GoalAssoc", "load_assoc", "read_assoc", "write_assoc"]

ASSOC_VERSION = "goal-assoc-v1"


@dataclass(frozen=True)
class GoalAssoc:
    """Goal term -> ((code term, weight), ...), best first."""

    pairs: dict[str, tuple[tuple[str, float], ...]]
    meta: dict[str, object]

    def expansion(self, goal_terms: list[str]) -> dict[str, float]:
        """Code term -> summed weight over the goal's distinct terms; terms the goal says are left out."""
        said = set(goal_terms)
        out: dict[str, float] = {}
        for g in dict.fromkeys(goal_terms):
            for t, w in self.pairs.get(g, ()):
                if t not in said:
                    out[t] = out.get(t, 0.0) + w
        return out


def write_assoc(path: object, table: dict[str, list[tuple[str, float]]], meta: dict[str, object]) -> None:
    """A JSON header line, then ``goal term<TAB>code term<TAB>weight`` by goal term, best first.

    gzip's header carries no time stamp nor file name, so the same counts give the same bytes."""
    lines = [json.dumps({"version": ASSOC_VERSION} | meta, sort_keys=True)]
    lines += [f"{g}\t{t}\t{w:.3f}" for g in sorted(table) for t, w in table[g]]
    with open(path, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as gz:  # type: ignore[call-overload]
        gz.write(("\n".join(lines) + "\n").encode())


def read_assoc(data: bytes) -> GoalAssoc:
    """Parse a table written by :func:`write_assoc` (gzip bytes)."""
    head, _, body = gzip.decompress(data).decode().partition("\n")
    pairs: dict[str, list[tuple[str, float]]] = {}
    for line in body.splitlines():
        g, t, w = line.split("\t")
        pairs.setdefault(g, []).append((t, float(w)))
    return GoalAssoc({g: tuple(v) for g, v in pairs.items()}, json.loads(head))


@lru_cache(maxsize=1)
def load_assoc(version: str = ASSOC_VERSION) -> GoalAssoc:
    """The table shipped in this package (read once per process)."""
    data = resources.files("durable_navigator.repomap.chunkrank").joinpath(f"{version}.tsv.gz").read_bytes()
    return read_assoc(data)
