"""Citations of repository lines, ``path:start-end``: parsing, formatting and the check rule.

An answer cites every claim as ``path:start-end`` (or ``path:line``), the path
relative to the repository root. Before an answer is written, every citation
is checked against the repository (``activities/research.py``): a path that is
not a file of the repository, or a start line past its end, is removed; an end
past the file's last line is clamped. This module holds only the pure part —
what a citation looks like and what the check decides for given line counts.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "Citation",
    "CitationCheck",
    "CITATION_PATTERN",
    "parse_citations",
    "citation_spans",
    "check_citation",
    "rewrite_citations",
]

#: ``path:12`` or ``path:12-30``; a path has a folder part or a file extension with a letter,
#: and is not part of a URL (``http://host:8233``) or an address (``127.0.0.1:7233``)
CITATION_PATTERN = re.compile(
    r"(?<![\w./:@-])"
    r"(?P<path>(?:[\w.\-]+/)*[\w.\-]*[A-Za-z_][\w\-]*\.[A-Za-z][\w]{0,9}|(?:[\w.\-]+/)+[\w.\-]+)"
    r":(?P<start>\d{1,7})(?:\s?[-–]\s?(?P<end>\d{1,7}))?(?![\w])"
)

_Path = Annotated[str, Field(min_length=1, max_length=1024)]


class Citation(BaseModel):
    """One cited line range of one repository file (1-based, inclusive)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: _Path
    start: int = Field(ge=1)
    end: int = Field(ge=1)

    def label(self) -> str:
        """The canonical form, ``path:start-end``."""
        return f"{self.path}:{self.start}-{self.end}"

    def lines(self) -> range:
        """The cited line numbers."""
        return range(self.start, self.end + 1)


def _from_match(m: re.Match[str]) -> Citation | None:
    path = m.group("path")
    path = path[2:] if path.startswith("./") else path
    start = int(m.group("start"))
    end = int(m.group("end")) if m.group("end") else start
    if start < 1 or end < 1:
        return None
    if end < start:
        start, end = end, start
    return Citation(path=path, start=start, end=end)


def citation_spans(text: str) -> list[tuple[int, int, Citation]]:
    """Every citation of ``text`` with its character span, in order."""
    spans: list[tuple[int, int, Citation]] = []
    for m in CITATION_PATTERN.finditer(text):
        cite = _from_match(m)
        if cite is not None:
            spans.append((m.start(), m.end(), cite))
    return spans


def parse_citations(text: str) -> list[Citation]:
    """The distinct citations of ``text``, first-seen order."""
    return list(dict.fromkeys(c for _, _, c in citation_spans(text)))


class CitationCheck(BaseModel):
    """What the check decided for one citation."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cited: Citation
    verdict: Literal["ok", "clamped", "removed"]
    #: the citation as written after the check (None when removed)
    written: Citation | None = None
    reason: str = ""


def check_citation(cite: Citation, line_count: int | None) -> CitationCheck:
    """Keep, clamp or remove ``cite`` given its file's line count (None: not a repository file)."""
    if line_count is None:
        return CitationCheck(cited=cite, verdict="removed", reason=f"{cite.path} is not a file of the repository")
    if cite.start > line_count:
        return CitationCheck(cited=cite, verdict="removed",
                             reason=f"{cite.path} has {line_count} lines; line {cite.start} does not exist")
    if cite.end > line_count:
        written = Citation(path=cite.path, start=cite.start, end=line_count)
        return CitationCheck(cited=cite, verdict="clamped", written=written,
                             reason=f"{cite.path} has {line_count} lines; the range ends there")
    return CitationCheck(cited=cite, verdict="ok", written=cite)


def rewrite_citations(text: str, line_counts: Callable[[str], int | None]) -> tuple[str, list[CitationCheck]]:
    """``text`` with every citation checked: kept as ``path:start-end``, clamped, or removed.

    ``line_counts(path)`` answers a path's line count in the repository (None when it is not
    an indexed file of it). A removed citation is replaced by ``(unverified reference removed)``,
    so no written text cites a line that does not exist.
    """
    out: list[str] = []
    checks: list[CitationCheck] = []
    seen: dict[Citation, CitationCheck] = {}
    pos = 0
    for start, end, cite in citation_spans(text):
        check = seen.get(cite)
        if check is None:
            check = check_citation(cite, line_counts(cite.path))
            seen[cite] = check
            checks.append(check)
        out.append(text[pos:start])
        out.append(check.written.label() if check.written is not None else "(unverified reference removed)")
        pos = end
    out.append(text[pos:])
    return "".join(out), checks


def cited_files(citations: Iterable[Citation]) -> list[str]:
    """Distinct cited paths, first-seen order."""
    return list(dict.fromkeys(c.path for c in citations))


def cited_lines(citations: Iterable[Citation]) -> Mapping[str, set[int]]:
    """Cited line numbers per path."""
    out: dict[str, set[int]] = {}
    for c in citations:
        out.setdefault(c.path, set()).update(c.lines())
    return out


__all__ += ["cited_files", "cited_lines"]
