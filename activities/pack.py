"""The context pack a user receives (``context.md``), within the token budget they asked for.

``context.md`` is a frame (title, repository, summary, stage plan, decision log, files not in the
map) around the repository map. The user's budget bounds the whole of it, counted with the map's
own counter (``cl100k_base``, :func:`count_tokens`), and every surface hands over this one pack:
``navigator explore`` / ``result`` point at the file, batch jobs and subagents list it, and the MCP
server returns it as written. :func:`build_pack` is the only place that composes it.

When the frame and the run's map together are over the budget:

1. The frame may keep :meth:`PackConfig.frame_tokens` of the budget (more when the run's map
   leaves more room). It shrinks in this order, each step only as far as it must: the files not
   in the map to their first lines and "N more skipped files, see report.json", the decision log
   to its latest turns, the stage plan to its first lines, the summary to its first words; then the repository line and the notes on what was left out go, and the title is shortened.
2. The map is rendered again by the engine, under the run's final flight plan, at the tokens
   that remain: a well-formed map of fewer files or shallower levels, never text cut mid-line.
3. A budget too small for the smallest map beside the smallest frame gets the frame and a line
   saying where the map is.

Whatever falls out of ``context.md`` is kept in ``report.json`` (the activity adds it).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.navtypes.flightplan import MIN_TOKEN_BUDGET
from durable_navigator.repomap.tokens import count_tokens

__all__ = ["PackConfig", "PACK_CONFIG", "Frame", "Pack", "build_pack", "MAP_HEADING", "MAP_LEFT_OUT"]

MAP_HEADING = "## Repository map"
#: the map section when not even the smallest map fits beside the smallest frame
MAP_LEFT_OUT = "(map left out: no room in this budget; see report.json)"
#: the map of a finished run, re-rendered at a given budget (None: the engine is not available)
Renderer = Callable[[int], str]
_PATH_LINE = re.compile(r"^\s+- `")
_MORE_LINE = re.compile(r"… and (\d+) more")


class PackConfig(BaseModel):
    """How much of the budget the frame may keep when the map needs the rest."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: share of the budget the frame may keep (title, summary, stage plan, decisions, skipped files);
    #: the map is what the user asked for: on the 180 quality dev tasks (in process) 4% instead of
    #: 8% showed 0.625 of the changed lines instead of 0.593 at 4k, 0.750 instead of 0.741 at 8k
    #: (what the frame gives up stays in report.json)
    frame_share: float = Field(0.04, gt=0, lt=1)
    #: at least this many tokens for the frame (the title and the summary's first words)
    frame_min: int = Field(64, gt=0)
    #: at most this many: a large budget should go to the map
    frame_max: int = Field(768, gt=0)
    #: re-renders when the joined text counts a few tokens more than its parts (BPE merges at the seam)
    fit_attempts: int = Field(4, ge=1, le=16)

    def frame_tokens(self, budget: int) -> int:
        """Tokens the frame may keep out of ``budget`` when the map needs the rest."""
        return max(self.frame_min, min(self.frame_max, int(budget * self.frame_share)))


PACK_CONFIG = PackConfig()


