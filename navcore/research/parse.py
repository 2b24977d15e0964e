"""Parsers of the research model calls' answers (one code path for every model).

Each returns the typed value or raises :class:`~navcore.planning.planning.PlanParseError`
(``execute_from_calls`` returns the problem as a string) with a message the
corrective re-ask quotes to the model.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from durable_navigator.navcore.run.citations import Citation, parse_citations
from durable_navigator.navcore.run.findings import Finding, PlannedStep
from durable_navigator.navcore.planning.planning import PlanParseError
from durable_navigator.navcore.research.prompts import DELEGATE_FUNCTION, FINISH_STEP_FUNCTION, NAVIGATE_FUNCTION
from durable_navigator.navcore.run.tools import TOOL_NAMES, ToolCall

__all__ = ["parse_research_plan", "RefineVerdict", "parse_refine", "ExecuteDecision", "execute_from_calls",
           "findings_from_args", "MAX_STEP_FINDINGS"]

#: findings one finish_step may report (more are dropped)
MAX_STEP_FINDINGS = 12
_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def _json_list(text: str) -> list[Any]:
    body = text.strip()
    fenced = _FENCE.search(body)
    if fenced:
        body = fenced.group(1).strip()
    start, end = body.find("["), body.rfind("]")
    if start < 0 or end <= start:
        raise PlanParseError("the plan must be a JSON list of steps, e.g. [\"find where X is defined\"]")
    try:
        value = json.loads(body[start:end + 1])
    except json.JSONDecodeError as exc:
        raise PlanParseError(f"the plan is not valid JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(value, list):
        raise PlanParseError("the plan must be a JSON list")
    return value


def parse_research_plan(text: str, max_steps: int, profiles: Sequence[str] = ()) -> list[PlannedStep]:
    """The steps of a planner answer (strings or ``{"step", "profile"}`` objects), deduplicated and capped.

    A profile that is not offered is dropped (the step runs in the executor).
    """
    items = _json_list(text)
    steps: list[PlannedStep] = []
    seen: set[str] = set()
    for item in items:
        profile = None
        if isinstance(item, str):
            desc = item
        elif isinstance(item, Mapping):
            desc = item.get("step") or item.get("description") or item.get("task") or ""
            raw = item.get("profile")
            profile = raw if isinstance(raw, str) and raw in profiles else None
        else:
            continue
        desc = " ".join(str(desc).split())[:1000]
        if not desc or desc.lower() in seen:
            continue
        seen.add(desc.lower())
        steps.append(PlannedStep(description=desc, profile=profile))
    if not steps:
        raise PlanParseError("the plan has no steps; list at least one step as a string")
    return steps[:max_steps]


class RefineVerdict(BaseModel):
    """The refinery's decision."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    decision: Literal["finish", "continue"]
    missing: str | None = None
    reason: str = ""


_FIELD = re.compile(r"^\s*(DECISION|MISSING|REASON)\s*:\s*(.*)$", re.I | re.M)


def parse_refine(text: str) -> RefineVerdict:
    """``DECISION: FINISH | CONTINUE`` (+ ``MISSING:``, ``REASON:``), or a bare FINISH / CONTINUE first word."""
    fields = {m.group(1).upper(): m.group(2).strip() for m in _FIELD.finditer(text)}
    word = fields.get("DECISION") or (text.strip().split() or [""])[0]
    word = word.strip("*`.:").upper()
    if word.startswith("FINISH"):
        return RefineVerdict(decision="finish", reason=fields.get("REASON", "")[:1000])
    if word.startswith("CONTINUE"):
        missing = (fields.get("MISSING") or "").strip()
        if not missing:
            raise PlanParseError("CONTINUE needs a MISSING: line saying what is still unknown")
        return RefineVerdict(decision="continue", missing=missing[:1000], reason=fields.get("REASON", "")[:1000])
    raise PlanParseError("answer with DECISION: FINISH or DECISION: CONTINUE (then MISSING: and REASON: lines)")


