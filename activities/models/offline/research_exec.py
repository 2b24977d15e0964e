"""The offline model's research executor: which code tools to call next, and what the results show.

Deterministic ReAct over the step's transcript (the results of earlier turns,
as the workflow shows them to any model):

1. a step naming a symbol (```Name``` or ``path::Name``) reads its definition
   and asks for its callers; a free-text step searches for its and the
   question's terms;
2. search hits are read (the matching symbol, else the file's best-matching
   symbol); a class read is traced through its methods that share a term with
   the question (callers of ``Class.method``);
3. call sites (not imports) in files the question does not mark as noise are
   read around the line;
4. nothing new to do, or the step's last turn: ``finish_step`` with findings
   extracted from every ``read_file`` result — a claim per definition or call
   site, cited ``path:start-end``, quoting the lines that carry the question's
   terms.

Only lines that a tool returned are cited; nothing is invented.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.activities.models.offline.terms import NOISE_AREAS, TEST_FILE_NAMES, goal_terms, mentioned_noise, split_identifier
from durable_navigator.navcore.model.model import ResearchExecuteTask, ToolCallOut

__all__ = ["OfflineExecutorConfig", "Evidence", "ReadBlock", "parse_transcript", "next_calls", "step_findings",
           "term_weights", "line_score", "is_noise", "is_doc"]


class OfflineExecutorConfig(BaseModel):
    """Bounds of the offline executor."""

    model_config = ConfigDict(frozen=True)

    search_limit: int = Field(12, ge=1)
    #: hits / call sites read per turn
    reads_per_turn: int = Field(3, ge=1)
    #: lines of a definition read at most
    max_def_lines: int = Field(60, ge=5)
    #: lines read on each side of a call site
    site_context: int = Field(6, ge=1)
    #: methods of a class traced through their callers
    traced_methods: int = Field(2, ge=0)
    #: findings per step
    max_findings: int = Field(8, ge=1)
    #: lines quoted per finding
    quote_lines: int = Field(5, ge=1)
    #: a definition citation spans at most this many lines (the densest window)
    max_cite_lines: int = Field(30, ge=3)


_NUMBERED = re.compile(r"^\s*(\d+)  (.*)$")
_READ_HEAD = re.compile(r"^(\S+) lines (\d+)-(\d+) of (\d+)")
#: "path:12-40  score=…  path::Class.method" (a definition and its lines) or "path  score=…" (module code)
#: a search hit's id for lines that are not a whole definition (``repomap.hybridsearch``): ``path::a-b``
_LINES_ID = re.compile(r"(?P<path>.+)::(?P<a>[1-9][0-9]*)-(?P<b>[1-9][0-9]*)")
_HIT = re.compile(r"^(\S+?)(?::(\d+)(?:-\d+)?)?\s+score=\S+(?:\s+(\S+))?\s*$")
_REF_HEAD = re.compile(r"^(\S+::\S+): \d+ callers")
#: "  path:line  enclosing id  (call, jedi)": a resolved caller and how the tool tied it
_REF = re.compile(r"^\s+(\S+?):(\d+)\s+(\S+)(?:\s+\([^)]*\))?\s*$")
#: "  + N sites name 'x' but may mean another definition …": the sites listed after it are no callers
_UNSURE = re.compile(r"^\s+\+ \d+ sites name ")
_DEF = re.compile(r"^\s*(?:async\s+def|def|class|func|fn|pub\s+fn|function|interface|struct|type|module)\s+\(?\s*"
                  r"(?:\w+\s+\*?\w+\)\s*)?([A-Za-z_][A-Za-z0-9_]*)")
_IMPORT = re.compile(r"^\s*(from\s+\S+\s+import|import\s|require\(|use\s|#include|\"?__all__)")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass
class ReadBlock:
    """One ``read_file`` result: its file, range and numbered lines."""

    path: str
    start: int
    end: int
    total: int
    lines: list[tuple[int, str]] = field(default_factory=list)


@dataclass
class Evidence:
    """What the step's earlier turns returned."""

    reads: list[ReadBlock] = field(default_factory=list)
    #: search hits (path, line or None, symbol id or None), best first
    hits: list[tuple[str, int | None, str | None]] = field(default_factory=list)
    #: queried symbol id → call sites (path, line, enclosing symbol id)
    callers: dict[str, list[tuple[str, int, str]]] = field(default_factory=dict)
    #: every call made so far, as (name, sorted args) keys
    made: set[tuple[str, str]] = field(default_factory=set)
    #: queried symbols whose caller list the tool capped (the full list is in its artifact)
    capped: set[str] = field(default_factory=set)

    def read_covers(self, path: str, line: int) -> bool:
        """True when a read already showed ``path:line``."""
        return any(b.path == path and b.start <= line <= b.end for b in self.reads)


