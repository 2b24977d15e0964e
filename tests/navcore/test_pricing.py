"""Pricing table and exact micro-dollar cost math."""

from __future__ import annotations

import ast
from decimal import Decimal
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from durable_navigator.activities.pricing_loader import load_pricing_table, load_shipped_pricing
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navtypes.errors import BudgetError, ConfigError
from durable_navigator.navcore.model.pricing import (
    PRICING_FILE_ENV,
    ModelPricingRates,
    PricingTable,
    cost_micro_usd,
    cost_usd,
    estimate_micro_usd,
)

SHIPPED_GEMINI = (
    "gemini-2.5-pro",
    "gemini-2.5-flash",
    "gemini-2.5-flash-lite",
    "gemini-2.0-flash",
    "gemini-3-pro-preview",
)


@pytest.fixture(scope="module")
def table() -> PricingTable:
    return load_shipped_pricing()


def test_shipped_table_prices_supported_models(table: PricingTable) -> None:
    for name in SHIPPED_GEMINI:
        rates = table.rates_for(name)
        assert rates.input > 0 and rates.output > 0
        assert rates.cached_rate < rates.input  # caching is a discount
    assert table.rates_for("offline").is_free
    assert table.rates_for("scripted:tests/run.yaml").is_free
    assert table.rates_for("models/gemini-2.5-flash") == table.rates_for("gemini-2.5-flash")


def test_cost_is_exact_integer_micro_dollars_with_cached_and_thinking_rates(
    table: PricingTable,
) -> None:
    flash = table.rates_for("gemini-2.5-flash")  # 0.30 in, 2.50 out/thinking, 0.03 cached
    usage = TokenUsage(input_tokens=10_000, output_tokens=500, thinking_tokens=1_000, cached_tokens=4_000)
    # 6000*0.30 + 4000*0.03 + 500*2.50 + 1000*2.50 = 1800 + 120 + 1250 + 2500
    assert cost_micro_usd(usage, flash) == 5_670
    assert cost_usd(usage, flash) == pytest.approx(0.00567)
    # The same call without the cache would cost the full input rate.
    uncached = usage.model_copy(update={"cached_tokens": 0})
    assert cost_micro_usd(uncached, flash) == 3_000 + 1_250 + 2_500


def test_thinking_and_cached_have_their_own_rates() -> None:
    rates = ModelPricingRates(input=Decimal("1"), output=Decimal("2"), thinking=Decimal("7"), cached=Decimal("0.5"))
    assert cost_micro_usd(TokenUsage(thinking_tokens=10), rates) == 70
    assert cost_micro_usd(TokenUsage(input_tokens=10, cached_tokens=10), rates) == 5
    defaults = ModelPricingRates(input=Decimal("1"), output=Decimal("2"))
    assert defaults.thinking_rate == Decimal("2")  # Gemini bills thoughts as output
    assert defaults.cached_rate == Decimal("1")  # no discount unless one is given


def test_rounding_happens_once_per_call_and_upwards(table: PricingTable) -> None:
    lite = table.rates_for("gemini-2.5-flash-lite")  # 0.10 in, 0.01 cached
    assert cost_micro_usd(TokenUsage(input_tokens=1), lite) == 1  # 0.1 micro -> 1
    usage = TokenUsage(input_tokens=15, cached_tokens=5, output_tokens=1)  # 1.0 + 0.05 + 0.4
    assert cost_micro_usd(usage, lite) == 2


def test_ledger_sums_are_exact(table: PricingTable) -> None:
    pro = table.rates_for("gemini-2.5-pro")
    usage = TokenUsage(input_tokens=8_000, output_tokens=300, thinking_tokens=700, cached_tokens=2_000)
    one = cost_micro_usd(usage, pro)  # 6000*1.25 + 2000*0.125 + 1000*10
    assert one == 17_750
    assert sum(cost_micro_usd(usage, pro) for _ in range(1_000)) == 17_750_000


def test_long_context_tier_is_chosen_per_call(table: PricingTable) -> None:
    pro = table.rates_for("gemini-2.5-pro")
    small = TokenUsage(input_tokens=200_000, output_tokens=1_000)
    large = TokenUsage(input_tokens=200_001, output_tokens=1_000)
    assert cost_micro_usd(small, pro) == 200_000 * 1.25 + 1_000 * 10
    assert cost_micro_usd(large, pro) == 515_003  # 200_001*2.5 + 1_000*15 = 515_002.5, rounded up
    # Two calls of 150k each (a re-ask) stay in the base tier.
    reask = TokenUsage(input_tokens=300_000, output_tokens=0)
    assert cost_micro_usd(reask, pro, calls=2) == 300_000 * 1.25


