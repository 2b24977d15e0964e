"""The context pack an MCP client receives: within the token budget it asked for.

``context.md`` is a frame (title, summary, stage plan, decision log, files left out)
around the repository map, and the map alone already fills the run's map budget. So the
``explore`` tool splits the client's ``token_budget`` in two: the map gets the
larger part (:meth:`PackBudget.map_tokens`, the run's ``token_budget``) and the
frame the rest. After the run the frame is fitted into what the map left —
sections are kept whole in the order context.md writes them (title, summary, stage
plan, decision log, files left out) and the first one that does not fit is cut by
lines, the rest dropped, with a pointer to the full pack resource. The map is
never cut unless the whole text would still be over budget (a map section made of
something else, e.g. a summary that contains the map heading): then lines are
dropped from the end until it fits. Counting is
the repo map's exact counter (``bpe-openai`` ``cl100k_base``).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.navcore.requests import ExplorationResult
from durable_navigator.navcore.research import ResearchResult
from durable_navigator.navtypes.errors import NavigatorError
from durable_navigator.navtypes.flightplan import MIN_TOKEN_BUDGET
from durable_navigator.repomap.tokens import count_tokens
from durable_navigator.workers.worker import default_artifact_dir

__all__ = ["PackBudget", "PACK_BUDGET", "FittedPack", "fit_pack", "read_context", "read_answer", "read_report",
           "context_uri", "answer_uri", "report_uri"]

MAP_HEADING = "## Repository map"
#: the title line keeps at most this many characters of the goal
TITLE_CHARS = 300


class PackBudget(BaseModel):
    """How a client's ``token_budget`` is split between the map and its frame."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: share of the budget held back for the frame (title, summary, stage plan, files left out)
    frame_share: float = Field(0.08, gt=0, lt=1)
    #: at least this many tokens for the frame (the title and the summary's first lines)
    frame_min: int = Field(64, gt=0)
    #: at most this many: a large budget should go to the map
    frame_max: int = Field(768, gt=0)

    def frame_tokens(self, total: int) -> int:
        """Tokens held back for the frame out of ``total``."""
        return max(self.frame_min, min(self.frame_max, int(total * self.frame_share)))

    def map_tokens(self, total: int) -> int:
        """The run's map budget for a pack of ``total`` tokens."""
        return total - self.frame_tokens(total)

    @property
    def min_total(self) -> int:
        """The smallest pack: the engine's smallest map plus the smallest frame."""
        return MIN_TOKEN_BUDGET + self.frame_min


PACK_BUDGET = PackBudget()


class FittedPack(BaseModel):
    """The text handed to the client and what fitting did to it."""

    text: str
    tokens: int
    trimmed: bool


def context_uri(run_id: str) -> str:
    """The resource holding a run's whole ``context.md``."""
    return f"navigator://runs/{run_id}/context"


def answer_uri(run_id: str) -> str:
    """The resource holding a research run's whole ``answer.md``."""
    return f"navigator://runs/{run_id}/answer"


def report_uri(run_id: str) -> str:
    """The resource holding a run's ``report.json``."""
    return f"navigator://runs/{run_id}/report"


def _split(text: str) -> tuple[list[str], str]:
    """(frame sections in order, the map section) of a context.md.

    The frame is cut before every ``## `` heading, whatever the sections are (summary, stage plan,
    decision log, files left out, and any the result writer adds later).
    """
    at = text.find(f"\n{MAP_HEADING}\n")
    frame, map_part = (text, "") if at < 0 else (text[: at + 1], text[at + 1:])
    sections: list[str] = []
    for line in frame.splitlines(keepends=True):
        if line.startswith("## ") or not sections:
            sections.append(line)
        else:
            sections[-1] += line
    return sections, map_part


def _short_title(section: str) -> str:
    first, sep, rest = section.partition("\n")
    if len(first) > TITLE_CHARS:
        first = first[: TITLE_CHARS - 1] + "…"
    return first + sep + rest


def _cut_lines(text: str, budget: int, marker: str) -> str:
    """The longest prefix of whole lines of ``text`` that, with ``marker``, fits ``budget`` tokens."""
    lines = text.splitlines(keepends=True)
    lo, hi = 0, len(lines)
    while lo < hi:  # largest n with count(lines[:n] + marker) <= budget
        mid = (lo + hi + 1) // 2
        if count_tokens("".join(lines[:mid]) + marker) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return "".join(lines[:lo]) + marker if lo else ""


def fit_pack(text: str, budget: int, run_id: str) -> FittedPack:
    """``text`` (a context.md) fitted into ``budget`` tokens, the map kept whole when it can be."""
    total = count_tokens(text)
    if total <= budget:
        return FittedPack(text=text, tokens=total, trimmed=False)
    pointer = f"\n(cut to the {budget}-token budget; the whole pack is the resource {context_uri(run_id)})\n\n"
    sections, map_part = _split(text)
    sections[0] = _short_title(sections[0])
    room = budget - count_tokens(map_part) - count_tokens(pointer)
    kept: list[str] = []
    for section in sections:
        size = count_tokens(section)
        if size <= room:
            kept.append(section)
            room -= size
            continue
        part = _cut_lines(section, room, "…\n\n")
        if part:
            kept.append(part)
        break  # what follows a cut section would read as part of it
    fitted = "".join(kept) + pointer + map_part
    if count_tokens(fitted) > budget:
        fitted = _cut_lines(fitted, budget, f"…\n{pointer}")
    return FittedPack(text=fitted, tokens=count_tokens(fitted), trimmed=True)


def _read(path: str | None, ref: object, what: str, run_id: str) -> str:
    """A result file, from its path or (the worker wrote it elsewhere) from the local artifact store."""
    if path:
        try:
            return Path(path).read_text(encoding="utf-8")
        except OSError:
            pass
    if ref is not None:
        try:
            return LocalArtifactStore(default_artifact_dir()).get_text(ref)  # type: ignore[arg-type]
        except NavigatorError:
            pass
    raise NavigatorError(
        f"the {what} of run {run_id} is not readable here (written to {path or 'nowhere'} by the worker "
        "that ran it); read it on that machine, or point every worker at one artifact store"
    )


def read_context(result: ExplorationResult) -> str:
    """The run's whole context.md."""
    return _read(result.context_path, result.context_ref, "context pack", result.workflow_id)


def read_answer(result: ResearchResult) -> str:
    """A research run's whole answer.md."""
    return _read(result.answer_path, result.answer_ref, "answer", result.workflow_id)


def read_report(result: ExplorationResult | ResearchResult) -> str:
    """The run's report.json text."""
    return _read(result.report_path, None, "report", result.workflow_id)
