"""Budget-aware model routing on a real dev server: the switch, its reason, its price.

The run's model ``test-model`` ($1 / $2 per million tokens) decides until half
the budget is spent; then the profile sends turns to ``big-model`` ($5 / $10);
compression and the stage review go to ``small-model`` ($0.5 / $1) from the
start. Every switch is in the decision log with its reason, in ``status``, in
the Web UI details and in ``report.json``; each call is priced at its own
model's rates (the ledger's per-model totals prove it).
"""

from __future__ import annotations

import json
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import Client

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.activities.profiles import load_run_profile
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.navcore.run.compression import CompressionConfig
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navcore.navigator.guardrails import LoopConfig, RunProfile
from durable_navigator.navcore.model.pricing import PricingTable
from durable_navigator.navcore.navigator.report import TurnReport
from durable_navigator.navcore.model.routing import RouteRule, RoutingConfig, choose_model, route_call, RoutingState
from durable_navigator.navcore.navigator.state import StopReason
from durable_navigator.navtypes.errors import ConfigError
from tests.support.navigator import ZOOM_BUDGET, ZOOM_OUT_CLI, ScriptProvider, engine_factory, make_request, run, \
    token_counter

PRICES = PricingTable.from_mapping({"models": {
    "test-model": {"input": Decimal("1"), "output": Decimal("2")},
    "big-model": {"input": Decimal("5"), "output": Decimal("10")},
    "small-model": {"input": Decimal("0.5"), "output": Decimal("1")},
}}, "tests")
ROUTING = RoutingConfig(rules=[
    RouteRule(model="big-model", calls=["decide"], after_budget_fraction=0.1,
              reason="the hard part comes late: decide with the big model"),
    RouteRule(model="small-model", calls=["compress", "review"]),
])
#: $0.05: 10% is 5000 micro-dollars, i.e. five turns of test-model at 1200 each
BUDGET = Decimal("0.05")


def test_rules_pick_the_last_match_and_compare_spending_exactly() -> None:
    assert choose_model(ROUTING, "a", "decide", 4999, 50_000).model == "a"
    assert choose_model(ROUTING, "a", "decide", 5000, 50_000).model == "big-model"
    assert choose_model(ROUTING, "a", "stages.check_criteria", 0, 50_000).model == "small-model"
    assert choose_model(ROUTING, "a", "planning.plan", 49_000, 50_000).model == "a"
    state = RoutingState()
    assert route_call(state, RoutingConfig(), "a", "decide", 1, 2, 1) == ("a", None)
    assert state.current == {}  # no rules: nothing recorded
    model, switch = route_call(state, ROUTING, "a", "navigator.compress", 0, 50_000, 3)
    assert model == "small-model" and switch is not None and switch.from_model == "a"
    assert route_call(state, ROUTING, "a", "navigator.compress", 10, 50_000, 4) == ("small-model", None)


def test_rules_come_from_the_profile_yaml_and_bad_kinds_are_refused() -> None:
    profile = load_run_profile(
        "routing:\n  rules:\n"
        "    - {after_budget_fraction: 0.6, calls: [decide], model: 'openai:gpt-4.1-mini', reason: cheaper turns}\n"
        "    - {calls: [compress, review], model: 'ollama:qwen2.5-coder:7b'}\n")
    assert profile.routing.models() == ["openai:gpt-4.1-mini", "ollama:qwen2.5-coder:7b"]
    assert choose_model(profile.routing, "gemini-2.5-flash", "stages.reflect", 0, 100).model == "ollama:qwen2.5-coder:7b"
    with pytest.raises(ConfigError, match=r"routing.rules.0.calls: Value error, unknown call kind\(s\) \['decisions'\]"):
        load_run_profile("routing:\n  rules:\n    - {calls: [decisions], model: x}\n")
    with pytest.raises(ConfigError, match="after_budget_fraction"):
        load_run_profile("routing:\n  rules:\n    - {after_budget_fraction: 1.5, model: x}\n")


