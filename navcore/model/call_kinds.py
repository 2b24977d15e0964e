"""Every kind of model call, declared once (issue 30).

A model call's ``kind`` names its prompt spec (``navcore.navigator.model_calls``), its typed task
(``navcore.model.model``) and the parser of its answer (``activities.model_calls``). The lists
that used to be written out in each of those places — the task-kind literal, the kinds a
routing rule may name and its groups, the research and investigation kinds, the kinds
the offline model answers from the repository index — derive from :data:`CALLS`;
``tests/navcore/test_call_kinds.py`` checks that every spec and task class has its row.

Pure (stdlib only): safe in the workflow sandbox.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["CallKind", "CALLS", "KINDS", "TaskKind", "ROUTED_KINDS", "CALL_GROUPS", "RESEARCH_KINDS",
           "INVESTIGATE_KINDS", "InvestigateKind", "OFFLINE_NEEDS_ENGINE", "kinds_of"]


@dataclass(frozen=True)
class CallKind:
    """One kind of model call."""

    kind: str
    #: the feature whose workflow makes it: navigator, planning, stages, research, investigate
    feature: str
    #: routing groups a run's ``routing`` rules may name for it (``navcore.model.routing``); empty: the kind
    #: cannot be routed (research and investigation calls use their run's model or profile)
    groups: tuple[str, ...] = ()
    #: the offline model opens the repository's index to answer it (reflections, summaries and
    #: syntheses read the task only)
    offline_engine: bool = False


CALLS: tuple[CallKind, ...] = (
    CallKind("decide", "navigator", ("decide",), offline_engine=True),
    CallKind("planning.analyze", "planning", ("planning",), offline_engine=True),
    CallKind("planning.review", "planning", ("planning", "review"), offline_engine=True),
    CallKind("planning.plan", "planning", ("planning",), offline_engine=True),
    CallKind("stages.check_criteria", "stages", ("stages", "review"), offline_engine=True),
    CallKind("stages.reflect", "stages", ("stages", "review")),
    CallKind("navigator.compress", "navigator", ("compress", "compression")),
    CallKind("research.plan", "research", offline_engine=True),
    CallKind("research.execute", "research", offline_engine=True),
    CallKind("research.refine", "research", offline_engine=True),
    CallKind("research.synthesize", "research"),
    CallKind("investigate.plan", "investigate"),
    CallKind("investigate.review", "investigate"),
    CallKind("investigate.confirm", "investigate"),
    CallKind("investigate.criteria", "investigate"),
    CallKind("investigate.reflect", "investigate"),
    CallKind("investigate.compress", "investigate"),
)

#: every kind, in the table's order
KINDS: tuple[str, ...] = tuple(c.kind for c in CALLS)
#: the ``kind`` of a :class:`~navcore.model.model.ModelRequest`'s task
TaskKind = Literal[KINDS]  # type: ignore[valid-type]
#: the kinds a routing rule may name (``navcore.model.routing``)
ROUTED_KINDS: tuple[str, ...] = tuple(c.kind for c in CALLS if c.groups)
#: names a routing rule may use for several kinds at once (a group named like its one kind is the kind)
CALL_GROUPS: dict[str, tuple[str, ...]] = {
    g: tuple(c.kind for c in CALLS if g in c.groups)
    for g in dict.fromkeys(g for c in CALLS for g in c.groups) if g not in KINDS
}
RESEARCH_KINDS: frozenset[str] = frozenset(c.kind for c in CALLS if c.feature == "research")
INVESTIGATE_KINDS: tuple[str, ...] = tuple(c.kind for c in CALLS if c.feature == "investigate")
InvestigateKind = Literal[INVESTIGATE_KINDS]  # type: ignore[valid-type]
OFFLINE_NEEDS_ENGINE: frozenset[str] = frozenset(c.kind for c in CALLS if c.offline_engine)


def kinds_of(feature: str) -> tuple[str, ...]:
    """The kinds of one feature, in the table's order."""
    return tuple(c.kind for c in CALLS if c.feature == feature)
