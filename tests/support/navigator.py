"""Test helpers for the navigator workflow tests.

* :class:`StubRepoMap` — a small engine honouring the ``repomap.RepoMap``
  render contract (levels by last matching rule, exclude, budget cap), used
  only while the real engine is not importable; :func:`engine_factory` picks
  the real one when it is.
* :class:`ScriptProvider` — a ``ModelProvider`` that returns scripted
  decisions per step, can fail an attempt after spending tokens, and can be
  slow (for kill tests). It is a model stand-in, not a Temporal mock.
"""

from __future__ import annotations

import uuid
from datetime import timedelta

from temporalio.client import Client

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.navcore.navigator.guardrails import LoopConfig, RunProfile
from durable_navigator.navcore.navigator.requests import ExplorationRequest, ExplorationResult, ModelCallConfig
from durable_navigator.workflows.navigator import NavigatorWorkflow

from tests.support import FIXTURE_REPO as FIXTURE_REPO_DIR

import asyncio
import fnmatch
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from durable_navigator.activities.models.base import CallContext, ModelCallError, ModelTransientError, approx_tokens
from durable_navigator.activities.models.offline.planner import OfflinePlanner
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navcore.model.model import DecideTask, ModelRequest, ModelResponse, ToolCallOut
from durable_navigator.navtypes.flightplan import FlightPlan, FlightPlanUpdate, Level
from durable_navigator.navtypes.mapmeta import FileSummary, MapMetadata
from durable_navigator.navcore.model.pricing import PricingTable

FIXTURE_REPO = FIXTURE_REPO_DIR

#: test prices: $1 / $2 per million tokens → 1 / 2 micro-dollars per token; ``test-model-b`` (the
#: routing scenarios' second model, served by the same scripted provider) at $3 / $6
TEST_PRICING = PricingTable.from_mapping(
    {"models": {"test-model": {"input": Decimal("1"), "output": Decimal("2")},
                "test-model-b": {"input": Decimal("3"), "output": Decimal("6")}}}, "tests"
)


def make_pricer() -> TablePricer:
    """A pricer with easy numbers for ``test-model``."""
    return TablePricer(TEST_PRICING)


def count_words(text: str) -> int:
    """A cheap deterministic token counter for the stub engine."""
    return len(text.split())


def _matches(path: str, glob: str) -> bool:
    g = glob.rstrip("/")
    return fnmatch.fnmatch(path, g) or path.startswith(g + "/") or fnmatch.fnmatch(path, g.replace("**/", ""))


@dataclass
class _Rendered:
    text: str
    metadata: MapMetadata
    files: list[FileSummary]


class StubRepoMap:
    """Just enough of ``repomap.RepoMap`` for workflow tests (render only)."""

    def __init__(self, root: Path, pad_lines: int = 0) -> None:
        self.root = root
        self.files = sorted(
            p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and ".git" not in p.parts
        )
        self.index_version = f"stub:{len(self.files)}"
        self.pad_lines = pad_lines

    def _level(self, path: str, plan: FlightPlan) -> int:
        if any(_matches(path, g) for g in plan.exclude):
            return 0
        level = int(plan.default_level) if plan.default_level is not None else int(Level.PATH)
        for rule in plan.rules:
            if _matches(path, rule.glob):
                level = int(rule.level)
        return level

    def _block(self, path: str, level: int) -> str:
        text = (self.root / path).read_text(errors="replace")
        if level >= 4:
            body = text
        elif level >= 2:
            body = "\n".join(l for l in text.splitlines() if l.lstrip().startswith(("def ", "class ")))
        else:
            body = ""
        pad = "\n".join(f"# filler {path} {i}" for i in range(self.pad_lines)) if level >= 2 else ""
        return f"## {path} (L{level})\n{body}\n{pad}".rstrip() + "\n"

    def render(self, plan: FlightPlan) -> _Rendered:
        parts: list[str] = []
        summaries: list[FileSummary] = []
        used = 0
        for path in self.files:
            level = self._level(path, plan)
            if level == 0:
                continue
            block = self._block(path, level)
            tokens = count_words(block)
            if used + tokens > plan.token_budget:
                block, level, tokens = f"## {path} (L1)\n", 1, 3
                if used + tokens > plan.token_budget:
                    continue
            used += tokens
            parts.append(block)
            summaries.append(FileSummary(path=path, level=level, requested_level=level, tokens=tokens))
        per_level: dict[str, int] = {}
        for s in summaries:
            per_level[str(s.level)] = per_level.get(str(s.level), 0) + 1
        meta = MapMetadata(
            tokens_used=used,
            token_budget=plan.token_budget,
            files_total=len(self.files),
            files_per_level=per_level,
            index_version=self.index_version,
            top_files=summaries[:20],
            token_counter="words",
        )
        return _Rendered(text="".join(parts), metadata=meta, files=summaries)


