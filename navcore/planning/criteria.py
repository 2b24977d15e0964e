"""One success criterion's verdict, for explorations and investigations alike.

A verdict claims only what was checked (DESIGN.md, hard rules): a criterion is
``met`` or ``not_met`` only when its checker looked at what the criterion is
about — the final map for a criterion about the map, cited lines that exist for
an investigation's criterion — and ``unchecked`` when it could not (the offline
model cannot read "the function that emails option values is cited"). An
unchecked criterion is neither a success nor a failure: it never counts as met,
and it never sends a stage back to be redone (redoing it would not check it).

Pure pydantic: safe in the workflow sandbox.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CriterionStatus", "Verdict", "VERDICTS", "verdict_mark", "verdict_word", "verdict_counts"]

#: what a checker may say of one criterion
Verdict = Literal["met", "not_met", "unchecked"]
VERDICTS: tuple[Verdict, ...] = ("met", "not_met", "unchecked")

_MARK = {"met": "[x]", "not_met": "[!]", "unchecked": "[?]"}
_WORD = {"met": "met", "not_met": "NOT met", "unchecked": "unchecked"}


class CriterionStatus(BaseModel):
    """One success criterion after its check: the verdict, what was found, and why."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    criterion: str = Field(max_length=2000)
    status: Verdict
    #: what the checker actually found: citations (``path:start-end``) that exist in the repository,
    #: or map facts (``src/a.py at L2``); never a term the checker did not find
    evidence: list[str] = []
    #: evidence the checker gave that does not exist (dropped, with why)
    dropped: list[str] = []
    #: the checker's words: why met, what is missing, or why it could not check
    note: str = Field("", max_length=2000)

    @property
    def met(self) -> bool:
        """True only when the criterion was checked and holds."""
        return self.status == "met"

    @property
    def unchecked(self) -> bool:
        """True when the checker could not check the criterion."""
        return self.status == "unchecked"

    def line(self) -> str:
        """``[x] criterion — evidence (note)`` for reports and the decision log."""
        ev = f" — {', '.join(self.evidence)}" if self.evidence else ""
        note = f" ({self.note})" if self.note else ""
        return f"{verdict_mark(self.status)} {self.criterion}{ev}{note}"


def verdict_mark(status: Verdict) -> str:
    """The checkbox of a verdict: ``[x]`` met, ``[!]`` not met, ``[?]`` unchecked."""
    return _MARK[status]


def verdict_word(status: Verdict) -> str:
    """The verdict as a word for logs and tables (``met``, ``NOT met``, ``unchecked``)."""
    return _WORD[status]


def verdict_counts(statuses: list[CriterionStatus]) -> dict[Verdict, int]:
    """How many criteria got each verdict (every verdict present, zero included)."""
    counts: dict[Verdict, int] = {v: 0 for v in VERDICTS}
    for s in statuses:
        counts[s.status] += 1
    return counts
