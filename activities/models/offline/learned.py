"""The learned allocation: what the map shows for a goal, chosen by the chunk ranker (issue 28).

``repomap.chunkrank`` scores the repository's candidate chunks for the goal (a
LightGBM ranker over lexical, structural, size, goal-form and git-history
features, shipped as a versioned file in the package) and calibrates each score
into the expected share of the goal's changed lines the chunk holds in full and
on its first line. Here those chunks become what the map can show:

* a definition -> its symbol expanded (shown in full inside its file's view);
* lines outside every definition -> the file's module-level code (``path::``);
* lines inside a definition the chunker split (a class body between its methods, a
  window of a long function) -> that definition;
* a file without symbols -> the file in full (L4);

plus two options per file: the whole file in full (L4), when that is denser than
its parts, and its outline (L2: every signature line, what a chunk's first line
is worth; off by default since session 10, when it lost on dev -- see
``LearnedConfig.outlines``). An expanded definition still shows the signatures of
the definitions around it. A lazy greedy knapsack takes the option with the most expected lines
per token (``value / cost ** p``, ``p`` shipped with the model) while it fits
``LearnedConfig.share`` of the budget; from ``fill_from`` (16k) up the fill -- a wider set of chunks
valued by the same model -- takes what the candidates leave, and the engine's own levels fill the rest.
From ``full_from`` (16k) up a file's full option is also worth ``full_bonus`` times its best chunk's
value: each chunk is valued alone, and a file whose best chunk is likely holds more than its other
chunks' own values say.
"""

from __future__ import annotations

import heapq
import threading
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.activities.models.offline.symbols import ScoredSymbol
from durable_navigator.activities.pack import PACK_CONFIG
from durable_navigator.navtypes.flightplan import MAX_FOCUS_ITEMS, MAX_UPDATE_ITEMS, FlightPlan, Level

__all__ = ["LearnedConfig", "Choice", "learned_choice", "plan_tokens"]


