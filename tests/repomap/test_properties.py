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
           "Counter", "Order.add", "queue_push", "Matrix", "Ledger.record", "nope",
           "python/pkg/budget.py::12-15", "python/pkg/budget.py::1-40", "python/pkg/budget.py::"]
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


def test_a_path_level_file_shows_its_expanded_symbols_in_their_class(multi_engine: RepoMap) -> None:
    """L1 with expanded focus symbols: the path line, each symbol after the definitions enclosing
    it, its source -- and none of the file's other definitions (the "focused outline")."""
    plan = FlightPlan(token_budget=3000, rules=[VerbosityRule(glob="python/pkg/budget.py", level=Level.PATH)],
                      focus_symbols=[FocusSymbol(symbol="python/pkg/budget.py::Budget.remaining")])
    res = multi_engine.render(plan)
    section = res.text.split("python/pkg/budget.py [L1", 1)[1].split("\n", 1)[1]
    section = section.split("\npython/", 1)[0]
    assert "10: @dataclass class Budget:" in section  # the enclosing class
    assert "def remaining(self) -> int:" in section and "self.limit - self.spent" in section  # the body
    assert "charge" not in section and "exhausted" not in section and "limit: int" not in section.split("```")[0]
    entry = next(f for f in res.files if f.path == "python/pkg/budget.py")
    assert entry.level == Level.PATH and entry.tokens == count_tokens(
        "python/pkg/budget.py [L1" + res.text.split("python/pkg/budget.py [L1", 1)[1].split("\npython/", 1)[0] + "\n")
    # without the focus symbol the same rule shows the path alone
    bare = multi_engine.render(plan.model_copy(update={"focus_symbols": []})).text
    assert "self.limit - self.spent" not in bare


def test_a_focused_path_level_file_degrades_to_hidden_not_over_budget(multi_engine: RepoMap) -> None:
    plan = FlightPlan(token_budget=3000, rules=[VerbosityRule(glob="python/pkg/budget.py", level=Level.PATH)],
                      focus_symbols=[FocusSymbol(symbol="python/pkg/budget.py::Budget.remaining")])
    full = multi_engine.render(plan)
    needed = next(f.tokens for f in full.files if f.path == "python/pkg/budget.py")
    for budget in range(60, full.metadata.tokens_used + 1, 7):
        res = multi_engine.render(plan.model_copy(update={"token_budget": budget}))
        assert count_tokens(res.text) <= budget
        shown = {f.path: f for f in res.files}
        if "python/pkg/budget.py" in shown:
            assert "self.limit - self.spent" in res.text and shown["python/pkg/budget.py"].tokens >= needed - 2


def test_a_files_module_code_expands_as_path_colons(multi_engine: RepoMap, multi_repo: Path) -> None:
    """``path::`` expands the lines no definition spans (imports, constants, top-level code), each
    run at its place among the outline's entries, labelled with its first line's number."""
    src = (multi_repo / "python/pkg/budget.py").read_text().splitlines()
    runs = multi_engine.module_ranges("python/pkg/budget.py")
    assert runs and runs[0][0] == 1
    code = [ln for a, b in runs for ln in src[a - 1:b] if ln.strip()]
    assert any(ln.startswith(("import", "from")) for ln in code)
    syms = multi_engine.symbols("python/pkg/budget.py")
    assert not any(s.start_line <= a <= s.end_line for a, _ in runs for s in syms)
    for level in (Level.PATH, Level.OUTLINE):
        plan = FlightPlan(token_budget=3000, rules=[VerbosityRule(glob="python/pkg/budget.py", level=level)],
                          focus_symbols=[FocusSymbol(symbol="python/pkg/budget.py::")])
        res = multi_engine.render(plan)
        section = res.text.split("python/pkg/budget.py [L", 1)[1].split("\npython/", 1)[0]
        assert all(ln in section for ln in code), level
        assert "(module code)" in section and "self.limit - self.spent" not in section
        assert (level == Level.OUTLINE) == ("def charge(" in section)  # the outline only at L2
        assert count_tokens(res.text) == res.metadata.tokens_used <= 3000
    plain = next(p for p in multi_engine.files if not multi_engine.symbols(p))
    assert multi_engine.module_ranges(plain) == []  # no outline to show module code in


def test_a_line_range_expands_as_path_colons_start_end(multi_engine: RepoMap) -> None:
    """``path::a-b`` shows lines ``a..b`` in full after the definitions holding them (a class body
    between its methods, a window of a long function) — not the whole class — within the budget; a
    definition starting inside the range is not listed again, and a range outside the file expands
    nothing."""
    path = "python/pkg/budget.py"
    for level in (Level.PATH, Level.OUTLINE):
        plan = FlightPlan(token_budget=3000, default_level=Level.HIDDEN,
                          rules=[VerbosityRule(glob=path, level=level)],
                          focus_symbols=[FocusSymbol(symbol=f"{path}::12-15")])
        res = multi_engine.render(plan)
        section = res.text.split(f"{path} [L", 1)[1]
        assert "class Budget:" in section and "(lines 12-15)" in section
        assert "limit: int = MAX_TOKENS" in section and "spent: int = 0" in section
        assert "self.limit - self.spent" not in section  # the method's body is not in the range
        assert section.index("class Budget:") < section.index("(lines 12-15)")  # after what holds it
        assert ("def remaining(" in section) == (level == Level.OUTLINE)  # the outline only at L2
        assert count_tokens(res.text) == res.metadata.tokens_used <= 3000
    # a method starting inside the range is shown by the range, not listed again
    plan = FlightPlan(token_budget=3000, default_level=Level.HIDDEN,
                      rules=[VerbosityRule(glob=path, level=Level.OUTLINE)],
                      focus_symbols=[FocusSymbol(symbol=f"{path}::16-19")])
    section = multi_engine.render(plan).text.split(f"{path} [L", 1)[1]
    assert section.count("def remaining(") == 1 and "self.limit - self.spent" in section
    # lines past the end: nothing to expand, the file renders as if not focused
    plan = FlightPlan(token_budget=3000, default_level=Level.HIDDEN, rules=[VerbosityRule(glob=path, level=Level.PATH)],
                      focus_symbols=[FocusSymbol(symbol=f"{path}::900-950")])
    assert "(lines" not in multi_engine.render(plan).text