def test_inconsistent_usage_is_refused(table: PricingTable) -> None:
    with pytest.raises(BudgetError, match="cached tokens"):
        cost_micro_usd(TokenUsage(input_tokens=1, cached_tokens=2), table.rates_for("gemini-2.5-flash"))


def test_unknown_model_is_refused_with_what_to_do(table: PricingTable) -> None:
    assert not table.has_price("gpt-4o")
    with pytest.raises(BudgetError) as info:
        table.rates_for("gpt-4o")
    message = str(info.value)
    assert "'gpt-4o' has no price" in message
    assert "pricing_file in navigator.yaml" in message and PRICING_FILE_ENV in message
    assert "\n" not in message


@given(
    prompt=st.integers(0, 400_000),
    out=st.integers(0, 8_192),
    think_share=st.integers(0, 100),
    cached_share=st.integers(0, 100),
)
def test_estimate_bounds_the_actual_cost(prompt: int, out: int, think_share: int, cached_share: int) -> None:
    rates = load_shipped_pricing().rates_for("gemini-2.5-pro")
    thinking = out * think_share // 100
    usage = TokenUsage(
        input_tokens=prompt,
        output_tokens=out - thinking,
        thinking_tokens=thinking,
        cached_tokens=prompt * cached_share // 100,
    )
    assert cost_micro_usd(usage, rates) <= estimate_micro_usd(prompt, out, rates)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "prices.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_override_file_merges_field_by_field(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "models:\n"
        "  gemini-2.5-flash: {output: 3.00}\n"
        "  my-gemini-tune: {input: 0.5, output: 1.5}\n"
        "  scripted: {input: 1, output: 2, thinking: 3, cached: 0.25}\n",
    )
    table = load_pricing_table(path, env={})
    flash = table.rates_for("gemini-2.5-flash")
    assert flash.output == Decimal("3.00") and flash.input == Decimal("0.30")  # input kept
    assert table.rates_for("my-gemini-tune").cached_rate == Decimal("0.5")
    scripted = table.rates_for("scripted:x.yaml")
    usage = TokenUsage(input_tokens=100, output_tokens=10, thinking_tokens=10, cached_tokens=40)
    assert cost_micro_usd(usage, scripted) == 60 + 10 + 20 + 30
    assert table.rates_for("gemini-2.5-pro") == load_shipped_pricing().rates_for("gemini-2.5-pro")


def test_override_path_from_env_and_explicit_path_wins(tmp_path: Path) -> None:
    env_file = tmp_path / "env.yaml"
    env_file.write_text("models: {from-env: {input: 1, output: 1}}\n", encoding="utf-8")
    arg_file = tmp_path / "arg.json"
    arg_file.write_text('{"models": {"from-arg": {"input": 1, "output": 1}}}', encoding="utf-8")
    env = {PRICING_FILE_ENV: str(env_file)}
    assert load_pricing_table(env=env).has_price("from-env")
    both = load_pricing_table(arg_file, env=env)
    assert both.has_price("from-arg") and not both.has_price("from-env")
    assert not load_pricing_table(env={}).has_price("from-env")


def test_override_validation_errors_name_file_and_each_field(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "models:\n  new-model: {input: -1, outptu: 2}\n  gemini-2.5-flash: {cached: cheap}\n",
    )
    with pytest.raises(ConfigError) as info:
        load_pricing_table(path, env={})
    message = str(info.value)
    assert str(path) in message
    assert "models.new-model.input: Input should be greater than or equal to 0" in message
    assert "models.new-model.output: Field required" in message
    assert "models.new-model.outptu: Extra inputs are not permitted" in message
    assert "models.gemini-2.5-flash.cached:" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("models: {a: {input: 1, output: 1}\n", "line 2"),  # unclosed flow mapping
        ("- just a list\n", "expected a mapping"),
        ("prices: {}\n", "unknown key(s) ['prices']"),
        ("models: [1, 2]\n", "models: expected a mapping"),
    ],
)
def test_bad_override_files_get_one_line_errors(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_pricing_table(_write(tmp_path, text), env={})
    assert expected in str(info.value)


def test_missing_override_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_pricing_table(tmp_path / "nope.yaml", env={})


def test_pricing_module_stays_pure() -> None:
    """navcore.model.pricing is imported by workflow code: stdlib + pydantic + navcore only."""
    source = Path(__file__).parents[2] / "navcore" / "model" / "pricing.py"
    roots = set()
    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.removeprefix("durable_navigator.").split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            roots.add(node.module.removeprefix("durable_navigator.").split(".")[0])
    assert roots <= {"__future__", "math", "collections", "decimal", "typing", "pydantic", "navcore", "navtypes"}
