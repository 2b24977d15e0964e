"""The offline navigator policy: deterministic zoom-in / zoom-out decisions.

No network and no randomness: the decision is a function of the goal, the
current flight plan, the iteration, the last map's metadata, the feedback and
the repository index (``repomap.RepoMap``). It is stateless between turns; the
plan itself carries what earlier turns decided.

Turn shape:

1. **survey** (the plan has no goal yet): set the goal, exclude noise areas
   (tests, docs, examples, vendored code, CI) unless the goal mentions them,
   focus the directories holding most of the top-ranked files and zoom the
   top files in to outline level (L2, the very top ones L3).
2. **allocate** (every later turn): re-rank with the focus in place, score the
   symbols of the top files against the goal, then plan the budget: the
   strongest file(s) in full (L4) when they fit, outlines for the runners-up,
   ``expand`` focus on the best-matching symbols elsewhere, and focus on the
   reference-graph neighbours (callers / callees) of the top symbols. Files the
   survey zoomed into that now rank low are zoomed back out to L1.
3. **finalize** when the new allocation equals the current plan (the ranking
   is stable across two turns) and the last map used >= 85% of the budget, or
   when no move is left (nothing more fits), or at the iteration cap.

Feedback is obeyed first: see :mod:`activities.models.offline.feedback`.
"""

from __future__ import annotations

import re
from typing import Any

from durable_navigator.activities.models.offline.config import (
    Allocation,
    OfflinePolicyConfig,
    OfflineTurn,
    PolicyOutcome,
    glob_matches,
    noise_excludes,
    why,
)
from durable_navigator.activities.models.offline.diff import diff_allocation, fill_move, finalize_summary
from durable_navigator.activities.models.offline.learned import learned_choice, plan_tokens
from durable_navigator.activities.models.offline.symbols import ScoredSymbol, score_symbols
from durable_navigator.activities.models.offline.terms import goal_terms
from durable_navigator.activities.models.offline.tools import hint_update, parse_tool_results
from durable_navigator.navtypes.flightplan import (
    MAX_UPDATE_ITEMS,
    FlightPlan,
    FlightPlanUpdate,
    FocusPath,
    FocusSymbol,
    Level,
    VerbosityRule,
)

__all__ = ["survey", "allocate", "base_plan", "plan_turn", "ranked_for"]


def ranked_for(engine: Any, plan: FlightPlan) -> list[Any]:
    """The engine's ranking for ``plan`` without excluded files and files that do not match at all.

    ``RepoMap.rank`` lists every file (the renderer hides excluded ones), so the
    policy drops them itself: an excluded file must never win a zoom-in.
    """
    return [
        r for r in engine.rank(plan)
        if r.score > 0 and not any(glob_matches(g, r.path) for g in plan.exclude)
    ]


