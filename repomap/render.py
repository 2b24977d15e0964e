"""Rendering a flight plan: requested levels -> fitted levels -> text under the budget.

The text is: one machine-readable header line (``# repo-map {json}``), then the
shown files in path order, each opened by ``path [L<level> <size> <n>L] why=...``.
The header carries no timings so the same input gives the same bytes (timings
are in ``MapMetadata.timings_ms``). The exact counter verifies every result; if
pieces priced separately overshoot after concatenation, the fitter degrades
more and the map is re-assembled.

The index holds the exact level-4 cost of small files only (``index.full_bounds``): a
render counts a larger file's text when the fit depends on the number (``fit.must_price``,
and the refill raising a file to level 4), from the file as it is now, and keeps the
count in the records (a file that can no longer be read is hidden, as below).

Level 4 and expanded symbols read the file as it is now; levels 1-3, drawn from
the index, check that it is still there. A file that has vanished, become
unreadable or turned binary since it was indexed is hidden and named in the header (``"skipped": {path: reason}``, present only then), and the rest of the
budget is fitted again without it: a tree changing under a render never fails it.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from durable_navigator.navtypes.errors import FlightPlanError
from durable_navigator.navtypes.levels import MIN_TOKEN_BUDGET, Level
from durable_navigator.repomap.config import RenderConfig
from durable_navigator.repomap.regular import NotRegularFileError, read_regular
from durable_navigator.repomap.discover import skip_listing
from durable_navigator.repomap.fit import FileCosts, Fitter, must_price
from durable_navigator.repomap.fsnames import fs_path
from durable_navigator.repomap.globs import plan_match
from durable_navigator.repomap.index import REC, SYM, fence_cost, full_bounds, full_cost, line_prefix_costs
from durable_navigator.repomap.layout import doc_block, file_line, header_line, outline_line, source_block
from durable_navigator.repomap.safepath import resolve_inside
from durable_navigator.repomap.tokens import COUNTER_NAME, count_many, count_tokens

if TYPE_CHECKING:  # pydantic models: imported by summaries() / metadata() only (a text-only render needs neither)
    from durable_navigator.navtypes.flightplan import FlightPlan
    from durable_navigator.navtypes.mapmeta import FileSummary, MapMetadata

__all__ = ["RenderInput", "Rendered", "requested_levels", "render_plan", "has_symbol_support", "summaries",
           "metadata", "read_current", "module_ranges", "MODULE", "price_full", "Expansion", "range_label",
           "FocusPricer"]

_HEADER_FIXPOINT_PASSES = 4
#: the ``expand`` index of a file's module-level code (focus symbol ``path::``)
MODULE = -1
#: what an expanded piece of module-level code shows in place of a signature
MODULE_LABEL = "(module code)"
#: one expansion of a file: a symbol index, ``MODULE``, or a line range ``(start, end)`` (focus
#: symbol ``path::start-end``: a class body between its methods, a window of a long function)
Expansion = int | tuple[int, int]


def range_label(a: int, b: int) -> str:
    """What an expanded line range shows in place of a signature."""
    return f"(lines {a}-{b})"


def _symbol_ks(ks: Iterable[Expansion]) -> list[int]:
    """The symbol indices among a file's expansions (neither ``MODULE`` nor a line range)."""
    return [k for k in ks if isinstance(k, int) and k != MODULE]


def _line_ranges(ks: Iterable[Expansion]) -> list[tuple[int, int]]:
    return sorted(k for k in ks if isinstance(k, tuple))


