"""``RepoMap.focus_pricer``: what the map spends on a file's expansions, priced as the fitter prices them.

The learned allocation chooses expansions by expected changed lines per token; it priced a symbol as
its body plus a guessed 10 tokens, and missed the definitions the map shows around it (a Ruby
``module Rack # <a whole doc comment>`` line costs 60): on one dev task its choice rendered 870
tokens over, and the choice made again without them dropped the file holding the change.
"""

from __future__ import annotations

import itertools

from durable_navigator.navtypes.flightplan import FlightPlan, FocusSymbol, Level, VerbosityRule
from durable_navigator.repomap import RepoMap


def _refs(engine: RepoMap, path: str) -> list[str]:
    syms = engine.symbols(path)
    nested = [s for s in syms if any(o is not s and o.start_line <= s.start_line and s.end_line <= o.end_line
                                     for o in syms)]
    picks = [s.id for s in (nested[:3] or syms[:3])]
    a, b = syms[0].start_line, min(syms[0].end_line, syms[0].start_line + 3)
    return [*picks, f"{path}::", f"{path}::{a}-{b}"]


def test_the_price_of_expansions_is_what_the_map_spends_on_them(multi_engine: RepoMap) -> None:
    """For every fixture language, one expansion and pairs of them (nested methods, module code, a
    line range): the file's tokens in the rendered map are its path line (level 1) or its outline
    (level 2) plus the pricer's count."""
    ranked = {r.path: r for r in multi_engine.rank(FlightPlan(token_budget=4000))}
    checked = 0
    for path in multi_engine.files:
        if not multi_engine.symbols(path):
            continue
        price = multi_engine.focus_pricer(path)
        refs = _refs(multi_engine, path)
        for chosen in [*([r] for r in refs), *(list(p) for p in itertools.combinations(refs, 2))]:
            for level in (Level.PATH, Level.OUTLINE):
                plan = FlightPlan(token_budget=20000, default_level=Level.HIDDEN, show_why=False,
                                  rules=[VerbosityRule(glob=path, level=level)],
                                  focus_symbols=[FocusSymbol(symbol=r, expand=True) for r in chosen])
                shown = {f.path: f for f in multi_engine.render(plan).files}[path]
                assert shown.level == level, (path, chosen)
                got = ranked[path].level_tokens[level] + price(chosen, level == Level.OUTLINE)
                assert shown.tokens == got, (path, chosen, level)
                checked += 1
    assert checked > 100


def test_expansions_of_another_file_cost_nothing(multi_engine: RepoMap) -> None:
    path, other = [p for p in multi_engine.files if multi_engine.symbols(p)][:2]
    price = multi_engine.focus_pricer(path)
    theirs = multi_engine.symbols(other)[0].id
    assert price([theirs]) == 0 and price([]) == 0
    mine = multi_engine.symbols(path)[0].id
    assert price([mine, theirs]) == price([mine]) > 0
