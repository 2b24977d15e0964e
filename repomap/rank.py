"""Ranking: request-independent sparse structure + per-request personalization.

Built once per index version (and cached): a file->file transition matrix from
the definition/reference graph (identifier idf damping; names defined in too
many files carry no edges) and a BM25-weighted file x term matrix (term
saturation and idf are query-independent, so a query is a column sum). Per
request only the personalization vector is built and a fixed number of
power iterations of personalized PageRank run; the result is blended with
lexical relevance. Ties are broken by path by the caller.
"""

from __future__ import annotations

import marshal
import re
from array import array
from collections import defaultdict
from collections.abc import Iterable
from itertools import count, islice
from operator import itemgetter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from durable_navigator.repomap.config import RankConfig
from durable_navigator.repomap.index import BAG, MIN_REF, path_terms, split_identifier, split_identifiers
from durable_navigator.repomap.sparse import Compressed
from durable_navigator.repomap.stopwords import is_stopword
from durable_navigator.repomap.vocab import Vocabulary

__all__ = ["RankStructure", "StructureFeed", "Personalization", "RankOutput", "goal_terms", "goal_mentions", "personalized_rank"]

_TRACE = re.compile(r"""([\w./\\-]+\.[A-Za-z][\w]*)(?:", line |:)(\d+)""")
_PATHLIKE = re.compile(r"[\w\-./]+/[\w\-.]+|[\w\-]+\.[A-Za-z]{1,5}\b")
_IDENTLIKE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}")
#: layout of :meth:`RankStructure.to_buffers` (part of the cache key: another layout is never read)
STRUCTURE_FORMAT = "rs-3"
_MAGIC = b"repomap-ranking\n"


class _ScipySparse:
    """``scipy.sparse``, imported on first use: only building a structure needs it.

    A request runs on a loaded structure (:mod:`repomap.sparse` arrays), so a new
    process that renders from the cache never pays scipy's 0.1-0.15 s import.
    """

    def __getattr__(self, name: str) -> object:
        import scipy.sparse

        return getattr(scipy.sparse, name)


sp = _ScipySparse()


