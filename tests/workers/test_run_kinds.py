"""The run-kind table (``navcore/run_kinds.py``) agrees with what the worker registers and what the CLI shows."""

from __future__ import annotations

import typing

from temporalio import workflow

from durable_navigator.cli.display import RESULT_PANELS, run_result_panel
from durable_navigator.cli.mcpserver.models import KIND_ASK, KIND_EXPLORE
from durable_navigator.cli.mcpserver.runs import KINDS
from durable_navigator.cli.runrows import RESULT_TYPES, RUN_WORKFLOW_TYPES, build_list_query
from durable_navigator.navcore.run_kinds import BRANCHES, EXPLORE, RESEARCH, RUN_KINDS, run_kind_of
from durable_navigator.navcore.navigator.state import StopReason
from durable_navigator.workers.worker import WORKFLOWS


def test_every_kind_is_a_registered_workflow_taking_its_request_and_returning_its_result() -> None:
    registered = {workflow._Definition.must_from_class(cls).name: cls for cls in WORKFLOWS}
    for kind in RUN_KINDS:
        cls = registered[kind.workflow_type]
        hints = typing.get_type_hints(cls.run)
        assert hints["return"] is kind.result_type, kind
        assert [v for k, v in hints.items() if k != "return"] == [kind.request_type], kind


def test_the_read_commands_list_and_show_every_kind() -> None:
    assert RUN_WORKFLOW_TYPES == tuple(k.workflow_type for k in RUN_KINDS)
    assert set(RESULT_TYPES) == set(RESULT_PANELS) == set(RUN_WORKFLOW_TYPES)
    for kind in RUN_KINDS:
        assert f"'{kind.workflow_type}'" in build_list_query(None, None)
        assert run_kind_of(kind.workflow_type) is kind
    assert run_kind_of("BatchWorkflow") is None and run_kind_of(None) is None
    # a panel from the JSON a `status --json` row carries, as from the model itself
    dumped = BRANCHES.result_type(workflow_id="b-1", stop_reason=StopReason.FINALIZED, completed_normally=True)
    assert run_result_panel(BRANCHES, dumped.model_dump(mode="json")).title == "b-1"


def test_memos_and_mcp_kinds_come_from_the_table() -> None:
    assert EXPLORE.memo("g", "/r") == {"goal": "g", "repo": "/r"}  # an exploration's memo has never had a kind
    assert RESEARCH.memo("q", "/r") == {"goal": "q", "repo": "/r", "kind": "research"}
    assert KINDS == {EXPLORE.workflow_type: KIND_EXPLORE, RESEARCH.workflow_type: KIND_ASK}
    assert (EXPLORE.mcp_kind, RESEARCH.mcp_kind) == (KIND_EXPLORE, KIND_ASK)