def _key(name: str, args: dict[str, Any]) -> tuple[str, str]:
    return name, repr(sorted(args.items()))


def parse_transcript(task: ResearchExecuteTask, engine: Any = None) -> Evidence:
    """The evidence of the step's earlier turns (tool results as the prompt shows them); with the
    engine, a caller list the tool capped is completed from the index."""
    ev = Evidence()
    for turn in task.transcript:
        for call in turn.calls:
            ev.made.add(_key(call.name, dict(call.args)))
        for block in turn.results:
            _parse_block(block, ev)
    _complete_capped(ev, engine)
    return ev


def _parse_block(block: str, ev: Evidence) -> None:
    head, _, body = block.partition("\n")
    rows = body.splitlines()
    if not rows or rows[0].startswith("ERROR:"):
        return
    if m := _READ_HEAD.match(rows[0]):
        read = ReadBlock(m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)))
        read.lines = [(int(n.group(1)), n.group(2)) for r in rows[1:] if (n := _NUMBERED.match(r))]
        if read.lines:
            read.end = read.lines[-1][0]
            ev.reads.append(read)
        return
    current: str | None = None
    for row in rows:
        if _UNSURE.match(row):
            current = None
        elif m := _REF_HEAD.match(row):
            current = m.group(1)
            ev.callers.setdefault(current, [])
            if "truncated" in head or "more not shown" in body or "output capped" in body:
                ev.capped.add(current)
        elif (m := _REF.match(row)) and current is not None:
            ev.callers[current].append((m.group(1), int(m.group(2)), m.group(3)))
        elif m := _HIT.match(row):
            ev.hits.append((m.group(1), int(m.group(2)) if m.group(2) else None, m.group(3)))


def term_weights(question: str, step: str) -> dict[str, float]:
    """The terms that make a line relevant: the step's weigh more than the question's."""
    weights = {t: 1.0 for t in goal_terms(question)}
    for t in goal_terms(step):
        weights[t] = max(weights.get(t, 0.0), 1.5)
    for generic in ("read", "code", "uses", "search", "find", "calls", "callers", "definition", "step", "missing",
                    "about"):
        weights.pop(generic, None)
    return weights


def line_score(text: str, weights: dict[str, float]) -> float:
    """How much a line is about the terms (each term counted once)."""
    words: set[str] = set()
    for w in _WORD.findall(text):
        words.add(w.lower())
        words.update(split_identifier(w))
    return sum(weight for term, weight in weights.items() if term in words)




def is_tooling(path: str, question: str) -> bool:
    """A file under a hidden folder (``.devcontainer/``, ``.github/``, ``.vscode/``): editor, CI and
    container settings, never the code a question is about — unless the question names the folder."""
    words = {w.lower() for w in re.findall(r"[A-Za-z0-9]+", question)}
    hidden = [part for part in path.split("/")[:-1] if part.startswith(".") and part not in (".", "..")]
    return any(not words.intersection(re.findall(r"[a-z0-9]+", part.lower())) for part in hidden)


def is_noise(path: str, question: str) -> bool:
    """Tests, docs, benchmarks, vendored code, tooling folders… unless the question asks for them."""
    from fnmatch import fnmatch

    wanted = mentioned_noise(question)
    if any(fnmatch(path, glob) and glob not in wanted for glob, _ in NOISE_AREAS):
        return True
    if is_tooling(path, question) and not any(fnmatch(path, glob) for glob in wanted):
        return True
    asks_tests = any(glob.startswith(("tests", "test")) for glob in wanted)
    return not asks_tests and any(fnmatch(path.rsplit("/", 1)[-1], name) for name in TEST_FILE_NAMES)


_DOC_EXT = (".md", ".rst", ".txt", ".adoc")


def is_doc(path: str) -> bool:
    """Prose rather than code (README, design notes): mentions, not mechanisms."""
    return path.lower().endswith(_DOC_EXT)