@dataclass
class RenderInput:
    """Everything one render needs (the engine builds it per request)."""

    root: Path
    paths: list[str]  # sorted
    records: dict[str, tuple]
    score: np.ndarray
    focused: np.ndarray  # bool per file
    why: list[list[str]]
    expand: dict[str, list[Expansion]]  # path -> what to show in full (symbols, module code, line ranges)
    index_version: str
    cfg: RenderConfig
    #: exact cost of each file's path line without a why (cached by the engine)
    line_base: np.ndarray | None = None
    #: timings known before fitting (open, rank) to put into the header; None keeps
    #: the header byte-identical for identical input
    header_timings: dict[str, float] | None = None
    #: a NUL within this many leading bytes means the file turned binary since indexing
    binary_sniff_bytes: int = 8192
    #: files without symbol support (computed on first use)
    no_symbols: int | None = None
    #: exact level-4 costs of paths whose records hold only a bound (``path -> (cost, "")``
    #: or ``(None, reason)`` when unreadable now); None: :func:`price_full` each
    price: Callable[[list[str]], dict[str, tuple[int | None, str]]] | None = None


@dataclass
class Rendered:
    """Text plus per-file outcome (levels indexed like ``RenderInput.paths``)."""

    text: str
    tokens: int
    levels: list[int]
    requested: list[int]
    explicit: list[bool]
    costs: list[int]
    counts: dict[str, int] = field(default_factory=dict)
    #: files hidden because reading them failed now: ``path -> reason``
    skipped: dict[str, str] = field(default_factory=dict)