@dataclass
class RankStructure:
    """Sparse matrices over ``paths`` (sorted), independent of any request."""

    paths: list[str]
    terms: Vocabulary  # sorted: column of a term found by bisection (nothing to rebuild on load)
    bm25: Compressed  # CSC files x terms, BM25-weighted (column reads are cheap in CSC)
    idents: Vocabulary  # sorted, like ``terms``
    defs: Compressed  # CSC files x idents, 1 where the file defines the identifier
    trans_t: Compressed  # CSR, transposed row-stochastic file->file matrix
    dangling: np.ndarray  # bool per file: no outgoing edges
    refs: Compressed  # CSC files x idents, sqrt(reference count): who mentions a name

    @classmethod
    def build(cls, paths: list[str], bags: Iterable[tuple[int, tuple]], cfg: RankConfig) -> "RankStructure":
        """Build from ``(row, bag)`` pairs streamed in any order (``paths`` sorted)."""
        feed = StructureFeed()
        for i, bag in bags:
            feed.add(i, paths[i], bag)
        return feed.finish(paths, cfg)

    def to_buffers(self) -> list[bytes | memoryview]:
        """The structure as one file's consecutive parts (see :meth:`from_buffer`).

        A fixed magic, the header length, a marshal header (format tag, paths,
        then per array its dtype, offset and length), then the arrays at
        8-byte-aligned offsets, so a reader maps the file and views them in place.
        """
        arrays: list[tuple[str, np.ndarray | bytes]] = []
        for name, vocab in (("terms", self.terms), ("idents", self.idents)):
            buf, offsets = vocab.to_parts()
            arrays += [(f"{name}.buf", buf), (f"{name}.off", offsets)]
        for name in ("bm25", "defs", "trans_t", "refs"):
            m = getattr(self, name)
            arrays += [(f"{name}.data", m.data), (f"{name}.indices", m.indices.astype(np.int32)),
                       (f"{name}.indptr", m.indptr.astype(np.int64))]
        arrays.append(("dangling", self.dangling.astype(bool)))
        shapes = {n: (getattr(self, n).fmt, getattr(self, n).shape) for n in ("bm25", "defs", "trans_t", "refs")}
        table, parts, offset = [], [], 0
        for name, a in arrays:
            raw = memoryview(a if isinstance(a, bytes) else np.ascontiguousarray(a)).cast("B")
            pad = -offset % 8
            parts += [b"\0" * pad, raw]
            offset += pad
            table.append((name, "bytes" if isinstance(a, bytes) else str(a.dtype), offset, raw.nbytes))
            offset += raw.nbytes
        header = marshal.dumps((STRUCTURE_FORMAT, self.paths, shapes, table))
        head_len = len(_MAGIC) + 8 + len(header)
        lead = -head_len % 8
        prefix = _MAGIC + (head_len + lead).to_bytes(8, "little") + header + b"\0" * lead
        return [prefix, *parts]

    @classmethod
    def from_buffer(cls, buf: Any) -> "RankStructure":
        """Inverse of :meth:`to_buffers` over a ``bytes`` or ``mmap`` (arrays are views of it);
        ValueError when ``buf`` holds anything else (another engine version's layout, a torn file)."""
        if len(buf) < len(_MAGIC) + 8 or buf[:len(_MAGIC)] != _MAGIC:
            raise ValueError("not a ranking structure file")
        start = int.from_bytes(buf[len(_MAGIC):len(_MAGIC) + 8], "little")
        try:
            fmt, paths, shapes, table = marshal.loads(buf[len(_MAGIC) + 8:start])
        except (ValueError, EOFError, TypeError) as exc:
            raise ValueError("unreadable ranking structure header") from exc
        if fmt != STRUCTURE_FORMAT:
            raise ValueError(f"ranking structure format {fmt!r}, not {STRUCTURE_FORMAT!r}")
        at: dict[str, tuple[str, int, int]] = {}
        for name, dtype, offset, nbytes in table:
            if start + offset + nbytes > len(buf):
                raise ValueError("truncated ranking structure file")
            at[name] = (dtype, start + offset, nbytes)

        def arr(name: str) -> np.ndarray:
            dtype, offset, nbytes = at[name]
            dt = np.dtype(dtype)
            return np.frombuffer(buf, dtype=dt, count=nbytes // dt.itemsize, offset=offset)

        def vocab(name: str) -> Vocabulary:
            return Vocabulary(buf, arr(f"{name}.off"), base=at[f"{name}.buf"][1])

        def mat(name: str) -> Compressed:
            fmt_, shape = shapes[name]
            return Compressed(fmt_, (int(shape[0]), int(shape[1])), arr(f"{name}.data"), arr(f"{name}.indices"),
                              arr(f"{name}.indptr"))
        return cls(paths, vocab("terms"), mat("bm25"), vocab("idents"), mat("defs"), mat("trans_t"),
                   arr("dangling"), mat("refs"))

    def term_col(self, term: str) -> int | None:
        """Column of ``term`` in ``bm25`` (None when no file contains it)."""
        return self.terms.find(term)

    def ident_col(self, name: str) -> int | None:
        """Column of identifier ``name`` in ``defs`` / ``refs``."""
        return self.idents.find(name)


class StructureFeed:
    """A :class:`RankStructure` being built: bags fed one at a time, in any row order.

    A bag holds a file's identifier counts and defined names; the terms and references are
    derived here, for the whole repository at once (:meth:`finish`): each distinct
    identifier is split into its terms once, the file x term counts are the file x
    identifier counts times the identifier x term split (plus the terms of each file's
    path), and a file's references are its identifiers of ``MIN_REF`` characters or more,
    one occurrence fewer for each name it defines.

    Triplets go into compact ``array`` buffers (4 bytes per entry, not a
    Python int per entry): a 20,000-file tree has tens of millions of them. The
    order bags arrive in never shows: the vocabularies are renumbered in sorted
    order and every matrix is built in canonical form (scipy sorts each row's
    columns when it converts the triplets), so a cold index can feed bags as its
    workers return them and get the structure a build from the cache would.
    """

    def __init__(self) -> None:
        self.names: dict[str, int] = _vocab()  # every identifier and defined name
        self.terms: dict[str, int] = _vocab()
        self.cr, self.cc, self.cv = array("i"), array("i"), array("f")  # identifier counts
        self.own = array("b")  # per count: 1 when the file defines that name
        self.dr, self.dc = array("i"), array("i")  # defined names
        self.pr, self.pc = array("i"), array("i")  # path terms
        self.sr, self.sc = array("i"), array("i")  # identifier x term split of the names split so far
        self.split_names = 0

    @staticmethod
    def prepare() -> None:
        """Import what :meth:`finish` needs (scipy), e.g. while other processes work."""
        import scipy.sparse  # noqa: F401  (``sp`` imports it on first use otherwise)

    def add(self, i: int, path: str, bag: tuple) -> None:
        """Feed row ``i``: the bag of the file at ``path``."""
        idents, defs = bag[BAG["idents"]], bag[BAG["defs"]]
        names = self.names
        self.cc.extend(_columns(names, idents))
        self.cv.extend(idents.values())
        self.cr.extend(array("i", [i]) * len(idents))
        self.own.extend(map(frozenset(defs).__contains__, idents))
        self.dc.extend(_columns(names, defs))
        self.dr.extend(array("i", [i]) * len(defs))
        parts = path_terms(path)
        self.pc.extend(_columns(self.terms, parts))
        self.pr.extend(array("i", [i]) * len(parts))

    def split_new(self) -> None:
        """Split the names fed since the last call into their terms (a cold index calls this as
        chunks of bags arrive, so little is left for :meth:`finish`)."""
        new = len(self.names) - self.split_names
        if new <= 0:
            return
        batch = list(islice(reversed(self.names), new))  # the newest names: a vocabulary keeps key order
        batch.reverse()
        owner, parts = split_identifiers(batch)
        self.sr.frombytes((owner + self.split_names).astype(np.int32).tobytes())
        self.sc.extend(_columns(self.terms, parts))
        self.split_names += new

    def renumber_rows(self, new_row: np.ndarray) -> None:
        """Replace every row ``r`` fed so far by ``new_row[r]``."""
        for name in ("cr", "dr", "pr"):
            old = getattr(self, name)
            if len(old):
                out = array("i")
                out.frombytes(new_row[np.frombuffer(old, dtype=np.int32)].astype(np.int32).tobytes())
                setattr(self, name, out)

    def finish(self, paths: list[str], cfg: RankConfig) -> RankStructure:
        """The structure over ``paths`` (rows fed index them); the feed is empty afterwards."""
        n = len(paths)
        self.split_new()
        names, terms = self.names, self.terms
        cr, cc, cv, dr, dc, pr, pc = self.cr, self.cc, self.cv, self.dr, self.dc, self.pr, self.pc
        own, split = self.own, (self.sr, self.sc)
        self.__init__()  # type: ignore[misc]
        # Each intermediate is dropped as soon as the next step no longer needs it (the
        # vocabulary dicts, the triplet buffers, the CSR forms): on the 20,000-file tree the
        # build's peak set the process's peak RSS.
        name_list = list(names)  # in column order (a vocabulary numbers keys as they come)
        del names
        rows, cols, vals = np.frombuffer(cr, dtype=np.int32), np.frombuffer(cc, dtype=np.int32), \
            np.frombuffer(cv, dtype=np.float32)
        bm25, term_vocab = _bm25(n, len(name_list), terms, (rows, cols, vals), split, (pr, pc), cfg)
        del terms, pr, pc, split
        ident_vocab, defs, refs = _definitions(n, name_list, (rows, cols, vals), own, (dr, dc))
        del name_list, rows, cols, vals, cr, cc, cv, own, dr, dc
        trans_t, dangling = _transition(defs, refs, cfg)
        defs_csc = Compressed.from_scipy(defs.tocsc())
        del defs
        return RankStructure(paths, term_vocab, bm25, ident_vocab, defs_csc,
                             Compressed.from_scipy(trans_t), dangling, Compressed.from_scipy(refs.tocsc()))


def _bm25(n: int, n_names: int, terms: dict[str, int], counts: tuple[np.ndarray, np.ndarray, np.ndarray],
          split_names: tuple[array, array], from_paths: tuple[array, array],
          cfg: RankConfig) -> tuple[Compressed, Vocabulary]:
    """The BM25-weighted file x term matrix (CSC) and its sorted term vocabulary: term counts
    are identifier counts times the identifier x term split, plus the path terms."""
    n_terms = len(terms)
    term_list, (split_cols, path_cols) = _sorted_vocab(terms, split_names[1], from_paths[1])
    del terms
    term_vocab = Vocabulary.from_sorted(term_list)
    del term_list
    rows, cols, vals = counts
    ident_counts = sp.csr_matrix((vals, (rows, cols)), shape=(n, n_names))
    split = sp.csr_matrix((np.ones(len(split_cols), dtype=np.float32),
                           (np.frombuffer(split_names[0], dtype=np.int32), split_cols)), shape=(n_names, n_terms))
    del split_cols
    tf = ident_counts @ split  # a name split into the same term twice (``foo_foo``) counts it twice
    del ident_counts, split
    tf = tf + sp.csr_matrix((np.ones(len(path_cols), dtype=np.float32),
                             (np.frombuffer(from_paths[0], dtype=np.int32), path_cols)), shape=(n, n_terms))
    tf.sum_duplicates()
    return Compressed.from_scipy(_bm25_weights(tf, cfg).tocsc()), term_vocab


def _definitions(n: int, name_list: list[str], counts: tuple[np.ndarray, np.ndarray, np.ndarray], own: array,
                 defined: tuple[array, array]) -> tuple[Vocabulary, sp.csr_matrix, sp.csr_matrix]:
    """The sorted vocabulary of defined or referenced names, the file x name definition matrix
    (1 where the file defines it) and the reference matrix (sqrt of the reference count)."""
    rows, cols, vals = counts
    drows, dcols = np.frombuffer(defined[0], dtype=np.int32), np.frombuffer(defined[1], dtype=np.int32)
    width = len(name_list)
    # a definition is not a reference to itself: one occurrence fewer of each defined name
    refs = vals - np.frombuffer(own, dtype=np.int8)
    long_name = np.fromiter(map(len, name_list), dtype=np.int64, count=len(name_list)) >= MIN_REF
    keep = (refs > 0) & long_name[cols]
    rrows, rcols, refs = rows[keep], cols[keep], refs[keep]
    used = np.flatnonzero(np.bincount(dcols, minlength=width) + np.bincount(rcols, minlength=width))
    order = sorted(used.tolist(), key=name_list.__getitem__)
    remap = np.full(len(name_list), -1, dtype=np.int32)
    remap[np.asarray(order, dtype=np.int64)] = np.arange(len(order), dtype=np.int32)
    ident_vocab = Vocabulary.from_sorted([name_list[c] for c in order])
    defs = sp.csr_matrix((np.ones(len(drows), dtype=np.float32), (drows, remap[dcols])), shape=(n, len(order)))
    defs.sum_duplicates()
    defs.data[:] = 1.0
    refs_m = sp.csr_matrix((np.sqrt(refs), (rrows, remap[rcols])), shape=(n, len(order)))
    return ident_vocab, defs, refs_m


def _columns(vocab: dict[str, int], keys: Iterable[str]) -> tuple[int, ...]:
    """Columns of ``keys``, adding unseen ones in first-seen order (renumbered in sorted order
    by :func:`_sorted_vocab`, so this order never shows); zip/itemgetter run in C, not per key."""
    keys = tuple(keys)
    if not keys:
        return ()
    # ``vocab`` numbers a key it lacks when it is looked up (:func:`_vocab`), so this is one C
    # call per bag, not a Python-level membership test per key
    got = itemgetter(*keys)(vocab)
    return got if len(keys) > 1 else (got,)


def _vocab() -> dict[str, int]:
    """An empty vocabulary that gives each new key the next column (0, 1, 2, ...) when looked up."""
    return defaultdict(count().__next__)


def _sorted_vocab(vocab: dict[str, int], *cols: array) -> tuple[list[str], list[np.ndarray]]:
    """Renumber columns so the vocabulary is sorted (deterministic, bisectable)."""
    order = sorted(vocab)
    remap = np.empty(len(order), dtype=np.int32)
    remap[np.asarray(itemgetter(*order)(vocab) if len(order) > 1 else [vocab[k] for k in order],
                     dtype=np.int64)] = np.arange(len(order))
    return order, [remap[np.frombuffer(c, dtype=np.int32)] if len(c) else np.zeros(0, dtype=np.int32)
                   for c in cols]


def _bm25_weights(tf: sp.csr_matrix, cfg: RankConfig) -> sp.csr_matrix:
    """``tf`` (file x term counts, canonical CSR) turned into BM25 weights in place."""
    n, n_terms = tf.shape
    dl = np.asarray(tf.sum(axis=1)).ravel()
    avg = float(dl.mean()) if n else 1.0
    df = np.bincount(tf.indices, minlength=n_terms) if tf.nnz else np.zeros(n_terms)
    idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5)).astype(np.float32)
    norm = cfg.bm25_k1 * (1.0 - cfg.bm25_b + cfg.bm25_b * dl / max(avg, 1e-9))
    row_of = np.repeat(np.arange(n), np.diff(tf.indptr))
    x = tf.data
    tf.data = (x * (cfg.bm25_k1 + 1.0) / (x + norm[row_of])).astype(np.float32) * idf[tf.indices]
    return tf


