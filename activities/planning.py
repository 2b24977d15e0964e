"""Planning, stage and compression activities (every LLM call of issue 4 outside ``decide``).

Integration note (for ``workers/`` and ``workflows/navigator.py``)
------------------------------------------------------------------
Build one :class:`PlanningActivities` per worker and register its bound
methods::

    acts = PlanningActivities(engine_for=nav_acts.engine)  # repo_root -> repomap.RepoMap (cached)
    Worker(..., activities=[*acts.all(), ...])

Stable activity names (public API, never rename): ``planning.analyze``,
``planning.review``, ``planning.plan``, ``stages.check_criteria``,
``stages.reflect``, ``navigator.compress``. Inputs/outputs are the models of
:mod:`navcore.planning` and :mod:`navcore.compression`; every result carries
``usage`` + ``calls`` for the budget ledger (reserve
``config.max_output_tokens`` per call, twice when a re-ask may happen).

A parse failure gets one corrective re-ask; a second failure raises a
non-retryable ``ApplicationError`` of type ``PlanParseError`` whose
``details[0]`` is the ``TokenUsage`` spent, so the workflow can book it and fall
back (e.g. :func:`navcore.planning.direct_plan`). Project errors
(``NavigatorError``) become non-retryable ``ApplicationError`` s of their
``kind``; provider 408/429/5xx stay retryable (Temporal retries).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import ValidationError
from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_navigator.activities.models.text import TextModel, build_text_model
from durable_navigator.navcore.compression import CompressInput, CompressResult, summary_prompt
from durable_navigator.navcore.decision import TokenUsage
from durable_navigator.navcore.errors import ConfigError, NavigatorError
from durable_navigator.navcore.flightplan import FlightPlan
from durable_navigator.navcore.guardrails import RunProfile
from durable_navigator.navcore.planning import (
    AnalyzeInput,
    AnalyzeResult,
    CriteriaInput,
    CriteriaResult,
    PlanInput,
    PlanParseError,
    PlanResult,
    ReflectInput,
    ReflectResult,
    ReviewInput,
    ReviewResult,
)
from durable_navigator.navcore.planning_parse import (
    parse_analysis,
    parse_criteria_check,
    parse_reflection,
    parse_review,
    parse_stage_plan,
)
from durable_navigator.navcore.planning_prompts import (
    analysis_prompt,
    corrective_suffix,
    criteria_prompt,
    plan_prompt,
    reflect_prompt,
    review_prompt,
)

__all__ = ["PlanningActivities", "load_run_profile", "open_engine"]

T = TypeVar("T")
#: repo_root -> opened ``repomap.RepoMap``; sync or async (e.g. ``NavigatorActivities.engine``)
EngineFor = Callable[[str], Any]


async def open_engine(engine_for: EngineFor, repo_root: str) -> Any:
    """Call ``engine_for`` without blocking the event loop (indexing can take seconds)."""
    if inspect.iscoroutinefunction(engine_for):
        return await engine_for(repo_root)
    return await asyncio.to_thread(engine_for, repo_root)


def load_run_profile(path_or_text: str | Path) -> RunProfile:
    """A :class:`RunProfile` from a YAML file or text; ``ConfigError`` naming the bad key."""
    text = str(path_or_text)
    source = "profile"
    if isinstance(path_or_text, Path) or ("\n" not in text and text.endswith((".yaml", ".yml", ".json"))):
        path = Path(text)
        try:
            text, source = path.read_text(encoding="utf-8"), str(path)
        except OSError as exc:
            raise ConfigError(f"cannot read run profile {path}: {exc.strerror}; check the path") from exc
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise ConfigError(f"{source}{where}: not valid YAML ({problem}); fix the syntax") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: a run profile must be a mapping of settings")
    try:
        return RunProfile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "(root)"
        raise ConfigError(f"{source}: {key}: {err['msg']} ({exc.error_count()} error(s) in total)") from exc


def _app_error(exc: NavigatorError) -> ApplicationError:
    return ApplicationError(str(exc), type=exc.kind, non_retryable=True)


def _heartbeat(note: str) -> None:
    if activity.in_activity():
        activity.heartbeat(note)


class PlanningActivities:
    """The planning-phase, stage and compression activities of one worker."""

    def __init__(
        self,
        engine_for: EngineFor | None = None,
        text_model_for: Callable[[str], TextModel] = build_text_model,
    ) -> None:
        self._engine_for = engine_for
        self._text_model_for = text_model_for
        # One text model per model name on this worker (the scripted one keeps its position).
        self._models: dict[str, TextModel] = {}

    def all(self) -> list[Callable[..., Awaitable[Any]]]:
        """The bound activity methods, for ``Worker(activities=...)``."""
        return [self.analyze, self.review, self.plan, self.check_criteria, self.reflect, self.compress]

    # ------------------------------------------------------------------ helpers

    def _model(self, name: str) -> TextModel:
        if name not in self._models:
            self._models[name] = self._text_model_for(name)
        return self._models[name]

    async def _engine(self, repo_root: str) -> Any | None:
        return await open_engine(self._engine_for, repo_root) if self._engine_for is not None else None

    async def _ask(
        self,
        kind: str,
        model: str,
        prompt: tuple[str, str],
        max_output_tokens: int,
        data: dict[str, Any],
        parse: Callable[[str], T],
    ) -> tuple[T, TokenUsage, int]:
        """Call the model, parse, one corrective re-ask on a parse error."""
        system, user = prompt
        usage = TokenUsage()
        error = ""
        for attempt in (1, 2):
            _heartbeat(f"{kind} call {attempt}")
            text, used = await self._model(model).complete(
                system,
                user + (corrective_suffix(error) if error else ""),
                max_output_tokens,
                kind=kind,
                data={"script_index": 0, **data, "attempt": attempt},
            )
            usage = usage + used
            try:
                return parse(text), usage, attempt
            except PlanParseError as exc:
                error = str(exc)
                if activity.in_activity():
                    activity.logger.warning("%s: unparseable model output (attempt %d): %s", kind, attempt, error)
        raise ApplicationError(
            f"{kind}: the model's answer could not be parsed twice: {error}",
            usage.model_dump(),
            type="PlanParseError",
            non_retryable=True,
        )

    async def _render(self, engine: Any, plan: FlightPlan) -> Any:
        return await asyncio.to_thread(engine.render, plan) if engine is not None else None

    async def _run(self, fn: Callable[[], Awaitable[T]]) -> T:
        try:
            return await fn()
        except NavigatorError as exc:
            raise _app_error(exc) from exc

    # ------------------------------------------------------------------ activities

    @activity.defn(name="planning.analyze")
    async def analyze(self, inp: AnalyzeInput) -> AnalyzeResult:
        """DIRECT, or an analysis ending REFLECT: yes|no."""

        async def go() -> AnalyzeResult:
            engine = await self._engine(inp.repo_root)
            rendered = await self._render(engine, FlightPlan(goal=inp.goal))
            excerpt = rendered.text[: inp.config.map_excerpt_chars] if rendered is not None else ""
            meta = inp.map_metadata or (rendered.metadata if rendered is not None else None)
            data = {"goal": inp.goal, "engine": engine}
            analysis, usage, calls = await self._ask(
                "planning.analyze", inp.model, analysis_prompt(inp.goal, meta, excerpt),
                inp.config.max_output_tokens, data, parse_analysis,
            )
            return AnalyzeResult(model=inp.model, usage=usage, calls=calls, analysis=analysis)

        return await self._run(go)

    @activity.defn(name="planning.review")
    async def review(self, inp: ReviewInput) -> ReviewResult:
        """Critic, pragmatist, detailer and plan adjustments."""

        async def go() -> ReviewResult:
            data = {"goal": inp.goal, "engine": await self._engine(inp.repo_root), "analysis": inp.analysis}
            review, usage, calls = await self._ask(
                "planning.review", inp.model, review_prompt(inp.goal, inp.analysis, inp.map_metadata),
                inp.config.max_output_tokens, data, parse_review,
            )
            return ReviewResult(model=inp.model, usage=usage, calls=calls, review=review)

        return await self._run(go)

    @activity.defn(name="planning.plan")
    async def plan(self, inp: PlanInput) -> PlanResult:
        """The stage plan (1..max_stages stages, compound steps split)."""

        async def go() -> PlanResult:
            data = {"goal": inp.goal, "engine": await self._engine(inp.repo_root), "config": inp.config}
            prompt = plan_prompt(inp.goal, inp.analysis, inp.review, inp.map_metadata, inp.config)
            plan, usage, calls = await self._ask(
                "planning.plan", inp.model, prompt, inp.config.max_output_tokens, data,
                lambda text: parse_stage_plan(text, inp.config),
            )
            return PlanResult(model=inp.model, usage=usage, calls=calls, plan=plan)

        return await self._run(go)

    @activity.defn(name="stages.check_criteria")
    async def check_criteria(self, inp: CriteriaInput) -> CriteriaResult:
        """Which of the stage's criteria the current map meets, with evidence."""

        async def go() -> CriteriaResult:
            rendered = await self._render(await self._engine(inp.repo_root), inp.flight_plan)
            map_text = rendered.text if rendered is not None else ""
            meta = rendered.metadata if rendered is not None else inp.map_metadata
            files = list(rendered.files) if rendered is not None else list(meta.top_files if meta else [])
            data = {"stage": inp.stage, "map_text": map_text, "files": files, "script_index": inp.stage_index}
            prompt = criteria_prompt(inp.goal, inp.stage, map_text[: inp.config.map_excerpt_chars], meta)
            check, usage, calls = await self._ask(
                "stages.check_criteria", inp.model, prompt, inp.config.max_output_tokens, data,
                lambda text: parse_criteria_check(text, list(inp.stage.success_criteria), inp.stage_index),
            )
            return CriteriaResult(model=inp.model, usage=usage, calls=calls, check=check)

        return await self._run(go)

    @activity.defn(name="stages.reflect")
    async def reflect(self, inp: ReflectInput) -> ReflectResult:
        """Keep or rewrite the stages after the completed one."""

        async def go() -> ReflectResult:
            if inp.completed_index >= len(inp.plan.stages):
                raise ConfigError(f"completed_index {inp.completed_index} is outside the plan; pass a stage index")
            data = {
                "plan": inp.plan, "completed_index": inp.completed_index, "check": inp.check,
                "script_index": inp.completed_index,
            }
            prompt = reflect_prompt(inp.goal, inp.plan, inp.completed_index, inp.check, inp.config)
            reflection, usage, calls = await self._ask(
                "stages.reflect", inp.model, prompt, inp.config.max_output_tokens, data,
                lambda text: parse_reflection(text, inp.config),
            )
            return ReflectResult(model=inp.model, usage=usage, calls=calls, reflection=reflection)

        return await self._run(go)

    @activity.defn(name="navigator.compress")
    async def compress(self, inp: CompressInput) -> CompressResult:
        """Summarize the older decision-log entries into one summary text."""

        def parse(text: str) -> str:
            if not text.strip():
                raise PlanParseError("the summary was empty; write a plain-text summary of the log")
            return text.strip()

        async def go() -> CompressResult:
            req = inp.request
            summary, usage, calls = await self._ask(
                "navigator.compress", inp.model, summary_prompt(req, inp.goal), req.max_output_tokens,
                {"request": req, "goal": inp.goal, "script_index": inp.ordinal}, parse,
            )
            return CompressResult(model=inp.model, summary=summary, usage=usage, calls=calls)

        return await self._run(go)
