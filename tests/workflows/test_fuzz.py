"""Fuzzing (hypothesis): flight plans, flight-plan YAML, jobs files and signal payloads.

Bad input may only ever produce the project's validation errors; rendering a
valid plan never crashes and never passes the plan's token budget; signal
payloads of any shape never fail, wedge or crash a running workflow.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.navigator import FIXTURE_REPO, ZOOM_BUDGET, ScriptProvider, wait_for
from pydantic import ValidationError
from temporalio.api.enums.v1 import EventType, WorkflowTaskFailedCause
from temporalio.service import RPCError, RPCStatusCode
from tests.support.navigator import make_activities, make_request

from durable_navigator.activities.batch import JobsFileError, parse_jobs_text
from durable_navigator.navtypes.errors import FlightPlanError
from durable_navigator.navtypes.flightplan import FlightPlan, FlightPlanUpdate
from durable_navigator.navcore.navigator.requests import ExplorationResult
from durable_navigator.navcore.navigator.state import ExecutionMode, StopReason
from durable_navigator.repomap import RepoMap
from durable_navigator.repomap.plan_io import load_flight_plan
from durable_navigator.repomap.tokens import count_tokens
from durable_navigator.workflows.navigator import NavigatorWorkflow

PURE = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-10**7, max_value=10**7),
    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=40),
    st.sampled_from(["src/**", "../etc", "/abs/path", "*.py", "", "full", "L4", "4", "C:\\x"]),
)
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)), max_leaves=12)

PLAN_KEYS = list(FlightPlan.model_fields) + ["level", "glob", "weight"]
UPDATE_KEYS = list(FlightPlanUpdate.model_fields)
rule = st.fixed_dictionaries({"glob": st.sampled_from(["src/**", "src/budgetkit/*.py", "tests", "*.md", "../x", "/x"]),
                              "level": st.one_of(st.integers(-1, 5), st.sampled_from(["full", "outline", "x"]))})
plan_dicts = st.dictionaries(st.sampled_from(PLAN_KEYS), st.one_of(json_values, st.lists(rule, max_size=4),
                                                                   st.integers(-5, 300_000)), max_size=6)
update_dicts = st.dictionaries(st.sampled_from(UPDATE_KEYS), st.one_of(json_values, st.lists(rule, max_size=4)),
                               max_size=5)


@PURE
@given(plan_dicts, update_dicts)
def test_flight_plan_and_update_only_raise_validation_errors(plan: dict[str, Any], upd: dict[str, Any]) -> None:
    try:
        fp = FlightPlan.model_validate(plan)
        fu = FlightPlanUpdate.model_validate(upd)
    except ValidationError:
        return
    try:
        merged = fp.apply(fu)
    except (ValidationError, ValueError):
        return
    assert merged.token_budget > 0 and FlightPlan.model_validate(merged.model_dump()) == merged


@PURE
@given(st.one_of(st.text(max_size=300), plan_dicts.map(lambda d: yaml.safe_dump(d, allow_unicode=True))))
def test_flight_plan_yaml_only_raises_flight_plan_error(text: str) -> None:
    try:
        plan = load_flight_plan(text + "\n")
    except FlightPlanError as exc:
        assert "\n" not in str(exc)
        return
    assert isinstance(plan, FlightPlan)


JOB_KEYS = ["repo", "goal", "name", "model", "max_budget_usd", "token_budget", "max_iterations", "mode", "x"]
jobs_docs = st.fixed_dictionaries(
    {"jobs": st.one_of(json_values, st.lists(st.dictionaries(st.sampled_from(JOB_KEYS), json_values, max_size=6),
                                             max_size=4))},
    optional={"defaults": st.dictionaries(st.sampled_from(JOB_KEYS), json_values, max_size=4),
              "total_budget_usd": json_values, "max_concurrency": json_values},
)


@PURE
@given(st.one_of(st.text(max_size=300), jobs_docs.map(lambda d: yaml.safe_dump(d, allow_unicode=True))))
def test_jobs_file_only_raises_jobs_file_error(text: str) -> None:
    try:
        spec = parse_jobs_text(text, "jobs.yaml")
    except JobsFileError as exc:
        assert exc.problems and "\n" not in str(exc)
        return
    assert spec.jobs


@pytest.fixture(scope="module")
def fixture_engine(tmp_path_factory: pytest.TempPathFactory) -> RepoMap:
    return RepoMap.open(FIXTURE_REPO, cache_dir=tmp_path_factory.mktemp("cache"), jobs=1)


def test_rendering_valid_random_plans_respects_the_budget(fixture_engine: RepoMap) -> None:
    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(plan_dicts)
    def check(plan: dict[str, Any]) -> None:
        try:
            fp = FlightPlan.model_validate(plan)
        except ValidationError:
            return
        try:
            result = fixture_engine.render(fp)
        except FlightPlanError as exc:  # e.g. a budget below the engine's minimal header: a validation error
            assert "\n" not in str(exc)
            return
        assert count_tokens(result.text) <= fp.token_budget
        assert result.metadata.tokens_used <= fp.token_budget

    check()


SIGNALS = ["approve", "reject", "stop", "set_mode", "raise_budget"]
payloads = st.one_of(
    json_values,  # null included: handlers ignore it (pinned in test_signal_edges.py)
    st.fixed_dictionaries({"turn": st.one_of(st.integers(-3, 5), json_values)},
                          optional={"sender": json_values, "feedback": json_values, "reason": json_values}),
    # sub-micro-dollar raises included: refused by the payload model (pinned in test_signal_edges.py)
    st.fixed_dictionaries({"add_usd": st.one_of(st.decimals(min_value=Decimal("0.0000001"), max_value=Decimal("0.001"),
                                                            places=7).map(str), json_values)}),
    st.fixed_dictionaries({"mode": st.sampled_from(["interactive", "autonomous", "bogus", 3])}),
)


def _collect(strategy: Any, n: int) -> list[Any]:
    """Draw ``n`` examples with hypothesis' shrinking-free generation (for async use)."""
    drawn: list[Any] = []

    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def draw(value: Any) -> None:
        drawn.append(value)

    draw()
    return drawn