class LearnedConfig(BaseModel):
    """How the learned allocation spends the budget (chosen on the dev split)."""

    model_config = ConfigDict(frozen=True)

    #: the learned ranker decides what the map shows (False: the hand-tuned rules of ``policy``).
    #: On by default, chosen on dev: on the 242 corpus dev tasks the hand rules were never tuned on
    #: (13 repositories, 8k, in process) it shows 0.809 of the changed lines against the hand
    #: rules' 0.749 and chunk BM25's 0.614 (46 tasks better than the hand rules, 22 worse; gold file
    #: 0.975 vs 0.963; median 0.40 s vs 2.52 s, p90 1.4 s vs 8.7 s), and it ties them on the 180
    #: quality dev tasks they were tuned on (``bench/RANKER.md``, session 4)
    enabled: bool = True
    #: share of the map's budget the allocation spends (the map's budget: what the pack's frame
    #: leaves of the user's, ``activities.pack``); the header and the engine's auto levels (path
    #: lines) take the rest. A file's expansions show all or none (``repomap.render``), so a plan
    #: over the map's budget loses whole files: costs are exact and the share leaves a margin
    share: float = Field(0.97, gt=0, le=1)
    #: offer each file's outline (L2) as an option. Off since session 10, chosen on dev: an outline
    #: of a long file (every signature line) costs what two or three of its definitions in full do
    #: and shows none of their lines; without it, with ``presence_bonus`` 1.5 and no ``file_decay``,
    #: the 180 quality dev tasks show 0.685 / 0.782 of the changed lines at 4k / 8k (was 0.643 /
    #: 0.753) and the 200 corpus dev tasks 0.766 / 0.887 (was 0.713 / 0.880), gold file never lower
    #: (in process, ``bench/RANKER.md`` session 10)
    outlines: bool = False
    #: a chunk that is not a whole definition (a class body between its methods, a window of a
    #: long function, a run of module-level code) is shown as its own lines (``path::a-b``)
    #: rather than as the definition (or all the module code) holding it
    line_ranges: bool = True
    #: value multiplier of chunks in paths a human focused through feedback (at least the value of
    #: the goal's best chunk: a human's pointer outweighs what the model expects)
    feedback_boost: float = 3.0
    #: the first thing shown of a file is worth this much more, times the file's best chunk value: a
    #: context that shows some of each likely file (the gold-file hit) beats one that shows more of one
    presence_bonus: float = 1.5
    #: each further expansion in a file is worth this share of the one before (the chunks of one
    #: file are right or wrong together, so independent per-chunk values could overrate the fifth
    #: chunk of the top file). 1.0 (no decay) since session 10, chosen on dev with ranker-v5: 0.8 / 0.9
    #: / 1.0 gave 0.643 / 0.658 / 0.662 at 4k and 0.753 / 0.765 / 0.764 at 8k (quality dev, outlines
    #: on), and 1.0 is best with the other two knobs set (``bench/RANKER.md`` session 10)
    file_decay: float = Field(1.0, gt=0, le=1)
    #: a choice is priced again by rendering it (its expansions are priced exactly, as the map's
    #: fitter prices them, but the path lines' why suffixes are not); over the allocation's share,
    #: it is made again with the difference held back, at most this many times
    fit_passes: int = Field(2, ge=0, le=5)
    #: once the candidates' options are taken (or no longer fit), the rest of the share goes to a
    #: wider set, the fill: the best ``fill_lexical`` chunks by BM25 and every chunk of the engine's
    #: best ``fill_files`` files, valued by the same model (0 and 0: the engine's own levels fill the
    #: rest, as before session 18). The fill never changes what the candidates chose. Chosen on dev
    #: (``bench/RANKER.md`` session 18): the candidates leave about half of a 32k map to the engine;
    #: with the fill the 180 quality dev tasks show 0.830 / 0.892 / 0.952 of the changed lines at
    #: 8k / 16k / 32k (0.824 / 0.889 / 0.945 without; every chunk of every file as the fill: 0.830 /
    #: 0.892 / 0.951)
    fill_lexical: int = Field(3000, ge=0)
    fill_files: int = Field(30, ge=0)
    #: the fill runs from this ``--tokens`` budget up. Chosen on dev: at 8k it moves the 929 corpus
    #: dev commits by -0.0004 (se 0.0004) while pricing its options reads their files (about a second
    #: per exploration on the test split; a 20,000-file repository's first 8k exploration took 1.3 s
    #: longer with it, ``bench/history_scale.py``, session 18)
    fill_from: int = Field(16384, ge=0)
    #: from ``full_from`` up, a file's full option (L4) is worth this much more, times the file's
    #: best chunk value: the changed lines of a likely file that its other chunks' own values miss
    #: (each chunk is valued alone; a file whose best chunk is likely is likelier to hold the rest).
    #: Chosen on dev (``bench/RANKER.md`` session 21, in process, with ``.git``): 0.25 / 0.5 / 1.0
    #: move 260 corpus dev commits by +0.009 / +0.017 / +0.008 at 16k and +0.025 / +0.026 / +0.022
    #: at 32k, the 180 quality dev commits by +0.015 (0.5) at 16k and +0.012 / +0.007 / +0.000 at 32k;
    #: 0.5 moves all 929 corpus dev commits by +0.011 at 32k (se 0.004)
    full_bonus: float = Field(0.5, ge=0)
    #: the ``full_bonus`` runs from this ``--tokens`` budget up. At 4k and 8k it did not pay on dev
    #: (0.5: quality dev +0.001 / +0.016, corpus dev -0.004 / -0.008)
    full_from: int = Field(16384, ge=0)
    #: the decision log names at most this many of the choices (the map shows them all)
    max_notes: int = 12
    #: most expansions one allocation makes (one plan update adds at most ``MAX_UPDATE_ITEMS``
    #: focus symbols; a plan holds at most ``MAX_FOCUS_ITEMS``, the human's included)
    max_expansions: int = Field(MAX_UPDATE_ITEMS, ge=1, le=MAX_UPDATE_ITEMS)


