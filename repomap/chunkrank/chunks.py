"""Function-level chunks of a repository and their term bags (the unit the chunk ranker ranks).

A chunk is what the chunk-BM25 baseline of ``bench/quality_baselines.py`` retrieves,
cut from the engine's parsed symbols: top-level definitions; a definition longer
than ``SPLIT_LINES`` that contains others is split into its members plus the lines
between them; a leaf longer than ``2 * SPLIT_LINES`` into windows; lines outside
every definition (imports, module code) into runs of at most ``GAP_LINES``; a file
without symbols into ``GAP_LINES``-line windows. The ranker's chunk of a definition
starts at the comments and attributes directly above it (``leads``: a Rust ``///`` doc
and ``#[cfg(windows)]``, a Go or Java comment, an annotation, a decorator), so they are
ranked and shown with the code they describe rather than as a chunk of their own; the
baseline keeps the definitions as the parser gives them (``leads=False``).

Tokenisation (``tokenize``) is the baseline's: words and identifiers lower-cased
plus their camel/snake parts, numbers, 1-character tokens and the engine's
stopwords dropped.
"""

from __future__ import annotations

import hashlib
import marshal
import re
from collections import Counter
from collections.abc import Iterator
from itertools import chain
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from durable_navigator.repomap.stopwords import is_stopword

__all__ = ["SPLIT_LINES", "GAP_LINES", "STORE_FORMAT", "PART_FORMAT", "ChunkSpan", "FilePart", "tokenize",
           "chunk_ranges", "file_part", "file_part_blob", "part_key", "encode_part", "RepoChunks"]

SPLIT_LINES = 80
GAP_LINES = 40
#: the stored layout of :class:`RepoChunks` (``to_bytes``); bump it when the layout, the chunking or
#: the tokenisation changes, so a stored blob of another kind is never read as this one
STORE_FORMAT = f"repochunks-2-{SPLIT_LINES}-{GAP_LINES}"
#: the layout of one file's stored part (``chunkrank/parts.py``); it names the chunking and tokenisation
PART_FORMAT = f"{STORE_FORMAT}-part-1"
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
#: a line that documents or annotates what follows it: a comment (``//``, ``/*``, `` *``, ``--``, ``#``
#: then a space), a Rust attribute (``#[...]``), an annotation or decorator (``@name``). Not a C
#: preprocessor line (``#include``, ``#if``) nor a Rust inner attribute (``#![...]``, the module's own)
_LEAD = re.compile(r"\s*(?://|/\*|\*|--|#\[|#(?:\s|$)|@[A-Za-z_])")


_MEMO: dict[str, tuple[str, ...]] = {}
_MEMO_MAX = 200_000


def _word_terms(word: str) -> tuple[str, ...]:
    low = word.lower()
    out = [low] if len(low) >= 2 and not is_stopword(low) else []
    parts = [p.lower() for p in _PART.findall(word)]
    if len(parts) > 1:
        out.extend(p for p in parts if len(p) >= 2 and not is_stopword(p) and not p.isdigit())
    return tuple(out)


def tokenize(text: str) -> list[str]:
    """Words + identifier parts, lower-cased; stopwords and 1-character tokens dropped.

    A word's terms are memoised (code repeats its identifiers: a repository's chunks
    are tokenised several times faster than word by word).
    """
    out: list[str] = []
    memo = _MEMO
    for word in _WORD.findall(text):
        got = memo.get(word)
        if got is None:
            got = _word_terms(word)
            if len(memo) < _MEMO_MAX:
                memo[word] = got
        out.extend(got)
    return out


def _term_counts(path_terms: list[str], text: str) -> dict[str, int]:
    """``Counter(path_terms + tokenize(text))`` in first-seen order, counted per distinct word: code
    repeats its words, so a chunk's bag costs a dictionary step per distinct word, not per token."""
    bag: dict[str, int] = {}
    for t in path_terms:
        bag[t] = bag.get(t, 0) + 1
    memo = _MEMO
    for word, n in Counter(_WORD.findall(text)).items():
        got = memo.get(word)
        if got is None:
            got = _word_terms(word)
            if len(memo) < _MEMO_MAX:
                memo[word] = got
        for t in got:
            bag[t] = bag.get(t, 0) + n
    return bag


def _windows(lo: int, hi: int, size: int) -> list[tuple[int, int]]:
    return [(a, min(a + size - 1, hi)) for a in range(lo, hi + 1, size)]


def _is_lead(line: str) -> bool:
    return _LEAD.match(line) is not None  # every alternative needs a non-blank character


