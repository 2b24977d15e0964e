"""ScriptedProvider: decisions from a file, keyed by iteration."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from temporalio.testing import ActivityEnvironment

from durable_navigator.activities.models.base import DecideCall
from durable_navigator.activities.models.scripted import ScriptedAttemptError, ScriptedProvider
from durable_navigator.navcore.decision import ModelDecision, TokenUsage
from durable_navigator.navcore.errors import ConfigError, ModelError
from durable_navigator.navcore.flightplan import FlightPlan, Level

SCRIPT = """
decisions:
  - action: update_flight_plan
    reasoning: zoom into the budget code
    updates: {set_rules: [{glob: "src/budget/**", level: 4}]}
    usage: {input_tokens: 1200, output_tokens: 80, thinking_tokens: 40, cached_tokens: 600}
  - action: invalid
    error: no function call
    calls: 2
  - action: update_flight_plan
    reasoning: flaky provider
    updates: {}
    fail_attempts: 2
    failed_usage: {input_tokens: 700}
  - action: finalize_context
    summary: the ledger double counts cached tokens
text:
  planning.analyze: ["DIRECT"]
"""


def make_call(iteration: int, model: str = "scripted:run.yaml") -> DecideCall:
    return DecideCall(
        model=model,
        system_prompt="s",
        user_prompt="u",
        max_output_tokens=100,
        goal="g",
        flight_plan=FlightPlan(),
        iteration=iteration,
        max_iterations=10,
        repo_root=Path("."),
    )


@pytest.fixture()
def script(tmp_path: Path) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(SCRIPT, encoding="utf-8")
    return path


async def test_decisions_follow_the_iteration(script: Path) -> None:
    provider = ScriptedProvider(script)
    first = await provider.decide(make_call(1))
    assert first.action == "update_flight_plan"
    assert first.updates is not None and first.updates.set_rules[0].level is Level.FULL
    assert first.usage == TokenUsage(input_tokens=1200, output_tokens=80, thinking_tokens=40, cached_tokens=600)
    # Asking again for the same iteration (a retry, a restarted worker) gives the same answer.
    assert await provider.decide(make_call(1)) == first
    second = await provider.decide(make_call(2))
    assert (second.action, second.error, second.calls) == ("invalid", "no function call", 2)
    last = await provider.decide(make_call(4))
    assert last.action == "finalize_context" and last.summary == "the ledger double counts cached tokens"
    assert last.model == "scripted:run.yaml"


async def test_running_out_finalizes_with_a_note(script: Path) -> None:
    decision = await ScriptedProvider(script).decide(make_call(5))
    assert decision.action == "finalize_context"
    assert decision.summary is not None and "exhausted after 4 entries" in decision.summary
    assert decision.usage == TokenUsage() and decision.calls == 0


async def test_plain_json_list_and_first_iteration(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"first_iteration": 0, "decisions": [{"action": "finalize_context", "summary": "s"}]}))
    provider = ScriptedProvider(path)
    assert (await provider.decide(make_call(0))).action == "finalize_context"
    listed = tmp_path / "list.yaml"
    listed.write_text("- {action: finalize_context, summary: only}\n")
    assert (await ScriptedProvider(listed).decide(make_call(1))).summary == "only"
    with pytest.raises(ModelError, match="first_iteration"):
        await ScriptedProvider(listed).decide(make_call(0))


async def test_failure_injection_per_attempt(script: Path) -> None:
    provider = ScriptedProvider(script)
    env = ActivityEnvironment()
    for attempt in (1, 2):
        env.info = dataclasses.replace(env.info, attempt=attempt)
        with pytest.raises(ScriptedAttemptError) as info:
            await env.run(provider.decide, make_call(3))
        assert not info.value.non_retryable and info.value.type == "ModelTransientError"
        assert info.value.usage == TokenUsage(input_tokens=700)
    env.info = dataclasses.replace(env.info, attempt=3)
    decision: ModelDecision = await env.run(provider.decide, make_call(3))
    assert decision.action == "update_flight_plan" and decision.updates is not None
    assert decision.updates.is_empty()


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
        ("decisions: []\n", "decisions: List should have at least 1 item"),
        ("decisions: [\n", "line 2"),
        ("42\n", "expected a list of decisions"),
    ],
)
def test_bad_scripts_are_refused_field_by_field(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        ScriptedProvider(path)
    assert expected in str(info.value)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_missing_file_and_missing_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        ScriptedProvider(tmp_path / "absent.yaml")
    with pytest.raises(ModelError, match="scripted:<path>"):
        ScriptedProvider()


def test_handles_scripted_names(script: Path) -> None:
    provider = ScriptedProvider(script)
    assert provider.handles(f"scripted:{script}")
    assert not provider.handles("gemini-2.5-flash") and not provider.handles("offline")