def survey(engine: Any, plan: FlightPlan, goal: str, cfg: OfflinePolicyConfig,
           tool_results: tuple[str, ...] = ()) -> PolicyOutcome:
    """First map turn: set the goal, zoom out noise, zoom in on the top directories and files.

    With ``tool_results`` (the offline tool round's answers) the files and
    symbols the tools pointed at are focused too.
    """
    files = engine.files
    noise = noise_excludes(goal, files, plan.exclude, test_files=cfg.exclude_test_files,
                           meta_files=cfg.exclude_meta_files)
    draft = plan.apply(FlightPlanUpdate(goal=goal, add_exclude=noise))
    ranked = ranked_for(engine, draft)
    notes = [f"goal terms: {', '.join(goal_terms(goal)[:8]) or '(none)'}"]
    if noise:
        notes.append(f"zoom out {', '.join(noise)} (the goal does not mention them)")
    top = ranked[: cfg.survey_files]
    dirs: dict[str, float] = {}
    for r in top:
        if "/" in r.path:
            d = r.path.rsplit("/", 1)[0]
            dirs[d] = dirs.get(d, 0.0) + r.score
    total = sum(r.score for r in top) or 1.0
    pool = [f for f in files if not any(glob_matches(n, f) for n in noise)]
    focus_dirs = [
        d for d, s in sorted(dirs.items(), key=lambda kv: (-kv[1], kv[0]))[: cfg.survey_dirs]
        if s / total >= cfg.dir_min_share
        and sum(1 for f in pool if f.startswith(d + "/")) <= cfg.dir_max_repo_share * len(pool)
    ]
    focus = [FocusPath(glob=f"{d}/**", weight=cfg.dir_focus_weight) for d in focus_dirs]
    if focus_dirs:
        notes.append("zoom in on " + ", ".join(f"{d}/ ({dirs[d] / total:.0%} of top-file score)" for d in focus_dirs))
    if cfg.learned.enabled:
        # full files join the directory focus in one update's focus paths
        alloc = learned_allocation(engine, draft, goal, cfg, max_files=MAX_UPDATE_ITEMS - len(focus))
        notes += alloc.notes
        full = [FocusPath(glob=p, weight=cfg.file_focus_weight) for p, lv in alloc.levels.items() if lv == Level.FULL]
        update = FlightPlanUpdate(goal=goal, add_exclude=noise, add_focus_paths=focus + full,
                                  set_rules=[VerbosityRule(glob=p, level=lv) for p, lv in alloc.levels.items()],
                                  add_focus_symbols=_expand_focus(alloc, cfg))
        return PolicyOutcome(False, "survey: " + "; ".join(notes), update)
    rules, cost, cap = [], 0, plan.token_budget * cfg.explicit_share
    for i, r in enumerate(top):
        level = Level.DOCS if i < 3 and r.level_tokens[3] <= cfg.docs_level_share * plan.token_budget else Level.OUTLINE
        if not has_outline(r) or cost + r.level_tokens[level] > cap or _too_big_to_outline(r, plan.token_budget, cfg):
            continue
        cost += r.level_tokens[level]
        rules.append(VerbosityRule(glob=r.path, level=level))
        notes.append(f"L{int(level)}: {r.path} ranks #{i + 1} ({why(r)})")
    if not ranked:
        notes.append("no file matches the goal; leaving levels to the engine")
    elif not any(v > 0 for r in ranked for k, v in r.signals.items() if k not in cfg.structural_signals):
        notes.append("no file matches the goal lexically: zooming in by reference-graph centrality only")
    update = FlightPlanUpdate(goal=goal, add_exclude=noise, add_focus_paths=focus, set_rules=rules)
    if tool_results:
        hints = parse_tool_results(tool_results)
        exclude = [*plan.exclude, *noise]
        update, tool_notes = hint_update(update, hints, goal, exclude, cfg.tools,
                                         lambda globs, path: any(glob_matches(g, path) for g in globs))
        # right after the goal terms: the log keeps the head of a long reasoning
        notes.insert(1, "from the tools: " + ("; ".join(tool_notes) if tool_notes else "nothing usable"))
    return PolicyOutcome(False, "survey: " + "; ".join(notes), update)


def learned_allocation(engine: Any, plan: FlightPlan, goal: str, cfg: OfflinePolicyConfig,
                       max_files: int = MAX_UPDATE_ITEMS) -> Allocation:
    """The learned ranker's allocation (:mod:`.learned`) as an :class:`Allocation`.

    Zoomed-out files are never shown; files a human focused through feedback weigh more.
    """
    human = [f.glob for f in plan.focus_paths if f.weight == cfg.feedback_weight]
    reserve, priced = 0, ""
    for attempt in range(cfg.learned.fit_passes + 1):
        choice = learned_choice(
            engine, plan, goal, cfg.learned,
            excluded=lambda p: any(glob_matches(g, p) for g in plan.exclude),
            focused=lambda p: any(glob_matches(g, p) for g in human),
            reserve=reserve, max_files=max_files,
        )
        if attempt == cfg.learned.fit_passes or not choice.levels:
            break
        real, limit = _rendered_cost(engine, plan, choice, cfg), plan_tokens(plan.token_budget, cfg.learned)
        if real <= limit:
            break
        reserve += real - limit
        priced = f" ({real} rendered of a {choice.cost}-token choice: made again with {reserve} held back)"
    what = (f"learned ranker: {len(choice.expand)} expansions, "
            f"{sum(1 for v in choice.levels.values() if v == Level.FULL)} files in full, {choice.cost} tokens planned{priced}")
    return Allocation(levels=choice.levels, expand=choice.expand, cost=choice.cost, notes=[what, *choice.notes])


