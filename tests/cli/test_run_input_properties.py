"""Properties of the one validation of what starts a run (cli/runinput.py), with hypothesis.

Whatever a user, an agent or a jobs file passes — budgets (nan, inf, subnormal, huge, negative,
strings), token budgets, goals (empty, whitespace, a leading '-', control characters, very long,
lone surrogates), jobs files of any YAML shape — the shared validation either accepts it, and
then the workflow's own input model accepts the request too (no run can be wedged by its
input), or raises the project's one-line error type. Never another exception.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.cli import FIXTURE_REPO

from durable_navigator.activities.batch import JobsFileError, parse_jobs_text
from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.runrequest import build_request
from durable_navigator.cli.runinput import check_text, parse_usd, text_problem
from durable_navigator.navcore.run.budget import MAX_RUN_USD, MIN_RUN_USD, BudgetLedger, usd_to_micros
from durable_navigator.navcore.investigation.investigation import InvestigationRequest
from durable_navigator.navcore.navigator.requests import ExplorationRequest
from durable_navigator.navcore.research.research import ResearchRequest
from durable_navigator.navtypes.errors import NavigatorError

PROPS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                            HealthCheck.function_scoped_fixture])

budget_texts = st.one_of(
    st.sampled_from(["nan", "NaN", "-nan", "snan", "inf", "-Infinity", "0", "-0", "0.0000001", "0.0000005",
                     "0.000001", "1e-7", "5e-324", "1e-400", "1e999999999", "1e9", "100000", "100000.0000001",
                     "-1", "", " ", "1,5", "$1", "0x10", "1_000", "½", "٣", "0.50", " 2 "]),
    st.decimals(allow_nan=True, allow_infinity=True).map(str),
    st.floats().map(repr),
    st.integers(min_value=-10**30, max_value=10**30).map(str),
    st.text(max_size=30),
)


def _one_line(exc: NavigatorError) -> None:
    assert "\n" not in str(exc) and str(exc).strip(), str(exc)


@PROPS
@given(budget_texts)
def test_a_budget_is_accepted_as_a_usable_ledger_or_refused_in_one_line(text: str) -> None:
    try:
        value = parse_usd(text)
    except NavigatorError as exc:
        _one_line(exc)
        return
    assert value.is_finite() and MIN_RUN_USD <= value <= MAX_RUN_USD
    # what the workflow builds from it: a ledger of at least one micro-dollar (the #29 repro: 0)
    assert BudgetLedger(max_micros=usd_to_micros(value)).max_micros >= 1
    ExplorationRequest(repo_path="/r", goal="g", budget_usd=value)


goals = st.one_of(
    st.text(max_size=200),
    st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=50).map(lambda t: "-" + t),
    st.sampled_from(["", "   ", "\t\n", "-w flag", "--", "x\x00y", "\x1b[31mred", "a\udcff b", "\ud800",
                     "x" * 9000, "ok goal"]),
    st.text(alphabet=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=3),
)


@PROPS
@given(goals)
def test_a_goal_is_plain_text_or_refused_in_one_line(goal: str) -> None:
    try:
        text = check_text(goal, "GOAL", '"how is the budget enforced?"')
    except NavigatorError as exc:
        _one_line(exc)
        assert text_problem(goal, "GOAL") is not None
        return
    text.encode("utf-8")  # it can travel in a payload
    assert text == text.strip() and text


@pytest.fixture(scope="module")
def config() -> NavigatorConfig:
    return NavigatorConfig()


@PROPS
@given(goal=goals, budget=st.one_of(st.none(), budget_texts),
       tokens=st.one_of(st.none(), st.integers(min_value=-10**12, max_value=10**12)),
       iterations=st.one_of(st.none(), st.integers(min_value=-10**6, max_value=10**6)))
def test_an_exploration_request_is_built_whole_or_refused_in_one_line(
    config: NavigatorConfig, goal: str, budget: str | None, tokens: int | None, iterations: int | None
) -> None:
    try:
        request = build_request(FIXTURE_REPO, goal, config=config, interactive=False, budget_usd=budget,
                                tokens=tokens, model=None, max_iterations=iterations, out=Path("/tmp/never-written"))
    except NavigatorError as exc:
        _one_line(exc)
        return
    # what the worker decodes is valid again, and the run's first state can be built from it
    again = ExplorationRequest.model_validate(request.model_dump(mode="json"))
    assert usd_to_micros(again.budget_usd) >= 1 and again.token_budget >= 26 and again.max_iterations >= 1


yaml_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20),
              st.sampled_from(["nan", ".nan", ".inf", "-1", "0", "1e-7", "offline", "nonsense", "", "-w"])),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.sampled_from(["repo", "goal", "model", "max_budget_usd", "kind",
                                                             "token_budget", "jobs", "defaults", "name", "x"]),
                                            inner, max_size=5)),
    max_leaves=20,
)


@PROPS
@given(yaml_values)
def test_a_jobs_file_of_any_shape_is_accepted_or_refused_with_its_problems(data: Any) -> None:
    text = yaml.safe_dump(data, allow_unicode=True)
    checks: list[int] = []

    def check(job: Any) -> list[tuple[str, str]]:
        checks.append(job.index)
        return [("model", "unknown model")] if job.model == "nonsense" else []

    try:
        spec = parse_jobs_text(text, "jobs.yaml", check_job=check)
    except JobsFileError as exc:
        assert exc.problems and all("\n" not in p for p in exc.problems)
        return
    assert spec.jobs and all(job.goal and job.repo for job in spec.jobs)
    assert all(usd_to_micros(job.max_budget_usd) >= 1 for job in spec.jobs if job.max_budget_usd is not None)


def test_a_job_with_an_empty_goal_and_an_unknown_model_hears_of_both() -> None:
    """#29: only the goal was reported; the README promises every problem at once."""
    def check(job: Any) -> list[tuple[str, str]]:
        return [("model", f"unknown model {job.model!r}")] if job.model == "nonsense" else []

    with pytest.raises(JobsFileError) as info:
        parse_jobs_text('jobs:\n  - {repo: ., goal: "", model: nonsense}\n', "jobs.yaml", check_job=check)
    problems = "\n".join(info.value.problems)
    assert "job 0 (line 2) field 'goal'" in problems and "job 0 (line 2) field 'model': unknown model 'nonsense'" \
        in problems, problems