def engine_factory(pad_lines: int = 0) -> Any:
    """The real ``RepoMap.open`` when available, else the stub."""
    if pad_lines == 0:
        try:
            from durable_navigator.repomap import RepoMap  # noqa: F401

            return None  # NavigatorActivities opens the real engine itself
        except ImportError:
            pass
    return lambda root: StubRepoMap(root, pad_lines)


def token_counter() -> Any:
    """The real token counter when the engine is available, else word counts."""
    try:
        from durable_navigator.repomap.tokens import count_tokens  # noqa: F401

        return None
    except ImportError:
        return count_words


def update(**kw: Any) -> FlightPlanUpdate:
    """A FlightPlanUpdate from keyword arguments."""
    return FlightPlanUpdate.model_validate(kw)


ZOOM_BUDGET = update(set_rules=[{"glob": "src/budgetkit/**", "level": 4}], add_focus_paths=[{"glob": "src/budgetkit"}])
ZOOM_OUT_CLI = update(set_rules=[{"glob": "src/budgetkit/cli.py", "level": 1}])


#: a realistic model explanation (~500 characters), so history measurements are honest
REASONING = (
    "The goal asks why tokens are double-counted. The plugin records usage in after_call and the "
    "streaming path calls on_stream_end, which calls after_call again with the final usage, so a "
    "streamed call can be recorded once per chunk and once more at the end. I zoom in on the plugin "
    "and the ledger at full source, keep pricing at outline level because price_of only multiplies "
    "rates, and zoom out of the CLI, which only prints the remaining budget and never records usage."
)


@dataclass
class ScriptProvider:
    """A model stand-in (implements ``Model``): scripted decisions by step; ``None`` past the script finalizes.

    ``fail_first_attempt`` maps a step to the usage a failing first attempt
    consumed (raised as a retryable provider error carrying it).
    """

    steps: list[Any] = field(default_factory=list)
    usage: TokenUsage = field(default_factory=lambda: TokenUsage(input_tokens=1000, output_tokens=100))
    fail_first_attempt: dict[int, TokenUsage] = field(default_factory=dict)
    delay_s: float = 0.0
    prompts: list[str] = field(default_factory=list)
    #: answers of the other task kinds (as in a ``scripted:`` file's ``text``); the offline
    #: planner answers kinds not listed when ``offline_text`` is set
    texts: dict[str, list[Any]] = field(default_factory=dict)
    offline_text: bool = False
    #: (kind, system, user) of every non-decision request
    requests: list[tuple[str, str, str]] = field(default_factory=list)
    _failed: set[int] = field(default_factory=set)

    async def request(self, req: ModelRequest, ctx: CallContext) -> ModelResponse:
        if not isinstance(req.task, DecideTask):
            return self._text(req)
        self.prompts.append(req.messages[-1].content)
        step = req.task.index
        ctx.heartbeat(f"thinking about step {step}")
        if self.delay_s:
            ctx.meter.observe(self.usage)
            waited = 0.0
            while waited < self.delay_s:
                ctx.heartbeat("slow model")
                await asyncio.sleep(min(0.1, self.delay_s - waited))
                waited += 0.1
        if step in self.fail_first_attempt and step not in self._failed:
            self._failed.add(step)
            raise StreamBroke(self.fail_first_attempt[step])
        item = self.steps[step - 1] if step <= len(self.steps) else "finalize"
        if item == "finalize":
            return ModelResponse(tool_calls=[ToolCallOut(name="finalize_context", args={
                "summary": "The budget plugin double-counts."})], text=f"step {step}: enough", usage=self.usage)
        if isinstance(item, list):  # a list of ToolCall: a call_tools decision
            return ModelResponse(text=f"step {step}: look things up", usage=self.usage,
                                 tool_calls=[ToolCallOut(name=c.name, args=dict(c.args)) for c in item])
        if item == "invalid":
            return ModelResponse(text="no call", usage=self.usage)
        assert isinstance(item, FlightPlanUpdate)
        args = {"reasoning": f"step {step}: zoom. {REASONING}", "updates": item.model_dump(mode="json", exclude_defaults=True)}
        return ModelResponse(tool_calls=[ToolCallOut(name="update_flight_plan", args=args)], usage=self.usage)


    def _text(self, req: ModelRequest) -> ModelResponse:
        task = req.task
        self.requests.append((task.kind, req.system, req.conversation[0].content))
        usage = TokenUsage(input_tokens=approx_tokens(" ".join(m.content for m in req.messages)), output_tokens=20)
        if task.kind in self.texts:
            queue = self.texts[task.kind]
            if task.index >= len(queue):
                raise ModelCallError(f"no scripted answer #{task.index} for {task.kind!r}")
            item = queue[task.index]
            if isinstance(item, list):
                item = item[sum(1 for m in req.messages if m.role == "assistant")]
            return ModelResponse(text=str(item), usage=usage)
        if self.offline_text:
            return ModelResponse(text=OfflinePlanner().answer(task, None), usage=usage)
        raise ModelCallError(f"no scripted answer for {task.kind!r}")