def _rendered_cost(engine: Any, plan: FlightPlan, choice: Any, cfg: OfflinePolicyConfig) -> int:
    """What the files of ``choice`` really cost in the map: rendered at the whole budget (the choice
    keeps to a share of what the pack's frame leaves, so the rest is slack) and their blocks counted
    (the engine's own auto levels are not the choice's). A chosen file cut even there costs at least
    the whole budget: the choice is made again with all of its overshoot held back."""
    update = FlightPlanUpdate(
        set_rules=[VerbosityRule(glob=p, level=lv) for p, lv in choice.levels.items()],
        add_focus_symbols=[FocusSymbol(symbol=s.symbol_id, weight=cfg.symbol_focus_weight, expand=True)
                           for s in choice.expand],
    )
    files = {f.path: f for f in engine.render(plan.apply(update)).files}
    if any(p not in files or files[p].level < lv for p, lv in choice.levels.items()):
        return plan.token_budget + 1
    return sum(files[p].tokens for p in choice.levels)


def _expand_focus(alloc: Allocation, cfg: OfflinePolicyConfig) -> list[FocusSymbol]:
    return [FocusSymbol(symbol=s.symbol_id, weight=cfg.symbol_focus_weight, expand=True) for s in alloc.expand]


def _pick_full_files(ranked: list[Any], budget: int, cfg: OfflinePolicyConfig, alloc: Allocation, cap: float) -> None:
    best = ranked[0].score if ranked else 0.0
    best_lex = _lexical(ranked[0], cfg) if ranked else 0.0
    for i, r in enumerate(ranked[: cfg.max_full_files]):
        if i and r.score < cfg.full_file_min_rel_score * best:
            break
        if i and _lexical(r, cfg) < cfg.full_file_min_rel_lexical * best_lex:
            continue
        full = r.level_tokens[Level.FULL]
        # a file without an outline (no symbol support, or unparsable) is useful only in full
        share = 1.0 if not has_outline(r) else cfg.full_file_share
        if full <= share * budget and alloc.cost + full <= cap:
            alloc.levels[r.path] = Level.FULL
            alloc.cost += full
            alloc.notes.append(f"zoom in to L4: {r.path} ranks #{i + 1} ({why(r)}), {full} tokens in full")


def _lexical(r: Any, cfg: OfflinePolicyConfig) -> float:
    """How much of a ranked file's score comes from the goal's words (not from centrality)."""
    return sum(r.signals.get(k, 0.0) for k in cfg.lexical_signals)


def has_outline(r: Any) -> bool:
    """True when the file's outline level shows more than its path line."""
    return r.level_tokens[Level.OUTLINE] > r.level_tokens[Level.PATH]


def _outline(r: Any, budget: int, cfg: OfflinePolicyConfig) -> Level:
    return Level.DOCS if r.level_tokens[Level.DOCS] <= cfg.docs_level_share * budget else Level.OUTLINE


def _too_big_to_outline(r: Any, budget: int, cfg: OfflinePolicyConfig) -> bool:
    """True when the file's whole outline would take more than ``focused_outline_share`` of the budget."""
    share = cfg.focused_outline_share
    return share is not None and r.level_tokens[Level.OUTLINE] > share * budget


def _host_level(r: Any, budget: int, cfg: OfflinePolicyConfig) -> Level:
    """The level a file gets for showing an expanded symbol: its outline, or L1 when that is too big."""
    return Level.PATH if _too_big_to_outline(r, budget, cfg) else _outline(r, budget, cfg)


def _contains(a: ScoredSymbol, b: ScoredSymbol) -> bool:
    return a.path == b.path and a.start_line <= b.start_line and b.end_line <= a.end_line


