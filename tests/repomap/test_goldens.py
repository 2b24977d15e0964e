"""Golden maps per language: regenerate and compare (UPDATE_GOLDENS=1 rewrites them)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from durable_navigator.navtypes.flightplan import FlightPlan, Level
from durable_navigator.repomap import RepoMap
from durable_navigator.repomap.tokens import count_tokens

from tests.support.repomap import LANGUAGES, copy_fixture

GOLDENS = Path(__file__).parent / "goldens"
PLANS = {
    "docs": FlightPlan(token_budget=2000, default_level=Level.DOCS),
    "outline": FlightPlan(token_budget=2000, default_level=Level.OUTLINE, show_why=False),
    "auto-tight": FlightPlan(token_budget=160, goal="add an item and return the total count"),
}


def _render_all(rm: RepoMap) -> str:
    out = []
    for name, plan in PLANS.items():
        res = rm.render(plan)
        assert count_tokens(res.text) == res.metadata.tokens_used <= plan.token_budget
        out.append(f"===== plan {name} =====\n{res.text}")
    return "".join(out)


@pytest.mark.parametrize("lang", LANGUAGES)
def test_golden_map(lang: str, tmp_path: Path) -> None:
    root = copy_fixture(lang, tmp_path)
    rm = RepoMap.open(root, cache_dir=tmp_path / "cache", jobs=1)
    text = _render_all(rm)
    golden = GOLDENS / f"{lang}.txt"
    if os.environ.get("UPDATE_GOLDENS") == "1":
        golden.write_text(text, encoding="utf-8")
    assert golden.exists(), f"missing golden {golden}; run with UPDATE_GOLDENS=1"
    assert text == golden.read_text(encoding="utf-8")


@pytest.mark.parametrize("lang", LANGUAGES)
def test_every_language_yields_symbols(lang: str, tmp_path: Path) -> None:
    rm = RepoMap.open(copy_fixture(lang, tmp_path), cache_dir=tmp_path / "cache", jobs=1)
    code = [p for p in rm.files if not p.endswith(".md")]
    assert code
    for path in code:
        syms = rm.symbols(path)
        if path.endswith(("index.js", "View.tsx", "queue.h", "cli.py")) and not syms:
            continue
        assert syms, f"{lang}: no symbols in {path}"
        for s in syms:
            assert s.id == f"{path}::{s.id.split('::', 1)[1]}" and s.start_line <= s.end_line
            assert s.signature.strip()


def test_python_signatures_are_exact(tmp_path: Path) -> None:
    rm = RepoMap.open(copy_fixture("python", tmp_path), cache_dir=tmp_path / "cache", jobs=1)
    by_id = {s.id: s for s in rm.symbols("pkg/budget.py")}
    charge = by_id["pkg/budget.py::charge"]
    assert charge.signature == 'def charge(budget: Budget, tokens: int, *, label: str=\'call\') -> Budget:'
    assert charge.doc and charge.doc.startswith("Charge")
    assert by_id["pkg/budget.py::Budget.exhausted"].signature.startswith("@property def exhausted(self)")
    assert by_id["pkg/budget.py::Budget"].kind == "class"
    assert by_id["pkg/budget.py::Budget.remaining"].kind == "method"
    assert rm.symbols("pkg/cli.py")[0].signature.startswith("async def main(argv: list[str] | None=None) -> int")