def chunk_ranges(n_lines: int, symbols: list[tuple[int, int]], src: list[str],
                 leads: bool = True) -> list[tuple[int, int]]:
    """Chunks of one file: sorted, non-overlapping ``(start, end)`` (1-based, inclusive) covering every
    non-blank line. With ``leads``, a definition's chunk starts at the run of comment and attribute
    lines directly above it (no blank line between) that no other chunk holds."""
    defs = sorted({(max(1, a), min(b, n_lines)) for a, b in symbols if a <= b and a <= n_lines},
                  key=lambda d: (d[0], -d[1]))  # containers before what they contain
    out: list[tuple[int, int]] = []

    def gap(lo: int, hi: int) -> None:
        if lo <= hi and any(src[k - 1].strip() for k in range(lo, hi + 1)):
            out.extend(_windows(lo, hi, GAP_LINES))

    def unit(a: int, b: int, inner: list[tuple[int, int]]) -> None:
        if b - a + 1 <= SPLIT_LINES or not inner:
            out.extend(_windows(a, b, 2 * SPLIT_LINES) if b - a + 1 > 2 * SPLIT_LINES else [(a, b)])
            return
        level(a, b, inner)

    def level(lo: int, hi: int, items: list[tuple[int, int]]) -> None:
        pos, i = lo, 0
        while i < len(items):
            a, b = items[i]
            j = i + 1
            while j < len(items) and items[j][0] <= b:  # nested (or overlapping) definitions
                j += 1
            if a < pos:  # overlaps what is already emitted (a decorator line): skip it
                i = j
                continue
            lead = a
            while leads and lead > max(pos, 1) and lead - 1 <= len(src) and _is_lead(src[lead - 2]):
                lead -= 1
            gap(pos, lead - 1)
            unit(lead, b, [d for d in items[i + 1:j] if d != (a, b)])
            pos, i = b + 1, j
        gap(pos, hi)

    if defs:
        level(1, n_lines, defs)
    else:
        gap(1, n_lines)
    return out


class ChunkSpan(NamedTuple):
    """Lines ``start..end`` of ``path``; ``name`` is the definition that starts there ('' for other lines).

    A named tuple, not a frozen dataclass: a 20,000-file repository has 300,000 of them, made on
    every load of its chunk store (a dataclass's ``__init__`` cost 1 s of it)."""

    path: str
    start: int
    end: int
    name: str
    kind: str


@dataclass(frozen=True, slots=True)
class FilePart:
    """One file's chunks as :class:`RepoChunks` counts them, on their own: spans, and each chunk's bag
    as columns into the file's own vocabulary (first-seen order, the path's terms included)."""

    n_lines: int
    starts: np.ndarray  # int64, one per chunk
    ends: np.ndarray
    names: list[str]
    kinds: list[str]
    vocab: list[str]
    cols: np.ndarray  # int32, into ``vocab``; chunk k's are ``cols[indptr[k]:indptr[k + 1]]``
    counts: np.ndarray  # int32
    indptr: np.ndarray  # int32, ``len(starts) + 1``


class _Ids(dict[str, int]):
    """Term -> column, a new term taking the next column on its first lookup (hits stay in C)."""

    def __missing__(self, term: str) -> int:
        self[term] = got = len(self)
        return got


def _named(starts: dict[int, tuple[str, str]], src: list[str], a: int, b: int) -> tuple[str, str]:
    """``(name, kind)`` of chunk ``a..b``: the definition that starts there or below its leading
    comments (``starts``: a definition's first line -> its name and kind), else a block."""
    k = a
    while k not in starts and k < b and k <= len(src) and _is_lead(src[k - 1]):
        k += 1
    return starts.get(k, ("", "block"))


def file_part(path: str, src: list[str], symbols: list[tuple[int, int, str, str]]) -> FilePart:
    """The chunks of ``path`` (lines ``src``, definitions ``(start, end, name, kind)`` in source order)."""
    starts = {a: (name, kind) for a, _b, name, kind in symbols}
    path_terms = tokenize(path)
    local = _Ids()
    cols: list[int] = []
    counts: list[int] = []
    indptr: list[int] = [0]
    spans: list[tuple[int, int, str, str]] = []
    for a, b in chunk_ranges(len(src), [(s[0], s[1]) for s in symbols], src):
        spans.append((a, b, *_named(starts, src, a, b)))
        bag = _term_counts(path_terms, "\n".join(src[a - 1:b]))
        cols.extend(map(local.__getitem__, bag))
        counts.extend(bag.values())
        indptr.append(len(cols))
    return FilePart(len(src), np.asarray([s[0] for s in spans], dtype=np.int64),
                    np.asarray([s[1] for s in spans], dtype=np.int64), [s[2] for s in spans],
                    [s[3] for s in spans], list(local), np.asarray(cols, dtype=np.int32),
                    np.asarray(counts, dtype=np.int32), np.asarray(indptr, dtype=np.int32))


