"""Build the model provider for a model name, and price its usage.

* ``offline`` → :class:`activities.models.offline.OfflineProvider` (no network);
* ``scripted`` / ``scripted:<path>`` → :mod:`activities.models.scripted`;
* ``gemini-*`` → :mod:`activities.models.gemini` (credentials from the worker env).

Provider modules are imported on demand so a worker without ``google-genai``
credentials can still run the offline model. Unknown names raise
:class:`~navcore.errors.ModelError` before any call is made.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Protocol

from durable_navigator.activities.models.base import ModelProvider
from durable_navigator.navcore.decision import TokenUsage
from durable_navigator.navcore.errors import ModelError
from durable_navigator.navcore.pricing import ModelPricingRates, PricingTable, cost_micro_usd, estimate_micro_usd

__all__ = ["build_provider", "Pricer", "TablePricer", "KNOWN_PREFIXES"]

KNOWN_PREFIXES = ("offline", "scripted", "gemini-")


class Pricer(Protocol):
    """Prices model usage in integer micro-dollars (see :mod:`navcore.pricing`)."""

    def cost(self, model: str, usage: TokenUsage, calls: int = 1) -> int:
        """Exact cost of ``usage`` (made over ``calls`` HTTP calls) on ``model``."""
        ...

    def estimate(self, model: str, prompt_tokens: int, max_output_tokens: int) -> int:
        """Upper bound of one call with this prompt size and output cap."""
        ...

    def rates(self, model: str) -> ModelPricingRates:
        """The price of ``model`` (the workflow prices its planning/compression calls with it)."""
        ...


class TablePricer:
    """A :class:`Pricer` over a :class:`~navcore.pricing.PricingTable`."""

    def __init__(self, table: PricingTable) -> None:
        self.table = table

    @classmethod
    def load(cls, override: str | Path | None = None) -> "TablePricer":
        """The shipped table merged with the user override (``--pricing`` / env)."""
        from durable_navigator.activities.pricing_loader import load_pricing_table

        return cls(load_pricing_table(override))

    def cost(self, model: str, usage: TokenUsage, calls: int = 1) -> int:
        """Exact micro-dollar cost; zero usage costs nothing."""
        if usage == TokenUsage():
            return 0
        return cost_micro_usd(usage, self.table.rates_for(model), calls=max(calls, 1))

    def estimate(self, model: str, prompt_tokens: int, max_output_tokens: int) -> int:
        """Upper-bound micro-dollar estimate of one call."""
        return estimate_micro_usd(prompt_tokens, max_output_tokens, self.table.rates_for(model))

    def rates(self, model: str) -> ModelPricingRates:
        """The table's rates of ``model`` (``ConfigError`` when it has no price)."""
        return self.table.rates_for(model)


def _load(module: str, attr: str) -> type:
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as exc:
        raise ModelError(f"model provider {module}:{attr} is not available ({exc}); reinstall durable-navigator") from exc


def build_provider(model: str) -> ModelProvider:
    """Return a provider serving ``model``; raise ``ModelError`` for unknown names."""
    name = model.strip()
    if name == "offline":
        provider = _load("durable_navigator.activities.models.offline", "OfflineProvider")()
    elif name == "scripted" or name.startswith("scripted:"):
        script = name.partition(":")[2] or None
        cls = _load("durable_navigator.activities.models.scripted", "ScriptedProvider")
        provider = cls(Path(script)) if script else cls()
    elif name.startswith("gemini-") or name.startswith("models/gemini-"):
        provider = _load("durable_navigator.activities.models.gemini", "GeminiProvider")()
    else:
        raise ModelError(
            f"unknown model {model!r}; use 'offline', 'scripted:<file>' or a 'gemini-*' model name"
        )
    if not provider.handles(name):
        raise ModelError(f"provider {type(provider).__name__} does not serve {model!r}; check the model name")
    return provider
