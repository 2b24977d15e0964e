"""The navigator's activities: every side effect of one exploration.

Built once per worker as :class:`NavigatorActivities` with its dependencies
(artifact store, provider factory, pricing, repo-map opener) injected. Its
opened engines live in an :class:`~activities.engines.EngineCache` *on the
instance* (never at class level: the sandbox re-imports modules and tests build
many instances); scans and renders refresh them, so every exploration sees the
repository as it is now. Names are stable public API: ``navigator.scan``,
``navigator.render_map``, ``navigator.build_prompt``, ``navigator.decide``,
``navigator.write_result``.

Usage accounting across attempts (``navigator.decide``): each attempt adds its
own consumption to an :class:`~navcore.activity_io.AttemptUsage` carried in
heartbeat details, which Temporal hands to the next attempt
(``activity.info().heartbeat_details``). A successful attempt returns the
total of every attempt; a failed attempt raises an ``ApplicationError`` whose
details carry the running total (the workflow charges it when retries are
exhausted); a crashed worker leaves the last heartbeat, which the workflow
reads from the timeout failure. A provider that fails after spending tokens
reports them by setting ``usage`` (a ``TokenUsage``) on its exception; usage
a provider does not report cannot be counted.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_navigator.activities.artifacts import ArtifactStore, atomic_write_bytes
from durable_navigator.activities.engines import EngineCache, EngineFactory, open_repomap
from durable_navigator.activities.skips import skipped_files_markdown
from durable_navigator.activities.models.base import DecideCall, ModelProvider
from durable_navigator.activities.models.registry import Pricer, build_provider
from durable_navigator.navcore.activity_io import (
    AttemptUsage,
    DecideContext,
    DecideInput,
    DecideOutput,
    MapView,
    PromptBundle,
    PromptInput,
    PromptOutput,
    RecentDecision,
    RenderInput,
    RenderOutput,
    ScanInput,
    ScanOutput,
    WriteResultInput,
    WriteResultOutput,
)
from durable_navigator.navcore.artifacts import ArtifactRef
from durable_navigator.navcore.decision import ModelDecision, TokenUsage
from durable_navigator.navcore.errors import ArtifactError, NavigatorError
from durable_navigator.navcore.flightplan import FlightPlan
from durable_navigator.navcore.mapmeta import MapMetadata
from durable_navigator.navcore.prompt import (
    GOAL_SLOT,
    RECENT_DIFF_LINES,
    RECENT_REASONING_CHARS,
    SYSTEM_PROMPT,
    PromptParts,
    build_user_prompt,
)
from durable_navigator.navcore.report import shorten, update_diff_lines

__all__ = ["NavigatorActivities", "ActivityLimits", "EngineFactory", "ProviderFactory", "to_application_error"]

ProviderFactory = Callable[[str], ModelProvider]
T = TypeVar("T")

MEDIA_MARKDOWN = "text/markdown; charset=utf-8"
MEDIA_JSON = "application/json"
MEDIA_TEXT = "text/plain; charset=utf-8"


class ActivityLimits(BaseModel):
    """Size limits that keep activity results (and so history) small."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: top files kept in the MapMetadata returned to the workflow
    history_top_files: int = Field(3, ge=0, le=50)
    #: reasoning characters kept in the decision returned to the workflow
    history_reasoning_chars: int = Field(400, ge=0)
    #: finalize summary characters kept in history (full text in the artifact)
    history_summary_chars: int = Field(2000, ge=0)
    #: seconds between liveness heartbeats of scan / render / prompt / result
    #: activities (the workflow sets a heartbeat timeout a few times larger, so a
    #: killed worker is noticed in seconds, not after the start-to-close timeout)
    heartbeat_every_s: float = Field(5.0, gt=0)


def to_application_error(exc: NavigatorError, details: list[Any] | None = None) -> ApplicationError:
    """A domain error as a non-retryable ``ApplicationError`` (it cannot succeed on retry)."""
    return ApplicationError(str(exc), *(details or []), type=exc.kind, non_retryable=True)


async def _heartbeat_while_running(every_s: float) -> None:
    """Heartbeat until cancelled; the blocking engine work runs in a thread meanwhile."""
    while True:
        activity.heartbeat()
        await asyncio.sleep(every_s)


