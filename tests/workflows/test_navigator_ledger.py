"""BudgetLedger: exact integer accounting, reservations and refusals (pure, no server)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from durable_navigator.navcore.run.budget import BudgetLedger, format_usd, micros_to_usd, usd_to_micros
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navtypes.errors import BudgetError


def test_reserve_refuses_past_the_limit_and_reconcile_charges_actuals() -> None:
    ledger = BudgetLedger(max_micros=usd_to_micros("0.01"))
    r1 = ledger.reserve("m", 6_000, step=1)
    with pytest.raises(BudgetError, match="raise the budget or finalize"):
        ledger.reserve("m", 5_000, step=2)
    assert ledger.refused == 1 and ledger.reserved_micros == 6_000
    ledger.reconcile(r1, TokenUsage(input_tokens=100, output_tokens=10, thinking_tokens=5, cached_tokens=40), 7_000)
    assert ledger.reserved_micros == 0 and ledger.spent_micros == 7_000  # actual beyond estimate is charged
    assert ledger.per_model["m"].thinking_tokens == 5 and ledger.per_model["m"].cached_tokens == 40
    r2 = ledger.reserve("m", 3_000, step=2)
    ledger.release(r2)
    assert ledger.remaining_micros == 3_000
    ledger.raise_limit(usd_to_micros(Decimal("0.5")))
    assert micros_to_usd(ledger.max_micros) == Decimal("0.51") and format_usd(ledger.spent_micros) == "$0.0070"
    with pytest.raises(BudgetError):
        ledger.raise_limit(0)


@given(st.lists(st.tuples(st.integers(0, 50_000), st.integers(0, 10_000), st.integers(0, 5_000), st.integers(1, 3)), max_size=40))
def test_spent_equals_the_sum_of_reconciled_costs(calls: list[tuple[int, int, int, int]]) -> None:
    ledger = BudgetLedger(max_micros=10**12)
    for step, (estimate, cost, tokens, attempts) in enumerate(calls, start=1):
        reservation = ledger.reserve("m", estimate, step)
        ledger.reconcile(reservation, TokenUsage(input_tokens=tokens), cost, calls=attempts, attempts=attempts)
    assert ledger.spent_micros == sum(c for _, c, _, _ in calls)
    assert ledger.total_usage().input_tokens == sum(t for _, _, t, _ in calls)
    assert ledger.attempts == sum(a for *_, a in calls)
    assert ledger.reservations == []
    restored = BudgetLedger.model_validate_json(ledger.model_dump_json())
    assert restored == ledger  # survives continue-as-new / history round trips exactly