def part_key(path: str, content_key: str) -> str:
    """The cache key of ``path``'s part when it holds the content ``content_key`` names."""
    return hashlib.blake2b(f"{PART_FORMAT}\n{path}\n{content_key}".encode(), digest_size=16).hexdigest()


def encode_part(part: FilePart) -> bytes:
    """``part`` as a marshal blob in :data:`PART_FORMAT`."""
    return marshal.dumps((PART_FORMAT, part.n_lines, part.starts.tobytes(), part.ends.tobytes(), part.names,
                          part.kinds, part.vocab, part.cols.tobytes(), part.counts.tobytes(), part.indptr.tobytes()))


def file_part_blob(path: str, data: bytes, symbols: list[tuple[int, int, str, str]]) -> bytes:
    """The encoded part of ``path`` holding ``data`` (decoded as ``RepoMap.read_lines`` decodes it): what an
    index worker stores next to the file's record, so the chunk ranker finds it chunked."""
    return encode_part(file_part(path, data.decode("utf-8", "replace").splitlines(), symbols))


def _joined(arrays: list[np.ndarray], dtype: Any) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype=dtype)


def _sizes(lengths: Iterator[int]) -> np.ndarray:
    return np.fromiter(lengths, dtype=np.int64)


class RepoChunks:
    """Every chunk of a repository with its term counts (built once per index version).

    ``tf`` is a chunks x terms CSR matrix of counts (the path's terms included, as the
    baseline's documents are "path + text"); ``file_of`` maps a chunk to its file row.
    """

    def __init__(self, files: list[str], lines_of: dict[str, list[str]],
                 symbols_of: dict[str, list[tuple[int, int, str, str]]]) -> None:
        kept = [f for f in files if lines_of.get(f)]
        self._assemble(kept, [file_part(f, lines_of[f], symbols_of.get(f, [])) for f in kept])

    @classmethod
    def from_parts(cls, files: list[str], parts: list["FilePart"]) -> "RepoChunks":
        """The chunks of ``files`` (each non-empty) from their :func:`file_part` s, in that order: what
        ``RepoChunks(files, lines, symbols)`` builds, with each file chunked on its own (and cached)."""
        rc = cls.__new__(cls)
        rc._assemble(files, parts)
        return rc

    def _assemble(self, files: list[str], parts: list["FilePart"]) -> None:
        """Join per-file parts: one vocabulary in first-seen order over the files in order (what a
        single pass over every chunk gives), the chunk rows concatenated, the file rows summed."""
        import scipy.sparse as sp  # built once per index version; a request reuses it

        self.files = files
        # the files' vocabularies end to end: their first-seen union is the one-pass vocabulary
        terms = list(chain.from_iterable(p.vocab for p in parts))
        self.vocab = vocab = dict(zip(dict.fromkeys(terms), range(len(terms))))
        ids = np.fromiter(map(vocab.__getitem__, terms), dtype=np.int32, count=len(terms))
        n_vocab = _sizes(len(p.vocab) for p in parts)
        n_cols = _sizes(len(p.cols) for p in parts)
        n_chunks = _sizes(len(p.starts) for p in parts)
        local = _joined([p.cols for p in parts], np.int32)
        cols = ids[local + np.repeat(np.cumsum(n_vocab) - n_vocab, n_cols)]
        ends = _joined([p.indptr[1:] for p in parts], np.int32) + np.repeat(np.cumsum(n_cols) - n_cols, n_chunks)
        indptr = np.concatenate([np.zeros(1, dtype=np.int64), ends]).astype(np.int32)
        self.file_lines = np.fromiter((p.n_lines for p in parts), dtype=np.int64, count=len(parts))
        self.file_of = np.repeat(np.arange(len(files), dtype=np.int64), n_chunks)
        self.starts = _joined([p.starts for p in parts], np.int64)
        self.ends = _joined([p.ends for p in parts], np.int64)
        names = list(chain.from_iterable(p.names for p in parts))
        self.spans = [ChunkSpan(files[f], a, b, n, k) for f, a, b, n, k in zip(
            self.file_of.tolist(), self.starts.tolist(), self.ends.tolist(), names,
            chain.from_iterable(p.kinds for p in parts), strict=True)]
        n = len(self.spans)
        tf = sp.csr_matrix((_joined([p.counts for p in parts], np.int32).astype(np.float32), cols, indptr),
                           shape=(n, len(vocab)))
        tf.sort_indices()
        self.tf = tf
        self.file_tf = sp.csr_matrix(
            (np.ones(n, dtype=np.float32), (self.file_of, np.arange(n))), shape=(len(files), n)) @ tf
        #: chunks / files containing each term (document frequencies: a goal reads a few of them)
        self.chunk_df = np.bincount(tf.indices, minlength=len(vocab))
        self.file_df = np.bincount(self.file_tf.indices, minlength=len(vocab))
        self.name_vocab, self.name_tf = _name_terms(names)

    def to_bytes(self) -> bytes:
        """Everything but the per-term frequencies (recounted on load), in :data:`STORE_FORMAT`."""
        return marshal.dumps({
            "format": STORE_FORMAT, "files": self.files, "vocab": list(self.vocab),
            "name_vocab": list(self.name_vocab), "names": [s.name for s in self.spans],
            "kinds": [s.kind for s in self.spans], "file_of": self.file_of.tobytes(),
            "starts": self.starts.tobytes(), "ends": self.ends.tobytes(), "file_lines": self.file_lines.tobytes(),
            "tf": _csr_parts(self.tf), "file_tf": _csr_parts(self.file_tf), "name_tf": _csr_parts(self.name_tf)})

    @classmethod
    def from_bytes(cls, data: Any) -> "RepoChunks":
        """The chunks :meth:`to_bytes` stored; ``ValueError`` for another layout or a torn blob."""
        try:
            d = marshal.loads(data)
        except (EOFError, ValueError, TypeError) as exc:
            raise ValueError(f"unreadable chunk store: {exc}") from None
        if not isinstance(d, dict) or d.get("format") != STORE_FORMAT:
            raise ValueError("a chunk store of another layout")
        rc = cls.__new__(cls)
        rc.files = d["files"]
        rc.vocab = {t: i for i, t in enumerate(d["vocab"])}
        rc.name_vocab = {t: i for i, t in enumerate(d["name_vocab"])}
        rc.file_of, rc.starts, rc.ends, rc.file_lines = (
            np.frombuffer(d[k], dtype=np.int64) for k in ("file_of", "starts", "ends", "file_lines"))
        files = rc.files
        rc.spans = [ChunkSpan(files[f], a, b, n, k) for f, a, b, n, k in zip(
            rc.file_of.tolist(), rc.starts.tolist(), rc.ends.tolist(), d["names"], d["kinds"], strict=True)]
        rc.tf, rc.file_tf, rc.name_tf = (_csr(d[k]) for k in ("tf", "file_tf", "name_tf"))
        if rc.tf.shape != (len(rc.spans), len(rc.vocab)) or len(files) != len(rc.file_lines):
            raise ValueError("a torn chunk store")
        rc.chunk_df = np.bincount(rc.tf.indices, minlength=len(rc.vocab))
        rc.file_df = np.bincount(rc.file_tf.indices, minlength=len(rc.vocab))
        return rc

    def columns(self, terms: list[str]) -> list[int]:
        """Columns of the distinct ``terms`` the repository contains (first-seen order)."""
        return [c for t in dict.fromkeys(terms) if (c := self.vocab.get(t)) is not None]