async def test_a_run_crosses_the_threshold_and_the_next_turn_goes_to_the_second_model(
    client: Client, task_queue: str, start_worker, tmp_path: Path
) -> None:
    steps = [ZOOM_BUDGET, ZOOM_OUT_CLI] * 3  # six turns, then finalize
    main, big = ScriptProvider(steps=steps), ScriptProvider(steps=steps)
    summaries = [f"summary {i}: zoomed into budgetkit" for i in range(20)]
    small = ScriptProvider(texts={"navigator.compress": summaries,
                                  "stages.check_criteria": ["C1: MET | src/budgetkit/ledger.py is shown"]})
    acts = NavigatorActivities(
        LocalArtifactStore(tmp_path / "artifacts"), pricer=TablePricer(PRICES),
        model_overrides={"test-model": main, "big-model": big, "small-model": small},
        engine_factory=engine_factory(), token_counter=token_counter(),
    )
    profile = RunProfile(loop=LoopConfig(warn_repeats=49, stop_repeats=50, window=50), routing=ROUTING,
                         compression=CompressionConfig(threshold=6, keep_last=2))
    req = make_request(tmp_path, budget_usd=BUDGET, max_output_tokens=256, profile=profile, planning="direct",
                       max_iterations=10)
    wf_id = f"nav-routing-{uuid.uuid4()}"
    async with start_worker(acts):
        result = await run(client, task_queue, req, wf_id)
        handle = client.get_workflow_handle(wf_id)
        report = await handle.query("get_status", result_type=TurnReport)
        metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)

    assert result.stop_reason is StopReason.FINALIZED, result.stop_detail
    # turns 1-5 on test-model (4 × 1200 = 4800 spent before turn 5: below 10%), turn 6 on, then finalize on big-model
    assert len(main.prompts) == 5 and len(big.prompts) == 2
    assert [kind for kind, _, _ in small.requests].count("stages.check_criteria") == 1
    assert "navigator.compress" in [kind for kind, _, _ in small.requests]
    assert not main.requests and not big.requests  # no text call went to a decide model

    saved = json.loads(Path(result.report_path or "").read_text())
    per_model = saved["ledger"]["per_model"]
    assert per_model["test-model"]["calls"] == 5 and per_model["big-model"]["calls"] == 2
    # each call priced at its own model's rates: 1000 in / 100 out per turn
    assert per_model["test-model"]["cost_micros"] == 5 * (1000 * 1 + 100 * 2)
    assert per_model["big-model"]["cost_micros"] == 2 * (1000 * 5 + 100 * 10)
    small_usage = per_model["small-model"]
    assert small_usage["cost_micros"] == TablePricer(PRICES).cost(
        "small-model", TokenUsage(input_tokens=small_usage["input_tokens"], output_tokens=small_usage["output_tokens"]),
        small_usage["calls"])
    assert result.cost_micros == sum(m["cost_micros"] for m in per_model.values())
    assert set(saved["prices"]) == {"test-model", "big-model", "small-model"}
    assert saved["prices"]["big-model"]["input"] == "5"

    # the switches: logged with their reasons, in report.json, status and the Web UI details
    switches = saved["routing"]["switches"]
    kinds = [(w["kind"], w["from_model"], w["to_model"]) for w in switches]
    assert ("decide", "test-model", "big-model") in kinds
    assert ("navigator.compress", "test-model", "small-model") in kinds
    assert ("stages.check_criteria", "test-model", "small-model") in kinds
    decide_switch = next(w for w in switches if w["kind"] == "decide")
    assert decide_switch["step"] == 6 and decide_switch["spent_micros"] == 6000
    assert decide_switch["reason"] == ("rule 1: the hard part comes late: decide with the big model "
                                       "(spent $0.0060 of $0.0500)")
    logged = [d for d in saved["decisions"] if d["action"] == "model_switch"]
    assert any(d["reasoning"] == decide_switch["reason"] and d["diff_lines"] == ["~ decide: test-model → big-model"]
               for d in logged)
    assert saved["routing"]["current"] == {"decide": "big-model", "navigator.compress": "small-model",
                                           "stages.check_criteria": "small-model"}
    assert report.model == "big-model"
    assert any("decide: test-model → big-model" in line for line in report.model_switches)
    assert "**Model:** `big-model`" in metadata.current_details
    assert "decide: test-model → big-model" in metadata.current_details


async def test_a_routed_model_without_a_price_is_refused_at_scan_before_any_spend(
    client: Client, task_queue: str, start_worker, tmp_path: Path
) -> None:
    main = ScriptProvider(steps=[ZOOM_BUDGET])
    acts = NavigatorActivities(
        LocalArtifactStore(tmp_path / "artifacts"), pricer=TablePricer(PRICES),
        model_overrides={"test-model": main, "unpriced-model": ScriptProvider()},
        engine_factory=engine_factory(), token_counter=token_counter(),
    )
    profile = RunProfile(routing=RoutingConfig(rules=[RouteRule(model="unpriced-model", after_budget_fraction=0.5)]))
    async with start_worker(acts):
        try:
            await run(client, task_queue, make_request(tmp_path, profile=profile))
        except Exception as exc:  # noqa: BLE001 - the assertion is on the failure
            message = str(getattr(exc, "cause", None) or exc)
        else:
            raise AssertionError("a run routing to an unpriced model must not start")
    assert "scan failed" in message
    assert main.prompts == []  # nothing was spent