@dataclass(frozen=True)
class Frame:
    """The frame's content, and how far each part is shortened (``None``: whole)."""

    goal: str
    repo_root: str
    summary: str
    stage_plan: str = ""
    #: the decision log, one line a turn, oldest first
    decisions: tuple[str, ...] = ()
    #: the "Files not in the map" section body (:func:`activities.skips.skipped_files_markdown`)
    skipped: str = ""
    decisions_kept: int | None = None
    summary_words: int | None = None
    plan_lines: int | None = None
    #: lines of the skipped list kept (0: only the count of those left out)
    skipped_lines: int | None = None
    repo_line: bool = True
    title_chars: int | None = None
    #: the line naming the sections left out, and the skipped-files count (dropped last)
    notes: bool = True

    def text(self) -> str:
        """The frame as it opens ``context.md`` (everything before the map heading)."""
        goal = self.goal.strip() if self.title_chars is None else _cut(self.goal.strip(), self.title_chars)
        parts = [f"# Context: {goal}\n\n" if goal else "# Context\n\n"]
        if self.repo_line:
            parts.append(f"Repository: `{self.repo_root}`\n\n")
        summary = _words(self.summary, self.summary_words, "… (whole summary in report.json)")
        if summary:
            parts.append(f"## Summary\n\n{summary}\n\n")
        plan = _lines(self.stage_plan, self.plan_lines, "- … (whole stage plan in report.json)")
        if plan:
            parts.append(f"## Stages and success criteria\n\n{plan}\n\n")
        decisions = self._decisions()
        if decisions:
            parts.append(f"## Decisions (one line a turn)\n\n{decisions}\n\n")
        skipped = self._skipped()
        if skipped:
            parts.append(f"## Files not in the map\n\n{skipped}\n\n")
        left_out = self.left_out()
        if left_out and self.notes:
            parts.append(f"(Left out to fit the token budget, in report.json: {', '.join(left_out)}.)\n\n")
        return "".join(parts)

    def left_out(self) -> list[str]:
        """The sections this frame drops entirely."""
        out = []
        if self.summary.strip() and self.summary_words == 0:
            out.append("summary")
        if self.stage_plan.strip() and self.plan_lines == 0:
            out.append("stage plan")
        if self.decisions and self.decisions_kept == 0:
            out.append("decision log")
        return out

    def shortened(self) -> list[str]:
        """What this frame shortens or drops, for report.json."""
        full = Frame(self.goal, self.repo_root, self.summary, self.stage_plan, self.decisions, self.skipped)
        cuts = {"title": self.title_chars, "summary": self.summary_words, "stage plan": self.plan_lines,
                "decision log": self.decisions_kept, "files not in the map": self.skipped_lines}
        out = [name for name, value in cuts.items() if value is not None]
        out += ["repository line"] * (not self.repo_line) + ["notes"] * (not self.notes)
        return out if self.text() != full.text() else []

    def _decisions(self) -> str:
        lines, kept = self.decisions, self.decisions_kept
        if kept is None or kept >= len(lines):
            return "\n".join(lines)
        if kept == 0:
            return ""
        earlier = len(lines) - kept
        return "\n".join([f"- … {earlier} earlier turn{'s' if earlier != 1 else ''} in report.json",
                          *lines[-kept:]])

    def _skipped(self) -> str:
        body = self.skipped.rstrip()
        if self.skipped_lines is None or not body:
            return body
        lines = body.split("\n")
        kept, dropped = lines[: self.skipped_lines], lines[self.skipped_lines:]
        more = sum(_files_in(line) for line in dropped)
        if not more:
            return "\n".join(kept)
        if not self.notes:
            return ""
        return "\n".join([*kept, f"- {more} more skipped file{'s' if more != 1 else ''}, see report.json"])


@dataclass
class Pack:
    """The composed ``context.md`` and what fitting did to it."""

    text: str
    tokens: int
    budget: int
    #: the map inside the pack and the budget it was rendered at (the run's own budget when kept)
    map_text: str
    map_budget: int
    #: the run's map was replaced: by a re-render at ``map_budget``, or left out
    map_rerendered: bool = False
    map_left_out: bool = False
    #: frame parts shortened or dropped
    shortened: list[str] = field(default_factory=list)

    @property
    def map_tokens(self) -> int:
        """Tokens of the map inside the pack (0 when left out)."""
        return 0 if self.map_left_out else count_tokens(self.map_text)


def map_section(map_text: str) -> str:
    """The map as context.md's last section."""
    return f"{MAP_HEADING}\n\n{map_text.rstrip()}\n"


def build_pack(frame: Frame, run_map: str, run_map_budget: int, budget: int, render: Renderer | None,
               cfg: PackConfig = PACK_CONFIG) -> Pack:
    """``context.md`` of at most ``budget`` tokens: ``frame`` around the run's map, both fitted if needed.

    ``render(b)`` re-renders the run's map at ``b`` tokens (the engine's own fitting); without it
    (the repository is gone) the run's map is cut at a line boundary instead.
    """
    if budget < MIN_TOKEN_BUDGET:
        raise ValueError(f"a context pack needs at least {MIN_TOKEN_BUDGET} tokens, got {budget}")
    whole = frame.text() + map_section(run_map)
    tokens = count_tokens(whole)
    if tokens <= budget:
        return Pack(whole, tokens, budget, run_map, run_map_budget)
    beside_run_map = budget - count_tokens(map_section(run_map))
    frame = _shrink(frame, max(cfg.frame_tokens(budget), beside_run_map))
    text = frame.text() + map_section(run_map)
    if count_tokens(text) <= budget:
        return Pack(text, count_tokens(text), budget, run_map, run_map_budget, shortened=frame.shortened())
    fitted = _fit_map(frame.text(), run_map, budget, render, cfg)
    if fitted is None:  # give the map its smallest size, then, failing that, leave it out
        frame = _shrink(frame, budget - count_tokens(map_section("")) - MIN_TOKEN_BUDGET - 1)
        fitted = _fit_map(frame.text(), run_map, budget, render, cfg)
    if fitted is None:
        frame = _shrink(frame, budget - count_tokens(map_section(MAP_LEFT_OUT)))
        text = frame.text() + map_section(MAP_LEFT_OUT)
        return _checked(Pack(text, count_tokens(text), budget, MAP_LEFT_OUT, 0, map_left_out=True,
                             shortened=frame.shortened()))
    map_text, map_budget = fitted
    text = frame.text() + map_section(map_text)
    return _checked(Pack(text, count_tokens(text), budget, map_text, map_budget, map_rerendered=True,
                         shortened=frame.shortened()))


