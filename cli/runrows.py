"""What the read commands share: a run as a row, its goal, its result type and exit code, the ``ls`` query.

``cli.reads`` (``log``, ``result``, ``ls``, ``ui``), ``cli.status_cmd`` (``status``) and the MCP
server's run tools read runs the same way through these.
"""

from __future__ import annotations

from typing import Any

from durable_navigator.cli.display import RunRow
from durable_navigator.cli.errors import ExitCode
from durable_navigator.cli.handles import search_attribute, status_name
from durable_navigator.cli.options import EXECUTION_STATUSES, NAVIGATOR_STATUSES
from durable_navigator.navcore.batch.branches import BranchExploreResult
from durable_navigator.navcore.investigation.investigation import InvestigationResult
from durable_navigator.navcore.navigator.requests import ExplorationResult
from durable_navigator.navcore.research.research import ResearchResult
# the workflow types ``ls`` lists and ``result`` reads, and their result types: one row a kind of run
from durable_navigator.navcore.run_kinds import RESULT_TYPES, RUN_WORKFLOW_TYPES

__all__ = ["run_row", "memo_goal", "exit_code_for_result", "build_list_query", "ABNORMAL_STOPS", "STATUS_CHOICES",
           "RUN_WORKFLOW_TYPES", "RESULT_TYPES"]

#: stop reasons that exit 1: the run did not end the way the user asked for
ABNORMAL_STOPS = frozenset({"failed", "approval_timeout"})



def exit_code_for_result(
    result: ExplorationResult | ResearchResult | InvestigationResult | BranchExploreResult,
) -> ExitCode:
    """0 for a normal stop, 1 for failed / approval_timeout."""
    return ExitCode.RUN_FAILED if result.stop_reason.value in ABNORMAL_STOPS else ExitCode.OK


def run_row(entry: Any) -> RunRow:
    """A list entry / description as a JSON-able row (the ``ls --json`` shape)."""
    return {
        "workflow_id": entry.id,
        "run_id": entry.run_id,
        "workflow_type": entry.workflow_type,
        "status": status_name(entry.status),
        "navigator_status": search_attribute(entry, "NavigatorStatus"),
        "repo": search_attribute(entry, "NavigatorRepo"),
        "cost_usd": search_attribute(entry, "NavigatorCostUsd"),
        "iteration": search_attribute(entry, "NavigatorIteration"),
        "start_time": entry.start_time.isoformat() if entry.start_time else None,
        "close_time": entry.close_time.isoformat() if entry.close_time else None,
        "goal": None,  # filled from the memo by the async callers
    }


async def memo_goal(entry: Any) -> str | None:
    """The goal (or question) kept in a run's memo; ``None`` when there is none or it cannot be read."""
    try:
        memo = await entry.memo()
    except Exception:  # noqa: BLE001 - a memo we cannot decode just leaves the column empty
        return None
    goal = memo.get("goal") if isinstance(memo, dict) else None
    return str(goal) if goal is not None else None


STATUS_CHOICES = (*EXECUTION_STATUSES, *NAVIGATOR_STATUSES)


def build_list_query(status_filter: str | None, repo: str | None,
                     workflow_types: tuple[str, ...] = RUN_WORKFLOW_TYPES) -> str:
    """The visibility query of ``ls``: a Temporal status (``running``, ``completed``, …) filters on
    ``ExecutionStatus``; a navigator status (``awaiting_approval``, ``thinking``, …) on the
    ``NavigatorStatus`` search attribute; ``workflow_types`` (every run type ``ls`` lists) narrows it
    for a caller that reads only some of them (the MCP tools)."""
    types = ", ".join(f"'{t}'" for t in workflow_types)
    clauses = [f"WorkflowType IN ({types})"]
    if status_filter in EXECUTION_STATUSES:
        clauses.append(f"ExecutionStatus = '{EXECUTION_STATUSES[status_filter]}'")
    elif status_filter:
        clauses.append(f"NavigatorStatus = '{_quote(status_filter)}'")
    if repo:
        clauses.append(f"NavigatorRepo = '{_quote(repo)}'")
    return " AND ".join(clauses)


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace("'", "\\'")