def _failed_tasks(history: Any) -> list[Any]:
    """Workflow tasks that failed because of our code.

    ``UNHANDLED_COMMAND`` is the server asking the worker to look again because
    a signal arrived while the task was completing: normal, not a failure.
    """
    return [
        e for e in history.events
        if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
        and e.workflow_task_failed_event_attributes.cause
        != WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND
    ]


async def _signal_open(handle: Any, name: str, payload: Any) -> bool:
    """Send a signal; False once the workflow has completed (a legitimate end)."""
    try:
        await handle.signal(name, payload)
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True


async def test_fuzzed_signals_never_wedge_the_navigator(client, task_queue, start_worker, tmp_path) -> None:
    sends = _collect(st.tuples(st.sampled_from(SIGNALS), payloads), 12)
    provider = ScriptProvider(steps=[ZOOM_BUDGET] * 5)
    req = make_request(tmp_path, mode=ExecutionMode.INTERACTIVE, max_iterations=5)
    wf_id = f"nav-fuzz-{uuid.uuid4()}"
    async with start_worker(make_activities(tmp_path, provider)):
        handle = await client.start_workflow(NavigatorWorkflow.run, req, id=wf_id, task_queue=task_queue,
                                             execution_timeout=timedelta(seconds=60))
        await wait_for(handle, lambda r: r.status == "awaiting_approval")
        for name, payload in [*sends, ("stop", {"reason": "fuzz done", "sender": "test"})]:
            if not await _signal_open(handle, name, payload):
                break  # a valid fuzzed stop / set_mode already let the run finish
            await handle.query("get_status")  # still answering
        result: ExplorationResult = await handle.result()
        history = await handle.fetch_history()
    assert result.stop_reason in {StopReason.STOPPED, StopReason.FINALIZED, StopReason.MAX_ITERATIONS}
    failed_tasks = _failed_tasks(history)
    assert failed_tasks == [], failed_tasks[0].workflow_task_failed_event_attributes.failure.message


async def test_fuzzed_batch_signals_never_wedge_the_batch(client, task_queue, start_worker, tmp_path) -> None:
    from tests.support.batch import batch_request, job, priced_activities, start_batch, write_script

    from durable_navigator.navcore.batch.batch import BatchResult

    sends = _collect(payloads, 10)
    script = write_script(tmp_path / "s.yaml", steps=1)
    req = batch_request(tmp_path, [job(i, script) for i in range(3)], max_concurrency=1)
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_batch(client, task_queue, req)
        for payload in sends:
            if not await _signal_open(handle, "stop", payload):
                break
        result: BatchResult = await handle.result()
        history = await handle.fetch_history()
    assert len(result.outcomes) == 3
    assert _failed_tasks(history) == []
