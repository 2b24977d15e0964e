"""The parser output shared by every language front end."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["SymbolDraft", "ParsedFile"]


@dataclass(slots=True)
class SymbolDraft:
    """A definition found by a parser (lines 1-based, inclusive; 0 = no span)."""

    qualname: str
    name: str
    kind: str
    start: int
    end: int
    sig_start: int
    sig_end: int
    signature: str
    depth: int = 0
    doc: str | None = None
    doc_start: int = 0
    doc_end: int = 0


@dataclass(slots=True)
class ParsedFile:
    """Symbols, imports and a parse note for one file."""

    symbols: list[SymbolDraft] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)
    #: human-readable reason when parsing failed (the file still gets levels 1 and 4)
    error: str | None = None