def _checked(pack: Pack) -> Pack:
    # the smallest pack ("# Context" and the map's left-out line) is well under MIN_TOKEN_BUDGET,
    # so this holds by construction; a pack over budget must never be written
    if pack.tokens > pack.budget:
        raise RuntimeError(f"context pack of {pack.tokens} tokens over its {pack.budget}-token budget")
    return pack


def _fit_map(frame_text: str, run_map: str, budget: int, render: Renderer | None,
             cfg: PackConfig) -> tuple[str, int] | None:
    """The map re-rendered to what ``frame_text`` leaves of ``budget`` (None: not even the smallest map)."""
    room = budget - count_tokens(frame_text + map_section("")) - 1
    for _ in range(cfg.fit_attempts):
        if room < MIN_TOKEN_BUDGET:
            return None
        map_text = render(room) if render is not None else _cut_map(run_map, room)
        over = count_tokens(frame_text + map_section(map_text)) - budget
        if over <= 0:
            return map_text, room
        room -= over
    return None


def _cut_map(run_map: str, room: int) -> str:
    """No engine to re-render with: the longest run of whole lines that fits, saying so."""
    note = "… (map cut at a line to fit: the repository could not be opened to render it smaller)\n"
    lines = run_map.rstrip().split("\n")
    n = _largest(len(lines), lambda k: count_tokens("\n".join(lines[:k]) + "\n" + note) <= room)
    return "\n".join(lines[:n]) + "\n" + note


#: the frame's parts in the order they give way: (field, how many units it has at most)
_STEPS: tuple[tuple[str, Callable[[Frame], int]], ...] = (
    # the skipped-file list is whole in report.json and says least about the goal: it goes first;
    # the summary (the navigator's answer to the goal) goes last
    ("skipped_lines", lambda f: len(f.skipped.rstrip().split("\n")) if f.skipped.strip() else 0),
    ("decisions_kept", lambda f: len(f.decisions)),
    ("plan_lines", lambda f: len(f.stage_plan.strip().split("\n")) if f.stage_plan.strip() else 0),
    ("summary_words", lambda f: len(f.summary.split())),
    ("repo_line", lambda f: 1),
    ("notes", lambda f: 1),
    ("title_chars", lambda f: len(f.goal.strip())),
)


def _shrink(frame: Frame, target: int) -> Frame:
    """``frame`` shortened step by step (each only as far as it must) until it counts ``target`` or less."""
    for name, units in _STEPS:
        if count_tokens(frame.text()) <= target:
            break
        current = getattr(frame, name)
        top = units(frame) if current is None else int(current)  # a flag counts 1 (kept) or 0

        def fits(k: int, name: str = name) -> bool:
            value: int | bool = bool(k) if name in ("repo_line", "notes") else k
            return count_tokens(replace(frame, **{name: value}).text()) <= target

        kept = _largest(top, fits)
        frame = replace(frame, **{name: bool(kept) if name in ("repo_line", "notes") else kept})
    return frame


def _largest(top: int, fits: Callable[[int], bool]) -> int:
    """The largest ``k`` in ``0..top`` with ``fits(k)`` (``fits`` grows with ``k``); 0 when none."""
    lo, hi = 0, top
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else (text[: chars - 1] + "…" if chars > 1 else "")


def _words(text: str, kept: int | None, marker: str) -> str:
    text = text.strip()
    if kept is None or not text:
        return text
    words = text.split()
    return text if kept >= len(words) else (" ".join(words[:kept]) + " " + marker if kept else "")


def _lines(text: str, kept: int | None, marker: str) -> str:
    text = text.strip()
    if kept is None or not text:
        return text
    lines = text.split("\n")
    return text if kept >= len(lines) else ("\n".join(lines[:kept]) + "\n" + marker if kept else "")


def _files_in(line: str) -> int:
    """Skipped files one line of the skipped list stands for (a path, or "… and N more")."""
    more = _MORE_LINE.search(line)
    if more:
        return int(more.group(1))
    return 1 if _PATH_LINE.match(line) else 0
