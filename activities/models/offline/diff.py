"""Turn an offline-policy allocation into a flight-plan update; fill moves; summaries."""

from __future__ import annotations

from typing import Any

from durable_navigator.activities.models.offline.config import Allocation, OfflinePolicyConfig, why
from durable_navigator.navtypes.flightplan import (
    MAX_PLAN_RULES,
    MAX_UPDATE_ITEMS,
    FlightPlan,
    FlightPlanUpdate,
    FocusPath,
    FocusSymbol,
    Level,
    VerbosityRule,
)
from durable_navigator.navtypes.mapmeta import MapMetadata

__all__ = ["diff_allocation", "fill_move", "finalize_summary"]


def _degraded(meta: MapMetadata | None, plan: FlightPlan) -> bool:
    """True when the last render showed a file the plan has a rule for below its requested level.

    Files on auto levels are the engine's to trade; only the policy's own
    requests tell whether the plan asked for more than fits.
    """
    if meta is None:
        return False
    ruled = {r.glob for r in plan.rules}
    return any(f.level < f.requested_level for f in meta.top_files if f.path in ruled)


def diff_allocation(
    plan: FlightPlan, alloc: Allocation, ranked: list[Any], cfg: OfflinePolicyConfig,
    meta: MapMetadata | None = None,
) -> tuple[FlightPlanUpdate, list[str]]:
    """The update that moves ``plan`` to ``alloc``; empty when the plan already matches it.

    Hysteresis: while the last map fitted without degradation, levels are only
    raised, never lowered -- a full map is no reason to zoom out: the files a fill
    raised are there on purpose, and zooming them out (as this did while it kept only
    the top ``survey_files``) undid every large fill, so runs at 32k finalized with
    the map at half the budget. Files are zoomed out only after a map that could not
    show every requested level.
    Focus entries the policy owns are recognised by their configured weights,
    so focus a human added through feedback (``feedback_weight``) is never removed.
    """
    rank_of = {r.path: i + 1 for i, r in enumerate(ranked)}
    current = {r.glob: r.level for r in plan.rules}
    pinned = set(plan.pinned)  # a human's choices: never moved by the policy
    shrink = meta is None or _degraded(meta, plan)
    notes: list[str] = []
    rules = [
        VerbosityRule(glob=p, level=lv) for p, lv in alloc.levels.items()
        if p not in pinned and current.get(p) != lv and (shrink or lv > current.get(p, Level.HIDDEN))
    ]
    # an update sets at most MAX_UPDATE_ITEMS rules, a plan holds at most MAX_PLAN_RULES
    # (the rest of the allocation follows next turn; raises of the best-ranked files first)
    room_for_new = MAX_PLAN_RULES - len(current)
    if len(rules) > MAX_UPDATE_ITEMS or sum(r.glob not in current for r in rules) > room_for_new:
        rules.sort(key=lambda r: rank_of.get(r.glob, 10**9))
        rules = [r for r in rules if r.glob in current or (room_for_new := room_for_new - 1) >= 0][:MAX_UPDATE_ITEMS]
    for r in rules:
        if r.glob in current and r.level < current[r.glob]:
            notes.append(f"zoom back out to L{int(r.level)}: {r.glob} (the last map could not show every requested level)")
    for glob, level in current.items():
        if glob in pinned:
            continue
        # only exact-file rules are the policy's; globs (dirs) came from a human
        if not shrink or any(c in glob for c in "*?["):
            continue
        if level >= Level.OUTLINE and glob not in alloc.levels:
            if _policy_owned_rule(glob, plan, cfg):
                if len(rules) >= MAX_UPDATE_ITEMS:
                    break  # the remaining zoom-outs follow next turn
                rules.append(VerbosityRule(glob=glob, level=Level.PATH))
                where = (
                    f"ranks #{rank_of[glob]}, no room left after the stronger files"
                    if glob in rank_of else "no longer matches the goal"
                )
                notes.append(f"zoom out to L1: {glob} ({where})")
    want_syms = {s.symbol_id for s in alloc.expand}
    have_syms = {f.symbol for f in plan.focus_symbols}
    owned_syms = {f.symbol for f in plan.focus_symbols if f.weight == cfg.symbol_focus_weight}
    add_syms = [
        FocusSymbol(symbol=s.symbol_id, weight=cfg.symbol_focus_weight, expand=True)
        for s in alloc.expand if s.symbol_id not in have_syms
    ]
    remove_syms = sorted(owned_syms - want_syms - pinned)
    if remove_syms:
        notes.append(f"collapse {', '.join(remove_syms)} (no longer among the best-matching symbols)")
    want_paths = {p: cfg.file_focus_weight for p, lv in alloc.levels.items() if lv == Level.FULL}
    for p in alloc.neighbours:
        want_paths.setdefault(p, cfg.neighbour_weight)
    have_paths = {f.glob: f.weight for f in plan.focus_paths}
    add_paths = [FocusPath(glob=p, weight=w) for p, w in want_paths.items() if have_paths.get(p) != w and p not in pinned]
    owned = {cfg.file_focus_weight, cfg.neighbour_weight}
    remove_paths = sorted(g for g, w in have_paths.items() if w in owned and g not in want_paths and g not in pinned)
    update = FlightPlanUpdate(
        set_rules=rules, add_focus_symbols=add_syms, remove_focus_symbols=remove_syms,
        add_focus_paths=add_paths, remove_focus_paths=remove_paths,
    )
    return update, notes