def _symbol_span(engine: Any, symbol_id: str) -> tuple[str, int, int] | None:
    if m := _LINES_ID.fullmatch(symbol_id):  # a hybrid search hit on lines, not a definition: those lines
        return m["path"], int(m["a"]), int(m["b"])
    found = engine.find_symbol(symbol_id) if engine is not None else []
    if not found:
        return None
    s = found[0]
    return s.path, s.start_line, s.end_line


def _best_symbol(engine: Any, path: str, weights: dict[str, float]) -> tuple[int, int] | None:
    """The span of the file's symbol that best matches the terms (name and doc)."""
    try:
        symbols = engine.symbols(path)
    except Exception:  # noqa: BLE001 - an unindexed or vanished file: read its head instead
        return None
    scored = [(line_score(f"{s.name} {s.doc or ''}", weights), -s.start_line, s) for s in symbols]
    scored = [t for t in scored if t[0] > 0]
    if not scored:
        return None
    _, _, best = max(scored, key=lambda t: (t[0], t[1]))
    return best.start_line, best.end_line


class _Calls:
    """The next turn's calls, without repeats of earlier turns, capped."""

    def __init__(self, ev: Evidence, cap: int) -> None:
        self.ev, self.cap, self.out = ev, cap, []  # type: ignore[var-annotated]

    def add(self, name: str, **args: Any) -> None:
        key = _key(name, args)
        if len(self.out) < self.cap and key not in self.ev.made and all(_key(c.name, c.args) != key for c in self.out):
            self.out.append(ToolCallOut(name=name, args=args))


def _named_symbols(step: str, engine: Any) -> list[str]:
    """Symbols the step names in backticks (``Name``, ``Class.method``, ``path::Name``) that the index knows."""
    out: list[str] = []
    for name in re.findall(r"`([^`\s]+)`", step):
        if engine is not None and "/" not in name.split("::", 1)[0] and engine.find_symbol(name):
            out.append(name)
        elif "::" in name:
            out.append(name)
    return list(dict.fromkeys(out))


def next_calls(task: ResearchExecuteTask, ev: Evidence, engine: Any, cfg: OfflineExecutorConfig) -> list[ToolCallOut]:
    """The calls of the next turn (empty: nothing new to look up)."""
    weights = term_weights(task.goal, task.step)
    calls = _Calls(ev, min(task.max_tool_calls, 6))
    if not task.transcript:
        named = _named_symbols(task.step, engine)
        for name in named[:2]:
            span = _symbol_span(engine, name)
            if span is not None:
                path, start, end = span
                calls.add("read_file", path=path, start_line=start, end_line=min(end, start + cfg.max_def_lines - 1))
                calls.add("get_callers", symbol=f"{path}::{name.split('::')[-1]}" if "::" not in name else name)
        if not calls.out:
            # a step that says what to search for is searched for that; any other, with the question's terms too
            asked = task.step.split(":", 1)[1] if task.step.lower().startswith("search") and ":" in task.step else ""
            order = goal_terms(asked) if asked.strip() else [*goal_terms(task.goal), *goal_terms(task.step)]
            query = " ".join([t for t in dict.fromkeys(order) if t in weights][:10])
            calls.add("search_codebase", query=query or task.goal[:200], limit=cfg.search_limit)
        return calls.out
    _read_hits(task, ev, engine, cfg, weights, calls)
    _trace_methods(task, ev, engine, cfg, weights, calls)
    _read_sites(task, ev, cfg, weights, calls)
    return calls.out


def _complete_capped(ev: Evidence, engine: Any) -> None:
    """A caller list the tool capped for the prompt: choose among the whole list (from the index).

    Only the choice of what to read next uses it; what is cited still comes from ``read_file``.
    """
    if engine is None:
        return
    for sid in sorted(ev.capped):
        try:
            refs = engine.callers(sid)
        except Exception:  # noqa: BLE001 - the symbol is gone since indexing: keep what the tool showed
            continue
        # sites the engine could not tie to this definition (``resolved=False``) are not its callers
        ev.callers[sid] = [(r.path, r.line, r.symbol_id) for r in refs if getattr(r, "resolved", True)]