class ExecuteDecision(BaseModel):
    """What an executor turn asked for."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["call_tools", "finish_step", "delegate", "navigate"]
    reasoning: str = ""
    tool_calls: list[ToolCall] = []
    profile: str | None = None
    task: str | None = None
    summary: str = ""
    findings: list[Finding] = []


def findings_from_args(args: Mapping[str, Any], step: int) -> list[Finding] | str:
    """The findings of a ``finish_step`` call (citations parsed from their strings)."""
    raw = args.get("findings")
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        return "finish_step needs 'findings' as a list of {claim, citations}"
    out: list[Finding] = []
    for item in raw[:MAX_STEP_FINDINGS]:
        if not isinstance(item, Mapping):
            continue
        claim = " ".join(str(item.get("claim") or "").split())[:2000]
        cites_raw = item.get("citations") or []
        if isinstance(cites_raw, str):
            cites_raw = [cites_raw]
        cites: list[Citation] = []
        for c in cites_raw if isinstance(cites_raw, list) else []:
            cites += parse_citations(str(c))
        cites += [c for c in parse_citations(claim) if c not in cites]
        if not claim:
            continue
        try:
            out.append(Finding(claim=claim, citations=list(dict.fromkeys(cites))[:20],
                               quote=str(item.get("quote") or "")[:4000], step=step))
        except ValidationError:
            continue
    return out


def execute_from_calls(
    calls: Sequence[tuple[str, Mapping[str, Any]]], text: str, *, step: int, tools: Sequence[str],
    profiles: Sequence[str], can_navigate: bool, max_tool_calls: int,
) -> ExecuteDecision | str:
    """The executor turn a model's function calls express, or why they are unusable (for the re-ask)."""
    if not calls:
        return "the answer contained no function call; call code tools or finish_step"
    tool_calls = [(n, a) for n, a in calls if n in TOOL_NAMES]
    special = [(n, a) for n, a in calls if n not in TOOL_NAMES]
    reasoning = " ".join(text.split())[:2000]
    if special:
        if len(calls) > 1:
            return "call finish_step, delegate or navigate alone, not together with other calls"
        name, raw = special[0]
        args = dict(raw or {})
        if name == FINISH_STEP_FUNCTION:
            findings = findings_from_args(args, step)
            if isinstance(findings, str):
                return findings
            summary = " ".join(str(args.get("summary") or "").split())[:2000]
            return ExecuteDecision(action="finish_step", reasoning=reasoning or summary, summary=summary,
                                   findings=findings)
        if name == DELEGATE_FUNCTION:
            profile, task = str(args.get("profile") or ""), " ".join(str(args.get("task") or "").split())
            if profile not in profiles:
                offered = ", ".join(profiles) or "none"
                return f"delegate: unknown profile {profile!r}; use one of: {offered}"
            if not task:
                return "delegate needs a non-empty 'task'"
            return ExecuteDecision(action="delegate", reasoning=reasoning or task, profile=profile, task=task[:2000])
        if name == NAVIGATE_FUNCTION:
            if not can_navigate:
                return "navigate is not available in this run; use the code tools"
            goal = " ".join(str(args.get("goal") or "").split())
            if not goal:
                return "navigate needs a non-empty 'goal'"
            return ExecuteDecision(action="navigate", reasoning=reasoning or goal, task=goal[:2000])
        return f"unknown function {name!r}; use the code tools, finish_step, delegate or navigate"
    refused = [n for n, _ in tool_calls if n not in tools]
    if refused:
        return f"tool(s) {', '.join(sorted(set(refused)))} are not available to this profile; use {', '.join(tools)}"
    if len(tool_calls) > max_tool_calls:
        return f"{len(tool_calls)} tool calls; make at most {max_tool_calls} per turn"
    parsed = [ToolCall(name=n, args=dict(a or {})) for n, a in tool_calls]  # type: ignore[arg-type]
    return ExecuteDecision(action="call_tools", reasoning=reasoning or "; ".join(c.summary() for c in parsed),
                           tool_calls=parsed)