def _policy_owned_rule(glob: str, plan: FlightPlan, cfg: OfflinePolicyConfig) -> bool:
    """Rules on globs a human asked to focus (feedback focus) are left alone."""
    return not any(f.glob == glob and f.weight == cfg.feedback_weight for f in plan.focus_paths)


def fill_move(
    plan: FlightPlan, ranked: list[Any], meta: MapMetadata | None, cfg: OfflinePolicyConfig,
    recent: tuple[tuple[str, str], ...] = (),
) -> tuple[FlightPlanUpdate, str] | None:
    """When the plan is stable but the map is under-used: zoom the best files one level in.

    Greedy in rank order over the tokens the last map left unused; one level
    per file per turn, so the next render shows what the raise really cost. A
    raise that a recent fill already made (and a later turn undid, since the
    file is below that level again) is not tried twice.
    """
    tried = " ".join(reason for _, reason in recent if reason.startswith("fill"))
    if meta is None:
        return None
    current = {r.glob: r.level for r in plan.rules}
    free = meta.token_budget - meta.tokens_used
    if cfg.fill_reclaims_auto:
        # the files on auto levels give way to any rule (render.protect_rules): their tokens
        # are the engine's filler, free for the ranking's next files
        owned = _ruled_tokens(current, ranked, meta)
        free = max(free, int(meta.token_budget * (1.0 - cfg.fill_auto_reserve)) - owned)
    # keep slack: level costs are estimates of what the renderer will emit
    remaining = room = int(free * cfg.fill_slack)
    rules: list[VerbosityRule] = []
    notes: list[str] = []
    # one update sets at most MAX_UPDATE_ITEMS rules and a plan holds at most MAX_PLAN_RULES:
    # a fill with more room than that continues next turn
    new_rules_left = MAX_PLAN_RULES - len(current)
    for i, r in enumerate(ranked[: cfg.fill_files]):
        level = current.get(r.path, Level.PATH)
        if level >= Level.FULL or r.path in plan.pinned:
            continue
        if len(rules) >= MAX_UPDATE_ITEMS:
            break
        if r.path not in current and new_rules_left <= 0:
            continue
        # the allocation keeps big files below L4 to leave room for others; here the
        # room is what the last map really left over, so any raise that fits is fair:
        # straight to the full file when it fits, else one level up
        if f"{r.path} to L" in tried:
            continue  # a recent fill raised it and a later turn undid that: not tried twice
        for nxt in (Level.FULL, Level(level + 1)) if cfg.fill_full_first else (Level(level + 1),):
            delta = r.level_tokens[nxt] - r.level_tokens[level]
            if not 0 < delta <= remaining:
                continue
            remaining -= delta
            new_rules_left -= r.path not in current
            rules.append(VerbosityRule(glob=r.path, level=nxt))
            notes.append(f"{r.path} to L{int(nxt)} (ranks #{i + 1}, {why(r)}; +{delta} tokens)")
            break
    if not rules:
        return None
    used = meta.tokens_used / meta.token_budget
    added = room - remaining
    if used >= cfg.finalize_budget_use and added < cfg.fill_min_share * meta.token_budget:
        return None
    room_note = f"{free} tokens free for the plan's files" + (
        " (the engine's auto-level filler gives way)" if free > meta.token_budget - meta.tokens_used else "")
    return FlightPlanUpdate(set_rules=rules), f"fill (map at {used:.0%} of the budget, {room_note}): zoom in " + "; ".join(notes)


def _ruled_tokens(current: dict[str, Level], ranked: list[Any], meta: MapMetadata) -> int:
    """Tokens the files the plan has a rule for take: measured when the map's summary lists
    the file (expansions included), else the ranking's estimate for the rule's level."""
    measured = {f.path: f.tokens for f in meta.top_files}
    estimate = {r.path: r.level_tokens for r in ranked}
    total = 0
    for glob, level in current.items():
        if glob in measured:
            total += measured[glob]
        elif glob in estimate:
            total += estimate[glob][level]
    return total


def finalize_summary(plan: FlightPlan, meta: MapMetadata | None) -> str:
    """A short human-readable account of the final context: what it shows. Not the goal: context.md's
    title and the run's Web UI summary name it, and the pack's frame keeps only the summary's first
    words at small budgets."""
    full = [r.glob for r in plan.rules if r.level == Level.FULL]
    outl = [r.glob for r in plan.rules if r.level in (Level.OUTLINE, Level.DOCS)]
    syms = [f.symbol for f in plan.focus_symbols if f.expand]
    parts: list[str] = []
    if full:
        parts.append("in full: " + ", ".join(full))
    if outl:
        parts.append("outlined: " + ", ".join(outl[:12]) + (" …" if len(outl) > 12 else ""))
    if syms:
        parts.append("expanded symbols: " + ", ".join(syms))
    if plan.exclude:
        parts.append("excluded: " + ", ".join(plan.exclude))
    if meta is not None:
        parts.append(f"map: {meta.tokens_used}/{meta.token_budget} tokens")
    return "; ".join(parts) or "the engine's own levels, nothing focused"
