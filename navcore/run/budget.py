"""The budget ledger: exact USD accounting in integer micro-dollars.

Every amount is an ``int`` of micro-dollars (1 USD = 1,000,000), so sums are
exact and replay-identical (no float drift). Costs are computed by activities
from the pricing table and recorded in history; the workflow only adds them up.

Life of one model call: :meth:`BudgetLedger.reserve` the estimate (refused if
it would pass the limit) → the call → :meth:`BudgetLedger.reconcile` with the
actual usage of *every* attempt (failed attempts included) → the reservation is
released. :meth:`BudgetLedger.release` drops a reservation that was never used.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navtypes.errors import BudgetError

__all__ = [
    "MICROS_PER_USD",
    "MIN_RUN_USD",
    "MAX_RUN_USD",
    "RunUsd",
    "usd_to_micros",
    "micros_to_usd",
    "format_usd",
    "ModelTokenTotals",
    "Reservation",
    "BudgetLedger",
]

MICROS_PER_USD = 1_000_000
#: the smallest budget a run, job or batch takes: one micro-dollar, the ledger's unit (anything
#: smaller rounds to a zero-dollar ledger, which no run can use)
MIN_RUN_USD = Decimal("0.000001")
#: the largest: far above any real run, low enough that a typo (1e9) is caught
MAX_RUN_USD = Decimal(100_000)
#: a USD budget as every request model takes it (exploration, research, investigation, batch, jobs
#: file): finite, at least one micro-dollar, at most :data:`MAX_RUN_USD` — so the CLI, MCP, batch
#: and the workflows validate budgets with one type and cannot disagree
RunUsd = Annotated[Decimal, Field(ge=MIN_RUN_USD, le=MAX_RUN_USD, allow_inf_nan=False)]


def usd_to_micros(usd: Decimal | str | int | float) -> int:
    """Convert a USD amount to integer micro-dollars (rounded half-even)."""
    value = Decimal(str(usd)) * MICROS_PER_USD
    return int(value.to_integral_value())


def micros_to_usd(micros: int) -> Decimal:
    """Convert micro-dollars to an exact ``Decimal`` USD amount."""
    return Decimal(micros) / MICROS_PER_USD


def format_usd(micros: int) -> str:
    """Human form with four decimals, e.g. ``$0.0012``."""
    return f"${micros_to_usd(micros):.4f}"


class ModelTokenTotals(BaseModel):
    """What one model consumed over a run."""

    model_config = ConfigDict(extra="forbid")

    input_tokens: int = 0
    output_tokens: int = 0
    thinking_tokens: int = 0
    cached_tokens: int = 0
    #: provider HTTP calls (corrective re-asks included)
    calls: int = 0
    #: activity attempts (Temporal retries included)
    attempts: int = 0
    cost_micros: int = 0

    def add(self, usage: TokenUsage, cost_micros: int, calls: int, attempts: int) -> None:
        """Accumulate one reconciled call."""
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens
        self.thinking_tokens += usage.thinking_tokens
        self.cached_tokens += usage.cached_tokens
        self.cost_micros += cost_micros
        self.calls += calls
        self.attempts += attempts

    def usage(self) -> TokenUsage:
        """The totals as a :class:`TokenUsage`."""
        return TokenUsage(
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            thinking_tokens=self.thinking_tokens,
            cached_tokens=self.cached_tokens,
        )


class Reservation(BaseModel):
    """An estimate held against the budget while a call is in flight."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: int
    step: int
    model: str
    micros: int = Field(ge=0)


class BudgetLedger(BaseModel):
    """Max / spent / reserved USD plus per-model token totals; pure and exact."""

    model_config = ConfigDict(extra="forbid")

    max_micros: int = Field(gt=0)
    spent_micros: int = 0
    reservations: list[Reservation] = []
    per_model: dict[str, ModelTokenTotals] = {}
    #: reserve() calls refused because they would pass the limit
    refused: int = 0
    next_reservation_id: int = 1

    @property
    def reserved_micros(self) -> int:
        """Sum of open reservations."""
        return sum(r.micros for r in self.reservations)

    @property
    def remaining_micros(self) -> int:
        """What is left after spent and reserved amounts (may be negative)."""
        return self.max_micros - self.spent_micros - self.reserved_micros

    @property
    def attempts(self) -> int:
        """Activity attempts over all models."""
        return sum(t.attempts for t in self.per_model.values())

    def can_afford(self, estimate_micros: int) -> bool:
        """True when reserving ``estimate_micros`` stays within the limit."""
        return estimate_micros <= self.remaining_micros

    def reserve(self, model: str, estimate_micros: int, step: int) -> Reservation:
        """Hold ``estimate_micros`` for a call; raise ``BudgetError`` if it would pass the limit."""
        if estimate_micros < 0:
            raise BudgetError("a cost estimate cannot be negative; check the pricing table")
        if not self.can_afford(estimate_micros):
            self.refused += 1
            raise BudgetError(
                f"the next call needs about {format_usd(estimate_micros)} but only "
                f"{format_usd(max(self.remaining_micros, 0))} is left; raise the budget or finalize"
            )
        reservation = Reservation(
            id=self.next_reservation_id, step=step, model=model, micros=estimate_micros
        )
        self.next_reservation_id += 1
        self.reservations.append(reservation)
        return reservation

    def release(self, reservation: Reservation) -> None:
        """Drop a reservation without charging anything (the call never ran)."""
        self.reservations = [r for r in self.reservations if r.id != reservation.id]

    def reconcile(
        self,
        reservation: Reservation,
        usage: TokenUsage,
        cost_micros: int,
        calls: int = 1,
        attempts: int = 1,
    ) -> None:
        """Replace the reservation by the actual cost of all attempts of the call.

        The actual cost may exceed the estimate (e.g. thinking tokens); it is
        charged in full because it was really spent.
        """
        self.release(reservation)
        self.charge(reservation.model, usage, cost_micros, calls, attempts)

    def charge(
        self, model: str, usage: TokenUsage, cost_micros: int, calls: int = 1, attempts: int = 1
    ) -> None:
        """Record spending that had no reservation (e.g. a planning call)."""
        self.spent_micros += cost_micros
        self.per_model.setdefault(model, ModelTokenTotals()).add(usage, cost_micros, calls, attempts)

    def raise_limit(self, add_micros: int) -> None:
        """Raise the maximum by ``add_micros`` (> 0)."""
        if add_micros <= 0:
            raise BudgetError("a budget raise must be positive; pass an amount in USD above 0")
        self.max_micros += add_micros

    def total_usage(self) -> TokenUsage:
        """Token totals over every model."""
        total = TokenUsage()
        for totals in self.per_model.values():
            total = total + totals.usage()
        return total
