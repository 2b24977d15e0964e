"""Semantic similarity of a goal and the candidate chunks: static word embeddings shipped in a wheel.

The vectors are WordLlama's ``l2_supercat`` 256-dimension token embeddings, which its wheel ships
(``wordllama/weights``, 16 MB; MIT). Nothing is downloaded: the model is loaded from the package
directory with downloads disabled, and a missing file is an error, never a fetch.

A chunk is embedded from the term bag the ranker already holds (:class:`RepoChunks.tf`: words and
identifier parts, lower-cased), not from its text: each term is embedded once per process
(memoised) and a bag is the idf-weighted, sublinear-tf mean of its terms' vectors, unit length. The
goal is embedded the same way from its own terms, so "budget" in a goal meets "ledger", "micros" and
"reserve" in code that never says "budget".
"""

from __future__ import annotations

import threading
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["DIM", "term_vectors", "bag_vectors", "goal_vector"]

DIM = 256
#: longer "terms" are no words (hashes, base64, minified code): they get the zero vector. A batch is
#: padded to its longest text, so one 100 kB blob in it would cost gigabytes
MAX_TERM_CHARS = 40
_MEMO_MAX = 400_000
_memo: dict[str, np.ndarray] = {}
_lock = threading.Lock()


@lru_cache(maxsize=1)
def _model() -> Any:
    import wordllama
    from wordllama import WordLlama

    # the package's own directory as the "cache": wordllama looks for its tokenizer under
    # ``tokenizers/`` there (its project-root lookup asks for ``tokenizer/``, which the wheel lacks)
    return WordLlama.load(config="l2_supercat", dim=DIM, cache_dir=Path(wordllama.__file__).parent,
                          disable_download=True)


def term_vectors(terms: list[str]) -> np.ndarray:
    """One unit vector per term (``len(terms) x DIM``, float32), each embedded once per process."""
    uniq = list(dict.fromkeys(terms))
    with _lock:
        known = {t: _memo[t] for t in uniq if t in _memo}
    missing = [t for t in uniq if t not in known]
    if missing:
        fresh = _embed(missing)
        known.update(zip(missing, fresh))
        with _lock:
            if len(_memo) + len(missing) > _MEMO_MAX:
                _memo.clear()
            _memo.update(zip(missing, fresh))
    return np.vstack([known[t] for t in terms]) if terms else np.zeros((0, DIM), dtype=np.float32)


def _embed(terms: list[str]) -> np.ndarray:
    out = np.zeros((len(terms), DIM), dtype=np.float32)
    words = [i for i, t in enumerate(terms) if len(t) <= MAX_TERM_CHARS]
    if words:
        out[words] = _model().embed([terms[i] for i in words], norm=True, batch_size=512)
    return out


def _unit(m: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(m, axis=-1, keepdims=True)
    return m / np.maximum(norm, 1e-9)


def bag_vectors(tf: Any, vocab_terms: list[str], idf: np.ndarray) -> np.ndarray:
    """Unit vectors of term bags: the rows of the CSR count matrix ``tf`` (columns index
    ``vocab_terms``; ``idf`` per column), each the mean of its terms' vectors weighted by
    ``(1 + log tf) * idf``. A bag without terms is the zero vector."""
    tf = tf.tocsr()
    if tf.shape[0] == 0:
        return np.zeros((0, DIM), dtype=np.float32)
    cols = np.unique(tf.indices)
    if len(cols) == 0:
        return np.zeros((tf.shape[0], DIM), dtype=np.float32)
    vecs = term_vectors([vocab_terms[c] for c in cols])
    sub = tf[:, cols].tocsr()
    sub.data = ((1.0 + np.log(np.maximum(sub.data, 1.0))) * idf[cols][sub.indices]).astype(np.float32)
    return _unit(np.asarray(sub @ vecs, dtype=np.float32))


def goal_vector(terms: list[str], idf_of: dict[str, float], default_idf: float) -> np.ndarray:
    """The goal's unit vector from its terms (each counted once, weighted by its idf in the
    repository, ``default_idf`` for a term the repository lacks); zero without terms."""
    uniq = list(dict.fromkeys(terms))
    if not uniq:
        return np.zeros(DIM, dtype=np.float32)
    w = np.array([idf_of.get(t, default_idf) for t in uniq], dtype=np.float32)
    v = (term_vectors(uniq) * w[:, None]).sum(axis=0)
    return _unit(v[None, :])[0]