def _transition(defs: sp.csr_matrix, refs: sp.csr_matrix, cfg: RankConfig) -> tuple[sp.csr_matrix, np.ndarray]:
    n = defs.shape[0]
    ndef = np.asarray(defs.sum(axis=0)).ravel()
    usable = (ndef >= 1) & (ndef <= cfg.max_def_files)
    # a name mentioned by many files (often an English word in comments: "Text",
    # "Message") says little about which definition a file depends on
    nref = np.diff(refs.tocsc().indptr).astype(np.float64)
    idf = np.where(usable, np.log1p(n / np.maximum(ndef, 1.0)) * np.log1p(n / np.maximum(nref, 1.0)), 0.0)
    idf = idf.astype(np.float32)
    share = np.where(usable, 1.0 / np.maximum(ndef, 1.0), 0.0).astype(np.float32)
    w = (refs @ sp.diags(idf)) @ (defs @ sp.diags(share)).T
    w = sp.csr_matrix(w)
    w.setdiag(0.0)
    w.eliminate_zeros()
    out = np.asarray(w.sum(axis=1)).ravel()
    dangling = out <= 0
    inv = np.where(dangling, 0.0, 1.0 / np.where(dangling, 1.0, out))
    trans = sp.diags(inv) @ w
    return sp.csr_matrix(trans.T), dangling