def _trimmed_metadata(meta: MapMetadata, top: int) -> MapMetadata:
    return meta.model_copy(
        update={
            "top_files": [f.model_copy(update={"why": []}) for f in meta.top_files[:top]],
            "timings_ms": {},
        }
    )


class NavigatorActivities:
    """The navigator's activities with their injected dependencies."""

    def __init__(
        self,
        store: ArtifactStore,
        *,
        pricer: Pricer,
        provider_factory: ProviderFactory = build_provider,
        engine_factory: EngineFactory | None = None,
        token_counter: Callable[[str], int] | None = None,
        limits: ActivityLimits | None = None,
    ) -> None:
        self.store = store
        self.pricer = pricer
        self.provider_factory = provider_factory
        self.engine_factory = engine_factory or open_repomap
        self.engines = EngineCache(self.engine_factory)
        self.count_tokens = token_counter or _repomap_count_tokens
        self.limits = limits or ActivityLimits()
        self._providers: dict[str, ModelProvider] = {}

    # -- helpers ---------------------------------------------------------

    async def engine(self, repo_root: str | Path) -> Any:
        """The current ``RepoMap`` of ``repo_root`` (see ``EngineCache.get``; scans and renders refresh it)."""
        return await self.engines.get(repo_root)

    def provider(self, model: str) -> ModelProvider:
        """The provider of ``model`` (built once per worker and model)."""
        if model not in self._providers:
            self._providers[model] = self.provider_factory(model)
        return self._providers[model]

    def _put_text(self, text: str, media_type: str, summary: str) -> ArtifactRef:
        # an empty summary stays empty (the store's own default would quote the text)
        return self.store.put_bytes(text.encode("utf-8"), media_type, summary)

    def _get_text(self, ref: ArtifactRef) -> str:
        return self.store.get_bytes(ref).decode("utf-8")

    async def _guard(self, work: Awaitable[T]) -> T:
        """Run ``work`` while heartbeating; domain errors become non-retryable."""
        beat = asyncio.create_task(_heartbeat_while_running(self.limits.heartbeat_every_s))
        try:
            return await work
        except NavigatorError as exc:
            raise to_application_error(exc) from exc
        finally:
            beat.cancel()

    async def _render(self, engine: Any, plan: FlightPlan) -> RenderOutput:
        result = await asyncio.to_thread(engine.render, plan)
        meta: MapMetadata = result.metadata
        # Internal refs carry no summary: they travel through history every iteration.
        map_ref = self._put_text(result.text, MEDIA_MARKDOWN, "")
        view_ref = self._put_text(MapView(metadata=meta, plan=plan).model_dump_json(), MEDIA_JSON, "")
        return RenderOutput(
            map_ref=map_ref,
            view_ref=view_ref,
            metadata=_trimmed_metadata(meta, self.limits.history_top_files),
        )

    # -- activities ------------------------------------------------------

    @activity.defn(name="navigator.scan")
    async def scan(self, inp: ScanInput) -> ScanOutput:
        """Check the model, index the repository (cached) and render the first map."""

        async def work() -> ScanOutput:
            self.provider(inp.model)  # unknown model → ModelError before any spend
            self.pricer.estimate(inp.model, 1, 1)  # a model without a price is refused now
            engine = await self.engines.get(inp.repo_root, refresh=True)
            render = await self._render(engine, inp.flight_plan)
            goal_ref = self._put_text(inp.goal, MEDIA_TEXT, "goal") if inp.goal is not None else None
            return ScanOutput(
                goal_ref=goal_ref,
                repo_root=str(engine.root),
                index_version=str(engine.index_version),
                files_total=len(engine.files),
                render=render,
                rates=self.pricer.rates(inp.model),
            )

        return await self._guard(work())

    @activity.defn(name="navigator.render_map")
    async def render_map(self, inp: RenderInput) -> RenderOutput:
        """Render the map under a flight plan (given, or stored plan + update) and store it."""

        async def work() -> RenderOutput:
            plan = inp.flight_plan
            if plan is None:
                assert inp.base_view_ref is not None and inp.update is not None  # RenderInput checks it
                base = MapView.model_validate_json(self._get_text(inp.base_view_ref)).plan
                plan = base.apply(inp.update)
            return await self._render(await self.engines.get(inp.repo_root, refresh=True), plan)

        return await self._guard(work())

    @activity.defn(name="navigator.build_prompt")
    async def build_prompt(self, inp: PromptInput) -> PromptOutput:
        """Build and store the prompt; return its exact token count and cost estimate."""

        async def work() -> PromptOutput:
            view = MapView.model_validate_json(self._get_text(inp.view_ref))
            meta, plan = view.metadata, view.plan
            goal = inp.goal if inp.goal is not None else self._get_text(inp.goal_ref) if inp.goal_ref else ""
            if not goal.strip():
                raise ArtifactError("the prompt has no goal; pass PromptInput.goal or goal_ref")
            recent = [self._expand(r) for r in inp.recent]
            parts = PromptParts(
                goal=goal,
                step=inp.step,
                max_iterations=inp.max_iterations,
                flight_plan=plan,
                map_text=self._get_text(inp.map_ref),
                metadata=meta,
                spent_micros=inp.spent_micros,
                max_micros=inp.max_micros,
                recent=[(r.step, r.action, r.reasoning, r.diff_lines, r.verdict) for r in recent],
                feedback=inp.feedback,
                notes=[note.replace(GOAL_SLOT, goal.strip()) for note in inp.notes],
                summary_chars=inp.summary_chars,
                stage=inp.stage,
                tool_results=inp.tool_results,
            )
            user = build_user_prompt(parts)
            tokens = self.count_tokens(SYSTEM_PROMPT) + self.count_tokens(user)
            estimate = self.pricer.estimate(inp.model, tokens, inp.max_output_tokens)
            context = DecideContext(
                goal=goal, flight_plan=plan, recent=recent, feedback=inp.feedback, tool_results=inp.tool_results
            )
            bundle = PromptBundle(system=SYSTEM_PROMPT, user=user, context=context)
            return PromptOutput(
                prompt_ref=self._put_text(bundle.model_dump_json(), MEDIA_JSON, ""),
                prompt_tokens=tokens,
                estimate_micros=estimate,
            )

        return await self._guard(work())

    def _expand(self, recent: RecentDecision) -> RecentDecision:
        """Fill a quoted decision's reasoning and diff from its artifact."""
        if recent.decision_ref is None:
            return recent
        decision = ModelDecision.model_validate_json(self._get_text(recent.decision_ref))
        diff = recent.diff_lines or (update_diff_lines(decision.updates) if decision.updates else [])
        return recent.model_copy(
            update={"reasoning": shorten(decision.reasoning, RECENT_REASONING_CHARS), "diff_lines": diff[:RECENT_DIFF_LINES]}
        )

    @activity.defn(name="navigator.decide")
    async def decide(self, inp: DecideInput) -> DecideOutput:
        """Ask the model for one decision; heartbeats while it streams."""
        info = activity.info()
        prior = AttemptUsage.model_validate(info.heartbeat_details[0]) if info.heartbeat_details else AttemptUsage()
        # Temporal's attempt number, so an attempt lost with a crashed worker still counts.
        prior = prior.model_copy(update={"attempts": info.attempt})
        activity.heartbeat(prior.model_dump(mode="json"), "starting")
        try:
            call = await self._decide_call(inp, prior)
            decision = await self.provider(inp.model).decide(call)
        except Exception as exc:
            raise self._failed_attempt(inp.model, prior, exc) from exc
        cost = self.pricer.cost(inp.model, decision.usage, decision.calls)
        spent = prior.plus(decision.usage, cost, decision.calls)
        activity.heartbeat(spent.model_dump(mode="json"), "decided")
        ref = self._put_text(decision.model_dump_json(), MEDIA_JSON, "")
        return DecideOutput(decision=self._trimmed_decision(decision), decision_ref=ref, spent=spent)

    async def _decide_call(self, inp: DecideInput, prior: AttemptUsage) -> DecideCall:
        view = MapView.model_validate_json(self._get_text(inp.view_ref))
        bundle = PromptBundle.model_validate_json(self._get_text(inp.prompt_ref))
        ctx, meta = bundle.context, view.metadata
        return DecideCall(
            model=inp.model,
            system_prompt=bundle.system,
            user_prompt=bundle.user,
            max_output_tokens=inp.max_output_tokens,
            goal=ctx.goal,
            flight_plan=ctx.flight_plan,
            iteration=inp.step,
            max_iterations=inp.max_iterations,
            repo_root=Path(inp.repo_root),
            map_metadata=meta,
            feedback=ctx.feedback,
            recent_decisions=tuple((r.action, r.reasoning) for r in ctx.recent),
            engine=await self.engine(inp.repo_root),
            tools_available=True,
            tool_results=tuple(ctx.tool_results),
            heartbeat=lambda note: activity.heartbeat(prior.model_dump(mode="json"), note),
        )

    def _failed_attempt(self, model: str, prior: AttemptUsage, exc: BaseException) -> ApplicationError:
        usage = getattr(exc, "usage", None)
        usage = usage if isinstance(usage, TokenUsage) else TokenUsage()
        calls = 1 if usage != TokenUsage() else 0
        spent = prior.plus(usage, self.pricer.cost(model, usage, calls), calls)
        details = spent.model_dump(mode="json")
        # Recorded as the last heartbeat so the next attempt starts from it.
        activity.heartbeat(details, "attempt failed")
        if isinstance(exc, NavigatorError):
            return to_application_error(exc, [details])
        if isinstance(exc, ApplicationError):
            return ApplicationError(
                str(exc), details, type=exc.type, non_retryable=exc.non_retryable, next_retry_delay=exc.next_retry_delay
            )
        return ApplicationError(str(exc) or type(exc).__name__, details, type=type(exc).__name__)

    def _trimmed_decision(self, decision: ModelDecision) -> ModelDecision:
        lim = self.limits
        summary = decision.summary[: lim.history_summary_chars] if decision.summary else decision.summary
        return decision.model_copy(
            update={"reasoning": decision.reasoning[: lim.history_reasoning_chars], "summary": summary}
        )

    @activity.defn(name="navigator.write_result")
    async def write_result(self, inp: WriteResultInput) -> WriteResultOutput:
        """Write ``context.md`` and ``report.json`` into ``<out_dir>/<workflow_id>/`` atomically."""

        async def work() -> WriteResultOutput:
            out = Path(inp.out_dir).expanduser().resolve() / inp.workflow_id
            map_text = self._get_text(inp.map_ref) if inp.map_ref else "(no map was rendered)\n"
            try:
                engine = await self.engines.get(inp.repo_root)
            except NavigatorError:
                engine = None  # the repository is gone: the map's own notes still go in
            context = _context_markdown(inp, map_text, skipped_files_markdown(engine, map_text))
            context_ref = self._put_text(context, MEDIA_MARKDOWN, f"context pack for {inp.workflow_id}")
            report_text = json.dumps(json.loads(inp.report_json), indent=2, sort_keys=True) + "\n"
            report_ref = self._put_text(report_text, MEDIA_JSON, f"report for {inp.workflow_id}")
            await asyncio.to_thread(atomic_write_bytes, out / "context.md", context.encode("utf-8"))
            await asyncio.to_thread(atomic_write_bytes, out / "report.json", report_text.encode("utf-8"))
            return WriteResultOutput(
                context_path=str(out / "context.md"),
                report_path=str(out / "report.json"),
                context_ref=context_ref,
                report_ref=report_ref,
            )

        return await self._guard(work())

    def all(self) -> list[Callable[..., Any]]:
        """Every activity of this instance, for worker registration."""
        return [self.scan, self.render_map, self.build_prompt, self.decide, self.write_result]


def _context_markdown(inp: WriteResultInput, map_text: str, skipped: str = "") -> str:
    summary = (inp.summary or "").strip() or "(the navigator stopped before writing a summary)"
    return (
        f"# Context: {inp.goal.strip()}\n\n"
        f"Repository: `{inp.repo_root}`\n\n"
        f"## Summary\n\n{summary}\n\n"
        + (f"## Stages and success criteria\n\n{inp.stage_plan.strip()}\n\n" if inp.stage_plan else "")
        + (f"## Files not in the map\n\n{skipped.rstrip()}\n\n" if skipped else "")
        + f"## Repository map\n\n{map_text.rstrip()}\n"
    )


def _repomap_count_tokens(text: str) -> int:
    from durable_navigator.repomap.tokens import count_tokens

    return int(count_tokens(text))
