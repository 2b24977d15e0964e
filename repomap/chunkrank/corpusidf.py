"""Corpus-wide idf: how common a term is in code at large, not just in the repository at hand.

A repository's own idf calls a word rare when this repository rarely says it, however common it
is elsewhere ("support", "handle", "value" in a small project), and a goal's words come from
commit messages, which lean on exactly such words. The corpus idf is measured on the chunks of
the training split's repositories (``bench/corpus_idf.py``): a term's frequency is the mean over
those repositories of the share of their chunks (files) that contain it, so a large repository
does not outvote the others. Terms seen in fewer than ``min_repos`` of them are not stored and
count as never seen (the highest idf).

The table is a versioned gzip TSV in this package (``corpus-idf-v<N>.tsv.gz``); nothing is
downloaded. ``idf = log(1 + (1 - p + d) / (p + d))`` with ``d`` the smoothing stored in its
header, the same form as BM25's Lucene idf.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np

__all__ = ["CORPUS_IDF_VERSION", "CorpusIdf", "load_corpus_idf", "idf_of_share", "write_table", "read_table"]

CORPUS_IDF_VERSION = "corpus-idf-v1"


def idf_of_share(p: np.ndarray, smooth: float) -> np.ndarray:
    """Lucene-form idf of a document share ``p`` (0..1) with additive smoothing ``smooth``."""
    return np.log1p((1.0 - p + smooth) / (p + smooth))


@dataclass(frozen=True)
class CorpusIdf:
    """Term -> chunk-level and file-level idf, and the idf of a term the table does not hold."""

    chunk: dict[str, float]
    file: dict[str, float]
    default: float
    meta: dict[str, object]

    def chunk_idf(self, terms: list[str]) -> np.ndarray:
        return np.array([self.chunk.get(t, self.default) for t in terms], dtype=np.float64)

    def file_idf(self, terms: list[str]) -> np.ndarray:
        return np.array([self.file.get(t, self.default) for t in terms], dtype=np.float64)


def write_table(path: object, chunk_share: dict[str, float], file_share: dict[str, float], smooth: float,
                meta: dict[str, object]) -> None:
    """Write the table: a JSON header line, then ``term<TAB>chunk idf<TAB>file idf`` sorted by term.

    gzip's header carries no time stamp nor file name, so the same shares give the same bytes."""
    terms = sorted(chunk_share)
    c = idf_of_share(np.array([chunk_share[t] for t in terms]), smooth)
    f = idf_of_share(np.array([file_share.get(t, 0.0) for t in terms]), smooth)
    head = {"version": CORPUS_IDF_VERSION, "smooth": smooth, "default": float(idf_of_share(np.zeros(1), smooth)[0])}
    lines = [json.dumps(head | meta, sort_keys=True)]
    lines += [f"{t}\t{a:.3f}\t{b:.3f}" for t, a, b in zip(terms, c, f, strict=True)]
    with open(path, "wb") as raw, gzip.GzipFile(filename="", fileobj=raw, mode="wb", mtime=0) as gz:  # type: ignore[call-overload]
        gz.write(("\n".join(lines) + "\n").encode())


def read_table(data: bytes) -> CorpusIdf:
    """Parse a table written by :func:`write_table` (gzip bytes)."""
    text = gzip.decompress(data).decode()
    head, _, body = text.partition("\n")
    meta = json.loads(head)
    chunk: dict[str, float] = {}
    file: dict[str, float] = {}
    for line in body.splitlines():
        t, a, b = line.split("\t")
        chunk[t] = float(a)
        file[t] = float(b)
    return CorpusIdf(chunk, file, float(meta["default"]), meta)


@lru_cache(maxsize=1)
def load_corpus_idf() -> CorpusIdf:
    """The shipped table (read once per process). A missing table is an error: the package is broken."""
    data = resources.files(__package__).joinpath(f"{CORPUS_IDF_VERSION}.tsv.gz").read_bytes()
    return read_table(data)
