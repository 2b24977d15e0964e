"""Public result types of the engine (plain frozen dataclasses: cheap to build in bulk)."""

from __future__ import annotations

from dataclasses import dataclass, field

from durable_navigator.navtypes.mapmeta import FileSummary, MapMetadata

__all__ = ["Symbol", "SymbolRef", "SearchHit", "RankedFile", "RenderResult", "LEVEL_COUNT"]

LEVEL_COUNT = 5


@dataclass(frozen=True, slots=True)
class Symbol:
    """One definition: ``id`` is ``path::Qualified.name``; lines are 1-based, inclusive."""

    id: str
    name: str
    kind: str
    path: str
    start_line: int
    end_line: int
    signature: str
    doc: str | None = None


@dataclass(frozen=True, slots=True)
class SymbolRef:
    """An edge of the reference graph: ``symbol_id`` is the other end, at ``path:line``."""

    symbol_id: str
    path: str
    line: int


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A lexical search result: a file (``symbol`` None) or a symbol whose name matched."""

    path: str
    score: float
    symbol: str | None = None
    line: int | None = None


@dataclass(frozen=True, slots=True)
class RankedFile:
    """One file's ranking for a flight plan; ``level_tokens[l]`` = its cost at level ``l``."""

    path: str
    score: float
    signals: dict[str, float]
    focused: bool
    level_tokens: tuple[int, int, int, int, int]


@dataclass(frozen=True, slots=True)
class RenderResult:
    """A rendered map: ``text`` never exceeds the plan's budget (exact counter)."""

    text: str
    metadata: MapMetadata
    files: list[FileSummary] = field(default_factory=list)
