"""The scripted model: answers from a file, keyed by task (iteration / index), attempt and ask."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.support.models import attempt, decide_request, model_activities, spent_of, text_request
from temporalio.exceptions import ApplicationError

from durable_navigator.activities.models.base import CallContext, Model, ModelTransientError
from durable_navigator.activities.models.scripted import ScriptedModel
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navtypes.errors import ConfigError, ModelError
from durable_navigator.navtypes.flightplan import Level
from durable_navigator.navcore.model.model import AnalyzeTask, ModelRequest
from durable_navigator.navcore.navigator.model_calls import AnalysisOut, DecisionOut
from durable_navigator.navcore.planning.planning import PlanningConfig
from durable_navigator.navcore.model.pricing import PricingTable

SCRIPT = """
decisions:
  - action: update_flight_plan
    reasoning: zoom into the budget code
    updates: {set_rules: [{glob: "src/budget/**", level: 4}]}
    usage: {input_tokens: 1200, output_tokens: 80, thinking_tokens: 40, cached_tokens: 600}
  - action: invalid
    error: no function call
  - action: update_flight_plan
    reasoning: flaky provider
    updates: {}
    fail_attempts: 2
    failed_usage: {input_tokens: 700}
    retry_after_s: 3
  - action: finalize_context
    summary: the ledger double counts cached tokens
text:
  planning.analyze: [["not parsable at all", "DIRECT: short goal"]]
"""
NAME = "scripted:run.yaml"
PRICER = TablePricer(PricingTable.from_mapping({"models": {"scripted": {"input": 1, "output": 2}}}, "test"))


@pytest.fixture()
def script(tmp_path: Path) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(SCRIPT, encoding="utf-8")
    return path


def turn(index: int) -> ModelRequest:
    req = decide_request(model=NAME)
    req.task.index = index
    return req


async def test_decisions_follow_the_iteration(script: Path, tmp_path: Path) -> None:
    model = ScriptedModel(script)
    assert isinstance(model, Model)
    acts = model_activities(tmp_path, NAME, model, PRICER)
    first = await attempt(acts, turn(1))
    assert not isinstance(first, ApplicationError) and isinstance(first.result, DecisionOut)
    assert first.result.decision.action == "update_flight_plan"
    assert first.result.decision.updates is not None and first.result.decision.updates.set_rules[0].level is Level.FULL
    assert first.spent.usage == TokenUsage(input_tokens=1200, output_tokens=80, thinking_tokens=40, cached_tokens=600)
    # asking again for the same iteration (a retry, a restarted worker) gives the same answer
    again = await attempt(acts, turn(1))
    assert not isinstance(again, ApplicationError) and again.result.decision == first.result.decision  # type: ignore[union-attr]
    second = await attempt(acts, turn(2))
    assert not isinstance(second, ApplicationError) and isinstance(second.result, DecisionOut)
    # an answer without a function call gets the corrective re-ask, then is an invalid decision
    assert second.result.decision.action == "invalid" and second.spent.calls == 2
    last = await attempt(acts, turn(4))
    assert not isinstance(last, ApplicationError) and isinstance(last.result, DecisionOut)
    assert last.result.decision.summary == "the ledger double counts cached tokens"


async def test_running_out_finalizes_with_a_note(script: Path) -> None:
    answer = await ScriptedModel(script).request(turn(5), CallContext())
    (call,) = answer.tool_calls
    assert call.name == "finalize_context" and "exhausted after 4 entries" in call.args["summary"]
    assert answer.usage == TokenUsage() and answer.calls == 0


async def test_plain_json_list_and_first_iteration(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"first_iteration": 0, "decisions": [{"action": "finalize_context", "summary": "s"}]}))
    assert (await ScriptedModel(path).request(turn(0), CallContext())).tool_calls[0].name == "finalize_context"
    listed = tmp_path / "list.yaml"
    listed.write_text("- {action: finalize_context, summary: only}\n")
    assert (await ScriptedModel(listed).request(turn(1), CallContext())).tool_calls[0].args == {"summary": "only"}
    with pytest.raises(ModelError, match="first_iteration"):
        await ScriptedModel(listed).request(turn(0), CallContext())


async def test_failure_injection_per_attempt(script: Path, tmp_path: Path) -> None:
    acts = model_activities(tmp_path, NAME, ScriptedModel(script), PRICER)
    for number in (1, 2):
        err = await attempt(acts, turn(3), number=number)
        assert isinstance(err, ApplicationError) and not err.non_retryable and err.type == "ModelTransientError"
        assert spent_of(err).usage == TokenUsage(input_tokens=700) and spent_of(err).cost_micros == 700
        assert err.next_retry_delay is not None and err.next_retry_delay.total_seconds() == 3
    ok = await attempt(acts, turn(3), number=3)
    assert not isinstance(ok, ApplicationError) and isinstance(ok.result, DecisionOut)
    assert ok.result.decision.updates is not None and ok.result.decision.updates.is_empty()
    with pytest.raises(ModelTransientError):
        await ScriptedModel(script).request(turn(3), CallContext(attempt=1))


async def test_text_answers_by_ask(script: Path, tmp_path: Path) -> None:
    acts = model_activities(tmp_path, NAME, ScriptedModel(script), PRICER)
    out = await attempt(acts, text_request(AnalyzeTask(goal="g", repo_root=".", config=PlanningConfig()), model=NAME))
    # the first answer does not parse; the corrective re-ask gets the second
    assert not isinstance(out, ApplicationError) and isinstance(out.result, AnalysisOut)
    assert out.result.analysis.direct and out.spent.calls == 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("- {action: update_flight_plan, reasoning: r}\n", "decisions.0: Value error, update_flight_plan needs 'updates'"),
        ("- {action: finalize_context}\n", "finalize_context needs a non-empty 'summary'"),
        ("- {action: invalid}\n", "invalid needs an 'error'"),
        ("- {action: jump}\n", "decisions.0.action: Input should be"),
        (
            "- {action: update_flight_plan, reasoning: r, updates: {set_rules: [{glob: a, level: 9}]}}\n",
            "decisions.0.updates.set_rules.0.level",
        ),
        ("- {action: finalize_context, summary: s, colour: red}\n", "decisions.0.colour: Extra inputs"),
        ("decisions: []\n", "at least one entry under 'decisions' or 'text'"),
        ("decisions: [\n", "line 2"),
        ("42\n", "expected a list of decisions"),
    ],
)
def test_bad_scripts_are_refused_field_by_field(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        ScriptedModel(path)
    assert expected in str(info.value)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_missing_file_and_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        ScriptedModel(tmp_path / "absent.yaml")
    with pytest.raises(ModelError, match="scripted:<path>"):
        ScriptedModel()