def _pick_symbols(symbols: list[ScoredSymbol], by_path: dict[str, Any], budget: int,
                  cfg: OfflinePolicyConfig, alloc: Allocation, cap: float) -> None:
    best = symbols[0].score if symbols else 0.0
    for s in symbols:
        if len(alloc.expand) >= cfg.max_expand or s.score < cfg.expand_min_rel_score * best:
            break
        if alloc.levels.get(s.path) == Level.FULL or any(_contains(e, s) or _contains(s, e) for e in alloc.expand):
            continue
        extra = s.tokens
        r = by_path.get(s.path)
        if s.path not in alloc.levels and r is not None:
            extra += r.level_tokens[_host_level(r, budget, cfg)]
        if alloc.cost + extra > cap:
            continue
        if s.path not in alloc.levels and r is not None:
            alloc.levels[s.path] = _host_level(r, budget, cfg)
        alloc.cost += extra
        alloc.expand.append(s)
        what = f"{s.symbol_id} (the module-level code of {s.path}; " if s.kind == "module" else f"{s.symbol_id} ("
        alloc.notes.append(
            f"expand {what}symbol score {s.score:.3g}; matches {', '.join(s.matched) or 'name'}; {s.tokens} tokens)"
        )


def base_plan(plan: FlightPlan, cfg: OfflinePolicyConfig) -> FlightPlan:
    """``plan`` without the focus the policy itself added in the allocate step.

    Allocating from a ranking that the policy's own file/symbol focus already
    boosted would feed back on itself (focus a file -> it ranks higher -> focus
    it more) and oscillate; the survey's directory focus and a human's
    feedback focus stay, because they are evidence, not echoes.
    """
    owned = {cfg.file_focus_weight, cfg.neighbour_weight}
    return plan.model_copy(
        update={
            "focus_paths": [f for f in plan.focus_paths if f.weight not in owned],
            "focus_symbols": [f for f in plan.focus_symbols if f.weight != cfg.symbol_focus_weight],
        }
    )


def _without_own_levels(plan: FlightPlan, cfg: OfflinePolicyConfig) -> FlightPlan:
    """``plan`` without the exact-file rules the policy set (a glob, a pinned file or a file a human
    focused through feedback is a human's: kept)."""
    human = set(plan.pinned) | {f.glob for f in plan.focus_paths if f.weight == cfg.feedback_weight}
    rules = [r for r in plan.rules if any(c in r.glob for c in "*?[") or r.glob in human]
    return plan.model_copy(update={"rules": rules})


def allocate(engine: Any, plan: FlightPlan, goal: str, cfg: OfflinePolicyConfig, estimate: Any) -> tuple[Allocation, list[Any]]:
    """Plan levels, expansions and neighbour focus for the current ranking."""
    ranked = ranked_for(engine, base_plan(plan, cfg))
    if cfg.learned.enabled:
        # chosen on the footing of the survey's choice: without the levels the policy itself set since
        # (they changed what the choice's files measured when rendered, so a second turn chose anew and
        # undid part of the first: not a fixed point). A human's rules and globs stay.
        return learned_allocation(engine, _without_own_levels(base_plan(plan, cfg), cfg), goal, cfg), ranked
    by_path = {r.path: r for r in ranked}
    budget = plan.token_budget
    cap = budget * cfg.explicit_share
    alloc = Allocation()
    _pick_full_files(ranked, budget, cfg, alloc, cap)
    _pick_callers(engine, alloc, cfg, plan.exclude, cap, estimate, by_path, budget)
    head = ranked[: cfg.symbol_files]
    symbols = score_symbols(engine, [(r.path, r.score) for r in head], goal, estimate, cfg.symbols)
    for r in head[:3]:
        if _too_big_to_outline(r, budget, cfg):
            continue  # its expanded symbols show it (at L1); a fill outlines it when there is room
        if r.path not in alloc.levels and has_outline(r) and alloc.cost + r.level_tokens[_outline(r, budget, cfg)] <= cap:
            alloc.levels[r.path] = _outline(r, budget, cfg)
            alloc.cost += r.level_tokens[alloc.levels[r.path]]
    _pick_symbols(symbols, by_path, budget, cfg, alloc, cap)
    for i, r in enumerate(ranked[: cfg.survey_files]):
        if r.path not in alloc.levels and has_outline(r) and alloc.cost + r.level_tokens[Level.OUTLINE] <= cap \
                and not _too_big_to_outline(r, budget, cfg):
            alloc.levels[r.path] = Level.OUTLINE
            alloc.cost += r.level_tokens[Level.OUTLINE]
            alloc.notes.append(f"L2: {r.path} ranks #{i + 1} ({why(r)})")
    _neighbours(engine, symbols[: cfg.neighbour_symbols], alloc, cfg, plan.exclude)
    return alloc, ranked