@dataclass
class _Option:
    """One thing the map can show: ``kind`` expand (a symbol or ``path::``), full (L4) or outline (L2)."""

    kind: str
    path: str
    value: float
    cost: int
    lines: tuple[int, int] = (0, 0)
    sym: Any = None
    #: a line range (``lines``) rather than a symbol or the file's module code
    ranged: bool = False
    #: the focus symbol an expansion is (a symbol id, ``path::`` or ``path::a-b``)
    ref: str = ""
    chunks: list[int] = field(default_factory=list)
    #: what ``value`` holds beyond the expected lines (a full option's ``full_bonus``)
    bonus: float = 0.0


@dataclass
class Choice:
    """The learned allocation: per-file levels, expansions, tokens spent, notes."""

    levels: dict[str, Level]
    expand: list[ScoredSymbol]
    cost: int
    notes: list[str]


def _engine_inputs(engine: Any, goal: str, fill_lexical: int = 0, fill_files: int = 0) -> tuple[Any, Any, Any]:
    """Candidate chunks with features, and the model's (score, full value, signature value)."""
    from durable_navigator.repomap.chunkrank.features import chunk_features
    from durable_navigator.repomap.chunkrank.fromengine import engine_view, repo_chunks, repo_history
    from durable_navigator.repomap.chunkrank.model import ranker_for

    # the history is mostly a wait on ``git log`` (a second on a 50,000-commit repository): it runs
    # beside the chunks' assembly, which is the first exploration's other long step
    with ThreadPoolExecutor(1, thread_name_prefix="history") as pool:
        reading = pool.submit(repo_history, engine.root)
        chunks, view = repo_chunks(engine), engine_view(engine, goal)
        history = reading.result()
    ranker = ranker_for(history)
    cf = chunk_features(chunks, goal, view, history, **ranker.reads(),
                        fill_lexical=fill_lexical, fill_files=fill_files)
    return cf, ranker, ranker.values(cf.X)


def _containing(syms: list[Any], a: int, b: int, name: str) -> Any:
    """The definition a chunk shows: the one it starts (by name), else the innermost one holding it."""
    if name:
        for s in syms:
            if s.start_line == a and s.name == name:
                return s
    best = None
    for s in syms:
        if s.start_line <= a and b <= s.end_line and (best is None or s.end_line - s.start_line < best.end_line - best.start_line):
            best = s
    return best


def _options(engine: Any, cf: Any, full: Any, sig: Any, ranked: dict[str, Any], cfg: LearnedConfig,
             boost: Any, price: "_Prices", only: Any = None) -> tuple[dict[str, _Option], dict[str, dict[str, _Option]]]:
    """Expand options (by focus symbol) and per-file full/outline options (of the candidates ``only``
    marks, when given)."""
    expand: dict[str, _Option] = {}
    per_file: dict[str, dict[str, _Option]] = {}
    syms_of: dict[str, list[Any]] = {}
    ids_of: dict[str, Counter[str]] = {}
    for i, span in enumerate(cf.spans):
        r = ranked.get(span.path)
        if r is None or (only is not None and not only[i]):
            continue  # excluded
        fv, sv = boost(span.path, float(full[i])), boost(span.path, float(sig[i]))
        if span.path not in syms_of:
            syms_of[span.path] = engine.symbols(span.path)
            ids_of[span.path] = Counter(o.id for o in syms_of[span.path])
        syms = syms_of[span.path]
        f = per_file.setdefault(span.path, {"full": _Option("full", span.path, 0.0, r.level_tokens[Level.FULL])})
        f["full"].value += fv
        if syms and r.level_tokens[Level.OUTLINE] > r.level_tokens[Level.PATH]:
            o = f.setdefault("outline", _Option("outline", span.path, 0.0, r.level_tokens[Level.OUTLINE]))
            o.value += sv if span.name else 0.0
        if not syms:
            continue  # a file without symbols shows in full or not at all
        s = _containing(syms, span.start, span.end, span.name)
        whole = s is not None and (s.start_line, s.end_line) == (span.start, span.end)
        lines: tuple[int, int] | None = None
        if s is not None and (not cfg.line_ranges or whole) and ids_of[span.path][s.id] > 1:
            # the id names several definitions (cfg'd variants, one method name in two impls): the
            # map would expand every one of them, so the option names its own lines instead
            lines = (s.start_line, s.end_line)
        elif cfg.line_ranges and not whole:
            lines = (span.start, span.end)
        if lines is not None:
            key = f"{span.path}::{lines[0]}-{lines[1]}"
            if key not in expand:
                expand[key] = _Option("expand", span.path, 0.0, price(span.path, (key,)), lines, None,
                                      ranged=True, ref=key)
        else:
            key = s.id if s is not None else f"{span.path}::"
        if key not in expand:
            where = (s.start_line, s.end_line) if s is not None else (0, 0)
            expand[key] = _Option("expand", span.path, 0.0, price(span.path, (key,)), where, s, ref=key)
        expand[key].value += fv
        expand[key].chunks.append(i)
    return expand, per_file