def _name_terms(names: list[str]) -> tuple[dict[str, int], Any]:
    """The terms of each chunk's definition name: a binary chunks x name-terms matrix and its columns
    (columns in first-seen order over the chunks; each distinct name tokenised once)."""
    import scipy.sparse as sp

    vocab: dict[str, int] = {}
    distinct = dict.fromkeys(names)
    of_name: list[list[int]] = []
    for i, name in enumerate(distinct):
        distinct[name] = i
        of_name.append(sorted(vocab.setdefault(t, len(vocab)) for t in dict.fromkeys(tokenize(name))))
    row = np.fromiter(map(distinct.__getitem__, names), dtype=np.int64, count=len(names))
    lens = np.fromiter(map(len, of_name), dtype=np.int64, count=len(of_name))
    flat = np.fromiter(chain.from_iterable(of_name), dtype=np.int32, count=int(lens.sum()))
    per = lens[row]
    indptr = np.zeros(len(names) + 1, dtype=np.int64)
    np.cumsum(per, out=indptr[1:])
    # entry j of chunk k is entry j of its name's row
    first = (np.cumsum(lens) - lens)[row]
    at = np.repeat(first - indptr[:-1], per) + np.arange(int(indptr[-1]), dtype=np.int64)
    m = sp.csr_matrix((np.ones(len(at), dtype=np.float64), flat[at], indptr.astype(np.int32)),
                      shape=(len(names), len(vocab)))
    return vocab, m


def _csr_parts(m: Any) -> tuple[Any, ...]:
    return (m.shape, m.data.dtype.str, m.data.tobytes(), m.indices.dtype.str, m.indices.tobytes(),
            m.indptr.dtype.str, m.indptr.tobytes())


def _csr(parts: tuple[Any, ...]) -> Any:
    import scipy.sparse as sp

    shape, dt, data, it, indices, pt, indptr = parts
    return sp.csr_matrix((np.frombuffer(data, dtype=dt), np.frombuffer(indices, dtype=it),
                          np.frombuffer(indptr, dtype=pt)), shape=tuple(shape))