def _pick_callers(engine: Any, alloc: Allocation, cfg: OfflinePolicyConfig, exclude: list[str], cap: float,
                  estimate: Any, by_path: dict[str, Any], budget: int) -> None:
    """Expand the functions elsewhere that call the definitions of the first file shown in full.

    The file in full answers "what is it"; its call sites answer "where is it enforced / used".
    A caller that uses more of the file's definitions comes first (ties by id).
    """
    primary = next((p for p, lv in alloc.levels.items() if lv == Level.FULL), None)
    if primary is None or cfg.caller_expand <= 0:
        return
    uses: dict[str, set[str]] = {}
    where: dict[str, tuple[str, int]] = {}
    targets = [s for s in engine.symbols(primary) if s.kind in ("function", "method")][: cfg.caller_targets]
    for sym in targets:
        for ref in engine.callers(sym.id):
            enclosing = ref.symbol_id
            if (not ref.resolved or ref.path == primary or enclosing.endswith("::") or "::" not in enclosing
                    or any(glob_matches(g, ref.path) for g in exclude)):
                continue
            uses.setdefault(enclosing, set()).add(sym.name)
            where.setdefault(enclosing, (ref.path, ref.line))
    taken = 0
    for enclosing in sorted(uses, key=lambda e: (-len(uses[e]), e)):
        if taken >= cfg.caller_expand:
            break
        found = [s for s in engine.symbols(where[enclosing][0]) if s.id == enclosing]
        if not found or alloc.levels.get(found[0].path) == Level.FULL:
            continue
        s = found[0]
        tokens = estimate(engine.read_lines(s.path, s.start_line, s.end_line))
        r = by_path.get(s.path)
        # an expansion shows inside its file's outline: the outline is part of the price
        host = _host_level(r, budget, cfg) if r is not None else Level.OUTLINE
        extra = tokens + (r.level_tokens[host] if r is not None and s.path not in alloc.levels else 0)
        if (r is None or tokens > cfg.caller_max_tokens or alloc.cost + extra > cap
                or any(e.symbol_id == s.id for e in alloc.expand)):
            continue
        if s.path not in alloc.levels:
            alloc.levels[s.path] = host
        alloc.cost += extra
        alloc.expand.append(ScoredSymbol(symbol_id=s.id, name=s.name, kind=s.kind, path=s.path,
                                         start_line=s.start_line, end_line=s.end_line, score=0.0,
                                         matched=(), tokens=tokens))
        alloc.notes.append(f"expand {s.id} (calls {', '.join(sorted(uses[enclosing]))} of {primary}; {tokens} tokens)")
        taken += 1


def _neighbours(engine: Any, top: list[ScoredSymbol], alloc: Allocation, cfg: OfflinePolicyConfig,
                exclude: list[str]) -> None:
    seen: dict[str, str] = {}
    for s in top:
        refs = [("caller", r) for r in engine.callers(s.symbol_id)] + [("callee", r) for r in engine.callees(s.symbol_id)]
        for role, ref in sorted(refs, key=lambda x: (x[1].path, x[1].line, x[0])):
            # "path::" refs are mentions in files without symbols (docs, changelogs), not code
            if ref.path == s.path or ref.path in alloc.levels or ref.path in seen or ref.symbol_id.endswith("::"):
                continue
            if not any(glob_matches(g, ref.path) for g in exclude):
                seen[ref.path] = f"{role} of {s.name} ({ref.symbol_id})"
    for path, how in list(seen.items())[: cfg.max_neighbours]:
        alloc.neighbours.append(path)
        alloc.notes.append(f"focus neighbour {path}: {how}")


