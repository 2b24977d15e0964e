"""What the Temporal Web UI shows of a run: search attributes and current details.

Custom search attributes (registered on the dev server and by the deploy
one-shot): ``NavigatorRepo``, ``NavigatorStatus``, ``NavigatorCostUsd``,
``NavigatorIteration``. They are upserted only when a value changes (each
upsert is a history event); the markdown details are set on every publish.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import SearchAttributeKey

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.budget import micros_to_usd
    from durable_navigator.navcore.report import shorten

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
        workflow.set_current_details(details)
