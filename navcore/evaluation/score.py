"""Scoring a context against a task's gold: which source lines of which files a reader sees.

One copy for ``navigator eval`` and the benchmarks (``bench/quality_score.py`` re-exports it).

One parser reads every method's context into ``path -> ShownFile`` (the line
numbers of that file a reader can see), then one rule scores all methods.

Formats understood (see ``repomap/render.py`` / ``repomap/layout.py``):

* the repo map: a ``# repo-map {json}`` header, then per shown file a line
  ``path [L<level> <size> <n>L] why=...``; at L2/L3 outline entries
  ``  <line>: <signature>``, at L3 doc lines ``    | <doc text>``; after an
  outline entry an expanded symbol's source in a ```` ``` ```` fence; at L4 the
  whole file in a fence;
* the baselines' blocks: ``### path:<a>-<b>`` then source lines a..b in a fence.

**Visibility rule.** A source line *L* of file *F* is visible when F's section
shows it at its place:

1. *verbatim*: L is inside a fenced block (L4 file, expanded symbol, baseline
   chunk/file). Blocks are aligned positionally: the fence content is matched
   line by line against the parent revision's source from the block's first line
   (line 1 for L4, the outline entry's line for an expansion, ``a`` for
   ``### path:a-b``), so a fence inside the source (a Markdown file's code block)
   cannot end a block early;
2. *signature*: an outline entry names L (``L: sig``), or L continues that
   entry's signature (the next lines, up to 30, whose whitespace-free text --
   quotes unified, trailing ``,``/``:``/``{`` dropped -- occurs in the
   whitespace-free signature: decorators and multi-line parameter lists);
3. *doc*: an L3 doc line equals L's text (whitespace-free, comment/docstring
   quote markers dropped), L within 60 lines before/after the entry (doc
   comments precede a definition, Python docstrings follow it).

Gold-line recall = visible gold lines / gold lines, every gold line counted
(changed lines and insertion anchors, blank or short ones too: the positional
rule has no false hits on ``}``). For continuity with ``offline_vs_bm25.py`` the
old *text* rule is kept as ``line_recall_text``: a gold line of at least 4
non-space characters counts when its whitespace-free text occurs anywhere in
the file's section text.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["ShownFile", "Parsed", "parse_context", "map_section", "score_context", "MIN_TEXT_RULE_CHARS"]

MIN_TEXT_RULE_CHARS = 4
_SIG_CONTINUATION_MAX = 30
_DOC_WINDOW = 60
_MAP_HEADER = re.compile(r"^(?P<path>\S.*?) \[L(?P<level>[1-4]) [0-9.]+[BKM] \d+L\](?: why=\S*)?$")
_BLOCK_HEADER = re.compile(r"^### (?P<path>.+):(?P<a>\d+)-(?P<b>\d+)$")
_OUTLINE = re.compile(r"^  (?P<line>\d+): (?P<sig>.*)$")
_DOC = re.compile(r"^\s+\| (?P<doc>.*)$")
_FENCE = "```"
_CONTEXT_MAP_MARK = "\n## Repository map\n\n"


@dataclass
class ShownFile:
    """What one context shows of one file."""

    level: int = 0  # map level (4 for a baseline block)
    verbatim: set[int] = field(default_factory=set)
    signature: set[int] = field(default_factory=set)
    doc: set[int] = field(default_factory=set)
    text: list[str] = field(default_factory=list)  # the section's raw lines (old text rule)

    @property
    def visible(self) -> set[int]:
        """Every visible line number."""
        return self.verbatim | self.signature | self.doc


@dataclass
class Parsed:
    """A parsed context: files by path, plus lines the parser could not place (should be 0)."""

    files: dict[str, ShownFile]
    unparsed: int = 0


def map_section(context_md: str) -> str:
    """The map inside a ``context.md`` (everything after ``## Repository map``)."""
    at = context_md.find(_CONTEXT_MAP_MARK)
    return context_md[at + len(_CONTEXT_MAP_MARK):] if at >= 0 else ""


def _norm(text: str) -> str:
    return re.sub(r"\s+", "", text).replace('"', "'")


def _sig_norm(line: str) -> str:
    return _norm(line).rstrip(",:{")


def _doc_norm(text: str) -> str:
    t = _norm(text)
    t = re.sub(r"^(//[/!]?|/\*\*?|\*/?|#+|[rbuRBU]?'''|''')", "", t)
    return re.sub(r"('''|\*/)$", "", t)


def _consume_verbatim(lines: list[str], i: int, src: list[str], first: int, shown: ShownFile) -> int:
    """Lines from ``i`` (just after an opening fence) matched to ``src`` from line ``first``; returns the
    index after the closing fence."""
    k = first - 1
    while i < len(lines) and k < len(src) and lines[i] == src[k]:
        shown.verbatim.add(k + 1)
        shown.text.append(lines[i])
        i += 1
        k += 1
    if i < len(lines) and lines[i] == _FENCE:
        i += 1
    return i


def _mark_signature(shown: ShownFile, src: list[str], line: int, sig: str) -> None:
    shown.signature.add(line)
    whole = _norm(sig)
    for n in range(line + 1, min(line + _SIG_CONTINUATION_MAX, len(src)) + 1):
        piece = _sig_norm(src[n - 1])
        if not piece or piece not in whole:
            break
        shown.signature.add(n)


def _mark_doc(shown: ShownFile, src: list[str], line: int, doc: str) -> None:
    want = _doc_norm(doc)
    if not want:
        return
    lo, hi = max(1, line - _DOC_WINDOW), min(len(src), line + _DOC_WINDOW)
    for n in sorted(range(lo, hi + 1), key=lambda n: abs(n - line)):
        if n not in shown.doc and _doc_norm(src[n - 1]) == want:
            shown.doc.add(n)
            return


def parse_context(text: str, source: Callable[[str], list[str]]) -> Parsed:
    """Parse a repo map or a baseline context into what it shows of each file."""
    lines = text.split("\n")
    files: dict[str, ShownFile] = {}
    unparsed = 0
    cur: ShownFile | None = None
    cur_src: list[str] = []
    last_entry = 0
    i = 1 if lines and lines[0].startswith("# repo-map ") else 0
    while i < len(lines):
        line = lines[i]
        if m := _MAP_HEADER.match(line):
            cur = files.setdefault(m["path"], ShownFile())
            cur.level = max(cur.level, int(m["level"]))
            cur.text.append(line)
            cur_src, last_entry = source(m["path"]), 0
            i += 1
            if m["level"] == "4" and i < len(lines) and lines[i] == _FENCE:
                i = _consume_verbatim(lines, i + 1, cur_src, 1, cur)
            continue
        if m := _BLOCK_HEADER.match(line):
            cur = files.setdefault(m["path"], ShownFile())
            cur.level = 4
            cur.text.append(line)
            cur_src = source(m["path"])
            i += 1
            if i < len(lines) and lines[i] == _FENCE:
                i = _consume_verbatim(lines, i + 1, cur_src, int(m["a"]), cur)
            continue
        if cur is not None and (m := _OUTLINE.match(line)):
            last_entry = int(m["line"])
            _mark_signature(cur, cur_src, last_entry, m["sig"])
            cur.text.append(line)
            i += 1
            continue
        if cur is not None and last_entry and line == _FENCE:
            # an expanded symbol: after its outline entry (and its L3 doc lines, if any)
            i = _consume_verbatim(lines, i + 1, cur_src, last_entry, cur)
            continue
        if cur is not None and last_entry and (m := _DOC.match(line)):
            _mark_doc(cur, cur_src, last_entry, m["doc"])
            cur.text.append(line)
            i += 1
            continue
        if line.strip():
            unparsed += 1
        i += 1
    return Parsed(files, unparsed)


def score_context(parsed: Parsed, gold_lines: dict[str, list[int]],
                  source: Callable[[str], list[str]]) -> dict[str, float | int | None]:
    """Per-task scores of one context (see the module docstring for the rules)."""
    gold_files = sorted(gold_lines)
    listed = [f for f in gold_files if f in parsed.files]
    shown = [f for f in gold_files if f in parsed.files and parsed.files[f].visible]
    total = found = text_total = text_found = 0
    for path, numbers in gold_lines.items():
        sf = parsed.files.get(path)
        visible = sf.visible if sf else set()
        body = re.sub(r"\s+", "", "\n".join(sf.text)) if sf else ""
        src = source(path)
        for n in numbers:
            total += 1
            found += n in visible
            if 1 <= n <= len(src):
                t = re.sub(r"\s+", "", src[n - 1]).rstrip(":")
                if len(t) >= MIN_TEXT_RULE_CHARS:
                    text_total += 1
                    text_found += t in body
    n_files = len(gold_files)
    return {
        "file_hit": float(bool(shown)),
        "file_hit_listed": float(bool(listed)),
        "all_files": float(len(shown) == n_files),
        "file_recall": len(shown) / n_files,
        "line_recall": found / total if total else 0.0,
        "line_recall_text": text_found / text_total if text_total else None,
        "gold_lines": total,
        "unparsed": parsed.unparsed,
    }
