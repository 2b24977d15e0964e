"""What the Temporal Web UI shows of a run: search attributes and current details.

Custom search attributes (registered on the dev server and by the deploy
one-shot): ``NavigatorRepo``, ``NavigatorStatus``, ``NavigatorCostUsd``,
``NavigatorIteration``. They are upserted only when a value changes (each
upsert is a history event); the markdown details are set on every publish.

A workflow started as a **subagent** (its parent put ``subagent`` in its memo)
also reports each such change to its parent with the ``child_event`` signal,
so the parent's status, log and Web UI show it live. Any workflow composed
with this publisher reports; none of them needs code of its own for it.
"""

from __future__ import annotations

import asyncio

from temporalio import workflow
from temporalio.common import SearchAttributeKey

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.run.budget import micros_to_usd
    from durable_navigator.navcore.navigator.report import shorten
    from durable_navigator.navcore.run.subagents import SIGNAL_CHILD_EVENT, SUBAGENT_MEMO_KEY, ChildEvent

__all__ = ["SA_REPO", "SA_STATUS", "SA_COST_USD", "SA_ITERATION", "NAVIGATOR_SEARCH_ATTRIBUTES", "Publisher"]

SA_REPO = SearchAttributeKey.for_keyword("NavigatorRepo")
SA_STATUS = SearchAttributeKey.for_keyword("NavigatorStatus")
SA_COST_USD = SearchAttributeKey.for_float("NavigatorCostUsd")
SA_ITERATION = SearchAttributeKey.for_int("NavigatorIteration")
#: register these on the server (dev server ``search_attributes=``) before starting runs
NAVIGATOR_SEARCH_ATTRIBUTES = [SA_REPO, SA_STATUS, SA_COST_USD, SA_ITERATION]


class Publisher:
    """Upserts the search attributes when they change; sets the details every time."""

    def __init__(self) -> None:
        self._published: tuple[str, str, int, int] | None = None
        #: the parent to report to ("" when this run is not a subagent; None: not looked up yet)
        self._parent: str | None = None
        self._sending: set[asyncio.Task[None]] = set()

    def publish(self, repo: str, status: str, spent_micros: int, iteration: int, details: str) -> None:
        """Show the run's current values in the Web UI (and ``navigator ls``)."""
        values = (repo, status, spent_micros, iteration)
        if values != self._published:
            self._published = values
            workflow.upsert_search_attributes([
                SA_REPO.value_set(shorten(repo, 250)),
                SA_STATUS.value_set(status),
                SA_COST_USD.value_set(float(micros_to_usd(spent_micros))),
                SA_ITERATION.value_set(iteration),
            ])
            self._report(status, spent_micros, iteration)
        workflow.set_current_details(details)

    def _parent_id(self) -> str:
        if self._parent is None:
            parent = workflow.info().parent
            asked = workflow.memo_value(SUBAGENT_MEMO_KEY, default=None)
            self._parent = parent.workflow_id if parent is not None and asked else ""
        return self._parent

    def _report(self, status: str, spent_micros: int, iteration: int) -> None:
        parent = self._parent_id()
        if not parent:
            return
        event = ChildEvent(workflow_id=workflow.info().workflow_id, status=status[:40], iteration=iteration,
                           cost_micros=spent_micros, sender=f"subagent:{workflow.info().workflow_type}"[:200])
        # sent in order, from workflow code: the same commands on every replay
        task = asyncio.create_task(self._send(parent, event))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)

    async def _send(self, parent: str, event: ChildEvent) -> None:
        try:
            await workflow.get_external_workflow_handle(parent).signal(SIGNAL_CHILD_EVENT, event)
        except Exception as exc:  # noqa: BLE001 - the parent may have closed: progress only, never fail the run
            workflow.logger.info("progress event for parent %s not delivered: %s", parent, exc)

    async def flush(self) -> None:
        """Wait until every progress event sent to the parent is delivered (before the run returns)."""
        if self._sending:
            await asyncio.gather(*list(self._sending), return_exceptions=True)
