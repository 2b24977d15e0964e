"""Load the pricing table: the shipped ``navcore/model/pricing.yaml`` plus a user override.

This is the I/O half of pricing (file reads, YAML parsing, the environment);
the pure half — models, validation, cost math — is :mod:`navcore.model.pricing`, so
workflow code can price usage without touching the filesystem. The CLI calls
:func:`load_pricing_table` before starting a workflow (an unknown model is
refused up front), and the worker calls it once at start-up.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from decimal import ROUND_CEILING, Decimal
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navcore.model.endpoints import Endpoint, endpoint_price_entries, resolve_endpoints
from durable_navigator.navtypes.errors import ConfigError
from durable_navigator.navcore.model.pricing import (
    PRICING_FILE_ENV,
    ModelPricingRates,
    PricingTable,
    cost_micro_usd,
    estimate_micro_usd,
)

__all__ = [
    "SHIPPED_PRICING_RESOURCE",
    "PROMPT_TOKEN_MARGIN",
    "TablePricer",
    "load_pricing_table",
    "load_shipped_pricing",
    "parse_yaml",
]

#: the shipped table, as package data of ``navcore`` (see pyproject package-data)
SHIPPED_PRICING_RESOURCE = ("durable_navigator.navcore.model", "pricing.yaml")

#: refuse absurdly large override files before parsing them
_MAX_OVERRIDE_BYTES = 1_000_000


def parse_yaml(text: str, origin: str) -> Any:
    """Parse YAML (JSON is YAML too); ``ConfigError`` with the line on a syntax error."""
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{origin}:{where}: {problem}; fix the YAML syntax") from None


def load_shipped_pricing() -> PricingTable:
    """The table shipped with the package."""
    package, name = SHIPPED_PRICING_RESOURCE
    text = resources.files(package).joinpath(name).read_text(encoding="utf-8")
    return PricingTable.from_mapping(parse_yaml(text, f"shipped {name}"), f"shipped {name}")


def _read_override(path: Path) -> Any:
    origin = f"pricing override {path}"
    if not path.is_file():
        raise ConfigError(f"{origin}: no such file; set pricing_file (or NAVIGATOR_PRICING_FILE) to an existing YAML/JSON file")
    if path.stat().st_size > _MAX_OVERRIDE_BYTES:
        raise ConfigError(f"{origin}: larger than {_MAX_OVERRIDE_BYTES} bytes; is it the right file?")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{origin}: cannot read it ({exc.__class__.__name__}); check the file") from None
    return parse_yaml(text, origin)


def load_pricing_table(
    override: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    endpoints: Mapping[str, Endpoint] | None = None,
) -> PricingTable:
    """The shipped table, the endpoints' declared prices, then the override file, if any.

    ``endpoints`` are the configured OpenAI-compatible endpoints (the built-in
    ones are always included): their ``prices`` become ``<endpoint>:<model>``
    (or ``<endpoint>:*``) entries. ``override`` wins over the
    ``NAVIGATOR_PRICING_FILE`` environment variable and over both. Every
    problem is a one-line ``ConfigError`` naming the file and the offending fields.
    """
    environ = os.environ if env is None else env
    table = load_shipped_pricing()
    declared = endpoint_price_entries(resolve_endpoints(endpoints))
    if declared:
        table = table.merged({"models": declared}, "navigator.yaml endpoints.*.prices")
    chosen = override if override is not None else environ.get(PRICING_FILE_ENV) or None
    if chosen is None:
        return table
    path = Path(chosen).expanduser()
    return table.merged(_read_override(path), f"pricing override {path}")


#: our exact counter is cl100k; a provider's tokenizer may count the same prompt
#: higher, so the upper bound of a call's prompt carries this margin
PROMPT_TOKEN_MARGIN = Decimal("1.25")
#: plus this many tokens per call (message framing, tool declarations' overhead)
PROMPT_TOKEN_SLACK = 64


class TablePricer:
    """Prices model usage in integer micro-dollars from a :class:`PricingTable` (the one pricer)."""

    def __init__(self, table: PricingTable) -> None:
        self.table = table

    @classmethod
    def load(cls, override: str | Path | None = None,
             endpoints: Mapping[str, Endpoint] | None = None) -> "TablePricer":
        """The shipped table merged with the endpoints' prices and the user override (``pricing_file`` / env)."""
        return cls(load_pricing_table(override, endpoints=endpoints))

    def cost(self, model: str, usage: TokenUsage, calls: int = 1) -> int:
        """Exact micro-dollar cost; zero usage costs nothing."""
        if usage == TokenUsage():
            return 0
        return cost_micro_usd(usage, self.table.rates_for(model), calls=max(calls, 1))

    def prompt_bound(self, prompt_tokens: int) -> int:
        """Upper bound of a provider's count of a prompt we counted at ``prompt_tokens``."""
        return int((Decimal(prompt_tokens) * PROMPT_TOKEN_MARGIN).to_integral_value(ROUND_CEILING)) + PROMPT_TOKEN_SLACK

    def estimate(self, model: str, prompt_tokens: int, max_output_tokens: int) -> int:
        """Upper-bound micro-dollar cost of one HTTP call with this prompt and output cap."""
        return estimate_micro_usd(self.prompt_bound(prompt_tokens), max_output_tokens, self.table.rates_for(model))

    def rates(self, model: str) -> ModelPricingRates:
        """The table's rates of ``model`` (``ConfigError`` when it has no price)."""
        return self.table.rates_for(model)
