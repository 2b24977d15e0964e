"""Per-file indexing: read bytes once, classify, parse, price every level.

A file's result is two compact tuples (marshal-able, cached by content hash):

* the **record** (needed for rendering): status, language, size, line count,
  decode flag, parse error, exact content cost of levels 2-3, the level-4 (whole
  file) cost of a small file or a proven lower bound of it for a larger one (the
  exact count is made when a render needs it: :func:`full_cost`, :func:`full_bounds`),
  and the symbols (a symbol's body is priced when a render expands it: :func:`body_costs`);
* the **bag** (needed for ranking): the count of every identifier in the text (docstring and
  comment words included), the defined names and the imports. The ranking structure
  derives the rest (:class:`repomap.rank.StructureFeed`): each distinct identifier of the
  repository is split into its code-aware terms once (:func:`split_identifier`), not once
  per file it is in, and a file's references are its identifiers of three characters or
  more, one occurrence fewer for each name it defines.

Both depend on the bytes and on the parser the path selects (:func:`parser_for`),
never on the rest of the path: they are cached by content and shared by every
file with those bytes and that parser. The terms of a file's own path
(:func:`path_terms`) are added when its bag is used.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from itertools import compress, repeat

import numpy as np

from durable_navigator.repomap.config import DiscoverConfig, RenderConfig
from durable_navigator.repomap.contentskip import content_skip
from durable_navigator.repomap.layout import FENCE_CLOSE, FENCE_OPEN, doc_block, outline_line
from durable_navigator.repomap.parse_python import parse_python
from durable_navigator.repomap.parse_treesitter import language_for, parse_treesitter
from durable_navigator.repomap.parsed import ParsedFile
from durable_navigator.repomap.tokens import count_tokens, tokens_per_line

__all__ = ["index_file", "body_costs", "line_prefix_costs", "fence_cost", "full_cost", "full_bounds", "full_priced", "parser_for", "split_identifier",
           "split_identifiers", "path_terms", "REC", "SYM", "BAG", "MIN_REF"]

# Field positions in the record / symbol / bag tuples (stable: part of the cache layout).
REC = {"status": 0, "lang": 1, "size": 2, "lines": 3, "replaced": 4, "error": 5, "costs": 6, "symbols": 7}
SYM = {"qual": 0, "name": 1, "kind": 2, "start": 3, "end": 4, "sig_start": 5, "sig_end": 6,
       "doc_start": 7, "doc_end": 8, "sig": 9, "doc": 10, "depth": 11}
BAG = {"idents": 0, "defs": 1, "imports": 2}

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: bytes -> themselves for ASCII letters, digits and "_", else a space (see :func:`_identifiers`)
_WORD_BYTES = bytes(c if chr(c).isascii() and (chr(c).isalnum() or c == 95) else 32 for c in range(256))
_DIGITS = "0123456789"
#: camel-case parts; an acronym's plural is the acronym (``URLs`` -> ``URL``, ``s``; not ``UR``, ``Ls``)
_SUBWORD = re.compile(r"[A-Z]{2,}(?=s(?![a-z]))|[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_SUBWORD_SPLIT = re.compile(f"({_SUBWORD.pattern})")
_MIN_TERM = 2
#: identifiers shorter than this are no references (``x``, ``db``: they name too much to link files)
MIN_REF = 3
#: files under this many bytes get their exact level-4 cost at index time (cheap, and the
#: small files are the ones a fit most often needs); larger ones store a lower bound
EAGER_FULL_BYTES = 4096
#: ASCII letters and digits -> "a", every other ASCII byte -> " " (non-ASCII bytes deleted):
#: the "a" runs of the result are what :func:`_full_lower_bound` counts
_ALNUM_RUNS = bytes(97 if chr(c).isascii() and chr(c).isalnum() else 32 for c in range(128)) + bytes(128)
_NON_ASCII = bytes(range(128, 256))


@functools.lru_cache(maxsize=1 << 17)
def split_identifier(ident: str) -> tuple[str, ...]:
    """Code-aware terms of an identifier: snake/camel parts plus the whole, lowercased."""
    parts = [p.lower() for p in _SUBWORD.findall(ident) if len(p) >= _MIN_TERM]
    whole = ident.lower().strip("_")
    if len(whole) >= _MIN_TERM and whole not in parts:
        parts.append(whole)
    return tuple(parts)


def split_identifiers(names: list[str]) -> tuple[np.ndarray, list[str]]:
    """:func:`split_identifier` of every name at once: ``(owner, terms)``, where ``terms[k]`` is a
    term of ``names[owner[k]]`` (a name's terms in any order, a repeated one repeated).

    One regular-expression pass over the names joined by line breaks (no camel part spans a
    line break, and a lookahead reads one like the end of a name), then C-level maps. A
    name's whole (lowercased, ``_`` stripped) is one of its parts exactly when it has one
    part and that part is as long as the whole.
    """
    if not names:
        return np.zeros(0, dtype=np.int64), []
    pieces = _SUBWORD_SPLIT.split("\n".join(names))  # gap, part, gap, part, ..., gap
    found = pieces[1::2]
    n, k = len(names), len(found)
    owner = np.cumsum(np.fromiter(map(str.count, pieces[0:-1:2], repeat("\n")), dtype=np.int64, count=k))
    size = np.fromiter(map(len, found), dtype=np.int64, count=k)
    wholes = list(map(str.strip, map(str.lower, names), repeat("_")))
    whole_size = np.fromiter(map(len, wholes), dtype=np.int64, count=n)
    only = np.bincount(owner, minlength=n) == 1
    only_size = np.zeros(n, dtype=np.int64)
    only_size[only] = size[np.searchsorted(owner, np.flatnonzero(only))]
    with_whole = np.flatnonzero((whole_size >= _MIN_TERM) & ~(only & (only_size == whole_size)))
    keep = size >= _MIN_TERM
    terms = list(map(str.lower, compress(found, keep.tolist())))
    terms += [wholes[i] for i in with_whole.tolist()]
    return np.concatenate((owner[keep], with_whole)), terms


def path_terms(path: str) -> list[str]:
    """Terms of a path's parts (directories, stem, extension)."""
    out: list[str] = []
    for piece in re.split(r"[/._\-\s]+", path):
        if piece:
            out.extend(split_identifier(piece))
    return out


def parser_for(path: str) -> str:
    """The parser a path selects ("python", a tree-sitter language, or "" for none).

    Part of a file's cache key: the same bytes give another record under another
    parser (an empty ``__init__.py`` and an empty ``.txt`` file).
    """
    if path.endswith((".py", ".pyi")):
        return "python"
    return language_for(path) or ""


def index_file(path: str, data: bytes, dcfg: DiscoverConfig, rcfg: RenderConfig) -> tuple[tuple, tuple]:
    """Index one file's bytes into ``(record, bag)``; skipped files get a status reason.

    Only :func:`parser_for` of ``path`` matters, so the result can be shared by
    every file with these bytes and that parser.
    """
    status = content_skip(data, dcfg)
    if status:
        return (status, "", len(data), 0, False, "", (0, 0, 0), ()), ({}, {}, (), ())
    text, raw, replaced = _decoded(data)
    lines = text.splitlines()
    lang, parsed = _parse(path, text, raw, lines)
    symbols, c2, c3 = _price_symbols(parsed, rcfg)
    # the whole text's tokens, not each line's (only a render that expands a symbol needs
    # the tokens of its lines: body_costs), and only for a small file: a larger one stores
    # -1 - (a lower bound of its count), and a render counts it exactly only when its fit
    # depends on the number (render.py, fit.must_price)
    if len(data) < EAGER_FULL_BYTES:
        c4 = count_tokens(text) + fence_cost()
    else:
        c4 = -1 - _full_lower_bound(raw)
    rec = (
        "", lang, len(data), len(lines), replaced, parsed.error or "",
        (c2, c3, c4), tuple(symbols),
    )
    return rec, _bag(text, parsed)


def _decoded(data: bytes) -> tuple[str, bytes, bool]:
    """``(text, its UTF-8 bytes, replaced)``: UTF-8, with replacement characters when it is not."""
    try:
        return data.decode("utf-8"), data, False
    except UnicodeDecodeError:
        text = data.decode("utf-8", "replace")
        return text, text.encode(), True


def body_costs(data: bytes, spans: list[tuple[int, int]]) -> list[int]:
    """Exact cost of showing each symbol span (1-based ``start..end`` lines of ``data``) in full.

    The tokens of the whole text that start on the span's lines (lines split at
    ``"\\n"``) plus the fence: what a level-4 cost is made of, cut to the span. Only
    :func:`index_file` decides how the text is decoded, so this prices the bytes the
    record was made from the same way.
    """
    cum, fence = line_prefix_costs(data), fence_cost()
    n = len(cum) - 1
    return [int(cum[min(end, n)] - cum[min(max(start - 1, 0), n)]) + fence for start, end in spans]


def line_prefix_costs(data: bytes) -> np.ndarray:
    """Cumulative tokens of ``data``'s lines (``[0, line 1, lines 1-2, ...]``), counted as
    :func:`body_costs` counts them: a span ``a..b`` costs ``cum[b] - cum[a - 1]`` plus the fence."""
    text, raw, _ = _decoded(data)
    return np.concatenate(([0], np.cumsum(tokens_per_line(text, raw))))


def full_cost(data: bytes) -> int:
    """Exact level-4 content cost of a file's bytes: its decoded text's tokens plus the fence.

    The number :func:`index_file` stores for a small file (decoded the same way).
    """
    return count_tokens(_decoded(data)[0]) + fence_cost()


def full_priced(rec: tuple) -> bool:
    """Whether a record holds its exact level-4 cost (else a lower bound: :func:`full_bounds`)."""
    return rec[REC["costs"]][2] >= 0


def full_bounds(rec: tuple) -> tuple[int, int]:
    """``(lo, hi)`` with ``lo <= full_cost(data) <= hi`` for the bytes the record was made from.

    Exact records give ``(c, c)``. Otherwise ``lo`` is the stored lower bound plus the
    fence and ``hi`` counts one token per byte of the decoded text's UTF-8 (a token is at
    least one byte; a replacement character is three bytes for one of the file).
    """
    c4 = rec[6][2]  # REC["costs"]: a render asks for every unpriced file's bounds
    if c4 >= 0:
        return c4, c4
    fence = fence_cost()
    return -1 - c4 + fence, rec[2] * (3 if rec[4] else 1) + fence  # REC size, replaced


def _full_lower_bound(raw: bytes) -> int:
    r"""A lower bound of the cl100k tokens of the UTF-8 text ``raw``: its runs of ASCII letters and
    digits, where non-ASCII characters join the runs on both sides.

    Runs are separated by an ASCII byte that is neither a letter nor a digit. Map each run to
    the pre-tokenizer piece holding its last ASCII letter or digit: that piece holds a letter
    or digit, so it is a letter piece (``[^\r\n\p{L}\p{N}]?\p{L}+``), a digit piece
    (``\p{N}{1,3}``) or a contraction (``'s`` ...), and none of those holds a separator
    anywhere but at its first character. So no piece holds the last letters of two runs:
    distinct runs, distinct pieces, and every piece is at least one token.
    """
    t = raw.translate(_ALNUM_RUNS, _NON_ASCII)
    return t.count(b" a") + (t[:1] == b"a")


def _parse(path: str, text: str, data: bytes, lines: list[str]) -> tuple[str, ParsedFile]:
    lang = parser_for(path)
    if lang == "python":
        return lang, parse_python(text, lines)
    if not lang:
        return "", ParsedFile()
    return lang, parse_treesitter(lang, data, lines)


@functools.cache
def fence_cost() -> int:
    """Tokens of the fence around a shown body (``layout.source_block``)."""
    # one by one, not ``count_many`` (whose counts are the same): its join needs the token
    # length table, which an index worker would load for this alone
    return count_tokens(FENCE_OPEN) + count_tokens(FENCE_CLOSE)


def _price_symbols(parsed: ParsedFile, rcfg: RenderConfig) -> tuple[list[tuple], int, int]:
    """The symbol tuples and the exact content cost of levels 2 (outline) and 3 (+ docstrings).

    Each level's lines are counted joined, which is the sum of their separate counts:
    every outline line (``"  <n>: ..."``) and docstring block (``"  ... | ..."``) ends in
    a newline and starts with spaces and then a printable ASCII character, and such a
    line start is always where a cl100k pre-tokenizer piece starts, so no token spans
    two. The piece holding the newline before it is ``\\s*[\\r\\n]+`` (it ends after the
    last line break of its whitespace run, and the run holds none after the newline)
    or `` ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*`` (it takes only line breaks after its
    punctuation); ``\\s+(?!\\S)`` and ``\\s+`` are never tried where a line break
    follows in the run. ``test_index_costs`` checks the sums against separate counts.
    """
    symbols = parsed.symbols
    c2 = count_tokens("".join([outline_line(s.start, s.depth, s.signature) for s in symbols]))
    docs = count_tokens("".join([doc_block(s.depth, s.doc, rcfg.doc_max_lines) for s in symbols if s.doc]))
    out = [(s.qualname, s.name, s.kind, s.start, s.end, s.sig_start, s.sig_end, s.doc_start, s.doc_end,
            s.signature, s.doc or "", s.depth) for s in symbols]
    return out, c2, c2 + docs


def _identifiers(text: str) -> Counter[str]:
    """Counts of the ``_IDENT`` matches of ``text``, without the regex.

    Every byte that cannot be part of an ASCII identifier becomes a space (non-ASCII
    characters first become ``?``), so the words of the result are the runs of
    ``[A-Za-z0-9_]``; a match starts at a run's first non-digit (``2to3`` -> ``to3``),
    so runs with leading digits are trimmed and merged (pure numbers dropped).
    """
    raw = text.encode("ascii", "replace") if not text.isascii() else text.encode("ascii")
    counts = Counter(raw.translate(_WORD_BYTES).decode("ascii").split())
    for word in [w for w in counts if w[0] in _DIGITS]:
        n = counts.pop(word)
        ident = word.lstrip(_DIGITS)
        if ident:
            counts[ident] += n
    return counts


def _bag(text: str, parsed: ParsedFile) -> tuple:
    return dict(_identifiers(text)), tuple(sorted({s.name for s in parsed.symbols})), tuple(parsed.imports)