@pytest.mark.parametrize("text", ["", "# nothing\n", "---\n"])
def test_an_empty_jobs_file_says_what_a_jobs_file_holds(text: str) -> None:
    with pytest.raises(JobsFileError) as info:
        parse_jobs_text(text, "jobs.yaml")
    message = str(info.value)
    assert "SOAK" not in message and "'jobs'" in message and "'repo' and 'goal'" in message
    assert "README.md, section Batch" in message


def test_the_budget_bounds_are_one_type_everywhere() -> None:
    """The three workflows' inputs and the jobs file take the same RunUsd: one micro-dollar is the least."""
    from durable_navigator.navcore.batch.batch import JobDefaults, JobsFile, JobSpec

    builders = [
        lambda usd: ExplorationRequest(repo_path="/r", goal="g", budget_usd=usd),
        lambda usd: ResearchRequest(repo_path="/r", question="q", budget_usd=usd),
        lambda usd: InvestigationRequest(repo_path="/r", goal="g", budget_usd=usd),
        lambda usd: JobSpec(repo=".", goal="g", max_budget_usd=usd),
        lambda usd: JobDefaults(max_budget_usd=usd),
        lambda usd: JobsFile(jobs=[JobSpec(repo=".", goal="g")], total_budget_usd=usd),
    ]
    for build in builders:
        build(MIN_RUN_USD)
        build(MAX_RUN_USD)
        for bad in ("0.0000001", "0", "NaN", "Infinity", "100000.01"):
            with pytest.raises(ValidationError):
                build(Decimal(bad))
