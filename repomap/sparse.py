"""Compressed sparse matrices on plain numpy arrays: what a ranking request needs, without scipy.

The ranking structure is built with ``scipy.sparse`` (once per index version,
then cached), but a request only reads columns and multiplies by a vector.
Importing ``scipy.sparse`` costs 0.1-0.15 s -- a third of a warm ``repo-map
generate`` in a new process -- so a loaded structure keeps its arrays in
:class:`Compressed` and a request does its arithmetic here:

* matrix @ vector calls scipy's own compiled kernel (``csr_matvec``) from its
  ``_sparsetools`` extension, loaded by file without the ``scipy.sparse``
  package (0.3 ms). It is the routine ``scipy.sparse``'s ``@`` runs, with the
  same arguments, so scores are bit-identical to the scipy matrices they
  replace. A scipy whose layout differs falls back to ``scipy.sparse`` itself
  (same kernel, slower start); a test checks which path this install takes.
* column reads are index arithmetic (no floating-point operations);
* a row sum over some columns adds the columns in order, as scipy's
  ``csc_matvecs`` does, so it too is bit-identical.
"""

from __future__ import annotations

import functools
import importlib.machinery
import importlib.util
import os
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Compressed", "matvec_kernel"]

_SPARSETOOLS = "scipy.sparse._sparsetools"


@dataclass(frozen=True)
class Compressed:
    """A CSR (``fmt="csr"``) or CSC (``fmt="csc"``) matrix: scipy's arrays, without scipy."""

    fmt: str
    shape: tuple[int, int]
    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_scipy(cls, m: Any) -> "Compressed":
        """Wrap a scipy CSR/CSC matrix as it is (arrays shared, not copied)."""
        return cls(m.format, (int(m.shape[0]), int(m.shape[1])), m.data, m.indices, m.indptr)

    @property
    def nnz(self) -> int:
        """Number of stored entries."""
        return int(self.indptr[-1]) if len(self.indptr) else 0

    @property
    def dtype(self) -> np.dtype:
        """dtype of the stored values."""
        return self.data.dtype

    def to_scipy(self) -> Any:
        """The same matrix as a ``scipy.sparse`` matrix (imports scipy)."""
        import scipy.sparse as sp

        kind = sp.csr_matrix if self.fmt == "csr" else sp.csc_matrix
        return kind((self.data, self.indices, self.indptr), shape=self.shape)

    # ---- columns (CSC) ------------------------------------------------------------
    def column_rows(self, j: int) -> np.ndarray:
        """Rows with a nonzero entry in column ``j``, ascending (scipy's ``m[:, j].nonzero()[0]``)."""
        self._need("csc")
        lo, hi = int(self.indptr[j]), int(self.indptr[j + 1])
        rows = self.indices[lo:hi]
        return rows[self.data[lo:hi] != 0].astype(np.intp)

    def columns_dense(self, cols: list[int]) -> np.ndarray:
        """The columns ``cols`` as a dense ``rows x len(cols)`` array (scipy's ``m[:, cols].toarray()``).

        Fortran order, as scipy gives a CSC matrix's dense form: numpy reduces an
        array in an order that depends on its memory layout, so a row sum of a
        C-ordered copy could differ in the last bits from the old scores.
        """
        self._need("csc")
        out = np.zeros((self.shape[0], len(cols)), dtype=self.data.dtype, order="F")
        for k, j in enumerate(cols):
            lo, hi = int(self.indptr[j]), int(self.indptr[j + 1])
            np.add.at(out[:, k], self.indices[lo:hi], self.data[lo:hi])  # duplicates add up, as in scipy
        return out

    def columns_row_sum(self, cols: list[int]) -> np.ndarray:
        """Per row, the sum over columns ``cols`` (scipy's ``m[:, cols].sum(axis=1)``, same rounding).

        scipy computes it as the sliced matrix times a vector of ones, adding
        column after column into each row's accumulator (in the values' dtype);
        adding the columns in the same order gives the same bits.
        """
        self._need("csc")
        out = np.zeros(self.shape[0], dtype=self.data.dtype)
        for j in cols:
            lo, hi = int(self.indptr[j]), int(self.indptr[j + 1])
            np.add.at(out, self.indices[lo:hi], self.data[lo:hi])
        return out

    # ---- matrix @ vector (CSR) ------------------------------------------------------
    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        """``self @ x`` for a 1-d ``x``, through scipy's compiled ``csr_matvec``."""
        self._need("csr")
        kernel = matvec_kernel()
        if kernel is None:
            return self.to_scipy() @ x
        result = np.zeros(self.shape[0], dtype=np.result_type(self.data.dtype, x.dtype))
        indptr, indices, data = self._kernel_args()
        kernel(self.shape[0], self.shape[1], indptr, indices, data, x, result)
        return result

    def _kernel_args(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Index arrays of one integer type (the kernel's requirement), converted once."""
        got = self._cache.get("kernel")
        if got is None:
            idx = np.int32 if max(self.nnz, *self.shape) < np.iinfo(np.int32).max else np.int64
            got = (np.ascontiguousarray(self.indptr, dtype=idx), np.ascontiguousarray(self.indices, dtype=idx),
                   np.ascontiguousarray(self.data))
            self._cache["kernel"] = got
        return got

    def _need(self, fmt: str) -> None:
        if self.fmt != fmt:
            raise ValueError(f"this operation needs a {fmt.upper()} matrix, not {self.fmt.upper()}")


@functools.cache
def matvec_kernel() -> Any:
    """scipy's ``csr_matvec(M, N, indptr, indices, data, x, y)`` (``y += A @ x``), or None when this
    scipy does not ship it where expected (then ``@`` goes through ``scipy.sparse``)."""
    try:
        return _load_sparsetools().csr_matvec
    except (ImportError, AttributeError, OSError):
        return None


def _load_sparsetools() -> Any:
    """scipy's compiled ``_sparsetools`` extension, loaded without the ``scipy.sparse`` package."""
    mod = sys.modules.get(_SPARSETOOLS)
    if mod is not None:
        return mod
    spec = importlib.util.find_spec("scipy")  # locates the package, runs nothing
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("scipy is not installed")
    for folder in spec.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "sparse", "_sparsetools" + suffix)
            if not os.path.isfile(path):
                continue
            loader = importlib.machinery.ExtensionFileLoader(_SPARSETOOLS, path)
            ext = importlib.util.spec_from_file_location(_SPARSETOOLS, path, loader=loader)
            if ext is None:
                continue
            mod = importlib.util.module_from_spec(ext)
            loader.exec_module(mod)
            # registered under its own name: a later ``import scipy.sparse`` reuses it
            sys.modules[_SPARSETOOLS] = mod
            return mod
    raise ImportError("scipy ships no sparse/_sparsetools extension where expected")
