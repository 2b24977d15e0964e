"""Public result types of the engine (plain frozen dataclasses: cheap to build in bulk)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pydantic models, built only by a render that returns metadata
    from durable_navigator.navtypes.mapmeta import FileSummary, MapMetadata

__all__ = ["Symbol", "SymbolRef", "SearchHit", "RankedFile", "RenderResult", "LEVEL_COUNT", "LevelTokens"]

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
    #: which ranking put it here (hybrid search: ``keyword #2 + ranker #1``); None for keyword-only
    why: str | None = None


class LevelTokens(Sequence[int]):
    """A file's cost per level, read like a tuple, whose level-4 cost is counted on first use.

    The index keeps the exact whole-file cost of small files only; ranking every file
    must not read and count every other one. ``full()`` returns it (once).
    """

    __slots__ = ("_low", "_full", "_all")

    def __init__(self, low: tuple[int, int, int, int], full: Callable[[], int]) -> None:
        self._low = low
        self._full = full
        self._all: tuple[int, ...] | None = None

    def _get(self) -> tuple[int, ...]:
        if self._all is None:
            self._all = (*self._low, self._full())
        return self._all

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, int) and 0 <= i < 4:  # an int or a Level (IntEnum): no count needed
            return self._low[i]
        return self._get()[i]

    def __len__(self) -> int:
        return LEVEL_COUNT

    def __iter__(self) -> Iterator[int]:
        return iter(self._get())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LevelTokens):
            other = other._get()
        return self._get() == other if isinstance(other, tuple) else NotImplemented

    def __hash__(self) -> int:
        return hash(self._get())

    def __repr__(self) -> str:
        return repr(self._get())

    def __reduce__(self) -> tuple[Any, ...]:
        # pickled or copied (dataclasses.asdict deep-copies) as the plain tuple, never with
        # the engine its count would call
        return (tuple, (self._get(),))


@dataclass(frozen=True, slots=True)
class RankedFile:
    """One file's ranking for a flight plan; ``level_tokens[l]`` = its cost at level ``l``."""

    path: str
    score: float
    signals: dict[str, float]
    focused: bool
    level_tokens: tuple[int, int, int, int, int] | LevelTokens


@dataclass(frozen=True, slots=True)
class RenderResult:
    """A rendered map: ``text`` never exceeds the plan's budget (exact counter)."""

    text: str
    metadata: MapMetadata
    files: list[FileSummary] = field(default_factory=list)