class _Unreadable(Exception):
    """A file to render could not be read as text now (``reason``: vanished, unreadable, binary)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def read_current(target: Path, binary_sniff_bytes: int) -> tuple[bytes | None, str]:
    """The bytes of an indexed file as it is now, or ``(None, reason)`` when that is no text any more."""
    try:
        data = read_regular(target)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError, NotRegularFileError):
        # gone, or no longer a file (a directory or a FIFO took its name)
        return None, "vanished"
    except OSError:
        return None, "unreadable"
    if b"\0" in data[:binary_sniff_bytes]:
        return None, "binary"
    return data, ""


def has_symbol_support(rec: tuple) -> bool:
    """Files in a language without a parser (or that failed to parse) have no outline."""
    return bool(rec[REC["lang"]]) and not rec[REC["error"]]


def requested_levels(plan: FlightPlan, paths: list[str]) -> tuple[list[int], list[bool]]:
    """Per file: level asked for (auto = 4, fitted later) and whether a rule/default asked."""
    req, explicit = [], []
    files = frozenset(paths) if plan.rules or plan.exclude else frozenset()
    for p in paths:
        level: int | None = None
        for rule in plan.rules:
            if plan_match(rule.glob, p, files):
                level = int(rule.level)
        if any(plan_match(g, p, files) for g in plan.exclude):
            req.append(0)
            explicit.append(True)
        elif level is not None:
            req.append(level)
            explicit.append(True)
        elif plan.default_level is not None:
            req.append(int(plan.default_level))
            explicit.append(True)
        else:
            req.append(int(Level.FULL))
            explicit.append(False)
    return req, explicit


def _line_costs(inp: RenderInput, req: list[int]) -> list[int]:
    """Cost of each file's opening line: cached path-line cost + its why suffix.

    Counting 20,000 lines exactly on every render is what would make large repos
    slow; the suffix cost is counted once per distinct why string, plus one token
    of margin for the merge at the seam. Whatever the estimate misses is caught by
    the exact re-count in :func:`render_plan`.
    """
    if inp.line_base is None:
        shown = [i for i, r in enumerate(req) if r > 0]
        exact = count_many([file_line(inp.paths[i], 1, inp.records[inp.paths[i]][REC["size"]],
                                      inp.records[inp.paths[i]][REC["lines"]], inp.why[i]) for i in shown])
        out = [0] * len(inp.paths)
        for i, c in zip(shown, exact):
            out[i] = c
        return out
    suffix: dict[tuple[str, ...], int] = {}
    out = []
    for i, r in enumerate(req):
        why = tuple(inp.why[i])
        if r <= 0:
            out.append(0)
            continue
        if why not in suffix:
            suffix[why] = count_tokens(" why=" + ",".join(why)) + 1 if why else 0
        out.append(int(inp.line_base[i]) + suffix[why])
    return out


def _ladders(inp: RenderInput, req: list[int], explicit: list[bool], line_costs: list[int],
             unpriced: dict[int, tuple[int, int]] | None = None) -> list[FileCosts]:
    """Every file's ladder; ``unpriced`` gets ``(lo, hi)`` of the level-4 cost of each file requested
    at level 4 whose record holds only bounds of it (its ladder holds ``lo``)."""
    cfg = inp.cfg
    records, expand = inp.records, inp.expand
    i_costs, i_lang, i_err = REC["costs"], REC["lang"], REC["error"]
    floor, power, rule_mult, level_value = cfg.score_floor, cfg.score_power, cfg.rule_value_multiplier, cfg.level_value
    protect_rules = cfg.protect_rules
    scores, focused = inp.score.tolist(), inp.focused.tolist()  # Python floats: the same values, cheaper to read
    out = []
    for i, p in enumerate(inp.paths):
        rec = records[p]
        c2, c3, c4 = rec[i_costs]
        line = line_costs[i]
        if c4 < 0:  # not priced yet: its lower bound stands in (render_plan prices it if that matters)
            lo, hi = full_bounds(rec)
            c4 = lo
            if unpriced is not None and req[i] >= 4:
                unpriced[i] = (line + lo, line + hi)
        ks = expand.get(p)
        extra = expanded_cost(inp.root, records, p, ks, inp.binary_sniff_bytes) if ks else 0
        # level 1 of a file with expanded symbols shows them (and the definitions around them)
        focused_l1 = extra + _trail_cost(rec[REC["symbols"]], ks) if ks else 0
        cost: list[int | None] = [0, line + focused_l1, line + c2 + extra, line + c3 + extra, line + c4]
        if not (rec[i_lang] and not rec[i_err]):  # has_symbol_support
            cost[2] = cost[3] = None
        for lv in range(req[i] + 1, 5):
            cost[lv] = None
        mult = rule_mult if explicit[i] else 1.0
        base = (scores[i] + floor) ** power * mult
        value = [base * v for v in level_value]
        top = 4
        while top > 0 and cost[top] is None:
            top -= 1
        tier = int(bool(focused[i]))
        if protect_rules and explicit[i] and req[i] > 0:
            tier += 2
        out.append(FileCosts(cost=cost, value=value, tier=tier, requested=top))
    return out


def price_full(root: Path, records: dict[str, tuple], path: str, binary_sniff_bytes: int) -> tuple[int | None, str]:
    """``(exact level-4 content cost of path, "")`` from the file as it is now, kept in ``records``;
    ``(None, reason)`` when it cannot be read as text now (see :func:`read_current`)."""
    rec = records[path]
    c2, c3, c4 = rec[REC["costs"]]
    if c4 >= 0:
        return c4, ""
    data, reason = read_current(resolve_inside(root, path), binary_sniff_bytes)
    if data is None:
        return None, reason
    c4 = full_cost(data)
    i = REC["costs"]
    records[path] = (*rec[:i], (c2, c3, c4), *rec[i + 1:])
    return c4, ""


def _price(inp: RenderInput, paths: list[str]) -> dict[str, tuple[int | None, str]]:
    if not paths:
        return {}
    if inp.price is not None:
        return inp.price(paths)
    return {p: price_full(inp.root, inp.records, p, inp.binary_sniff_bytes) for p in paths}


class FocusPricer:
    """Exact costs of showing expansions of one file, the file read and counted once (a caller
    pricing many sets of expansions of a file, like the learned allocation, reads it once)."""

    def __init__(self, root: Path, records: dict[str, tuple], path: str, binary_sniff_bytes: int) -> None:
        data, _ = read_current(resolve_inside(root, path), binary_sniff_bytes)
        self.rec = records[path]
        #: cumulative line tokens (``index.line_prefix_costs``); None when the file cannot be read now
        self.cum = line_prefix_costs(data) if data is not None else None
        self.fence = fence_cost()
        #: outline-line tokens per symbol, counted once (``_trail_cost``)
        self.outline_tokens: dict[int, int] = {}

    def expanded(self, ks: list[Expansion]) -> int:
        """Exact cost of showing expansions ``ks`` in full (their lines of the file as it is now; an
        upper bound when a line range overlaps an expanded symbol: the render shows those lines once).

        0 when the file cannot be read as text now: rendering it then hides it (``_Unreadable``)
        and fits the rest without it.
        """
        if self.cum is None or not ks:
            return 0
        syms = self.rec[REC["symbols"]]
        spans = [(syms[k][SYM["start"]], syms[k][SYM["end"]]) for k in _symbol_ks(ks)]
        label_text = ""
        if MODULE in ks:
            mods = module_ranges(syms, self.rec[REC["lines"]])
            spans += mods
            label_text = "".join(outline_line(a, 0, MODULE_LABEL) for a, _ in mods)
        ranges = _line_ranges(ks)
        spans += ranges
        label_text += "".join(outline_line(a, _depth_at(syms, a, b), range_label(a, b)) for a, b in ranges)
        cum, n = self.cum, len(self.cum) - 1
        body = sum(int(cum[min(b, n)] - cum[min(max(a - 1, 0), n)]) + self.fence for a, b in spans)
        return body + (count_tokens(label_text) if label_text else 0)

    def focused(self, ks: list[Expansion]) -> int:
        """Exact tokens a level-1 view with expansions ``ks`` shows after the path line: the
        expansions and the definitions enclosing them (what the fitter prices)."""
        if self.cum is None or not ks:
            return 0
        return self.expanded(ks) + _trail_cost(self.rec[REC["symbols"]], ks, self.outline_tokens)


def expanded_cost(root: Path, records: dict[str, tuple], path: str, ks: list[Expansion],
                  binary_sniff_bytes: int) -> int:
    """:meth:`FocusPricer.expanded` of one set of expansions."""
    return FocusPricer(root, records, path, binary_sniff_bytes).expanded(ks)


def module_ranges(symbols: list[tuple] | tuple, n_lines: int) -> list[tuple[int, int]]:
    """The runs of lines no definition spans (a file's module-level code), 1-based, inclusive."""
    covered = bytearray(n_lines + 2)
    i_start, i_end = SYM["start"], SYM["end"]
    for sym in symbols:
        a, b = max(1, sym[i_start]), min(n_lines, sym[i_end])
        if a <= b:
            covered[a:b + 1] = b"\x01" * (b - a + 1)
    out, start = [], None
    for ln in range(1, n_lines + 2):
        if ln <= n_lines and not covered[ln]:
            start = ln if start is None else start
        elif start is not None:
            out.append((start, ln - 1))
            start = None
    return out


def _piece(lines: list[str], a: int, b: int, label: str, depth: int) -> str:
    """One expanded piece (a run of module-level code, a line range): its first non-blank line's
    number, the label, the source."""
    while a <= b and a <= len(lines) and not lines[a - 1].strip():
        a += 1
    while b >= a and (b > len(lines) or not lines[b - 1].strip()):
        b -= 1
    if a > b:
        return ""
    return outline_line(a, depth, label) + source_block("\n".join(lines[a - 1:b]))


def _chain(symbols: list[tuple], k: int) -> list[int]:
    """The definitions enclosing symbol ``k``, outermost first."""
    i_start, i_end, i_depth = SYM["start"], SYM["end"], SYM["depth"]
    s = symbols[k]
    chain, depth = [], s[i_depth]
    for j in range(k - 1, -1, -1):
        if depth == 0:
            break
        a = symbols[j]
        if a[i_depth] < depth and a[i_start] <= s[i_start] and a[i_end] >= s[i_end]:
            chain.append(j)
            depth = a[i_depth]
    return chain[::-1]


def _innermost(symbols: list[tuple], a: int, b: int) -> int | None:
    """The deepest definition holding lines ``a..b`` (None: they are module-level)."""
    i_start, i_end, i_depth = SYM["start"], SYM["end"], SYM["depth"]
    best = None
    for k, s in enumerate(symbols):
        if s[i_start] <= a and b <= s[i_end] and (best is None or s[i_depth] >= symbols[best][i_depth]):
            best = k
    return best


def _depth_at(symbols: list[tuple], a: int, b: int) -> int:
    """Nesting of a line range's label: one below the deepest definition holding it."""
    k = _innermost(symbols, a, b)
    return 0 if k is None else symbols[k][SYM["depth"]] + 1


def _trail(symbols: list[tuple], ks: list[Expansion]) -> list[int]:
    """Symbols a level-1 view of expansions ``ks`` shows: each expanded symbol after the definitions
    enclosing it, and the definitions enclosing each expanded line range.

    In file order; a symbol inside an expanded one's body is not repeated (its body shows it).
    """
    want: set[int] = set()
    i_start, i_end = SYM["start"], SYM["end"]
    hidden_until = 0
    for k in sorted(_symbol_ks(ks)):
        s = symbols[k]
        if s[i_start] <= hidden_until:
            continue
        want.update(_chain(symbols, k))
        want.add(k)
        hidden_until = s[i_end]
    for a, b in _line_ranges(ks):
        k = _innermost(symbols, a, b)
        if k is not None:
            want.update(_chain(symbols, k))
            want.add(k)
    shown: list[int] = []
    hidden_until = 0
    expanded = set(_symbol_ks(ks))
    for k in sorted(want):
        if symbols[k][i_start] <= hidden_until:
            continue  # inside an expanded symbol
        shown.append(k)
        if k in expanded:
            hidden_until = symbols[k][i_end]
    return shown


def _trail_cost(symbols: list[tuple], ks: list[Expansion], known: dict[int, int] | None = None) -> int:
    """Tokens of the outline lines :func:`_trail` shows (the bodies are priced apart).

    ``known``: each symbol's outline-line tokens counted so far (a pricer asked about many sets of
    one file's expansions counts each line once). Outline lines counted one by one sum to their
    joined count: each starts with spaces and a digit, where a cl100k piece always starts
    (``index._price_symbols``)."""
    i_start, i_depth, i_sig = SYM["start"], SYM["depth"], SYM["sig"]
    if known is None:
        return count_tokens("".join(outline_line(symbols[k][i_start], symbols[k][i_depth], symbols[k][i_sig])
                                    for k in _trail(symbols, ks)))
    total = 0
    for k in _trail(symbols, ks):
        got = known.get(k)
        if got is None:
            s = symbols[k]
            got = known[k] = count_tokens(outline_line(s[i_start], s[i_depth], s[i_sig]))
        total += got
    return total


def _file_text(inp: RenderInput, i: int, level: int, cache: dict[str, list[str]], present: set[str]) -> str:
    p = inp.paths[i]
    rec = inp.records[p]
    head = file_line(p, level, rec[REC["size"]], rec[REC["lines"]], inp.why[i])
    if level < 4 and p not in present:  # drawn from the index: is the file still there?
        if not os.path.isfile(fs_path(inp.root, p)):
            raise _Unreadable(p, "vanished")
        present.add(p)  # checked once per render, not once per fit pass
    if level <= 1:
        ks = inp.expand.get(p)
        if level == 1 and ks:
            return head + _focused_text(inp, p, rec[REC["symbols"]], ks, cache)
        return head
    if level == 4:
        return head + source_block("\n".join(_lines(inp, p, cache)))
    order = range(len(rec[REC["symbols"]]))
    return head + _entries_text(inp, p, rec[REC["symbols"]], order, set(inp.expand.get(p, ())), cache, level == 3)


def _focused_text(inp: RenderInput, path: str, symbols: list[tuple], ks: list[Expansion],
                  cache: dict[str, list[str]]) -> str:
    """Level 1 of a file with expansions: each one's enclosing definitions, its line, its source."""
    return _entries_text(inp, path, symbols, _trail(symbols, ks), set(ks), cache, False)


def _entries_text(inp: RenderInput, path: str, symbols: list[tuple], order: Iterable[int], expand: set[Expansion],
                  cache: dict[str, list[str]], docs: bool) -> str:
    """The outline lines of ``order``'s symbols (with docstrings when ``docs``), each expanded one's
    source after its line (what it contains is not listed again), and each expanded piece — a run of
    module-level code (``MODULE``), a line range — at its place among them (a definition that starts
    inside a piece already shown is not listed again either)."""
    pieces = [(a, b, MODULE_LABEL, 0) for a, b in module_ranges(symbols, inp.records[path][REC["lines"]])] \
        if MODULE in expand else []
    pieces += [(a, b, range_label(a, b), _depth_at(symbols, a, b)) for a, b in _line_ranges(expand)]
    pieces.sort()
    i_start, i_end, i_depth = SYM["start"], SYM["end"], SYM["depth"]
    parts: list[str] = []
    hidden_until = 0

    def piece(a: int, b: int, label: str, depth: int) -> None:
        nonlocal hidden_until
        if b <= hidden_until:
            return  # inside an expanded symbol already shown in full
        a = max(a, hidden_until + 1)
        parts.append(_piece(_lines(inp, path, cache), a, b, label, depth))
        hidden_until = max(hidden_until, b)

    for k in order:
        s = symbols[k]
        while pieces and pieces[0][0] < s[i_start]:
            piece(*pieces.pop(0))
        if s[i_start] <= hidden_until:
            continue  # inside an expanded symbol (or piece) already shown in full
        parts.append(outline_line(s[i_start], s[i_depth], s[SYM["sig"]]))
        if docs and s[SYM["doc"]]:
            parts.append(doc_block(s[i_depth], s[SYM["doc"]], inp.cfg.doc_max_lines))
        if k in expand:
            lines = _lines(inp, path, cache)
            parts.append(source_block("\n".join(lines[s[i_start] - 1:s[i_end]])))
            hidden_until = s[i_end]
    for p in pieces:
        piece(*p)
    return "".join(parts)


def _lines(inp: RenderInput, path: str, cache: dict[str, list[str]]) -> list[str]:
    if path not in cache:
        data, reason = read_current(resolve_inside(inp.root, path), inp.binary_sniff_bytes)
        if data is None:
            raise _Unreadable(path, reason)
        cache[path] = data.decode("utf-8", "replace").splitlines()
    return cache[path]


def _header(inp: RenderInput, budget: int, tokens: int, levels: list[int], req: list[int],
            explicit: list[bool], skipped: dict[str, str] | None = None) -> tuple[str, dict[str, int]]:
    per = Counter(str(lv) for lv in levels)
    degraded = sum(1 for lv, r, e in zip(levels, req, explicit) if e and lv < r)
    counts = {"degraded": degraded, "hidden": per.get("0", 0), "no_symbols": _no_symbols(inp)}
    fields = {"budget": budget, "tokens": tokens, "files": len(inp.paths),
              "levels": {k: per[k] for k in sorted(per)}, **counts,
              "index": inp.index_version, "counter": COUNTER_NAME}
    if skipped:
        fields["skipped"] = dict(sorted(skipped.items()))
    if inp.header_timings is not None:
        fields["timings_ms"] = inp.header_timings
    return header_line(fields), counts


def _no_symbols(inp: RenderInput) -> int:
    """Files without symbol support (the header counts them on every fit pass: counted once)."""
    if inp.no_symbols is None:
        inp.no_symbols = sum(1 for p in inp.paths if not has_symbol_support(inp.records[p]))
    return inp.no_symbols


def _with_header(inp: RenderInput, budget: int, body: str, body_tokens: int, levels: list[int],
                 req: list[int], explicit: list[bool], minimal: bool = False,
                 skipped: dict[str, str] | None = None) -> tuple[str, int, dict[str, int]]:
    """Header + body whose header states the exact total (fixed point on the count)."""
    guess = body_tokens
    for _ in range(_HEADER_FIXPOINT_PASSES):
        if minimal:
            fields: dict[str, object] = {"budget": budget, "tokens": guess, "files": len(inp.paths),
                                         "hidden": len(inp.paths), "minimal": True}
            if skipped:
                fields["skipped"] = dict(sorted(skipped.items()))
            head = header_line(fields)
            counts = {"degraded": 0, "hidden": len(inp.paths), "no_symbols": _no_symbols(inp)}
        else:
            head, counts = _header(inp, budget, guess, levels, req, explicit, skipped)
        total = count_tokens(head + body)
        if total == guess:
            return head + body, total, counts
        guess = total
    raise FlightPlanError("internal: header token count did not settle; report this with the flight plan")


def render_plan(inp: RenderInput, plan: FlightPlan) -> Rendered:
    """Fit and render ``plan``; the returned text's exact count is <= the budget."""
    budget = plan.token_budget
    if budget < MIN_TOKEN_BUDGET:
        # the documented floor (the CLI and jobs files refuse below it too); the minimal
        # header of a bigger repository is checked exactly in _minimal
        raise FlightPlanError(
            f"token_budget {budget} is below the minimum map size of {MIN_TOKEN_BUDGET} tokens "
            f"(a minimal header); set token_budget to at least {MIN_TOKEN_BUDGET}")
    req, explicit = requested_levels(plan, inp.paths)
    line_costs = _line_costs(inp, req)
    unpriced: dict[int, tuple[int, int]] = {}
    ladders = _ladders(inp, req, explicit, line_costs, unpriced)
    # a level the file cannot have (outline of a file without symbol support) is not a
    # budget degradation: it is counted as "no_symbols" instead
    req = [f.requested for f in ladders]
    head0, _ = _header(inp, budget, budget, [f.requested for f in ladders], req, explicit)
    target = budget - count_tokens(head0)
    skipped: dict[str, str] = {}

    def priced(i: int, got: tuple[int | None, str]) -> int | None:
        """File i's exact level-4 cost; None (and named as skipped) when it cannot be read now."""
        c4, reason = got
        if c4 is None:
            skipped[inp.paths[i]] = reason
            req[i] = 0  # hidden, and named as skipped rather than counted as degraded
            return None
        return line_costs[i] + c4

    for i in [i for i in unpriced if ladders[i].requested != 4]:
        del unpriced[i]  # requested at 4, but level 4 is not allowed for it
    must = sorted(must_price(ladders, unpriced, max(target, 0)))
    got = _price(inp, [inp.paths[i] for i in must])
    for i in must:
        del unpriced[i]
        c = priced(i, got[inp.paths[i]])
        if c is None:
            ladders[i] = FileCosts(cost=[0, None, None, None, None], value=ladders[i].value, tier=ladders[i].tier,
                                   requested=0)
        else:
            ladders[i].cost[4] = c
    fitter = Fitter(ladders, {i: lo for i, (lo, _hi) in unpriced.items()},
                    lambda i: priced(i, _price(inp, [inp.paths[i]])[inp.paths[i]]))
    cache: dict[str, list[str]] = {}
    present: set[str] = set()
    index = {p: i for i, p in enumerate(inp.paths)}
    passes = 0
    while passes < inp.cfg.max_fit_passes:
        fitter.fit(max(target, 0))
        if passes == 0:
            fitter.refill(max(target, 0))
        shown_now = [i for i, lv in enumerate(fitter.levels) if lv > 0]
        try:
            pieces = [_file_text(inp, i, fitter.levels[i], cache, present) for i in shown_now]
        except _Unreadable as gone:
            # the tree changed under this render: hide the file and fit the rest again
            # (not a fit pass: each file can vanish only once)
            skipped[gone.path] = gone.reason
            fitter.drop(index[gone.path])
            req[index[gone.path]] = 0  # hidden, and named as skipped rather than counted as degraded
            continue
        passes += 1
        body = "".join(pieces)
        text, total, counts = _with_header(inp, budget, body, count_tokens(body), fitter.levels, req, explicit,
                                           skipped=skipped)
        if total <= budget:
            return Rendered(text, total, list(fitter.levels), req, explicit,
                            [f.cost[lv] or 0 for f, lv in zip(ladders, fitter.levels)], counts, skipped)
        if fitter.total == 0:
            break
        # pieces priced at index time can drift (file edited since, concatenation
        # merges): measure what was actually emitted, then ask for the overshoot.
        fitter.reprice(dict(zip(shown_now, count_many(pieces))))
        target = min(target, fitter.total) - (total - budget)
    return _minimal(inp, budget, req, explicit, skipped)


def _minimal(inp: RenderInput, budget: int, req: list[int], explicit: list[bool],
             skipped: dict[str, str] | None = None) -> Rendered:
    """Minimal header only (every file hidden); refuse when even that does not fit."""
    levels = [0] * len(inp.paths)
    skipped = dict(skipped or {})
    text, total, counts = _with_header(inp, budget, "", 0, levels, req, explicit, minimal=True, skipped=skipped)
    if total > budget and skipped:
        # the names of vanished files must not be what makes a map impossible (the
        # metadata still carries them)
        text, total, counts = _with_header(inp, budget, "", 0, levels, req, explicit, minimal=True)
    if total > budget:
        minimum = total
        raise FlightPlanError(
            f"token_budget {budget} is below the minimum map size of {minimum} tokens "
            f"(a minimal header); set token_budget to at least {minimum}")
    return Rendered(text, total, levels, req, explicit, [0] * len(levels), counts, skipped)


def summaries(inp: RenderInput, r: Rendered, order: list[int]) -> list[FileSummary]:
    """FileSummary of every shown file, in rank order."""
    from durable_navigator.navtypes.mapmeta import FileSummary

    out = []
    for i in order:
        if r.levels[i] <= 0:
            continue
        out.append(FileSummary(
            path=inp.paths[i], level=r.levels[i],
            requested_level=r.requested[i] if r.explicit[i] else r.levels[i],
            tokens=r.costs[i], score=round(float(inp.score[i]), 6),
            focused=bool(inp.focused[i]), why=list(inp.why[i])))
    return out


def metadata(inp: RenderInput, r: Rendered, budget: int, files: list[FileSummary],
             timings: dict[str, float], not_indexed: dict[str, str] | None = None) -> MapMetadata:
    """The machine-readable header as a model (``not_indexed``: the index's skips, ``path -> reason``)."""
    from durable_navigator.navtypes.mapmeta import MapMetadata

    listed, counts = skip_listing(not_indexed or {})

    per = Counter(str(lv) for lv in r.levels)
    return MapMetadata(
        tokens_used=r.tokens, token_budget=budget, files_total=len(inp.paths),
        files_per_level={k: per[k] for k in sorted(per)}, degraded=r.counts.get("degraded", 0),
        hidden=per.get("0", 0), files_without_symbol_support=r.counts.get("no_symbols", 0),
        index_version=inp.index_version, timings_ms=timings, top_files=files[: inp.cfg.top_files],
        token_counter=COUNTER_NAME, skipped_files=dict(sorted(r.skipped.items())),
        not_indexed=listed, not_indexed_counts=counts)
