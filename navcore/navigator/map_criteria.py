"""Criteria about the map, checked against the map itself — whatever model wrote the verdict.

A stage criterion such as "`src/click/shell_completion.py` is shown at level 2 or
more", "`Ledger.charge` is visible", "`verify=False` is shown" or "`src/api/` is in
focus" is a fact about the rendered map, so it is never left to a model's
judgement (nor to word overlap with the goal): :func:`map_claim` reads the
criterion — its subjects (backticked names, paths) and its predicate (a level, shown,
expanded, in focus, hidden) — and :func:`check_map_claim` answers it from the final
render (the per-path levels of its :class:`FileSummary` list and the text of its
sections). Names are matched as identifiers and literals, token by token
(``verify=False`` is not found by a ``verify`` in a Pipfile).

A criterion that says more than the map can show ("`charge` is shown and explains
the double count") is checked only in its map part: if that part fails the
criterion is not met; if it holds the rest is still unchecked.

Pure (``re`` and pydantic models only): safe in the workflow sandbox.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from durable_navigator.navcore.planning.criteria import CriterionStatus
from durable_navigator.navcore.planning.planning import CriteriaCheck
from durable_navigator.navtypes.mapmeta import FileSummary

__all__ = ["MapClaim", "map_claim", "check_map_claim", "check_map_criterion", "apply_map_checks", "map_sections",
           "literal_pattern"]

_BACKTICK = re.compile(r"`([^`\n]{1,300})`")
_PATHLIKE = re.compile(r"(?<![\w/.`])((?:[\w.\-]+/)+[\w.\-]*|[\w\-]+\.(?:py|pyi|js|jsx|ts|tsx|go|rs|java|rb|c|h|cc|cpp|"
                       r"hpp|cs|md|toml|yaml|yml|json|cfg|ini|txt|sh))(?![\w/])")
_LEVEL = re.compile(r"\b(?:at\s+)?(?:level|L)\s*([0-4])\b(\s*\+|\s+or\s+(?:more|higher|above|deeper|greater))?"
                    r"(\s+or\s+(?:less|lower|below)|\s+at\s+most)?", re.I)
_EXPANDED = re.compile(r"\b(?:expanded|in\s+full|full\s+source|whole\s+source|fully\s+shown)\b", re.I)
_FOCUS = re.compile(r"\b(?:in\s+focus|focused|a\s+focus(?:\s+path|\s+symbol)?)\b", re.I)
_HIDDEN = re.compile(r"\b(?:hidden|not\s+shown|excluded|not\s+visible|absent\s+from\s+the\s+map)\b", re.I)
_SHOWN = re.compile(r"\b(?:shown|visible|displayed|rendered|listed|present|appears?|shows?|outlined)\b", re.I)
_WORD = re.compile(r"[A-Za-z]{2,}")
#: words that only phrase a map claim: a criterion made of these and its subjects says nothing else
_FILLER = frozenset(
    "the a an is are be being map shows show shown visible displayed rendered listed present appear appears at "
    "level levels or more higher above deeper greater less lower below most least in of its it their with both "
    "and file files folder directory module function functions class classes method methods symbol symbols "
    "code source outline outlined signature signatures expanded full fully whole focus focused path paths "
    "area make sure must should final current context pack hidden excluded not absent from displayed rendered".split()
)
_SECTION = re.compile(r"^(\S+) \[L(\d)\b", re.M)


@dataclass(frozen=True)
class MapClaim:
    """What a criterion asserts about the map: subjects, and the level range or focus they must have."""

    subjects: tuple[str, ...]
    min_level: int = 1
    max_level: int = 4
    focus: bool = False
    #: the criterion also says something the map cannot show (only its map part is checkable)
    partial: bool = False


def map_claim(criterion: str) -> MapClaim | None:
    """The map claim of ``criterion``, or None when it asserts nothing the map can show."""
    subjects = [s.strip() for s in _BACKTICK.findall(criterion) if s.strip()]
    bare = _BACKTICK.sub(" ", criterion)
    if not subjects:
        subjects = [m.group(1).rstrip(".") for m in _PATHLIKE.finditer(bare)]
        bare = _PATHLIKE.sub(" ", bare)
    if not subjects:
        return None
    level, expanded, focus = _LEVEL.search(bare), _EXPANDED.search(bare), _FOCUS.search(bare)
    hidden, shown = _HIDDEN.search(bare), _SHOWN.search(bare)
    if not (level or expanded or focus or hidden or shown):
        return None
    lo, hi = 1, 4
    if hidden:
        lo, hi = 0, 0
    elif level:
        n = int(level.group(1))
        lo, hi = (0, n) if level.group(3) else (n, 4)
    elif expanded:
        lo = 4
    rest = {w.lower() for w in _WORD.findall(_LEVEL.sub(" ", bare))} - _FILLER
    return MapClaim(subjects=tuple(dict.fromkeys(subjects)), min_level=lo, max_level=hi, focus=bool(focus),
                    partial=bool(rest))


def map_sections(map_text: str) -> dict[str, tuple[int, str]]:
    """``path -> (level, body)`` of each file section of a rendered map (the header line excluded)."""
    heads = list(_SECTION.finditer(map_text))
    out: dict[str, tuple[int, str]] = {}
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(map_text)
        body_start = map_text.find("\n", m.end())
        body = map_text[body_start:end] if 0 <= body_start < end else ""
        out[m.group(1)] = (int(m.group(2)), body)
    return out


def literal_pattern(subject: str) -> re.Pattern[str]:
    """``subject`` as code: its tokens in order, identifiers whole, any spacing between tokens.

    ``verify=False`` matches ``verify = False`` but not ``verify`` alone nor ``verify_ssl=False``;
    a dotted name ``Ledger.charge`` matches its last part (an outline shows ``def charge`` under
    ``class Ledger``, the caller checks the other parts in the same section).
    """
    tokens = re.findall(r"\w+|[^\w\s]", subject)
    parts = [(r"(?<!\w)" + re.escape(t) + r"(?!\w)") if re.match(r"\w", t) else re.escape(t) for t in tokens]
    return re.compile(r"\s*".join(parts))


def _path_hits(subject: str, files: Sequence[FileSummary]) -> list[FileSummary]:
    key = subject.removeprefix("./").rstrip("/")
    # a bare file name (`ledger.py`) names the file wherever it lives
    return [f for f in files if f.path == key or f.path.startswith(key + "/") or f.path.endswith("/" + key)]


def _symbol_sections(subject: str, sections: dict[str, tuple[int, str]]) -> list[tuple[str, int]]:
    """``(path, level)`` of the sections showing ``subject`` as code (every part of a dotted name)."""
    dotted = re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", subject)
    pats = [literal_pattern(p) for p in subject.split(".")] if dotted else [literal_pattern(subject)]
    return [(p, lvl) for p, (lvl, body) in sorted(sections.items()) if all(pat.search(body) for pat in pats)]


def _check_subject(subject: str, claim: MapClaim, files: Sequence[FileSummary],
                   sections: dict[str, tuple[int, str]]) -> tuple[bool, str]:
    """(holds, what was found) for one subject of the claim."""
    hits = _path_hits(subject, files)
    if hits or "/" in subject:
        ok = [f for f in hits if claim.min_level <= f.level <= claim.max_level and (f.focused or not claim.focus)]
        if claim.max_level == 0 and not hits:
            return True, f"{subject} not in the map"
        if ok:
            return True, ", ".join(f"{f.path} at L{f.level}" + (" (focus)" if f.focused else "") for f in ok[:3])
        seen = ", ".join(f"{f.path} at L{f.level}" for f in hits[:3]) or f"{subject} is not in the map"
        return False, seen
    found = [(p, lvl) for p, lvl in _symbol_sections(subject, sections) if claim.min_level <= lvl <= claim.max_level]
    if claim.max_level == 0:
        shown = _symbol_sections(subject, sections)
        return (not shown), (f"{subject} not shown" if not shown else f"{subject} shown in {shown[0][0]}")
    if found:
        return True, ", ".join(f"{subject} in {p} at L{lvl}" for p, lvl in found[:3])
    return False, f"{subject} is not shown at L{claim.min_level}+"


def check_map_claim(criterion: str, claim: MapClaim, files: Sequence[FileSummary], map_text: str) -> CriterionStatus:
    """The verdict of ``claim`` against a render: met / not met from the map, unchecked for what it cannot show."""
    sections = map_sections(map_text)
    found: list[str] = []
    missing: list[str] = []
    for subject in claim.subjects:
        ok, what = _check_subject(subject, claim, files, sections)
        (found if ok else missing).append(what)
    where = "checked against the final map"
    if missing:
        return CriterionStatus(criterion=criterion[:2000], status="not_met", evidence=found[:6],
                               note=f"{where}: {'; '.join(missing)[:1500]}")
    if claim.partial:
        return CriterionStatus(criterion=criterion[:2000], status="unchecked", evidence=found[:6],
                               note=f"{where}: its map part holds; the rest of its wording cannot be checked "
                                    "from the map")
    return CriterionStatus(criterion=criterion[:2000], status="met", evidence=found[:6], note=where)


def check_map_criterion(criterion: str, files: Sequence[FileSummary], map_text: str) -> CriterionStatus | None:
    """The map's verdict on ``criterion``, or None when it is not about the map."""
    claim = map_claim(criterion)
    return None if claim is None else check_map_claim(criterion, claim, files, map_text)


def apply_map_checks(check: CriteriaCheck, files: Sequence[FileSummary], map_text: str) -> CriteriaCheck:
    """``check`` with every criterion about the map re-judged from the map (the model's words kept as a note).

    Whatever a model answered, "`a.py` is shown at level 2" is true exactly when the final map
    shows it so; a criterion the map cannot speak to keeps the model's verdict.
    """
    results: list[CriterionStatus] = []
    for r in check.results:
        checked = check_map_criterion(r.criterion, files, map_text)
        if checked is None:
            results.append(r)
            continue
        said = f"; the model said {r.status.replace('_', ' ')}" + (f": {r.note}" if r.note else "")
        results.append(checked.model_copy(update={"note": (checked.note + said)[:2000]}))
    return check.model_copy(update={"results": results})
