"""The research model calls inside ``model.prepare`` / ``model.request``: build the request, parse the answer.

* :func:`build_research_request` — the :class:`~navcore.model.model.ModelRequest` of a
  research spec. An executor turn after the first continues the stored
  conversation of the previous turn (``previous_ref``) with the model's calls
  and their results, so the conversation lives in the artifact store and only
  the new results pass through history.
* :func:`parse_research` — the typed result of an answer (or why it is
  unusable, for the corrective re-ask); a step's findings and the answer text
  are stored here, the workflow only sees their references.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from durable_navigator.navcore.model.call_kinds import RESEARCH_KINDS
from durable_navigator.activities.artifacts import ArtifactStore
from durable_navigator.navcore.run.artifacts import ArtifactRef
from durable_navigator.navcore.run.citations import parse_citations
from durable_navigator.navcore.run.findings import FindingsDoc
from durable_navigator.navcore.model.model import (
    ExecTurn,
    Message,
    ModelRequest,
    ModelResponse,
    ResearchExecuteTask,
    ResearchPlanTask,
    ResearchRefineTask,
    ResearchSynthesizeTask,
    ToolSpec,
)
from durable_navigator.navcore.navigator.model_calls import (
    AnswerOut,
    ExecuteOut,
    ModelResult,
    RefineOut,
    ResearchExecuteSpec,
    ResearchPlanOut,
    ResearchPlanSpec,
    ResearchRefineSpec,
    ResearchSynthesizeSpec,
)
from durable_navigator.navcore.planning.planning import PlanParseError
from durable_navigator.navcore.navigator.prompt import GOAL_SLOT
from durable_navigator.navcore.research.parse import execute_from_calls, parse_refine, parse_research_plan
from durable_navigator.navcore.research.prompts import (
    execute_system,
    execute_user,
    executor_declarations,
    plan_prompt,
    refine_prompt,
    results_message,
    synthesize_prompt,
)
from durable_navigator.navtypes.errors import ArtifactError
from durable_navigator.navtypes.flightplan import FlightPlan

__all__ = ["RESEARCH_KINDS", "build_research_request", "parse_research", "finding_line", "load_findings"]

MEDIA_JSON = "application/json"
MEDIA_MARKDOWN = "text/markdown; charset=utf-8"
#: characters of the answer kept in history (the whole answer is an artifact)
ANSWER_SUMMARY_CHARS = 600

EngineSource = Callable[[str], Awaitable[Any]]
ResearchSpec = ResearchPlanSpec | ResearchExecuteSpec | ResearchRefineSpec | ResearchSynthesizeSpec


def load_findings(store: ArtifactStore, ref: ArtifactRef | None) -> FindingsDoc:
    """The findings document of ``ref`` (empty for None)."""
    if ref is None:
        return FindingsDoc()
    return FindingsDoc.model_validate_json(store.get_bytes(ref).decode("utf-8"))


def finding_line(claim: str, labels: list[str]) -> str:
    """One finding as a prompt line: the claim, then its citations."""
    return f"{claim} [{', '.join(labels) or 'no citation'}]"


def _finding_lines(doc: FindingsDoc) -> list[str]:
    return [finding_line(f.claim, [c.label() for c in f.citations]) for f in doc.findings]


async def build_research_request(store: ArtifactStore, engines: EngineSource, model: str, spec: ResearchSpec,
                                 goal: str) -> ModelRequest:
    """The request of a research spec (``goal`` is the question, read from ``goal_ref``)."""
    findings = _finding_lines(load_findings(store, spec.findings_ref))
    common = dict(goal=goal, repo_root=spec.repo_root, instructions=spec.instructions, findings=findings)
    if isinstance(spec, ResearchExecuteSpec):
        return _execute_request(store, model, spec, common)
    if isinstance(spec, ResearchPlanSpec):
        excerpt = ""
        if spec.map_excerpt_chars:
            engine = await engines(spec.repo_root)
            rendered = await asyncio.to_thread(engine.render, FlightPlan(goal=goal[:8000]))
            excerpt = rendered.text[: spec.map_excerpt_chars]
        task: Any = ResearchPlanTask(**common, index=spec.round, max_steps=spec.max_steps, missing=spec.missing,
                                     feedback=spec.feedback, done_steps=spec.done_steps, profiles=spec.profiles,
                                     map_metadata=spec.map_metadata, map_excerpt=excerpt)
        system, user = plan_prompt(task)
    elif isinstance(spec, ResearchRefineSpec):
        task = ResearchRefineTask(**common, index=spec.round, max_rounds=spec.max_rounds, steps=spec.steps,
                                  feedback=spec.feedback)
        system, user = refine_prompt(task)
    else:
        doc = load_findings(store, spec.findings_ref)
        task = ResearchSynthesizeTask(**common, index=spec.ordinal, all_findings=doc.findings, early=spec.early)
        system, user = synthesize_prompt(task)
    return ModelRequest(model=model, messages=[Message(role="system", content=system), Message(role="user", content=user)],
                        max_output_tokens=spec.max_output_tokens, task=task)


def _execute_request(store: ArtifactStore, model: str, spec: ResearchExecuteSpec, common: dict[str, Any]) -> ModelRequest:
    """The first turn of a step from scratch; a later turn continues the stored conversation."""
    goal = str(common["goal"]).strip()
    spec = spec.model_copy(update={"notes": [n.replace(GOAL_SLOT, goal) for n in spec.notes]})
    if spec.previous_ref is None:
        task = ResearchExecuteTask(**common, index=spec.index, step_index=spec.step_index, step=spec.step,
                                   turn=spec.turn, max_turns=spec.max_turns, notes=spec.notes, tools=spec.tools,
                                   profiles=spec.profiles, can_navigate=spec.can_navigate,
                                   max_tool_calls=spec.max_tool_calls)
        decls = executor_declarations(spec.tools, bool(spec.profiles), spec.can_navigate)
        return ModelRequest(
            model=model,
            messages=[Message(role="system", content=execute_system(task)),
                      Message(role="user", content=execute_user(task))],
            tools=[ToolSpec(**d) for d in decls], tool_choice="required", max_output_tokens=spec.max_output_tokens,
            task=task,
        )
    previous = ModelRequest.model_validate_json(store.get_bytes(spec.previous_ref).decode("utf-8"))
    if not isinstance(previous.task, ResearchExecuteTask) or previous.task.step_index != spec.step_index:
        raise ArtifactError("previous_ref is not the previous executor turn of this step; start the step again")
    answered = len(spec.results) == len(spec.last_calls)
    messages = [
        *previous.messages,
        Message(role="assistant", content=spec.last_text, tool_calls=spec.last_calls),
        Message(role="user", content=results_message(spec.results, spec.turn, spec.max_turns, spec.notes),
                tool_results=spec.results if answered else []),
    ]
    task = previous.task.model_copy(update={
        "index": spec.index, "turn": spec.turn, "notes": spec.notes, "findings": common["findings"],
        "transcript": [*previous.task.transcript,
                       ExecTurn(calls=spec.last_calls, text=spec.last_text, results=spec.results)],
    })
    return previous.model_copy(update={"messages": messages, "task": task, "max_output_tokens": spec.max_output_tokens})


def parse_research(req: ModelRequest, resp: ModelResponse, model: str, store: ArtifactStore) -> ModelResult | str:
    """The typed result of a research answer, or why it is unusable (quoted in the re-ask)."""
    task, text = req.task, resp.text
    if isinstance(task, ResearchExecuteTask):
        parsed = execute_from_calls([(c.name, c.args) for c in resp.tool_calls], text, step=task.step_index,
                                    tools=task.tools, profiles=[p.split(":", 1)[0] for p in task.profiles],
                                    can_navigate=task.can_navigate, max_tool_calls=task.max_tool_calls)
        if isinstance(parsed, str):
            return parsed
        ref, count = None, 0
        if parsed.action == "finish_step":
            doc = FindingsDoc(findings=parsed.findings)
            ref = store.put_bytes(doc.model_dump_json().encode("utf-8"), MEDIA_JSON, "")
            count = len(parsed.findings)
        # a finish_step's arguments are the findings themselves: stored above, never echoed into history
        echo = [] if parsed.action == "finish_step" else list(resp.tool_calls)
        return ExecuteOut(action=parsed.action, reasoning=parsed.reasoning[:2000], tool_calls=parsed.tool_calls,
                          calls=echo, profile=parsed.profile, task=parsed.task, findings_ref=ref,
                          findings=count, summary=parsed.summary[:2000])
    try:
        if isinstance(task, ResearchPlanTask):
            names = [p.split(":", 1)[0] for p in task.profiles]
            return ResearchPlanOut(steps=parse_research_plan(text, task.max_steps, names))
        if isinstance(task, ResearchRefineTask):
            verdict = parse_refine(text)
            return RefineOut(decision=verdict.decision, missing=verdict.missing, reason=verdict.reason)
    except PlanParseError as exc:
        return str(exc)
    assert isinstance(task, ResearchSynthesizeTask)
    answer = text.strip()
    if not answer:
        return "the answer was empty; write the answer in Markdown with path:start-end citations"
    ref = store.put_bytes(answer.encode("utf-8"), MEDIA_MARKDOWN, "")
    return AnswerOut(answer_ref=ref, summary=answer[:ANSWER_SUMMARY_CHARS], citations=len(parse_citations(answer)))


def invalid_turn(problem: str, text: str) -> ExecuteOut:
    """An executor turn still unusable after the corrective re-asks (the step goes on or ends)."""
    return ExecuteOut(action="invalid", reasoning=" ".join(text.split())[:2000], error=problem[:2000])


__all__ += ["invalid_turn"]
