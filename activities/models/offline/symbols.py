"""Symbol-level relevance for the offline policy: BM25 over symbol bodies.

The engine ranks *files*; to decide which symbols to expand (``focus_symbols``
with ``expand=True``) the policy scores the symbols of the top-ranked files
against the goal: Okapi BM25 over each symbol's source (identifiers split into
parts), plus a bonus when a goal term is part of the symbol's own name, scaled
by the file's engine score so a strong file lends weight to its symbols.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict

from durable_navigator.activities.models.offline.terms import goal_terms

__all__ = ["SymbolScoreConfig", "ScoredSymbol", "score_symbols"]


class SymbolScoreConfig(BaseModel):
    """Weights of symbol scoring (Okapi BM25 defaults; bonuses tuned on the bench tasks)."""

    model_config = ConfigDict(frozen=True)

    k1: float = 1.2
    b: float = 0.75
    #: added per goal term (times its idf) that appears in the symbol's own name
    name_bonus: float = 1.5
    #: how much the file's normalised engine score multiplies symbol scores (0.5: a strong
    #: body in the fifth file can beat a weak one in the first)
    file_weight: float = 0.5
    #: symbols longer than this are read only up to it (bounds the cost on huge files)
    max_lines: int = 400
    #: a file's module-level code (imports, constants, top-level statements: focus symbol
    #: ``path::``) competes like a definition (dev split, 8k: 0.682 -> 0.694)
    module_code: bool = True


@dataclass(frozen=True)
class ScoredSymbol:
    """A symbol with its relevance and the cost of showing it in full."""

    symbol_id: str
    name: str
    kind: str
    path: str
    start_line: int
    end_line: int
    score: float
    #: goal terms found in the body, best first (for the human-readable reason)
    matched: tuple[str, ...]
    tokens: int


@dataclass(frozen=True)
class _ModuleCode:
    """A file's module-level code as a symbol-like candidate (id ``path::``, lines 0-0: it
    contains no definition and no definition contains it)."""

    path: str
    name: str = ""
    kind: str = "module"
    start_line: int = 0
    end_line: int = 0

    @property
    def id(self) -> str:
        return f"{self.path}::"


def _bag(text: str) -> Counter[str]:
    bag: Counter[str] = Counter()
    for line in text.splitlines():
        bag.update(goal_terms(line))
    return bag


def score_symbols(
    engine: Any,
    files: list[tuple[str, float]],
    goal: str,
    estimate_tokens: Any,
    config: SymbolScoreConfig = SymbolScoreConfig(),
) -> list[ScoredSymbol]:
    """Score every symbol of ``files`` ((path, engine score) pairs) against ``goal``.

    Returns the symbols with a positive score, best first (ties by id), so the
    result is deterministic for the same repository and goal.
    """
    query = goal_terms(goal)
    if not query or not files:
        return []
    top_file = max(score for _, score in files) or 1.0
    docs: list[tuple[Any, float, Counter[str], int]] = []
    for path, file_score in files:
        for sym in engine.symbols(path):
            end = min(sym.end_line, sym.start_line + config.max_lines)
            text = engine.read_lines(path, sym.start_line, end)
            docs.append((sym, file_score / top_file, _bag(text), estimate_tokens(text)))
        runs = engine.module_ranges(path) if config.module_code else []
        if runs:
            lines = engine.read_lines(path, 1, runs[-1][1]).split("\n")
            text = "\n".join("\n".join(lines[a - 1:b]) for a, b in runs)
            if text.strip():
                # each run opens with a "N: (module code)" line: ~6 tokens
                docs.append((_ModuleCode(path), file_score / top_file, _bag(text),
                             estimate_tokens(text) + 6 * len(runs)))
    if not docs:
        return []
    avg_len = sum(sum(bag.values()) for _, _, bag, _ in docs) / len(docs) or 1.0
    df = Counter(term for _, _, bag, _ in docs for term in set(bag) if term in query)
    n = len(docs)
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in query}
    out: list[ScoredSymbol] = []
    for sym, file_norm, bag, tokens in docs:
        length = sum(bag.values())
        score, matched = 0.0, []
        name_parts = set(goal_terms(sym.name))
        for term in query:
            tf = bag.get(term, 0)
            if tf:
                norm = tf * (config.k1 + 1) / (tf + config.k1 * (1 - config.b + config.b * length / avg_len))
                score += idf[term] * norm
                matched.append((idf[term] * norm, term))
            if term in name_parts:
                score += config.name_bonus * idf[term]
        if score <= 0:
            continue
        score *= 1 + config.file_weight * file_norm
        out.append(
            ScoredSymbol(
                symbol_id=sym.id, name=sym.name, kind=sym.kind, path=sym.path,
                start_line=sym.start_line, end_line=sym.end_line, score=round(score, 6),
                matched=tuple(t for _, t in sorted(matched, key=lambda m: (-m[0], m[1]))[:3]),
                tokens=tokens,
            )
        )
    out.sort(key=lambda s: (-s.score, s.symbol_id))
    return out
