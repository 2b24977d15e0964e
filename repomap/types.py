"""Public result types of the engine (plain frozen dataclasses: cheap to build in bulk)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pydantic models, built only by a render that returns metadata
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
    """An edge of the reference graph: ``symbol_id`` is the other end, at ``path:line``.

    ``how`` says how the edge was established: ``jedi`` (Python, resolved through
    imports, scopes and inferred types), ``scope`` / ``import`` / ``qualifier``
    (tree-sitter: the name is visible from the site only as this definition), ``unique``
    (the only definition of that name in the repository; the receiver's type is not
    known). ``resolved`` is False for a site whose name could mean several definitions
    (listed apart, never as a caller).
    """

    symbol_id: str
    path: str
    line: int
    column: int = 0
    kind: str = "ref"  # call | import | ref
    how: str = "jedi"
    resolved: bool = True


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A search result: a definition (``symbol`` id, lines ``line``-``end_line``) or a file's module-level code."""

    path: str
    score: float
    symbol: str | None = None
    line: int | None = None
    end_line: int | None = None
    kind: str | None = None


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
