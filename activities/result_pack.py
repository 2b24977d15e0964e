"""From a finished exploration to its context pack: the frame's parts, the map's renderer, report.json's record.

``navigator.write_result`` calls :func:`compose` and writes what it returns; the fitting itself is
:func:`activities.pack.build_pack`. What the pack leaves out goes into report.json's ``pack`` entry
(the whole summary, stage plan and skipped-file list, and the run's own map when the pack holds a
smaller one), so nothing of the run is lost to the budget.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from durable_navigator.activities.pack import Frame, Pack, Renderer, build_pack
from durable_navigator.activities.skips import files_not_in_map, skipped_files_markdown
from durable_navigator.navcore.navigator.activity_io import WriteResultInput
from durable_navigator.navcore.navigator.activity_io import PackFigures
from durable_navigator.navcore.run.sources import display_root
from durable_navigator.navtypes.flightplan import FlightPlan

__all__ = ["compose", "ComposedResult", "decision_lines", "DECISION_LINE_CHARS", "NO_SUMMARY"]

#: characters of one decision's reasoning in context.md (the full text is in report.json / the decision artifact)
DECISION_LINE_CHARS = 240
NO_SUMMARY = "(the navigator stopped before writing a summary)"
#: the budget of a pack whose request named none (results written before packs had one): no fitting
_UNBOUNDED = 1 << 40


@dataclass
class ComposedResult:
    """The pack and the report.json it goes with."""

    pack: Pack
    figures: PackFigures
    report: dict[str, Any]


def decision_lines(entries: list[dict[str, Any]]) -> list[str]:
    """The decision log, one line a turn: step, what was done, the reasoning's head, verdict, cost."""
    lines = []
    for e in entries:
        reasoning = " ".join(str(e.get("reasoning") or e.get("error") or "").split())
        if len(reasoning) > DECISION_LINE_CHARS:
            reasoning = reasoning[: DECISION_LINE_CHARS - 1] + "…"
        diff = "; ".join(e.get("diff_lines") or [])[:160]
        parts = [f"step {e.get('step', '?')}", str(e.get("action", "?"))]
        if e.get("verdict"):
            parts.append(f"verdict {e['verdict']}" + (f" ({e['feedback']})" if e.get("feedback") else ""))
        if diff:
            parts.append(diff)
        if reasoning:
            parts.append(reasoning)
        cost = int(e.get("cost_micros") or 0)
        if cost:
            parts.append(f"${cost / 1_000_000:.4f}")
        lines.append("- " + " · ".join(parts))
    return lines


def renderer(engine: Any, plan: FlightPlan | None) -> Renderer | None:
    """The run's final map at a smaller budget, by the engine's own fitting (None: no engine or no plan)."""
    if engine is None or plan is None:
        return None

    def render(budget: int) -> str:
        return str(engine.render(plan.model_copy(update={"token_budget": budget})).text)

    return render


def compose(inp: WriteResultInput, map_text: str, engine: Any, plan: FlightPlan | None) -> ComposedResult:
    """context.md within ``inp.token_budget`` and report.json with everything it left out.

    ``map_text`` is the run's final map, ``plan`` the flight plan it was rendered under, ``engine``
    the repository's engine (None when the repository can no longer be opened).
    """
    report: dict[str, Any] = json.loads(inp.report_json)
    # one listing for context.md and report.json, so both name the same skips
    skips = files_not_in_map(engine, map_text, report.get("map_metadata"))
    report["files_not_in_map"] = skips
    frame = Frame(
        goal=inp.goal, repo_root=display_root(inp.repo_root), summary=(inp.summary or "").strip() or NO_SUMMARY,
        stage_plan=(inp.stage_plan or "").strip(), decisions=tuple(decision_lines(report.get("decisions") or [])),
        skipped=skipped_files_markdown(skips),
    )
    run_budget = plan.token_budget if plan is not None else inp.token_budget or _UNBOUNDED
    pack = build_pack(frame, map_text, run_budget, inp.token_budget or _UNBOUNDED, renderer(engine, plan))
    figures = PackFigures(
        token_budget=inp.token_budget or 0, tokens=pack.tokens, map_tokens=pack.map_tokens,
        map_token_budget=pack.map_budget, map_rerendered=pack.map_rerendered, map_left_out=pack.map_left_out,
        shortened=pack.shortened,
    )
    report["pack"] = {
        **figures.model_dump(mode="json"),
        "counter": "cl100k_base",
        # the frame's parts in full: context.md may hold them shortened, or not at all
        "summary": frame.summary, "stage_plan": frame.stage_plan, "files_not_in_map_text": frame.skipped,
        # the run's own map when context.md holds a smaller rendering of it (or none)
        "run_map": map_text if pack.map_rerendered or pack.map_left_out else None,
    }
    return ComposedResult(pack=pack, figures=figures, report=report)
