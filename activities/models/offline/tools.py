"""Code tools for the offline policy: one bounded tool round, then hints for the survey.

The offline model may ask the workflow to run code tools once, on its first
turn (before the survey), when the caller can run them
(``DecideCall.tools_available``; the benchmark loop cannot):

* ``search_codebase`` with the goal's terms and the identifiers it names;
* ``get_callers`` of up to :attr:`OfflineToolConfig.max_identifiers`
  identifiers the goal names (``RepoMap.render``, ``parse_config()``,
  ``BudgetLedger``), and of the function of a stack-trace frame;
* ``read_file`` around the first stack-trace frame that names a file.

Their results come back in the next prompt (``DecideCall.tool_results``, the
lines ``tool_result_lines`` builds); :func:`parse_tool_results` turns them into
:class:`ToolHints` and :func:`hint_update` adds them to the survey's update as
focus (files the tools pointed at, callers of named identifiers) and expanded
focus symbols (identifiers the goal names that the index knows). The focus
weights differ from the policy's own per-turn weights, so the allocate step
keeps them as evidence (see ``offline_policy.base_plan``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from durable_navigator.activities.models.offline.terms import goal_terms
from durable_navigator.navtypes.flightplan import FlightPlan, FlightPlanUpdate, FocusPath, FocusSymbol
from durable_navigator.navcore.run.tools import ToolCall

__all__ = [
    "OfflineToolConfig",
    "ToolHints",
    "goal_identifiers",
    "trace_frames",
    "tool_round",
    "parse_tool_results",
    "hint_update",
]

#: the reasoning prefix of the offline model's tool turn (how it recognises its own round)
TOOL_TURN_PREFIX = "tools:"


class OfflineToolConfig(BaseModel):
    """Bounds and weights of the offline model's tool use."""

    model_config = ConfigDict(frozen=True)

    #: tool rounds per run (each one is a decision turn without a map update)
    max_rounds: int = 1
    #: a tool round is skipped when fewer iterations than this remain after it
    min_iterations_left: int = 2
    query_terms: int = 8
    search_limit: int = 10
    max_identifiers: int = 2
    #: lines read on each side of a stack-trace frame's line
    frame_context_lines: int = 15
    #: search-hit files focused by the survey (dev split: 2 → 3 gained 8k/16k/32k +0.007/+0.008/+0.006)
    hit_files: int = 3
    #: best search-hit definitions expanded by the survey (their bodies shown)
    hit_symbols: int = 1
    #: caller files focused per named identifier
    caller_files: int = 3
    #: focus weights; distinct from the allocate step's own, which it removes each turn
    hit_file_weight: float = 1.25
    caller_weight: float = 0.75
    identifier_weight: float = 2.5


_IDENT = re.compile(r"`?([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(\(\))?`?")
_FRAME = re.compile(r'File "([^"]+)", line (\d+)(?:, in ([A-Za-z_][A-Za-z0-9_]*))?')


def _identifier_like(word: str, call_parens: bool) -> bool:
    """snake_case, CamelCase inside a word, dotted names or ``name()``: a code identifier."""
    if call_parens or "." in word.strip("."):
        return True
    return "_" in word.strip("_") or any(c.isupper() for c in word[1:]) and any(c.islower() for c in word)


def goal_identifiers(goal: str, limit: int = 2) -> list[str]:
    """Identifiers the goal names, in order (the last dotted part: what the index resolves)."""
    # a stack-trace frame's function is the most precise pointer: first
    out: list[str] = [f for _, _, f in trace_frames(goal) if f and f != "<module>"]
    out = list(dict.fromkeys(out))
    for m in _IDENT.finditer(_FRAME.sub(" ", goal)):
        word, parens = m.group(1), bool(m.group(2))
        if word.lower().endswith((".py", ".md", ".txt", ".yaml", ".json")) or not _identifier_like(word, parens):
            continue
        name = word.rsplit(".", 1)[-1]
        if name not in out and len(name) > 2:
            out.append(name)
    return out[:limit]


def trace_frames(goal: str) -> list[tuple[str, int, str | None]]:
    """``(path, line, function)`` of each Python stack-trace frame quoted in the goal."""
    return [(m.group(1), int(m.group(2)), m.group(3)) for m in _FRAME.finditer(goal)]


def tool_round(goal: str, plan: FlightPlan, iteration: int, max_iterations: int,
               recent: tuple[tuple[str, str], ...], cfg: OfflineToolConfig) -> list[ToolCall]:
    """The calls of the offline model's tool round, or [] when it should not (or no longer) ask."""
    untouched = not (plan.rules or plan.focus_paths or plan.focus_symbols or plan.exclude)
    rounds = sum(1 for action, reasoning in recent if action == "call_tools" and reasoning.startswith(TOOL_TURN_PREFIX))
    if not untouched or rounds >= cfg.max_rounds or iteration > cfg.max_rounds:
        return []
    if max_iterations - iteration < cfg.min_iterations_left:
        return []
    idents = goal_identifiers(goal, cfg.max_identifiers)
    terms = goal_terms(goal)[: cfg.query_terms]
    query = " ".join(dict.fromkeys([*idents, *terms]))
    calls: list[ToolCall] = []
    if query:
        calls.append(ToolCall(name="search_codebase", args={"query": query[:500], "limit": cfg.search_limit}))
    calls += [ToolCall(name="get_callers", args={"symbol": name}) for name in idents]
    for path, line, _ in trace_frames(goal)[:1]:
        start = max(1, line - cfg.frame_context_lines)
        calls.append(ToolCall(name="read_file", args={"path": path, "start_line": start,
                                                      "end_line": line + cfg.frame_context_lines}))
    return calls[:8]