def _read_hits(task: ResearchExecuteTask, ev: Evidence, engine: Any, cfg: OfflineExecutorConfig,
               weights: dict[str, float], calls: _Calls) -> None:
    taken = 0
    code_first = sorted(ev.hits, key=lambda h: is_doc(h[0]))  # stable: the ranking within each kind stays
    for path, line, symbol in code_first:
        if taken >= cfg.reads_per_turn or is_noise(path, task.goal):
            continue
        span = _symbol_span(engine, symbol) if symbol else None
        if span is None:
            best = _best_symbol(engine, path, weights) if engine is not None else None
            span = (path, *best) if best else (path, max(1, (line or 1) - 5), (line or 1) + 35)
        _, start, end = span
        if ev.read_covers(path, start):
            continue
        calls.add("read_file", path=path, start_line=start, end_line=min(end, start + cfg.max_def_lines - 1))
        taken += 1


def _trace_methods(task: ResearchExecuteTask, ev: Evidence, engine: Any, cfg: OfflineExecutorConfig,
                   weights: dict[str, float], calls: _Calls) -> None:
    """Callers of a read class's methods that share a term with the question."""
    if engine is None:
        return
    for block in ev.reads:
        head = next((t for _, t in block.lines if t.strip()), "")
        m = _DEF.match(head)
        if not (m and head.lstrip().startswith("class ")):
            continue
        cls = m.group(1)
        try:
            members = [s for s in engine.symbols(block.path) if s.id.startswith(f"{block.path}::{cls}.")]
        except Exception:  # noqa: BLE001 - the file vanished: nothing to trace
            continue
        scored = sorted(((line_score(f"{s.name} {s.doc or ''}", weights), s.start_line, s) for s in members
                         if not s.name.startswith("_")), key=lambda t: (-t[0], t[1]))
        for score, _, s in scored[: cfg.traced_methods]:
            if score > 0:
                calls.add("get_callers", symbol=s.id)


def _read_sites(task: ResearchExecuteTask, ev: Evidence, cfg: OfflineExecutorConfig, weights: dict[str, float],
                calls: _Calls) -> None:
    """Read call sites in files the question wants, one per file: callers of a traced method before
    mentions of a class, uses inside a function before module-level mentions (imports,
    re-exports), other files before the definition's own, files not read yet first."""
    sites: list[tuple[int, int, int, int, str, int]] = []
    read_files = {b.path for b in ev.reads}
    for sid, refs in ev.callers.items():
        home, qual = sid.split("::", 1) if "::" in sid else ("", sid)
        member = 0 if "." in qual else 1
        for path, line, owner in refs:
            if is_noise(path, task.goal) or is_doc(path) or ev.read_covers(path, line):
                continue
            sites.append((member, 1 if owner.endswith("::") else 0, 1 if path == home else 0,
                          1 if path in read_files else 0, path, line))
    seen: set[str] = set()
    taken = 0
    for *_, path, line in sorted(sites):
        if path in seen or taken >= cfg.reads_per_turn:
            continue
        seen.add(path)
        calls.add("read_file", path=path, start_line=max(1, line - cfg.site_context), end_line=line + cfg.site_context)
        taken += 1


_EXPORT = re.compile(r"""^\s*["'][\w.]+["'],?\s*$""")


def _is_mention(text: str) -> bool:
    """An import, a re-export or a name in an ``__all__`` list: a mention, not a use."""
    return bool(_IMPORT.match(text) or _EXPORT.match(text))


def _site_lines(block: ReadBlock, ev: Evidence) -> list[tuple[int, bool, str, str]]:
    """The call-site lines of a block (lines a get_callers result named): each with whether it uses
    a member (``Class.method``), the used symbol and the enclosing symbol (members first)."""
    out: dict[int, tuple[bool, str, str]] = {}
    for sid, refs in ev.callers.items():
        qual = sid.split("::", 1)[-1]
        member = "." in qual
        for path, line, owner in refs:
            if path == block.path and block.start <= line <= block.end and not out.get(line, (False,))[0]:
                out[line] = (member, qual, owner.split("::", 1)[-1])
    return [(n, *v) for n, v in sorted(out.items())]


