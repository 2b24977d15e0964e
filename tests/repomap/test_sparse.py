"""The scipy-free request path: same bits as the scipy matrices it replaces, packed vocabularies."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st

from durable_navigator.repomap import sparse
from durable_navigator.repomap.sparse import Compressed
from durable_navigator.repomap.vocab import Vocabulary


def _random(fmt: str, rows: int, cols: int, density: float, seed: int, dtype: type = np.float32) -> sp.spmatrix:
    rng = np.random.default_rng(seed)
    m = sp.random(rows, cols, density=density, format=fmt, dtype=np.float64, random_state=rng)
    m.data = (m.data * rng.choice([1e-3, 1.0, 1e3], size=m.nnz)).astype(dtype)
    return m


@pytest.mark.parametrize("seed", range(5))
def test_requests_on_compressed_arrays_equal_scipy_bit_for_bit(seed: int) -> None:
    csc = _random("csc", 300, 500, 0.05, seed)
    mine = Compressed.from_scipy(csc)
    cols = sorted(np.random.default_rng(seed).choice(500, size=7, replace=False).tolist())
    dense = mine.columns_dense(cols)
    want = csc[:, cols].toarray()
    assert np.array_equal(dense, want) and dense.flags.f_contiguous == want.flags.f_contiguous
    # the renderer sums this array: identical layout, identical rounding
    assert np.array_equal(dense.sum(axis=1), want.sum(axis=1))
    assert np.array_equal(mine.columns_row_sum(cols), np.asarray(csc[:, cols].sum(axis=1)).ravel())
    for j in (0, 17, 499):
        assert np.array_equal(mine.column_rows(j), csc[:, j].nonzero()[0])
    csr = _random("csr", 400, 400, 0.03, seed)
    x = np.random.default_rng(seed + 100).random(400)
    assert np.array_equal(Compressed.from_scipy(csr) @ x, csr @ x)


def test_matvec_without_the_kernel_falls_back_to_scipy(monkeypatch: pytest.MonkeyPatch) -> None:
    csr = _random("csr", 50, 50, 0.2, 1)
    x = np.random.default_rng(2).random(50)
    monkeypatch.setattr(sparse, "matvec_kernel", lambda: None)
    assert np.array_equal(Compressed.from_scipy(csr) @ x, csr @ x)


def test_kernel_is_loaded_without_importing_scipy_sparse() -> None:
    code = ("import sys, numpy as np; from durable_navigator.repomap import sparse; "
            "k = sparse.matvec_kernel(); "
            "m = sparse.Compressed('csr', (2, 2), np.array([1.0, 2.0]), np.array([0, 1], dtype=np.int32), "
            "np.array([0, 1, 2])); print(k is not None, (m @ np.ones(2)).tolist(), 'scipy.sparse' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "[1.0,", "2.0]", "False"]


@settings(max_examples=100, deadline=None)
@given(st.sets(st.text(alphabet=st.sampled_from(list("ab_Zé中\U0001F600\udce9")), max_size=6), max_size=40))
def test_packed_vocabulary_finds_what_sorted_strings_would(items: set[str]) -> None:
    ordered = sorted(items)
    buf, offsets = Vocabulary.from_sorted(ordered).to_parts()
    vocab = Vocabulary(b"pad" + buf + b"tail", offsets, base=3)  # as read from a structure file
    assert list(vocab) == ordered and len(vocab) == len(ordered)
    for i, s in enumerate(ordered):
        assert vocab.find(s) == i and vocab[i] == s
    for probe in ("", "a", "zz", "\udce9x", "é"):
        assert vocab.find(probe) == (ordered.index(probe) if probe in items else None)
