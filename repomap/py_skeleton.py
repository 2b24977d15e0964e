"""The source ``ast.parse`` needs for an outline: function bodies nested in a def or class cut.

:func:`parse_python` walks module bodies, class bodies (at any depth) and the bodies of
top-level functions. The body of any other function -- a method, a function nested in a
function -- is never walked: of it the outline takes only its first statement (a
docstring) and the line its last statement ends on. In the standard library those
bodies are 45 % of the bytes and 73 % of ``ast.parse``'s time (the time of a cold
index is mostly that parse). So before parsing, :func:`skeleton` blanks every such
body from its second statement on and writes ``pass`` on the line the body ended on:
the parse of the skeleton gives the same symbols, signatures, docstrings, line spans and
imports as the parse of the file (``tests/repomap/test_py_skeleton.py`` compares both
on the standard library), in about a quarter of the time.

Finding where a body ends takes the logical lines of the file, which a regular
expression finds: string literals and comments are masked (a string keeps its line
breaks, every line it continues onto is marked), and a physical line starts a
logical line unless it is inside a string, inside brackets or after a backslash
continuation. A body ends before the next logical line indented no deeper than its
``def``. Lines stay where they are, so every line number is the file's.

A file is parsed whole (``None``) when this lexing is not certain to be Python's:
tabs, form feeds or carriage returns (indentation and line rules this does not model),
a quote no string took or unbalanced brackets (a file the parser would refuse), and on
Python 3.12+ any f-string or t-string (their replacement fields may nest quotes and
span lines there). What changes with the cut: a syntax error inside a cut body is not
seen, so such a file gets its outline where the whole-file parse gave none (the
parser still refuses everything outside those bodies). A skeleton the parser refuses
is never used: the file is parsed whole.
"""

from __future__ import annotations

import bisect
import re
import sys
from collections.abc import Iterator
from itertools import islice

import numpy as np

__all__ = ["skeleton", "MIN_SKELETON_CHARS"]

#: files shorter than this are parsed whole (the lexing costs about what the cut saves)
MIN_SKELETON_CHARS = 2048

# String literals (prefix letters do not change where one ends) and comments, in the
# order Python's tokenizer sees them. Possessive runs: an unterminated string fails
# fast instead of backtracking.
_TOKEN = re.compile(
    r"""(#[^\n]*+"""
    r"""|'''(?:[^'\\]++|\\.|'(?!''))*+'''"""
    r'''|"""(?:[^"\\]++|\\.|"(?!""))*+"""'''
    r"""|'(?:[^'\\\n]++|\\.)*+'"""
    r'''|"(?:[^"\\\n]++|\\.)*+")''',
    re.S)
#: on 3.12+ an f-string (PEP 701) or t-string (PEP 750) is not one regular token
_NESTED_QUOTES = re.compile(r"(?<![A-Za-z0-9_])(?:[fFtT][rR]?|[rR][fFtT])['\"]") if sys.version_info >= (3, 12) else None

