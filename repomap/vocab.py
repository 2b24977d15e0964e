"""A sorted vocabulary packed into one byte buffer: no string objects until one is asked for.

The ranking structure's term and identifier vocabularies have ~200,000 entries
each on the Python stdlib. As lists of ``str`` they cost ~30 ms to unmarshal in
every new process (and more on large trees) although a request looks up a
dozen terms. Packed as UTF-8 (``surrogatepass``, so the surrogate-escaped
names of undecodable paths survive) with an offset array, loading is a
zero-copy view of the cached blob, and a lookup is a bisection over the bytes.
UTF-8 byte order equals code point order, so the packed order is the order
``sorted()`` gave the strings.
"""

from __future__ import annotations

import bisect
import mmap
from collections.abc import Iterator, Sequence
from typing import Union

import numpy as np

__all__ = ["Vocabulary"]

Buffer = Union[bytes, mmap.mmap]

_ENC = "utf-8"
_ERRORS = "surrogatepass"


class _Keys(Sequence[bytes]):
    """The entries as bytes, for :func:`bisect.bisect_left`."""

    def __init__(self, buf: Buffer, offsets: np.ndarray, base: int) -> None:
        self._buf = buf
        self._off = offsets
        self._base = base

    def __len__(self) -> int:
        return len(self._off) - 1

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        return self._buf[self._base + int(self._off[i]):self._base + int(self._off[i + 1])]


class Vocabulary(Sequence[str]):
    """Sorted distinct strings: ``vocab[i]``, ``len(vocab)``, ``vocab.find(s)``.

    ``buf`` is anything whose slices are ``bytes`` (``bytes``, an ``mmap``);
    entry ``i`` is ``buf[base + offsets[i]:base + offsets[i + 1]]``.
    """

    def __init__(self, buf: Buffer, offsets: np.ndarray, base: int = 0) -> None:
        self._buf = buf
        self._offsets = offsets
        self._base = base
        self._keys = _Keys(buf, offsets, base)

    @classmethod
    def from_sorted(cls, items: list[str]) -> "Vocabulary":
        """Pack ``items`` (already sorted and distinct)."""
        joined = "".join(items)
        offsets = np.zeros(len(items) + 1, dtype=np.int64)
        if joined.isascii():  # the usual case: byte lengths are the string lengths
            np.cumsum(np.fromiter(map(len, items), dtype=np.int64, count=len(items)), out=offsets[1:])
            return cls(joined.encode("ascii"), offsets)
        encoded = [s.encode(_ENC, _ERRORS) for s in items]
        np.cumsum(np.fromiter(map(len, encoded), dtype=np.int64, count=len(items)), out=offsets[1:])
        return cls(b"".join(encoded), offsets)

    def to_parts(self) -> tuple[bytes, np.ndarray]:
        """``(entries buffer, int64 offsets)``: what the constructor takes back."""
        buf = self._buf[self._base:self._base + int(self._offsets[-1])] if len(self._offsets) else b""
        return bytes(buf), self._offsets.astype(np.int64)

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, i):  # type: ignore[no-untyped-def]
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError("vocabulary index out of range")
        return self._keys[i].decode(_ENC, _ERRORS)

    def __iter__(self) -> Iterator[str]:
        buf, off, base = self._buf, self._offsets.tolist(), self._base
        for i in range(len(off) - 1):
            yield buf[base + off[i]:base + off[i + 1]].decode(_ENC, _ERRORS)

    def find(self, s: str) -> int | None:
        """Position of ``s``, or None when absent."""
        keys = self._keys
        key = s.encode(_ENC, _ERRORS)
        i = bisect.bisect_left(keys, key)
        return i if i < len(keys) and keys[i] == key else None

    def __contains__(self, s: object) -> bool:
        return isinstance(s, str) and self.find(s) is not None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Vocabulary):
            return self.to_parts()[0] == other.to_parts()[0] and np.array_equal(self._offsets, other._offsets)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]