class StreamBroke(ModelTransientError):
    """A retryable provider failure after tokens were spent."""

    def __init__(self, usage: TokenUsage) -> None:
        super().__init__("stream broke after tokens were spent", usage)
async def wait_for(handle: Any, predicate: Any, timeout_s: float = 30.0) -> Any:
    """Poll ``get_status`` until ``predicate(report)`` holds; return the report."""
    from durable_navigator.navcore.navigator.report import TurnReport

    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        report = await handle.query("get_status", result_type=TurnReport)
        if predicate(report):
            return report
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"condition not reached; last status: {report}")
        await asyncio.sleep(0.1)


# -- running NavigatorWorkflow in tests --------------------------------------------

TIMEOUT = timedelta(seconds=60)
ONE_ATTEMPT = ModelCallConfig(max_attempts=1, initial_interval_s=0.1)


def make_activities(tmp_path: Path, provider: ScriptProvider, **kw: Any) -> NavigatorActivities:
    """Real activities with a scripted model, test prices and a tmp artifact store."""
    return NavigatorActivities(
        LocalArtifactStore(tmp_path / "artifacts"),
        pricer=make_pricer(),
        model_overrides={"test-model": provider, "test-model-b": provider},
        engine_factory=engine_factory(kw.pop("pad_lines", 0)),
        token_counter=token_counter(),
        **kw,
    )


#: a profile whose loop detection never fires within these short scripted runs
NO_LOOP_GUARD = RunProfile(loop=LoopConfig(warn_repeats=49, stop_repeats=50, window=50))


def make_request(tmp_path: Path, **kw: Any) -> ExplorationRequest:
    base: dict[str, Any] = dict(
        repo_path=str(FIXTURE_REPO),
        goal="why does the budget plugin double-count tokens?",
        model="test-model",
        budget_usd=Decimal("1"),
        token_budget=2000,
        out_dir=str(tmp_path / "out"),
        model_call=ONE_ATTEMPT,
        # the loop's own mechanics: no planning phase unless a test asks for one
        planning="off",
    )
    if "source" in kw:
        del base["repo_path"]  # the request names its repository once
    base.update(kw)
    return ExplorationRequest(**base)


async def run(client: Client, task_queue: str, req: ExplorationRequest, wf_id: str | None = None) -> ExplorationResult:
    return await client.execute_workflow(
        NavigatorWorkflow.run,
        req,
        id=wf_id or f"nav-{uuid.uuid4()}",
        task_queue=task_queue,
        execution_timeout=TIMEOUT,
        memo={"goal": req.goal},
    )


def with_hand_rules(acts: NavigatorActivities) -> NavigatorActivities:
    """``acts`` serving the offline model with its hand-tuned rules (``learned.enabled=False``): a
    test of the code-tool round or of several steered turns needs the policy that takes them (the
    default learned allocation takes no tool round and finalizes on its second turn)."""
    from durable_navigator.activities.models.offline import OfflineModel
    from durable_navigator.activities.models.offline.config import OfflinePolicyConfig
    from durable_navigator.activities.models.offline.learned import LearnedConfig
    from durable_navigator.activities.models.registry import ModelRegistry

    hand = OfflinePolicyConfig(learned=LearnedConfig(enabled=False))
    acts.models = ModelRegistry(acts.engine, overrides={"offline": OfflineModel(acts.engine, hand)})
    return acts
