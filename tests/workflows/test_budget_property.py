"""Property: whatever the model does, the budget is a hard cap and the ledger is exact.

Random scripts of usages, unusable answers (corrective re-asks), transient
failures with and without usage, fatal failures and Retry-After delays drive
the real NavigatorWorkflow on the real dev server (planning on: the analysis,
the turns and the stage check are all model calls). For every run:

* spent ≤ limit, and
* spent = the sum of what every HTTP call the model served consumed (failed
  attempts and re-asks included), priced at the model's rates.

The usages stay within what one call can physically consume (the prompt the
model received, the output cap), as a real provider's do.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from decimal import Decimal

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from tests.support.navigator import FIXTURE_REPO, update

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.models.base import CallContext, ModelCallError, ModelTransientError
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navcore.model.model import DecideTask, ModelRequest, ModelResponse, ToolCallOut
from durable_navigator.navcore.model.pricing import PricingTable
from durable_navigator.navcore.navigator.requests import ExplorationRequest, ModelCallConfig
from durable_navigator.navcore.navigator.state import StopReason
from durable_navigator.workflows.navigator import NavigatorWorkflow

#: $100 per million input tokens (the issue's figure), $400 per million output tokens
PRICES = PricingTable.from_mapping({"models": {"prop-model": {"input": Decimal("100"), "output": Decimal("400")}}}, "t")
PRICER = TablePricer(PRICES)
KINDS = ["ok", "ok", "ok", "no_call", "transient", "transient_free", "fatal"]
ZOOMS = [update(set_rules=[{"glob": f"src/budgetkit/{n}", "level": 4}]) for n in ("ledger.py", "plugin.py", "cli.py")]


@dataclass
class Behaviour:
    kind: str
    input_share: float
    output_share: float
    retry_after_s: float | None = None


@dataclass
class PropModel:
    """Answers every call from a script of behaviours; records what each call consumed."""

    script: list[Behaviour]
    consumed: list[TokenUsage] = field(default_factory=list)
    calls: int = 0

    async def request(self, req: ModelRequest, ctx: CallContext) -> ModelResponse:
        b = self.script[self.calls] if self.calls < len(self.script) else Behaviour("ok", 0.5, 0.2)
        self.calls += 1
        usage = TokenUsage(input_tokens=int(ctx.prompt_tokens * b.input_share),
                           output_tokens=int(req.max_output_tokens * b.output_share))
        if b.kind == "transient_free":
            self.consumed.append(TokenUsage())
            raise ModelTransientError("503 before any token", None, retry_after_s=b.retry_after_s)
        self.consumed.append(usage)
        if b.kind == "transient":
            raise ModelTransientError("stream broke", usage, retry_after_s=b.retry_after_s)
        if b.kind == "fatal":
            raise ModelCallError("400 bad request", usage)
        if b.kind == "no_call":
            return ModelResponse(text="hmm, let me think", usage=usage)
        task = req.task
        if isinstance(task, DecideTask):
            if task.index > len(ZOOMS):
                call = ToolCallOut(name="finalize_context", args={"summary": "done"})
            else:
                zoom = ZOOMS[task.index - 1].model_dump(mode="json", exclude_defaults=True)
                call = ToolCallOut(name="update_flight_plan", args={"reasoning": "zoom", "updates": zoom})
            return ModelResponse(tool_calls=[call], usage=usage)
        answers = {"planning.analyze": "DIRECT: one area", "stages.check_criteria": "C1: MET | shown"}
        return ModelResponse(text=answers.get(task.kind, "DIRECT"), usage=usage)


behaviours = st.lists(
    st.builds(Behaviour, st.sampled_from(KINDS), st.floats(0, 1), st.floats(0, 1),
              st.one_of(st.none(), st.just(0.05))),
    min_size=1, max_size=25,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(script=behaviours, limit_usd=st.sampled_from([Decimal("0.6"), Decimal("1"), Decimal("1.6"), Decimal("3")]))
async def test_spend_never_exceeds_the_limit_and_equals_every_attempts_usage(
    client, task_queue, start_worker, tmp_path, script: list[Behaviour], limit_usd: Decimal
) -> None:
    model = PropModel(script)
    acts = NavigatorActivities(LocalArtifactStore(tmp_path / "artifacts"), pricer=PRICER,
                               model_overrides={"prop-model": model})
    req = ExplorationRequest(
        repo_path=str(FIXTURE_REPO), goal="why does the budget plugin double-count tokens?", model="prop-model",
        budget_usd=limit_usd, token_budget=1500, max_iterations=5, out_dir=str(tmp_path / "out"),
        max_output_tokens=300, planning="auto",
        model_call=ModelCallConfig(max_attempts=3, initial_interval_s=0.01, max_interval_s=0.05),
    )
    async with start_worker(acts):
        result = await client.execute_workflow(NavigatorWorkflow.run, req, id=f"prop-{uuid.uuid4()}",
                                               task_queue=task_queue, execution_timeout=timedelta(seconds=60))
    event(f"stop: {result.stop_reason.value}")
    event(f"calls served: {'several' if model.calls > 3 else model.calls}")
    limit = int(limit_usd * 1_000_000)
    expected = sum(PRICER.cost("prop-model", u) for u in model.consumed)
    assert result.cost_micros <= limit, (result.cost_micros, limit, script)
    assert result.cost_micros == expected, (result.cost_micros, expected, script)
    assert result.usage.input_tokens == sum(u.input_tokens for u in model.consumed)
    if result.stop_reason is StopReason.BUDGET_EXHAUSTED:
        assert "left" in (result.stop_detail or "")


async def test_the_issue_scenario_three_failures_never_double_the_budget(
    client, task_queue, start_worker, tmp_path
) -> None:
    """A decision failing 3 times at 3,000 input tokens each used to take a $0.50 run to $1.00."""
    model = PropModel([Behaviour("transient", 1.0, 0.0)] * 3 + [Behaviour("ok", 1.0, 0.1)] * 10)
    acts = NavigatorActivities(LocalArtifactStore(tmp_path / "artifacts"), pricer=PRICER,
                               model_overrides={"prop-model": model})
    req = ExplorationRequest(
        repo_path=str(FIXTURE_REPO), goal="why does the budget plugin double-count tokens?", model="prop-model",
        budget_usd=Decimal("0.5"), token_budget=1000, max_iterations=5, out_dir=str(tmp_path / "out"),
        max_output_tokens=100, planning="off",
        model_call=ModelCallConfig(max_attempts=4, initial_interval_s=0.01),
    )
    async with start_worker(acts):
        result = await client.execute_workflow(NavigatorWorkflow.run, req, id=f"prop-{uuid.uuid4()}",
                                               task_queue=task_queue, execution_timeout=timedelta(seconds=60))
    assert model.consumed, (result.stop_reason, result.stop_detail)
    assert result.cost_micros <= 500_000
    assert result.cost_micros == sum(PRICER.cost("prop-model", u) for u in model.consumed)
    assert result.stop_reason is StopReason.BUDGET_EXHAUSTED
    assert model.consumed[0].input_tokens > 2000  # the prompts were big enough to matter
