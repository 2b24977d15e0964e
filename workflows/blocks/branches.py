"""Branch-and-compare: fork N children on equal parts of a budget slice, then keep the best (deterministic).

``fork(runner, ledger, total, n, make, step)`` starts N subagents in parallel through the
:class:`~workflows.blocks.subagents.SubagentRunner`. Each start reserves its slice in the
parent's ledger before the next is computed, so the i-th child's share of what is left
is ``part / (left − i·part)``: every child gets the same ``part = total / n``. The
children are started in index order and awaited together: their ids and their
reservations are the same on every replay. ``best(scores, usable)`` is the index of the
highest score among the usable outcomes (the first on a tie), or None.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from decimal import Decimal

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.run.budget import BudgetLedger
    from durable_navigator.navcore.run.subagents import AgentProfile, SubagentOutcome
    from durable_navigator.workflows.blocks.subagents import SubagentRunner

__all__ = ["fork", "best"]

_MIN_SHARE = Decimal("0.0001")


async def fork(runner: SubagentRunner, ledger: BudgetLedger, total_micros: Decimal, n: int,
               make: Callable[[int, Decimal], tuple[AgentProfile, str]], step: int) -> list[SubagentOutcome]:
    """Run ``n`` children in parallel, each on ``total_micros / n``; ``make(i, share)`` gives its profile and task."""
    part = total_micros / n
    runs = []
    for i in range(n):
        left = Decimal(max(ledger.remaining_micros, 1)) - part * i
        share = min(max(part / max(left, Decimal(1)), _MIN_SHARE), Decimal(1))
        profile, task = make(i, share)
        runs.append(runner.run(profile, task, step))
    return list(await asyncio.gather(*runs))


def best(scores: list[float], usable: list[bool]) -> int | None:
    """The index of the best usable score (the first on a tie), or None when none is usable."""
    found: int | None = None
    for i, (score, ok) in enumerate(zip(scores, usable, strict=True)):
        if ok and (found is None or score > scores[found]):
            found = i
    return found
