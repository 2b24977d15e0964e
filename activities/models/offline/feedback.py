"""How the offline policy obeys a human's feedback text, deterministically.

Rules, applied in this order (see :func:`activities.models.offline.terms.parse_feedback`):

* "finalize" / "done" / "good enough" / "stop" -> finalize now.
* "ignore X" / "exclude X" / "skip X" / "drop X" / "hide X" / "not X", where X is
  a file, directory or glob of the repository -> ``X`` is excluded (and its focus dropped).
* every other mentioned file -> focus (weight ``feedback_weight``) and L3 (L4 with
  "more"/"zoom in"/"expand"); directory -> focus ``dir/**``; glob -> focus; a
  symbol name or id the index knows -> ``focus_symbols`` with ``expand``.
  Mentions that match nothing are reported in the reasoning, never guessed.
* "zoom out" / "less" / "fewer" / "smaller" / "too much" -> every explicit rule
  at L2 or above goes one level down; symbol expansions collapse.
* "zoom in" / "more detail" / "expand" / "deeper" without a mention -> the three
  best-ranked explicit rules go one level up.
"""

from __future__ import annotations

from typing import Any

from durable_navigator.activities.models.offline.config import OfflinePolicyConfig, glob_matches
from durable_navigator.activities.models.offline.terms import FeedbackIntent
from durable_navigator.navtypes.flightplan import FlightPlan, FlightPlanUpdate, FocusPath, FocusSymbol, Level, VerbosityRule

__all__ = ["feedback_update"]

#: at most this many symbols are focused for one mentioned name (overloads, same name in many files)
_MAX_SYMBOLS_PER_MENTION = 3
_RAISE_ON_MORE = 3


def _resolve_path(engine: Any, text: str) -> tuple[str, str] | None:
    """('file'|'dir'|'glob', glob) for a mention that names repository paths, else None.

    A mention may be a path's tail (``sansio/scaffold.py`` for
    ``src/flask/sansio/scaffold.py``, ``sansio`` for a folder): it resolves when
    exactly one file (or folder) ends with it; an ambiguous tail is not guessed.
    """
    files = engine.files
    cleaned = text.strip().strip("`'\"").removeprefix("./").rstrip("/")
    if not cleaned:
        return None
    if cleaned in files:
        return "file", cleaned
    if any(c in cleaned for c in "*?["):
        return ("glob", cleaned) if any(glob_matches(cleaned, f) for f in files) else None
    if any(f.startswith(cleaned + "/") for f in files):
        return "dir", f"{cleaned}/**"
    tails = [f for f in files if f.endswith("/" + cleaned)]
    if len(tails) == 1:
        return "file", tails[0]
    dirs = sorted({f[: f.index("/" + cleaned + "/") + len(cleaned) + 1] for f in files if "/" + cleaned + "/" in f})
    if len(dirs) == 1:
        return "dir", f"{dirs[0]}/**"
    return None


def _resolve_symbols(engine: Any, mention: str) -> list[str]:
    """Symbol ids for ``name``, ``Class.method``, ``name()`` or a full ``path::Class.method`` id."""
    name = mention.rstrip("()")
    if "::" in name:
        path = name.split("::", 1)[0]
        return [name] if path in engine.files and any(s.id == name for s in engine.symbols(path)) else []
    last = name.split(".")[-1]
    return sorted(
        s.id for s in engine.find_symbol(last)
        if s.name == name or s.id.endswith("::" + name) or s.id.endswith("." + name)
    )


def feedback_update(
    engine: Any, plan: FlightPlan, intent: FeedbackIntent, cfg: OfflinePolicyConfig
) -> tuple[FlightPlanUpdate, list[str]]:
    """The update that feedback asks for, with one note per thing it did or could not do."""
    notes: list[str] = []
    rules: dict[str, Level] = {}
    focus_paths: list[FocusPath] = []
    focus_syms: list[FocusSymbol] = []
    exclude: list[str] = []
    for name in intent.ignores:
        hit = _resolve_path(engine, name)
        if hit is None:
            notes.append(f"feedback 'ignore {name}': no such path in the repository")
            continue
        exclude.append(hit[1])
        notes.append(f"feedback: exclude {exclude[-1]}")
    for name in intent.mentions:
        hit = _resolve_path(engine, name)
        if hit is not None:
            kind, glob = hit
            focus_paths.append(FocusPath(glob=glob, weight=cfg.feedback_weight))
            if kind == "file":
                rules[glob] = Level.FULL if intent.more else Level.DOCS
            notes.append(f"feedback: focus {glob}" + (f" at L{int(rules[glob])}" if glob in rules else ""))
            continue
        ids = _resolve_symbols(engine, name)
        if ids:
            for sid in ids[:_MAX_SYMBOLS_PER_MENTION]:
                focus_syms.append(FocusSymbol(symbol=sid, weight=cfg.feedback_weight, expand=True))
            notes.append(f"feedback: expand {', '.join(ids[:_MAX_SYMBOLS_PER_MENTION])}")
        elif not name[:1].isupper() or "." in name or "_" in name:
            notes.append(f"feedback mentions '{name}': not a path or symbol of this repository, ignored")
    explicit = [r for r in plan.rules if r.glob not in rules]
    if intent.less:
        for r in explicit:
            if r.level >= Level.OUTLINE:
                rules[r.glob] = Level(r.level - 1)
        notes.append("feedback 'less': every zoomed-in rule one level down, expansions collapsed")
    elif intent.more and not intent.mentions:
        for r in [r for r in explicit if r.level < Level.FULL][:_RAISE_ON_MORE]:
            rules[r.glob] = Level(r.level + 1)
        notes.append("feedback 'more': the first zoomed-in rules one level up")
    update = FlightPlanUpdate(
        set_rules=[VerbosityRule(glob=g, level=lv) for g, lv in rules.items()],
        add_focus_paths=focus_paths,
        add_focus_symbols=focus_syms,
        remove_focus_symbols=[f.symbol for f in plan.focus_symbols] if intent.less else [],
        add_exclude=exclude,
        remove_focus_paths=[f.glob for f in plan.focus_paths if f.glob in exclude],
    )
    # what the human asked for sticks: later turns of the policy cannot undo it
    return update.pinned(), notes