#: +1 for an opening bracket, -1 for a closing one, per byte
_BRACKET = np.zeros(256, dtype=np.int32)
_BRACKET[list(b"([{")] = 1
_BRACKET[list(b")]}")] = -1
#: bytes that can continue an identifier (non-ASCII bytes may: a UTF-8 letter)
_IDENT = np.zeros(256, dtype=bool)
_IDENT[list(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")] = True
_IDENT[128:] = True
_PAD = 10
_STRING_LINE = 1  # first byte of a line a string continues onto (the mask's mark)


def _mask(token: str) -> str:
    """A comment vanishes; a string becomes ``S`` plus its line breaks, each followed by the mark."""
    if token[0] == "#":
        return ""
    n = token.count("\n")
    return "S" + "\n\x01" * n if n else "S"


def _masked(text: str) -> bytes | None:
    """The text with strings and comments masked (UTF-8), or None when lexing is unsure."""
    pieces = _TOKEN.split(text)
    pieces[1::2] = map(_mask, pieces[1::2])
    masked = "".join(pieces).encode("utf-8", "surrogatepass")
    if b"'" in masked or b'"' in masked:
        return None
    return masked


class _Lines:
    """Per physical line of the masked text: start, indentation, and what its logical line is."""

    def __init__(self, masked: bytes) -> None:
        b = np.frombuffer(masked, dtype=np.uint8)
        nl = np.flatnonzero(b == 10)
        starts = np.concatenate(([0], nl + 1))
        ends = np.concatenate((nl, [len(b)]))
        depth = np.cumsum(_BRACKET[b])
        self.ok = not len(depth) or (int(depth[-1]) == 0 and int(depth.min()) >= 0)
        after_break = np.zeros(len(starts), dtype=bool)  # a line the previous one continues onto
        after_break[1:] = (depth[nl] > 0) | (b[np.maximum(nl - 1, 0)] == 92)  # in brackets, after a backslash
        solid = np.flatnonzero(b != 32)  # line breaks included: a blank line's first solid byte ends it
        first = np.append(solid, len(b))[np.searchsorted(solid, starts)]
        blank = first >= ends
        padded = np.concatenate((b, np.zeros(_PAD, dtype=np.uint8)))
        in_string = ~blank & (padded[first] == _STRING_LINE)
        at = np.flatnonzero(~blank & ~after_break & ~in_string)
        f = first[at]
        # each logical line's first 8 bytes as one little-endian integer, for the keyword tests
        head = np.ascontiguousarray(padded[f[:, None] + np.arange(8)]).view("<u8").ravel()
        is_def = _starts(head, b"def ") | (_starts(head, b"async de") & (padded[f + 8] == 102) & (padded[f + 9] == 32))
        clause = (_starts(head, b"else", True) | _starts(head, b"elif", True) | _starts(head, b"except", True)
                  | _starts(head, b"finally", True))
        self.count = len(starts)
        self.nonblank: list[int] = np.flatnonzero(~blank).tolist()
        #: the logical lines (0-based line numbers), their indentation and what they start with
        self.logical: list[int] = at.tolist()
        self.masked = masked
        self.first: list[int] = f.tolist()  # offset of each logical line's first byte
        self.indents = f - starts[at]
        self.indent: list[int] = self.indents.tolist()
        self.defs: list[int] = np.flatnonzero(is_def).tolist()
        self.is_head: list[bool] = (is_def | _starts(head, b"class ")).tolist()
        self.is_clause: list[bool] = clause.tolist()
        self.is_decorator: list[bool] = ((head & 0xFF) == 64).tolist()  # "@"


def _starts(head: np.ndarray, word: bytes, whole: bool = False) -> np.ndarray:
    """Whether each line's first 8 bytes (``head``) start with ``word`` (``whole``: not followed
    by a byte an identifier could go on with)."""
    n = len(word)
    mask = (1 << (8 * n)) - 1
    hit = (head & np.uint64(mask)) == np.uint64(int.from_bytes(word, "little"))
    if whole:
        hit &= ~_IDENT[((head >> np.uint64(8 * n)) & np.uint64(0xFF)).astype(np.uint8)]
    return hit


def skeleton(text: str) -> str | None:
    """``text`` with the bodies :func:`parse_python` never walks cut (same line numbers), or
    None when the file should be parsed whole (short, nothing to cut, lexing unsure)."""
    if (len(text) < MIN_SKELETON_CHARS or "\t" in text or "\f" in text or "\r" in text
            or (_NESTED_QUOTES is not None and _NESTED_QUOTES.search(text))):
        return None
    masked = _masked(text)
    if masked is None:
        return None
    lines = _Lines(masked)
    if not lines.ok:
        return None
    cuts = _cuts(lines)
    if not cuts:
        return None
    out = text.split("\n")
    for first, last, indent in cuts:
        out[first:last + 1] = [""] * (last + 1 - first)
        if indent >= 0:
            out[last] = " " * indent + "pass"
    return "\n".join(out)


#: ``(first, last, indent)``: blank lines ``first..last`` (0-based); ``pass`` at ``last`` with
#: that indentation unless it is -1 (a statement the walk reads follows in the same body)
Cut = tuple[int, int, int]


def _cuts(lines: _Lines) -> list[Cut]:
    """The bodies (or runs of a body's statements) :func:`parse_python` never reads, disjoint,
    sorted by first line."""
    logical, indent, is_head = lines.logical, lines.indent, lines.is_head
    shallower: dict[int, list[int]] = {}  # indentation -> logical-line indexes indented less
    not_deeper: dict[int, list[int]] = {}  # ... indented no more
    cuts: list[Cut] = []
    for j in lines.defs:
        line, ind = logical[j], indent[j]
        k = bisect.bisect_right(cuts, (line, 1 << 62)) - 1
        if k >= 0 and cuts[k][1] >= line:
            continue  # inside a cut already
        upto = not_deeper.get(ind)
        if upto is None:
            upto = not_deeper[ind] = np.flatnonzero(lines.indents <= ind).tolist()
        k = bisect.bisect_right(upto, j)
        end_j = upto[k] if k < len(upto) else len(logical)  # the first logical line after the body
        if end_j - j < 3 or indent[j + 1] <= ind:
            continue  # a body of one statement (or a one-line def)
        stop = logical[end_j] if end_j < len(logical) else lines.count
        last = lines.nonblank[bisect.bisect_left(lines.nonblank, stop) - 1]
        less = shallower.get(ind)
        if less is None:
            less = shallower[ind] = np.flatnonzero(lines.indents < ind).tolist()
        k = bisect.bisect_left(less, j) - 1
        statements = _statements(lines, j + 1, end_j)
        if k >= 0 and is_head[less[k]]:
            # a method or a function in a function: the walk reads its first statement only
            second = next(islice(statements, 1, None), None)
            new = [(logical[second], last, indent[j + 1])] if second is not None else []
        else:
            # module level (or under a module-level if/try): the walk reads the definitions
            # and annotated names of its body too
            new = _top_level_cuts(lines, list(statements), last)
        for cut in new:  # (a cut inside a kept statement lies before the cuts around it)
            bisect.insort(cuts, cut)
    return cuts


def _statements(lines: _Lines, lo: int, hi: int) -> Iterator[int]:
    """The logical lines in ``lo..hi-1`` that start a statement of the body starting at ``lo``:
    indented as ``lo``, not a clause of the statement before (``else``, ``except`` ...), not
    the definition a decorator line before it decorates."""
    indent, is_clause, is_deco = lines.indent, lines.is_clause, lines.is_decorator
    level = indent[lo]
    yield lo
    prev = lo
    for i in range(lo + 1, hi):
        if indent[i] != level:
            continue
        if not is_clause[i] and not is_deco[prev]:
            yield i
        prev = i


#: an annotated name (``x: int = 0``): the walk makes it a field when it is in a function body
_ANNOTATED = re.compile(rb"[A-Za-z_\x80-\xff][A-Za-z0-9_\x80-\xff]* *:(?!=)")


def _top_level_cuts(lines: _Lines, statements: list[int], last: int) -> list[Cut]:
    """Runs of a top-level function's statements but the first, definitions (decorated ones from
    their first decorator) and annotated names: blanked, ``pass`` ending the body if it ended on one."""
    logical, is_head, is_deco, first = lines.logical, lines.is_head, lines.is_decorator, lines.first
    masked = lines.masked
    out: list[Cut] = []
    run = -1  # first statement of the run being blanked
    for n, i in enumerate(statements):
        keep = n == 0 or is_head[i] or is_deco[i] or _ANNOTATED.match(masked, first[i]) is not None
        if keep and run >= 0:
            out.append((logical[statements[run]], logical[i] - 1, -1))
            run = -1
        elif not keep and run < 0:
            run = n
    if run >= 0:
        out.append((logical[statements[run]], last, lines.indent[statements[0]]))
    return out
