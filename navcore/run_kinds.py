"""The kinds of run a user starts, one row each: workflow type, request and result, id prefix, memo kind.

Every surface reads runs through this table instead of spelling workflow-type strings: the
workflows' ``@workflow.defn(name=...)``, the worker's registration check, the CLI's read
commands (``ls`` / ``status`` / ``log`` / ``result``), its result panels (``cli/display.py``,
keyed by :attr:`RunKind.workflow_type`), the MCP server's run tools (:attr:`RunKind.mcp_kind`),
a batch's jobs and the subagent runner. Adding a kind of run is one row here, its panel,
and its workflow class. Pure data: safe inside the workflow sandbox.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from durable_navigator.navcore.batch.branches import BranchExploreRequest, BranchExploreResult
from durable_navigator.navcore.investigation.investigation import InvestigationRequest, InvestigationResult
from durable_navigator.navcore.navigator.requests import ExplorationRequest, ExplorationResult
from durable_navigator.navcore.research.research import ResearchRequest, ResearchResult

__all__ = ["RunKind", "EXPLORE", "RESEARCH", "INVESTIGATION", "BRANCHES", "RUN_KINDS", "BY_WORKFLOW_TYPE",
           "RUN_WORKFLOW_TYPES", "RESULT_TYPES", "run_kind_of"]

@dataclass(frozen=True)
class RunKind:
    """One kind of run: how it is started, read, listed and shown."""

    #: the registered workflow type (``@workflow.defn(name=...)``)
    workflow_type: str
    request_type: type[BaseModel]
    result_type: type[BaseModel]
    #: the CLI names new runs ``<prefix>-<repo slug>-<8 hex>``
    id_prefix: str
    #: the memo's ``kind`` (None: an exploration's memo has none)
    memo_kind: str | None
    #: ``TurnReport.workflow`` of its status reports
    report_name: str
    #: what its text is called in ``status`` (``goal`` / ``question``)
    text_label: str
    #: the MCP tools' name for it (None: the MCP server neither starts nor lists it)
    mcp_kind: str | None = None

    def memo(self, text: str, repo: str) -> dict[str, str]:
        """The memo a client starts the run with (the goal or question, the repository, the kind)."""
        memo = {"goal": text, "repo": repo}
        if self.memo_kind is not None:
            memo["kind"] = self.memo_kind
        return memo


EXPLORE = RunKind("NavigatorWorkflow", ExplorationRequest, ExplorationResult, "nav", None, "navigator", "goal",
                  mcp_kind="explore")
RESEARCH = RunKind("ResearchWorkflow", ResearchRequest, ResearchResult, "ask", "research", "research", "question",
                   mcp_kind="ask")
INVESTIGATION = RunKind("InvestigationWorkflow", InvestigationRequest, InvestigationResult, "inv", "investigation",
                        "investigation", "goal")
#: ``navigator explore --branches N`` (its id is an exploration's: ``nav-…``)
BRANCHES = RunKind("ExploreBranchesWorkflow", BranchExploreRequest, BranchExploreResult, "nav", "explore-branches",
                   "branches", "goal")

#: every kind, in the order ``ls`` lists their types
RUN_KINDS: tuple[RunKind, ...] = (EXPLORE, RESEARCH, INVESTIGATION, BRANCHES)
BY_WORKFLOW_TYPE: dict[str, RunKind] = {k.workflow_type: k for k in RUN_KINDS}
#: the workflow types ``ls`` lists and ``result`` reads
RUN_WORKFLOW_TYPES: tuple[str, ...] = tuple(k.workflow_type for k in RUN_KINDS)
RESULT_TYPES: dict[str, type[BaseModel]] = {k.workflow_type: k.result_type for k in RUN_KINDS}


def run_kind_of(workflow_type: str | None) -> RunKind | None:
    """The kind of a run of ``workflow_type`` (None: a batch, a preflight, something else)."""
    return BY_WORKFLOW_TYPE.get(workflow_type or "")