@dataclass
class ToolHints:
    """What the tool results pointed at."""

    #: search hits ``(path, symbol id or None)``, best first
    hits: list[tuple[str, str | None]] = field(default_factory=list)
    #: qualified ids of symbol hits (a goal's identifier the index resolved)
    symbols: list[str] = field(default_factory=list)
    #: caller files per queried identifier (from ``get_callers``)
    callers: dict[str, list[str]] = field(default_factory=dict)
    #: files read successfully (``read_file``)
    read: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def empty(self) -> bool:
        """True when the results pointed at nothing."""
        return not (self.hits or self.symbols or self.callers or self.read)


_HIT = re.compile(r"^(\S+?)(?::\d+(?:-\d+)?)?\s+score=\S+(?:\s+(\S+))?$")
_REF_HEAD = re.compile(r"^(\S+::\S+): \d+ callers$")
#: "  path:line  enclosing id  (call, jedi)" — a resolved caller
_REF = re.compile(r"^\s+(\S+?):\d+\s+\S+(?:\s+\(.*\))?$")
#: "  + N sites name 'x' but may mean another definition …": what follows is no caller
_UNSURE = re.compile(r"^\s+\+ \d+ sites name ")
_READ_HEAD = re.compile(r"^(\S+) lines \d+-\d+ of \d+$")


def parse_tool_results(lines: tuple[str, ...] | list[str]) -> ToolHints:
    """Hints from the prompt's tool-result blocks (``### <summary>\\n<body>``, bodies as the tools write them)."""
    hints = ToolHints()
    for block in lines:
        head, _, body = block.partition("\n")
        rows = body.splitlines()
        if rows and rows[0].startswith("ERROR:"):
            hints.errors.append(f"{head.removeprefix('### ')}: {rows[0][6:].strip()}")
            continue
        current: str | None = None
        for row in rows:
            if m := _HIT.match(row):  # a search hit: "path[:line]  score=…[  symbol id]"
                hints.hits.append((m.group(1), m.group(2)))
                if m.group(2) and m.group(2) not in hints.symbols:
                    hints.symbols.append(m.group(2))
            elif _UNSURE.match(row):
                current = None
            elif m := _REF_HEAD.match(row):
                current = m.group(1)
                hints.callers.setdefault(current, [])
            elif (m := _REF.match(row)) and current is not None and m.group(1) not in hints.callers[current]:
                hints.callers[current].append(m.group(1))
            elif (m := _READ_HEAD.match(row)) and m.group(1) not in hints.read:
                hints.read.append(m.group(1))
    return hints


def hint_update(update: FlightPlanUpdate, hints: ToolHints, goal: str, exclude: list[str],
                cfg: OfflineToolConfig, is_out: Callable[[list[str], str], bool]) -> tuple[FlightPlanUpdate, list[str]]:
    """The survey's ``update`` plus focus from the tool hints; notes say what came from where.

    ``is_out(exclude, path)`` tells whether a path is zoomed out (noise the
    survey excludes): the tools search everything, the map does not show it.
    """
    named = set(goal_identifiers(goal, cfg.max_identifiers))
    have = {f.glob for f in update.add_focus_paths}
    focus: list[FocusPath] = []
    notes: list[str] = []

    def add(path: str, weight: float, why: str) -> None:
        if path not in have and not is_out(exclude, path):
            have.add(path)
            focus.append(FocusPath(glob=path, weight=weight))
            notes.append(f"focus {path} ({why})")

    for path in hints.read:
        add(path, cfg.hit_file_weight, "the stack-trace frame read")
    # search ranks definitions by their content (symbol-level BM25, stopwords dropped), so the
    # best hits' files are evidence whatever their names
    for path in list(dict.fromkeys(p for p, _ in hints.hits))[: cfg.hit_files]:
        add(path, cfg.hit_file_weight, "top search hit")
    for sid, paths in hints.callers.items():
        for path in paths[: cfg.caller_files]:
            add(path, cfg.caller_weight, f"calls {sid.split('::', 1)[-1]}")
    symbols = [s for s in hints.symbols if _short(s) in named]
    symbols = [s for s in symbols if not is_out(exclude, s.split("::", 1)[0])][: cfg.max_identifiers * 2]
    sym_focus = [FocusSymbol(symbol=s, weight=cfg.identifier_weight, expand=True) for s in symbols]
    notes += [f"expand {s} (named in the goal, found by search)" for s in symbols]
    best = [s for _, s in hints.hits[: cfg.hit_symbols] if s and s not in symbols
            and not is_out(exclude, s.split("::", 1)[0])]
    sym_focus += [FocusSymbol(symbol=s, weight=cfg.hit_file_weight, expand=True) for s in best]
    notes += [f"expand {s} (best search hit)" for s in best]
    if hints.errors:
        notes.append("tool errors: " + "; ".join(hints.errors[:3]))
    merged = update.model_copy(update={
        "add_focus_paths": [*update.add_focus_paths, *focus],
        "add_focus_symbols": [*update.add_focus_symbols, *sym_focus],
    })
    return merged, notes


def _short(symbol_id: str) -> str:
    """``path::Class.method`` → ``method``."""
    return symbol_id.split("::", 1)[-1].rsplit(".", 1)[-1]
