"""Build the :class:`~navcore.model.model.ModelRequest` of a prompt spec (inside ``model.prepare``).

A spec is small (references and settings, see :mod:`navcore.navigator.model_calls`);
the request is large (the prompt with the map, the typed task for
deterministic models) and goes to the artifact store. The prompt texts come
from the pure builders of ``navcore`` (``prompt``, ``planning_prompts``,
``compression``); repository content is declared as data in every prompt.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from durable_navigator.activities.artifacts import ArtifactStore
from durable_navigator.activities.research_calls import build_research_request, finding_line, load_findings
from durable_navigator.navcore.navigator.activity_io import MapView, RecentDecision
from durable_navigator.navcore.run.artifacts import ArtifactRef
from durable_navigator.navcore.model.call_kinds import INVESTIGATE_KINDS, RESEARCH_KINDS
from durable_navigator.navcore.run.compression import summary_prompt
from durable_navigator.navcore.run.decision import ModelDecision, navigator_function_declarations
from durable_navigator.navtypes.errors import ArtifactError
from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.navcore.model.model import (
    AnalyzeTask,
    CompressTask,
    CriteriaTask,
    DecideTask,
    InvestigateTask,
    Message,
    ModelRequest,
    ModelTask,
    PlanTask,
    ReflectTask,
    ReviewTask,
    ToolSpec,
)
from durable_navigator.navcore.navigator.model_calls import (
    AnalyzeSpec,
    CompressSpec,
    CriteriaSpec,
    DecideSpec,
    InvestigateSpec,
    PlanSpec,
    PromptSpec,
    ReflectSpec,
    ReviewSpec,
)
from durable_navigator.navcore.planning.prompts import (
    analysis_prompt,
    criteria_prompt,
    plan_prompt,
    reflect_prompt,
    review_prompt,
)
from durable_navigator.navcore.navigator.prompt import (
    GOAL_SLOT,
    RECENT_DIFF_LINES,
    RECENT_REASONING_CHARS,
    SYSTEM_PROMPT,
    PromptParts,
    build_user_prompt,
)
from durable_navigator.navcore.navigator.report import shorten, update_diff_lines
from durable_navigator.navcore.investigation.prompts import investigate_prompt

if TYPE_CHECKING:
    from durable_navigator.repomap import RepoMap

__all__ = ["RequestBuilder", "EngineSource", "BUILDERS"]

#: repo root → its opened (and fresh) repo-map engine
EngineSource = Callable[[str], Awaitable["RepoMap"]]


class RequestBuilder:
    """Turns prompt specs into model requests (reads artifacts and renders map excerpts)."""

    def __init__(self, store: ArtifactStore, engines: EngineSource) -> None:
        self.store = store
        self.engines = engines

    def _text(self, ref: ArtifactRef) -> str:
        return self.store.get_bytes(ref).decode("utf-8")

    async def build(self, model: str, spec: PromptSpec) -> ModelRequest:
        """The request of ``spec`` for ``model`` (by its kind: :data:`BUILDERS`)."""
        if isinstance(spec, DecideSpec):
            return self._decide(model, spec)  # its goal travels in the prompt input
        goal = self._text(spec.goal_ref)
        if spec.kind in RESEARCH_KINDS:
            return await build_research_request(self.store, self.engines, model, spec, goal)  # type: ignore[arg-type]
        if spec.kind in INVESTIGATE_KINDS:
            return self._investigate(model, spec, goal)  # type: ignore[arg-type]
        (system, user), task = await BUILDERS[spec.kind](self, spec, goal)
        return ModelRequest(
            model=model,
            messages=[Message(role="system", content=system), Message(role="user", content=user)],
            max_output_tokens=spec.max_output_tokens,
            task=task,
        )

    async def _analyze(self, spec: AnalyzeSpec, goal: str) -> tuple[tuple[str, str], ModelTask]:
        engine = await self.engines(spec.repo_root)
        rendered = await asyncio.to_thread(engine.render, FlightPlan(goal=goal[:8000]))
        meta = spec.map_metadata or rendered.metadata
        prompt = analysis_prompt(goal, meta, rendered.text[: spec.config.map_excerpt_chars])
        return prompt, AnalyzeTask(goal=goal, repo_root=spec.repo_root, config=spec.config, map_metadata=meta)

    async def _review(self, spec: ReviewSpec, goal: str) -> tuple[tuple[str, str], ModelTask]:
        return review_prompt(goal, spec.analysis, spec.map_metadata), ReviewTask(
            goal=goal, repo_root=spec.repo_root, config=spec.config, analysis=spec.analysis,
            map_metadata=spec.map_metadata)

    async def _plan(self, spec: PlanSpec, goal: str) -> tuple[tuple[str, str], ModelTask]:
        return plan_prompt(goal, spec.analysis, spec.review, spec.map_metadata, spec.config), PlanTask(
            goal=goal, repo_root=spec.repo_root, config=spec.config, analysis=spec.analysis, review=spec.review,
            map_metadata=spec.map_metadata)

    async def _criteria(self, spec: CriteriaSpec, goal: str) -> tuple[tuple[str, str], ModelTask]:
        engine = await self.engines(spec.repo_root)
        rendered = await asyncio.to_thread(engine.render, spec.flight_plan)
        prompt = criteria_prompt(goal, spec.stage, rendered.text[: spec.config.map_excerpt_chars], rendered.metadata)
        return prompt, CriteriaTask(goal=goal, repo_root=spec.repo_root, index=spec.stage_index, config=spec.config,
                                    stage=spec.stage, map_text=rendered.text, files=list(rendered.files),
                                    map_metadata=rendered.metadata)

    async def _reflect(self, spec: ReflectSpec, goal: str) -> tuple[tuple[str, str], ModelTask]:
        if spec.completed_index >= len(spec.plan.stages):
            raise ArtifactError(f"completed_index {spec.completed_index} is outside the plan; pass a stage index")
        prompt = reflect_prompt(goal, spec.plan, spec.completed_index, spec.check, spec.config)
        return prompt, ReflectTask(goal=goal, repo_root=spec.repo_root, index=spec.completed_index, config=spec.config,
                                   plan=spec.plan, completed_index=spec.completed_index, check=spec.check)

    async def _compress(self, spec: CompressSpec, goal: str) -> tuple[tuple[str, str], ModelTask]:
        return summary_prompt(spec.request, goal), CompressTask(goal=goal, repo_root=spec.repo_root,
                                                                index=spec.ordinal, request=spec.request)

    def _investigate(self, model: str, spec: InvestigateSpec, goal: str) -> ModelRequest:
        """An investigation call: the stage's findings are read from the store into the task."""
        doc = load_findings(self.store, spec.findings_ref)
        task = InvestigateTask(
            goal=goal, repo_root=spec.repo_root, index=spec.index, kind=spec.kind, subject=spec.subject,
            max_stages=spec.max_stages, stages=spec.stages, stage=spec.stage, stage_index=spec.stage_index,
            critique=spec.critique, feedback=spec.feedback, all_findings=doc.findings,
            findings=[finding_line(f.claim, [c.label() for c in f.citations]) for f in doc.findings],
            records=spec.records, status=spec.status, loop=spec.loop, max_loops=spec.max_loops, summary=spec.summary)
        system, user = investigate_prompt(task)
        return ModelRequest(model=model, messages=[Message(role="system", content=system),
                                                   Message(role="user", content=user)],
                            max_output_tokens=spec.max_output_tokens, task=task)

    def _decide(self, model: str, spec: DecideSpec) -> ModelRequest:
        inp = spec.prompt
        view = MapView.model_validate_json(self._text(inp.view_ref))
        meta, plan = view.metadata, view.plan
        goal = inp.goal if inp.goal is not None else self._text(inp.goal_ref) if inp.goal_ref else ""
        if not goal.strip():
            raise ArtifactError("the prompt has no goal; pass PromptInput.goal or goal_ref")
        recent = [self._expand(r) for r in inp.recent]
        parts = PromptParts(
            goal=goal,
            step=inp.step,
            max_iterations=inp.max_iterations,
            flight_plan=plan,
            map_text=self._text(inp.map_ref),
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
        task = DecideTask(
            goal=goal,
            repo_root=spec.repo_root,
            index=inp.step,
            flight_plan=plan,
            max_iterations=inp.max_iterations,
            map_metadata=meta,
            feedback=inp.feedback,
            recent_decisions=[(r.action, r.reasoning) for r in recent],
            tools_available=True,
            tool_results=inp.tool_results,
        )
        return ModelRequest(
            model=model,
            messages=[Message(role="system", content=SYSTEM_PROMPT), Message(role="user", content=build_user_prompt(parts))],
            tools=[ToolSpec(**d) for d in navigator_function_declarations()],
            tool_choice="required",
            max_output_tokens=inp.max_output_tokens,
            task=task,
        )

    def _expand(self, recent: RecentDecision) -> RecentDecision:
        """Fill a quoted decision's reasoning and diff from its artifact."""
        if recent.decision_ref is None:
            return recent
        decision = ModelDecision.model_validate_json(self._text(recent.decision_ref))
        diff = recent.diff_lines or (update_diff_lines(decision.updates) if decision.updates else [])
        return recent.model_copy(
            update={"reasoning": shorten(decision.reasoning, RECENT_REASONING_CHARS), "diff_lines": diff[:RECENT_DIFF_LINES]}
        )


#: kind -> the builder of its prompt and typed task (planning, stage and summary calls); ``decide``,
#: research and investigation calls have their own (see :meth:`RequestBuilder.build`)
BUILDERS: dict[str, Callable[..., Awaitable[tuple[tuple[str, str], ModelTask]]]] = {
    "planning.analyze": RequestBuilder._analyze,
    "planning.review": RequestBuilder._review,
    "planning.plan": RequestBuilder._plan,
    "stages.check_criteria": RequestBuilder._criteria,
    "stages.reflect": RequestBuilder._reflect,
    "navigator.compress": RequestBuilder._compress,
}