def step_findings(task: ResearchExecuteTask, ev: Evidence, cfg: OfflineExecutorConfig) -> list[dict[str, Any]]:
    """Findings from the step's reads, best first: the definitions the step names, uses of their
    methods, uses of the definitions themselves, then whatever else carries the question's terms."""
    weights = term_weights(task.goal, task.step)
    named = {n.split("::")[-1].rsplit(".", 1)[-1] for n in re.findall(r"`([^`\s]+)`", task.step)}
    scored: list[tuple[int, float, int, dict[str, Any]]] = []
    for order, block in enumerate(ev.reads):
        text = dict(block.lines)
        head = next((t for _, t in block.lines if t.strip()), "")
        m = _DEF.match(head)
        sites = [] if m else _site_lines(block, ev)
        uses = sorted((u for u in sites if not _is_mention(text.get(u[0], ""))), key=lambda u: (not u[1], u[0]))
        if sites and not uses:
            continue  # only imports / re-exports: nothing to claim
        if uses:
            line, member, used, owner = uses[0]
            item = _site_finding(block, line, used, owner, weights, cfg)
            rank = 1 if member else 2
        else:
            item = _definition_finding(block, weights, cfg)
            rank = 0 if m and m.group(1) in named else 3
        if item is not None:
            score, finding = item
            scored.append((rank, -score, order, finding))
    scored.sort(key=lambda t: t[:3])
    return [f for *_, f in scored[: cfg.max_findings]]


def _quote(lines: list[tuple[int, str]], weights: dict[str, float], keep: int, first: int | None = None) -> str:
    ranked = sorted(lines, key=lambda nt: (-line_score(nt[1], weights), nt[0]))
    chosen = sorted({n for n, _ in ranked[:keep]} | ({first} if first is not None else set()))
    text = dict(lines)
    return "\n".join(f"{n}: {text[n].rstrip()}" for n in chosen if n in text)


def _definition_finding(block: ReadBlock, weights: dict[str, float],
                        cfg: OfflineExecutorConfig) -> tuple[float, dict[str, Any]] | None:
    lines = [(n, t) for n, t in block.lines if t.strip()]
    if not lines:
        return None
    head_n, head = lines[0]
    m = _DEF.match(head)
    doc = _docstring(block.lines)
    total = sum(line_score(t, weights) for _, t in block.lines)
    if m is None and total == 0:
        return None
    start, end = _window(block, weights, cfg.max_cite_lines, head_n if m else None)
    what = f"`{m.group(1)}` ({head.strip().split()[0]})" if m else f"lines {start}-{end}"
    claim = f"{what} in {block.path}" + (f": {doc}" if doc else f": `{head.strip()[:160]}`")
    quote = _quote([(n, t) for n, t in block.lines if start <= n <= end], weights, cfg.quote_lines,
                   head_n if m else None)
    return total + (1.0 if m else 0.0), {"claim": claim, "citations": [f"{block.path}:{start}-{end}"], "quote": quote}


def _site_finding(block: ReadBlock, site: int, used: str, owner: str, weights: dict[str, float],
                  cfg: OfflineExecutorConfig) -> tuple[float, dict[str, Any]] | None:
    text = dict(block.lines)
    start, end = max(block.start, site - 2), min(block.end, site + 2)
    owner = owner or _enclosing_def(block, site) or ""
    where = f"`{owner}` in {block.path}" if owner else block.path
    claim = f"{where} uses `{used}` at line {site}: `{text[site].strip()[:160]}`"
    quote = _quote([(n, t) for n, t in block.lines if start <= n <= end], weights, cfg.quote_lines, site)
    score = sum(line_score(text[n], weights) for n in range(start, end + 1) if n in text) + 0.5
    return score, {"claim": claim, "citations": [f"{block.path}:{start}-{end}"], "quote": quote}


def _enclosing_def(block: ReadBlock, line: int) -> str | None:
    for n, t in reversed(block.lines):
        if n <= line and (m := _DEF.match(t)):
            return m.group(1)
    return None


def _docstring(lines: list[tuple[int, str]]) -> str:
    """The first docstring line after a definition line (Python), or a leading comment."""
    for _, t in lines[1:6]:
        s = t.strip()
        if s.startswith(('"""', "'''")):
            body = s.strip("\"' ")
            return body[:200] if body else ""
        if s.startswith(("//", "#")) and len(s) > 3:
            return s.lstrip("/# ")[:200]
    return ""


def _window(block: ReadBlock, weights: dict[str, float], size: int, anchor: int | None) -> tuple[int, int]:
    """The densest ``size``-line window of the block (from the definition line when it fits)."""
    if block.end - block.start + 1 <= size:
        return block.start, block.end
    if anchor is not None and anchor + size - 1 >= block.end:
        return anchor, block.end
    scores = {n: line_score(t, weights) for n, t in block.lines}
    best_start, best = block.start if anchor is None else anchor, -1.0
    for s in range(block.start, block.end - size + 2):
        total = sum(scores.get(n, 0.0) for n in range(s, s + size))
        if total > best:
            best_start, best = s, total
    return best_start, best_start + size - 1