@dataclass
class Personalization:
    """Per-file signal vectors for one request (each length = number of files)."""

    lexical: np.ndarray
    ident: np.ndarray
    path: np.ndarray
    trace: np.ndarray
    focus: np.ndarray
    name: np.ndarray | None = None
    query_cols: list[int] = field(default_factory=list)
    query_idents: list[str] = field(default_factory=list)


@dataclass
class RankOutput:
    """Final scores plus the normalized signals behind them."""

    score: np.ndarray
    signals: dict[str, np.ndarray]


def goal_terms(goal: str, min_len: int) -> list[str]:
    """Lexical terms of a goal text (code-aware splitting, deterministic order), stopwords dropped."""
    out: list[str] = []
    words = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", goal)
    for ident in words:
        out.extend(t for t in split_identifier(ident) if len(t) >= min_len and not is_stopword(t))
    # "flight plan" should also find ``flightplan.py`` / ``FlightPlan``
    for a, b in zip(words, words[1:]):
        if a.isalpha() and b.isalpha() and not (is_stopword(a.lower()) or is_stopword(b.lower())):
            out.append((a + b).lower())
    return out


def goal_mentions(goal: str) -> tuple[list[str], list[str], list[str]]:
    """(identifiers, path-like strings, stack-trace file names) named in a goal."""
    traces = [m.group(1).replace("\\", "/") for m in _TRACE.finditer(goal)]
    paths = [m.group(0).lstrip("./").rstrip(".") for m in _PATHLIKE.finditer(goal)]
    # plain lowercase words ("plan", "render") are prose, not identifiers
    idents = [w for w in _IDENTLIKE.findall(goal) if "_" in w or not w.islower()]
    return idents, paths, traces