class _Prices:
    """What the map's fitter charges for a file's expansions (``RepoMap.focus_pricer``: at level 1
    the bodies and the definitions enclosing them, under an outline the bodies), each file read
    once, each set priced once."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.pricers: dict[str, Any] = {}
        self.known: dict[tuple[str, frozenset[str], bool], int] = {}

    def __call__(self, path: str, refs: tuple[str, ...], outlined: bool = False) -> int:
        key = (path, frozenset(refs), outlined)
        got = self.known.get(key)
        if got is None:
            pricer = self.pricers.get(path)
            if pricer is None:
                pricer = self.pricers[path] = self.engine.focus_pricer(path)
            got = self.known[key] = pricer(list(refs), outlined)
        return got


class _State:
    """What the greedy has chosen so far, per file."""

    def __init__(self, ranked: dict[str, Any], best: dict[str, float], bonus: float, decay: float,
                 price: _Prices) -> None:
        self.ranked = ranked
        self.price = price
        self.decay = decay
        self.best = best
        self.bonus = bonus
        self.level: dict[str, Level] = {}
        self.expanded: dict[str, list[_Option]] = {}
        self.spent: dict[str, int] = {}
        self.gained: dict[str, float] = {}

    def marginal(self, o: _Option) -> tuple[float, int] | None:
        """(value, cost) of taking ``o`` now; None when it adds nothing any more."""
        lv = self.level.get(o.path)
        head = self.ranked[o.path].level_tokens[Level.PATH]
        first = self.bonus * self.best.get(o.path, 0.0) if lv is None else 0.0
        if o.kind == "expand":
            shown = self.expanded.get(o.path, ())
            if lv == Level.FULL or any(_overlap(o, e) for e in shown):
                return None
            # what it adds to the file as shown now (the definitions around two expansions show once;
            # under an outline, every signature shows already)
            refs, outlined = tuple(e.ref for e in shown), lv == Level.OUTLINE
            cost = self.price(o.path, (*refs, o.ref), outlined) - self.price(o.path, refs, outlined)
            return o.value * self.decay ** len(shown) + first, max(cost, 1) + (head if lv is None else 0)
        if o.kind == "outline":
            if lv is not None and lv >= Level.OUTLINE:
                return None
            if lv is None:
                return o.value + first, o.cost
            refs = tuple(e.ref for e in self.expanded.get(o.path, ()))  # their enclosing lines become the outline's
            cost = o.cost + self.price(o.path, refs, True) - head - self.price(o.path, refs)
            return o.value + first, max(cost, 1)
        if lv == Level.FULL:
            return None
        return max(o.value + first - self.gained.get(o.path, 0.0), 0.0), max(o.cost - self.spent.get(o.path, 0), 1)

    def take(self, o: _Option, value: float, cost: int) -> None:
        p = o.path
        if p not in self.level:
            value -= self.bonus * self.best.get(p, 0.0)  # ``gained`` counts expected lines, not the bonus
        self.spent[p] = self.spent.get(p, 0) + cost
        self.gained[p] = self.gained.get(p, 0.0) + value
        if o.kind == "expand":
            self.expanded.setdefault(p, []).append(o)
            self.level.setdefault(p, Level.PATH)
        else:
            self.level[p] = Level.FULL if o.kind == "full" else Level.OUTLINE


def _overlap(a: _Option, b: _Option) -> bool:
    module_a, module_b = a.sym is None and not a.ranged, b.sym is None and not b.ranged
    if module_a or module_b:
        return module_a and module_b  # one module-code option per file
    return a.lines[0] <= b.lines[1] and b.lines[0] <= a.lines[1]


@dataclass
class _Priced:
    """A goal's options (the candidates'), each file's best chunk value, the ranker's cost power, the
    prices of expansions, and the fill's options, built the first time a choice leaves room for them
    (pricing them reads their files)."""

    options: list[_Option]
    best: dict[str, float]
    power: float
    price: _Prices
    build_fill: Callable[[], list[_Option]] | None = None
    fill: list[_Option] | None = None

    def fill_options(self) -> list[_Option]:
        if self.fill is None:
            self.fill = self.build_fill() if self.build_fill is not None else []
        return self.fill


#: the last goal's options: a choice made again with tokens held back (``reserve``) reuses them
_MEMO: dict[tuple[Any, ...], _Priced] = {}
_MEMO_LOCK = threading.Lock()


def _priced_options(engine: Any, goal: str, cfg: LearnedConfig, ranked: dict[str, Any],
                    focused: Any, fill: bool, whole: bool) -> _Priced:
    """Every option the map has for ``goal`` (the candidates'; with ``fill``, the fill's when asked for;
    with ``whole``, each file's full option carries ``full_bonus``)."""
    cf, ranker, (_scores, full, sig) = _engine_inputs(engine, goal, cfg.fill_lexical if fill else 0,
                                                      cfg.fill_files if fill else 0)
    top = float(full.max()) if len(full) else 0.0
    boost = (lambda p, v: max(v * cfg.feedback_boost, top) if focused(p) else v)
    price = _Prices(engine)
    expand, per_file = _options(engine, cf, full, sig, ranked, cfg, boost, price, cf.primary)
    best: dict[str, float] = {}
    for i, span in enumerate(cf.spans):
        if span.path in ranked:
            best[span.path] = max(best.get(span.path, 0.0), boost(span.path, float(full[i])))
    bonus = cfg.full_bonus if whole else 0.0

    def whole_bonus(files: dict[str, dict[str, _Option]]) -> None:
        for p, f in files.items():
            f["full"].bonus = bonus * best.get(p, 0.0)
            f["full"].value += f["full"].bonus

    whole_bonus(per_file)
    options = list(expand.values()) + [o for f in per_file.values() for k, o in f.items()
                                       if k == "full" or cfg.outlines]

    def build_fill() -> list[_Option]:
        more, more_files = _options(engine, cf, full, sig, ranked, cfg, boost, price, ~cf.primary)
        whole_bonus(more_files)
        return [o for k, o in more.items() if k not in expand] + [
            o for p, f in more_files.items() if p not in per_file for k, o in f.items() if k == "full" or cfg.outlines]

    return _Priced(options, best, ranker.cost_power, price, build_fill if cf.primary is not None else None)


def learned_choice(engine: Any, plan: FlightPlan, goal: str, cfg: LearnedConfig,
                   excluded: Any, focused: Any, reserve: int = 0, max_files: int = MAX_UPDATE_ITEMS) -> Choice:
    """The learned allocation of :func:`plan_tokens` of the plan's budget, less ``reserve``, for ``goal``.

    ``excluded(path)`` says a file is zoomed out (never shown); ``focused(path)`` that a human
    asked for it (its chunks' values are multiplied by ``feedback_boost``); ``reserve`` is what
    an earlier choice's estimated costs fell short of the map's real count; ``max_files``: the most
    files the choice may set a level for (one plan update holds ``MAX_UPDATE_ITEMS`` rules).
    """
    ranked = {r.path: r for r in engine.rank(plan) if not excluded(r.path)}
    fill, whole = plan.token_budget >= cfg.fill_from, plan.token_budget >= cfg.full_from
    key = (id(engine), engine.index_version, goal, cfg, fill, whole, tuple(ranked), tuple(p for p in ranked if focused(p)))
    with _MEMO_LOCK:
        got = _MEMO.get(key)
    if got is None:
        got = _priced_options(engine, goal, cfg, ranked, focused, fill, whole)
        with _MEMO_LOCK:
            _MEMO.clear()
            _MEMO[key] = got
    state = _State(ranked, got.best, cfg.presence_bonus, cfg.file_decay, got.price)
    limit = max(plan_tokens(plan.token_budget, cfg) - reserve, 0)
    taken: list[tuple[_Option, float, int]] = []
    room = min(cfg.max_expansions, MAX_FOCUS_ITEMS - len(plan.focus_symbols))
    left, room = _greedy(got.options, state, limit, room, got.power, max_files, taken)
    if left > 0 and got.build_fill is not None:
        left, room = _greedy(got.fill_options(), state, left, room, got.power, max_files, taken)
    return _choice(state, taken, limit - left, cfg)


def _greedy(options: list[_Option], state: _State, left: int, room: int, power: float, max_files: int,
            taken: list[tuple[_Option, float, int]]) -> tuple[int, int]:
    """Take ``options`` into ``state`` by worth per token while they fit; the tokens and
    expansions left."""
    # lazy greedy: each key is the option's marginal worth on the map as it is (the first-shown
    # bonus and the path line included), an upper bound of what it is worth later, so an option
    # popped with its current worth still at the top is the best one now
    heap = [(-v / max(c, 1) ** power, i) for i, o in enumerate(options)
            if o.value > 0 and (got := state.marginal(o)) is not None for v, c in (got,)]
    heapq.heapify(heap)
    while heap:
        key, i = heapq.heappop(heap)
        got = state.marginal(options[i])
        if got is None or got[0] <= 0:
            continue
        value, cost = got
        now = -value / max(cost, 1) ** power
        if heap and now > heap[0][0] + 1e-12:
            heapq.heappush(heap, (now, i))  # worth less than when queued: re-queue at its real place
            continue
        if cost > left or (options[i].kind == "expand" and room <= 0):
            continue
        if options[i].path not in state.level and len(state.level) >= max_files:
            continue  # a new file would take a rule one update cannot hold
        room -= options[i].kind == "expand"
        left -= cost
        state.take(options[i], value, cost)
        taken.append((options[i], value, cost))
    return left, room


def plan_tokens(budget: int, cfg: LearnedConfig) -> int:
    """Tokens the allocation may spend of a ``--tokens`` budget: its share of what the frame leaves."""
    return int((budget - PACK_CONFIG.frame_tokens(budget)) * cfg.share)


def _choice(state: _State, taken: list[tuple[_Option, float, int]], spent: int, cfg: LearnedConfig) -> Choice:
    expand: list[ScoredSymbol] = []
    notes: list[str] = []
    for o, value, cost in taken:
        if o.kind == "expand" and state.level.get(o.path) != Level.FULL:
            s = o.sym
            sid = s.id if s is not None else f"{o.path}::{o.lines[0]}-{o.lines[1]}" if o.ranged else f"{o.path}::"
            kind = s.kind if s else "lines" if o.ranged else "module"
            expand.append(ScoredSymbol(symbol_id=sid, name=s.name if s else "", kind=kind,
                                       path=o.path, start_line=o.lines[0], end_line=o.lines[1],
                                       score=round(value, 6), matched=(), tokens=cost))
            what = sid if s is not None or o.ranged else f"the module-level code of {o.path}"
        elif o.kind == "full" and state.level.get(o.path) == Level.FULL:
            what = f"{o.path} in full (L4)"
        elif o.kind == "outline" and state.level.get(o.path) == Level.OUTLINE:
            what = f"{o.path} outlined (L2)"
        else:
            continue
        if len(notes) < cfg.max_notes:
            notes.append(f"{what}: {max(value - o.bonus, 0.0):.2f} of the goal's lines expected, {cost} tokens")
    return Choice(levels=dict(state.level), expand=expand, cost=spent, notes=notes)