def plan_turn(engine: Any, call: OfflineTurn, cfg: OfflinePolicyConfig, estimate: Any) -> PolicyOutcome:
    """One turn without feedback: survey, or allocate and diff, or finalize."""
    plan, goal = call.flight_plan, call.goal or call.flight_plan.goal or ""
    untouched = not (plan.rules or plan.focus_paths or plan.focus_symbols or plan.exclude)
    if plan.goal != goal or untouched:
        return survey(engine, plan, goal, cfg, call.tool_results)
    alloc, ranked = allocate(engine, plan, goal, cfg, estimate)
    meta = call.map_metadata
    update, notes = diff_allocation(plan, alloc, ranked, cfg, meta)
    usage = meta.tokens_used / meta.token_budget if meta else 0.0
    if call.iteration >= call.max_iterations:
        return PolicyOutcome(True, f"finalize: iteration cap {call.max_iterations} reached", summary=finalize_summary(plan, meta))
    if update.is_empty():
        if cfg.learned.enabled:
            reason = f"finalize: the learned allocation is in place; the map uses {usage:.0%} of the budget"
            return PolicyOutcome(True, reason, summary=finalize_summary(plan, meta))
        if meta is None or (usage >= cfg.finalize_budget_use and not cfg.fill_reclaims_auto):
            reason = f"finalize: ranking stable (allocation unchanged) and the map uses {usage:.0%} of the budget"
            return PolicyOutcome(True, reason, summary=finalize_summary(plan, meta))
        if _fill_was_undone(call.recent_decisions):
            reason = (f"finalize: ranking stable; the last fill did not fit and was undone, "
                      f"so the map stays at {usage:.0%} of the budget")
            return PolicyOutcome(True, reason, summary=finalize_summary(plan, meta))
        move = fill_move(plan, ranked, meta, cfg, call.recent_decisions)
        if move is None:
            reason = (f"finalize: ranking stable and no further zoom-in fits or adds "
                      f"{cfg.fill_min_share:.0%} of the budget ({usage:.0%} of the budget used)")
            return PolicyOutcome(True, reason, summary=finalize_summary(plan, meta))
        outcome = PolicyOutcome(False, move[1], move[0])
    else:
        notes += [n for n in alloc.notes if _note_applies(n, update)]
        if not notes:
            notes.append("re-apply the focus of the current allocation")
        outcome = PolicyOutcome(False, "zoom: " + "; ".join(notes), update)
    if any(_move_key(outcome.reasoning) == _move_key(reasoning) for _, reasoning in call.recent_decisions):
        # the same move was made before and a later turn undid it: a cycle, not progress
        reason = f"finalize: this move repeats an earlier one that was undone (cycle); map at {usage:.0%} of the budget"
        return PolicyOutcome(True, reason, summary=finalize_summary(plan, meta))
    return outcome


def _fill_was_undone(recent: tuple[tuple[str, str], ...]) -> bool:
    """True when the last two turns were a fill and a zoom that lowered levels again."""
    if len(recent) < 2:
        return False
    (_, before), (_, last) = recent[-2], recent[-1]
    return before.startswith("fill") and last.startswith("zoom:") and (
        "zoom back out" in last or "zoom out to L1" in last
    )


def _move_key(reasoning: str) -> str:
    """A reason without its budget percentages: the same move at 77% and 78% is the same move."""
    return re.sub(r"\d+%", "%", reasoning)


def _note_applies(note: str, update: FlightPlanUpdate) -> bool:
    """Keep only the allocation notes about things this update actually changes."""
    touched = [r.glob for r in update.set_rules] + [f.symbol for f in update.add_focus_symbols]
    touched += [f.glob for f in update.add_focus_paths]
    return any(re.search(r"(?<![\w/.:])" + re.escape(t) + r"(?![\w/.:])", note) for t in touched)
