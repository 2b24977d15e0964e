"""The table of model-call kinds (``navcore.model.call_kinds``) is the one declaration: every prompt spec and
typed task has its row, and the kind lists used elsewhere derive from it."""

from __future__ import annotations

import typing

from pydantic import TypeAdapter

from durable_navigator.navcore.model import call_kinds as ck
from durable_navigator.navcore.model.model import ModelTask
from durable_navigator.navcore.navigator.model_calls import PromptSpec
from durable_navigator.navcore.model.routing import CALL_KINDS, RouteRule


def _discriminated_kinds(annotated: object) -> set[str]:
    """Every ``kind`` value the members of a discriminated union accept."""
    union = typing.get_args(annotated)[0]
    out: set[str] = set()
    for member in typing.get_args(union):
        out.update(typing.get_args(member.model_fields["kind"].annotation))
    return out


def test_every_task_and_spec_kind_has_its_row_and_no_row_is_orphaned() -> None:
    assert _discriminated_kinds(ModelTask) == set(ck.KINDS)
    assert _discriminated_kinds(PromptSpec) == set(ck.KINDS)
    assert len(set(ck.KINDS)) == len(ck.KINDS)
    assert set(typing.get_args(ck.TaskKind)) == set(ck.KINDS)


def test_the_derived_lists() -> None:
    assert CALL_KINDS == ("decide", "planning.analyze", "planning.review", "planning.plan", "stages.check_criteria",
                          "stages.reflect", "navigator.compress")
    assert ck.CALL_GROUPS == {
        "planning": ("planning.analyze", "planning.review", "planning.plan"),
        "review": ("planning.review", "stages.check_criteria", "stages.reflect"),
        "stages": ("stages.check_criteria", "stages.reflect"),
        "compress": ("navigator.compress",),
        "compression": ("navigator.compress",),
    }
    assert ck.RESEARCH_KINDS == {"research.plan", "research.execute", "research.refine", "research.synthesize"}
    assert ck.INVESTIGATE_KINDS == ck.kinds_of("investigate") and len(ck.INVESTIGATE_KINDS) == 6
    # reflections, summaries and syntheses are answered from the task alone
    assert not ck.OFFLINE_NEEDS_ENGINE & {"stages.reflect", "navigator.compress", "research.synthesize"}


def test_a_routing_rule_takes_groups_and_routed_kinds_only() -> None:
    rule = TypeAdapter(RouteRule).validate_python({"model": "offline", "calls": ["review", "decide"]})
    assert rule.matches("stages.reflect", 0, 100) and rule.matches("decide", 0, 100)
    assert not rule.matches("planning.plan", 0, 100)
    try:
        TypeAdapter(RouteRule).validate_python({"model": "offline", "calls": ["research.plan"]})
    except ValueError as exc:
        assert "unknown call kind(s) ['research.plan']" in str(exc)
    else:
        raise AssertionError("a research kind is not routable")


def test_every_kind_has_one_parser() -> None:
    """``activities.model_calls`` parses ``decide`` itself, research and investigation answers in their
    modules, and every other kind through its ``TEXT_PARSERS`` row: no kind is left to a fallback."""
    from durable_navigator.activities.model_calls import TEXT_PARSERS

    others = {"decide"} | ck.RESEARCH_KINDS | set(ck.INVESTIGATE_KINDS)
    assert set(TEXT_PARSERS) | others == set(ck.KINDS) and not set(TEXT_PARSERS) & others


def test_every_kind_has_one_request_builder() -> None:
    """``model.prepare`` builds ``decide``, research and investigation requests itself and every other
    kind through its ``BUILDERS`` row."""
    from durable_navigator.activities.requests import BUILDERS

    others = {"decide"} | ck.RESEARCH_KINDS | set(ck.INVESTIGATE_KINDS)
    assert set(BUILDERS) | others == set(ck.KINDS) and not set(BUILDERS) & others