def name_index(paths: list[str]) -> dict[str, list[int]]:
    """Words naming each file: its stem's identifier parts and the whole stem (``flightplan``)."""
    out: dict[str, list[int]] = {}
    for i, p in enumerate(paths):
        stem = p.rsplit("/", 1)[-1].split(".", 1)[0]
        words = {w.lower() for w in split_identifier(stem)} | {stem.lower().replace("_", "").replace("-", "")}
        for w in words:
            out.setdefault(w, []).append(i)
    return out


def name_hits(index: dict[str, list[int]], terms: list[str], n: int) -> np.ndarray:
    """Per file: the goal words that name it, each worth ``1 / log2(1 + files it names)``, max 1."""
    v = np.zeros(n)
    for t in sorted(set(terms)):
        rows = index.get(t)
        if rows:
            v[rows] += 1.0 / np.log2(1.0 + len(rows))
    return _norm(v)


def personalized_rank(rs: RankStructure, pers: Personalization, cfg: RankConfig) -> RankOutput:
    """Personalized PageRank (fixed iterations) blended with lexical relevance."""
    n = len(rs.paths)
    lex = _norm(pers.lexical)
    rel = (cfg.goal_weight * lex + cfg.ident_weight * pers.ident + cfg.path_weight * pers.path
           + cfg.trace_weight * pers.trace)
    if pers.name is not None:
        rel = rel + cfg.name_weight * pers.name
    p = rel + pers.focus
    total = float(p.sum())
    p = p / total if total > 0 else np.full(n, 1.0 / max(n, 1))
    r = p.copy()
    d = cfg.damping
    for _ in range(cfg.iterations):
        nxt = d * (rs.trans_t @ r + float(r[rs.dangling].sum()) * p) + (1.0 - d) * p
        done = float(np.abs(nxt - r).sum()) < cfg.tolerance
        r = nxt
        if done:
            break
    pr = _norm(r)
    score = cfg.pagerank_weight * pr + cfg.lexical_weight * _norm(rel)
    score = score + cfg.focus_score_boost * (pers.focus > 0)
    signals = {"pagerank": pr, "bm25": lex, "ident": pers.ident, "path": pers.path,
               "trace": pers.trace, "focus": _norm(pers.focus)}
    if pers.name is not None:
        signals["name"] = pers.name
    return RankOutput(score=score, signals=signals)


def _norm(v: np.ndarray) -> np.ndarray:
    m = float(v.max()) if v.size else 0.0
    return v / m if m > 0 else np.zeros_like(v, dtype=np.float64)
