"""Property tests: budget never exceeded, deterministic output, monotone rule levels."""

from __future__ import annotations

from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from durable_navigator.navtypes.flightplan import FlightPlan, FocusPath, FocusSymbol, Level, VerbosityRule
from durable_navigator.repomap import RepoMap
from durable_navigator.repomap.tokens import count_tokens

GLOBS = ["python", "python/pkg", "**/*.py", "*.js", "go/**", "rust/src/lib.rs", "java", "c/*.h",
         "cpp/matrix.cpp", "ruby/lib", "typescript/src/*.tsx", "**", "*.md"]
SYMBOLS = ["charge", "Budget", "python/pkg/budget.py::Budget.remaining", "Cart", "Deposit",
           "Counter", "Order.add", "queue_push", "Matrix", "Ledger.record", "nope"]
GOALS = [None, "budget charge tokens", "add item to cart total", "queue push value",
         'File "python/pkg/budget.py", line 12', "Deposit money into Account", "matrix trace"]

settings.register_profile("repomap", max_examples=60, deadline=None,
                          suppress_health_check=[HealthCheck.function_scoped_fixture])
settings.load_profile("repomap")

plans = st.builds(
    FlightPlan,
    token_budget=st.integers(min_value=60, max_value=3000),
    default_level=st.sampled_from([None, *Level]),
    rules=st.lists(st.builds(VerbosityRule, glob=st.sampled_from(GLOBS), level=st.sampled_from(list(Level))),
                   max_size=4),
    focus_paths=st.lists(st.builds(FocusPath, glob=st.sampled_from(GLOBS),
                                   weight=st.floats(min_value=0.1, max_value=5)), max_size=2),
    focus_symbols=st.lists(st.builds(FocusSymbol, symbol=st.sampled_from(SYMBOLS), expand=st.booleans()),
                           max_size=2),
    goal=st.sampled_from(GOALS),
    exclude=st.lists(st.sampled_from(GLOBS[:-2]), max_size=2),
    show_why=st.booleans(),
)


@given(plan=plans)
def test_budget_never_exceeded_and_reported_exactly(multi_engine: RepoMap, plan: FlightPlan) -> None:
    res = multi_engine.render(plan)
    exact = count_tokens(res.text)
    assert exact <= plan.token_budget
    assert exact == res.metadata.tokens_used
    assert sum(res.metadata.files_per_level.values()) == res.metadata.files_total
    assert all(f.level >= 1 for f in res.files)


@given(plan=plans)
def test_output_is_deterministic(multi_engine: RepoMap, plan: FlightPlan) -> None:
    first = multi_engine.render(plan)
    second = multi_engine.render(plan)
    assert first.text == second.text
    assert first.files == second.files
    assert [r.path for r in multi_engine.rank(plan)] == [r.path for r in multi_engine.rank(plan)]


def test_fresh_engine_renders_same_bytes(multi_repo: Path, multi_engine: RepoMap, tmp_path: Path) -> None:
    plan = FlightPlan(token_budget=700, goal="budget charge tokens")
    fresh = RepoMap.open(multi_repo, cache_dir=tmp_path / "other-cache", jobs=1)
    assert fresh.render(plan).text == multi_engine.render(plan).text


@given(base=plans, target=st.sampled_from(GLOBS[:-2]), bump=st.sampled_from([Level.OUTLINE, Level.DOCS, Level.FULL]))
def test_raising_a_rule_never_removes_content_when_budget_allows(
        multi_engine: RepoMap, base: FlightPlan, target: str, bump: Level) -> None:
    roomy = base.model_copy(update={"token_budget": 200_000})
    low = roomy.model_copy(update={"rules": [*roomy.rules, VerbosityRule(glob=target, level=Level.PATH)]})
    high = roomy.model_copy(update={"rules": [*roomy.rules, VerbosityRule(glob=target, level=bump)]})
    low_levels = {f.path: f.level for f in multi_engine.render(low).files}
    high_res = multi_engine.render(high)
    high_levels = {f.path: f.level for f in high_res.files}
    for path, level in low_levels.items():
        assert high_levels.get(path, 0) >= level or high_res.metadata.degraded > 0, path


def test_raising_a_rule_under_a_tight_budget_still_fits(multi_engine: RepoMap) -> None:
    for budget in (80, 150, 400):
        for level in Level:
            plan = FlightPlan(token_budget=budget, rules=[VerbosityRule(glob="**", level=level)])
            assert count_tokens(multi_engine.render(plan).text) <= budget


def test_focus_symbol_is_expanded_inside_an_outline(multi_engine: RepoMap) -> None:
    plan = FlightPlan(token_budget=3000, default_level=Level.OUTLINE,
                      focus_symbols=[FocusSymbol(symbol="python/pkg/budget.py::charge")])
    text = multi_engine.render(plan).text
    assert "budget.spent += tokens" in text  # the body, which an outline alone never shows
    assert "self.limit - self.spent" not in text  # other bodies stay outlined


def test_goal_ranks_the_relevant_file_first(multi_engine: RepoMap) -> None:
    ranked = multi_engine.rank(FlightPlan(goal="Deposit money into the Account balance"))
    assert ranked[0].path == "go/main.go"
    assert ranked[0].signals.get("ident", 0) > 0
    trace = multi_engine.rank(FlightPlan(goal='Traceback: File "pkg/budget.py", line 12, in charge'))
    assert trace[0].path == "python/pkg/budget.py" and "trace" in trace[0].signals


def test_exclude_beats_rules(multi_engine: RepoMap) -> None:
    plan = FlightPlan(token_budget=5000, rules=[VerbosityRule(glob="go", level=Level.FULL)], exclude=["go"])
    assert not any(f.path.startswith("go/") for f in multi_engine.render(plan).files)
