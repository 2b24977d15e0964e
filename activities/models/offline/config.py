"""Shared types of the offline policy: its configuration, an allocation, a turn's outcome.

Kept apart so the survey/allocate code (``policy``), the plan diff (``diff``) and
the feedback rules (``feedback``) all import from here and never from each other
in a cycle.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from durable_navigator.activities.models.offline.learned import LearnedConfig
from durable_navigator.activities.models.offline.symbols import ScoredSymbol, SymbolScoreConfig
from durable_navigator.activities.models.offline.terms import META_FILE_NAMES, NOISE_AREAS, TEST_FILE_NAMES, mentioned_noise, wants_tests
from durable_navigator.activities.models.offline.tools import OfflineToolConfig
from durable_navigator.navtypes.flightplan import FlightPlan, FlightPlanUpdate, Level
from durable_navigator.navtypes.mapmeta import MapMetadata

__all__ = ["OfflinePolicyConfig", "Allocation", "PolicyOutcome", "OfflineTurn", "glob_matches", "noise_excludes", "why"]


class OfflinePolicyConfig(BaseModel):
    """Thresholds and weights of the offline policy (no inline magic numbers)."""

    model_config = ConfigDict(frozen=True)

    #: finalize once the rendered map uses at least this share of the token budget
    finalize_budget_use: float = 0.85
    #: fill moves spend at most this share of the tokens the last map left unused
    fill_slack: float = 1.0
    #: a fill that adds less than this share of the budget to a map already past
    #: ``finalize_budget_use`` is not worth a turn: the run finalizes instead (fills of a
    #: dozen tokens a turn ran runs into the iteration cap)
    fill_min_share: float = 0.01
    #: fill moves consider this many of the best-ranked files (every one with a score, in practice)
    fill_files: int = 200
    #: a fill move raises a file straight to L4 when its full text fits the unused tokens
    fill_full_first: bool = True
    #: fill moves count the tokens the engine spent on files the plan has no rule for (auto
    #: levels) as free: a rule outranks them in the fitter, so raising a ranked file pushes the
    #: engine's filler out instead of being refused because the map "looks" full
    fill_reclaims_auto: bool = True
    #: ...keeping at least this share of the budget for the auto-level files (path lines, small files)
    fill_auto_reserve: float = 0.10
    #: share of the budget the policy plans explicitly; the engine's auto levels fill the rest
    explicit_share: float = 0.80
    #: a file is shown in full only if that costs at most this share of the budget (bounded by
    #: ``explicit_share`` too; dev split, 8k: 0.4 0.676, 0.7 0.700, 0.75 0.708, 0.8 0.714)
    full_file_share: float = 0.8
    #: at most this many files in full
    max_full_files: int = 2
    #: a runner-up goes full only if its score is at least this share of the top score
    full_file_min_rel_score: float = 0.5
    #: ...and only if its lexical evidence (bm25 + name + identifier + path signals) is at least
    #: this share of the top file's: centrality alone never earns a runner-up a full view
    full_file_min_rel_lexical: float = 0.5
    #: the ranking signals that say the file matches the goal's words
    lexical_signals: tuple[str, ...] = ("bm25", "name", "ident", "path", "trace")
    #: a file's outline gets docstrings (L3) when that costs at most this share
    docs_level_share: float = 0.10
    #: a file whose outline (L2) would take more than this share of the budget is not outlined
    #: whole: its expanded symbols show at L1 (path, each symbol after its enclosing definitions);
    #: fills raise it when the map has room. None: always outline (dev split, 8k: None 0.664,
    #: 0.05 0.681, 0.1 0.668, 0.15 0.676, 0.2 0.682, 0.25 0.671, 0.3 0.671)
    focused_outline_share: float | None = 0.2
    #: the survey zooms out test files beside the code (``cobra_test.go``, ``tests.py``) as it does
    #: ``tests/`` folders, unless the goal asks for tests
    exclude_test_files: bool = True
    #: ...and project bookkeeping (licences, changelogs, VCS and CI settings: ``META_FILE_NAMES``)
    #: unless the goal names it
    exclude_meta_files: bool = True
    survey_files: int = 8
    survey_dirs: int = 0
    #: a directory is focused only if it holds at least this share of the top files' score
    dir_min_share: float = 0.25
    #: ...and only if it is a narrowing: it holds at most this share of the repository's files
    dir_max_repo_share: float = 0.5
    #: the symbols of this many of the best-ranked files compete for expansion
    symbol_files: int = 12
    max_expand: int = 10
    #: expand a symbol only if it scores at least this share of the best symbol
    expand_min_rel_score: float = 0.1
    neighbour_symbols: int = 2
    #: expand at most this many functions elsewhere that call the definitions of the file shown
    #: in full first ("where is this used?": the ledger's reserve -> the model call that reserves)
    caller_expand: int = 2
    #: ...asking for the callers of at most this many of that file's definitions
    caller_targets: int = 24
    #: ...and only callers of at most this many tokens each
    caller_max_tokens: int = 900
    max_neighbours: int = 4
    dir_focus_weight: float = 1.5
    file_focus_weight: float = 2.0
    neighbour_weight: float = 0.5
    symbol_focus_weight: float = 3.0
    #: weight of focus the human asked for in feedback (never removed by the policy)
    feedback_weight: float = 4.0
    symbols: SymbolScoreConfig = SymbolScoreConfig()
    #: the first turn's code-tool round and the focus its results give the survey
    tools: OfflineToolConfig = OfflineToolConfig()
    #: the learned chunk ranker's allocation (``learned``); when enabled it decides the levels and
    #: expansions, and the hand-tuned rules below only serve when it is disabled
    learned: LearnedConfig = LearnedConfig()
    #: engine signals that say nothing about the goal's words (for the "no lexical match" note)
    structural_signals: tuple[str, ...] = ("pagerank", "focus")


def glob_matches(glob: str, path: str) -> bool:
    """The flight-plan glob semantics: ``**`` spans directories, a bare dir prefix matches below it."""
    if not any(ch in glob for ch in "*?["):
        prefix = glob.rstrip("/")
        return path == prefix or path.startswith(prefix + "/")
    return _glob_regex(glob).fullmatch(path) is not None


@functools.lru_cache(maxsize=4096)
def _glob_regex(glob: str) -> re.Pattern[str]:
    """A glob's regular expression, compiled once: a survey of a 20,000-file repository matches
    ~50 noise globs against every path (compiling per call took 33 s of a 69 s exploration)."""
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out))


def why(ranked: Any) -> str:
    """The two strongest ranking signals of a ranked file, e.g. ``bm25 3.1, pagerank 0.02``."""
    top = sorted(ranked.signals.items(), key=lambda kv: (-abs(kv[1]), kv[0]))[:2]
    return ", ".join(f"{k} {v:.3g}" for k, v in top) or f"score {ranked.score:.3g}"


@dataclass
class Allocation:
    """The per-file levels and symbol expansions the policy wants, with its estimated cost."""

    levels: dict[str, Level] = field(default_factory=dict)
    expand: list[ScoredSymbol] = field(default_factory=list)
    neighbours: list[str] = field(default_factory=list)
    cost: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass
class PolicyOutcome:
    """What one turn decided: an update (possibly empty) or finalize, with reasons."""

    finalize: bool
    reasoning: str
    update: FlightPlanUpdate = field(default_factory=FlightPlanUpdate)
    summary: str | None = None




@dataclass(frozen=True)
class OfflineTurn:
    """What the policy sees of one navigator turn (a ``DecideTask`` plus the opened engine)."""

    goal: str
    flight_plan: FlightPlan
    iteration: int
    max_iterations: int
    engine: Any
    map_metadata: MapMetadata | None = None
    feedback: str | None = None
    #: (action, reasoning) of the most recent decisions, oldest first
    recent_decisions: tuple[tuple[str, str], ...] = ()
    tools_available: bool = False
    tool_results: tuple[str, ...] = ()


def noise_excludes(goal: str, files: Sequence[str], already: Sequence[str] = (), test_files: bool = True,
                   meta_files: bool = True) -> list[str]:
    """The noise globs a survey of ``files`` excludes for ``goal`` (the planner plans around the same).

    A glob the goal mentions is kept; a glob adding nothing over the chosen ones
    (``tests/**`` vs ``**/tests/**``) is skipped; a repository made only of
    "noise" keeps it all. With ``test_files``, test files outside a tests folder
    (``**/*_test.go``, ``**/test_*.py``: :data:`TEST_FILE_NAMES`) are noise too
    unless the goal asks for tests; with ``meta_files``, so are licences, changelogs and
    release-note fragments, VCS and CI settings (:data:`META_FILE_NAMES`) unless the goal names them.
    """
    wanted = mentioned_noise(goal)
    areas = [g for g, _ in NOISE_AREAS]
    if test_files and not wants_tests(goal):
        areas += [f"**/{name}" for name in TEST_FILE_NAMES]
    if meta_files:
        words = {w.lower() for w in re.findall(r"[A-Za-z]+", goal)}
        areas += [f"**/{name}" for name, keep in META_FILE_NAMES if not words.intersection(keep)]
        if "changelog" not in words and "news" not in words:
            areas += ["changelog.d/**", "changes/**", "newsfragments/**"]
    listed = tuple(files)
    noise: list[str] = []
    covered: frozenset[str] = frozenset()
    for g in areas:
        hits = _glob_hits(g, listed)
        if g not in wanted and g not in already and not hits <= covered:  # a file no chosen glob has
            noise.append(g)
            covered |= hits
    if noise and covered.issuperset(listed):
        return []
    return noise


@functools.lru_cache(maxsize=256)
def _glob_hits(glob: str, files: tuple[str, ...]) -> frozenset[str]:
    """The files ``glob`` matches, kept per file list: every survey of a repository asks the same
    40-odd globs of the same files (600,000 matches, 2 s, for a 20,000-file tree)."""
    return frozenset(f for f in files if glob_matches(glob, f))
