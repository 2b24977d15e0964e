"""The chunk store as ``RepoChunks.__init__`` built it in one pass over every chunk (before per-file
parts): the oracle the per-file assembly must equal, array for array."""

from __future__ import annotations

from typing import Any

import numpy as np
import scipy.sparse as sp

from durable_navigator.repomap.chunkrank.chunks import ChunkSpan, _named, _term_counts, chunk_ranges, tokenize


def one_pass(files: list[str], lines_of: dict[str, list[str]],
             symbols_of: dict[str, list[tuple[int, int, str, str]]]) -> dict[str, Any]:
    """Every array the old constructor computed, by name."""
    kept = [f for f in files if lines_of.get(f)]
    spans: list[ChunkSpan] = []
    indptr, cols, counts, file_of = [0], [], [], []
    vocab: dict[str, int] = {}
    file_lines = np.zeros(len(kept), dtype=np.int64)
    for fi, path in enumerate(kept):
        src = lines_of[path]
        file_lines[fi] = len(src)
        syms = symbols_of.get(path, [])
        starts = {a: (name, kind) for a, _b, name, kind in syms}
        path_terms = tokenize(path)
        for a, b in chunk_ranges(len(src), [(s[0], s[1]) for s in syms], src):
            name, kind = _named(starts, src, a, b)
            spans.append(ChunkSpan(path, a, b, name, kind))
            file_of.append(fi)
            bag = _term_counts(path_terms, "\n".join(src[a - 1:b]))
            cols.extend(vocab.setdefault(t, len(vocab)) for t in bag)
            counts.extend(bag.values())
            indptr.append(len(cols))
    file_of_a = np.asarray(file_of, dtype=np.int64)
    tf = sp.csr_matrix((np.asarray(counts, dtype=np.float32), np.asarray(cols, dtype=np.int32),
                        np.asarray(indptr, dtype=np.int32)), shape=(len(spans), len(vocab)))
    tf.sort_indices()
    file_tf = sp.csr_matrix((np.ones(len(spans), dtype=np.float32), (file_of_a, np.arange(len(spans)))),
                            shape=(len(kept), len(spans))) @ tf
    name_vocab, name_tf = _name_terms(spans)
    return {"files": kept, "spans": spans, "vocab": vocab, "file_of": file_of_a, "file_lines": file_lines,
            "tf": tf, "file_tf": file_tf, "name_vocab": name_vocab, "name_tf": name_tf,
            "chunk_df": np.bincount(tf.indices, minlength=len(vocab)),
            "file_df": np.bincount(file_tf.indices, minlength=len(vocab))}


def _name_terms(spans: list[ChunkSpan]) -> tuple[dict[str, int], Any]:
    """The name-term matrix as the one-pass build made it: a COO of every chunk's name terms."""
    vocab: dict[str, int] = {}
    rows: list[int] = []
    cols: list[int] = []
    by_name: dict[str, list[int]] = {}
    for k, span in enumerate(spans):
        if span.name not in by_name:
            by_name[span.name] = [vocab.setdefault(t, len(vocab)) for t in dict.fromkeys(tokenize(span.name))]
        got = by_name[span.name]
        rows.extend([k] * len(got))
        cols.extend(got)
    m = sp.csr_matrix((np.ones(len(rows), dtype=np.float64), (rows, cols)), shape=(len(spans), len(vocab)))
    return vocab, m


def differences(rc: Any, want: dict[str, Any]) -> list[str]:
    """Names of the arrays of ``rc`` that differ from ``want`` in value, dtype or (for matrices) layout."""
    bad = []
    for name, w in want.items():
        got = getattr(rc, name)
        if sp.issparse(w):
            same = (got.shape == w.shape and all(
                getattr(got, a).dtype == getattr(w, a).dtype and np.array_equal(getattr(got, a), getattr(w, a))
                for a in ("data", "indices", "indptr")))
        elif isinstance(w, np.ndarray):
            same = got.dtype == w.dtype and np.array_equal(got, w)
        elif isinstance(w, dict):
            same = list(got.items()) == list(w.items())
        else:
            same = got == w
        if not same:
            bad.append(name)
    return bad
