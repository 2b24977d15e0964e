"""Model prices and exact cost math (integer micro-dollars).

Pure and deterministic: pydantic + stdlib only, safe in the workflow sandbox.
Reading the shipped ``pricing.yaml`` and a user override file is I/O, so it
lives outside this module, in :mod:`activities.pricing_loader`; this module
only validates already-parsed mappings (:meth:`PricingTable.from_mapping`,
:meth:`PricingTable.merged`) and does the arithmetic.

Units: a rate is USD per million tokens. One USD per million tokens is exactly
one micro-dollar per token, so ``tokens * rate`` *is* a micro-dollar amount;
it is computed in :class:`~decimal.Decimal` and rounded up once per call
(:data:`ROUNDING`), never per token category, so a ledger that adds the
returned integers is exact and never under-charges.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import ROUND_CEILING, Decimal
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navtypes.errors import BudgetError, ConfigError, ModelError
from durable_navigator.navcore.model.modelspec import parse_model_spec

__all__ = [
    "PRICING_FILE_ENV",
    "ROUNDING",
    "Rate",
    "TierRates",
    "ModelPricingRates",
    "PricingTable",
    "canonical_model_name",
    "cost_micro_usd",
    "cost_usd",
    "estimate_micro_usd",
    "format_validation_error",
]

#: environment variable naming a user pricing override file
PRICING_FILE_ENV = "NAVIGATOR_PRICING_FILE"

#: one rounding step per priced call; up, so the budget is never under-charged
ROUNDING = ROUND_CEILING

#: USD per million tokens; six decimals is a thousandth of a micro-dollar per token
Rate = Annotated[Decimal, Field(ge=0, le=10_000, decimal_places=6)]

_MICROS_PER_USD = 1_000_000

_HOW_TO_ADD = (
    "add it to a pricing override file (pricing_file in navigator.yaml or the "
    f"{PRICING_FILE_ENV} environment variable), e.g. "
    "'models: {{{name}: {{input: 0.30, output: 2.50}}}}'"
)


class _Rates(BaseModel):
    """Per-million-token rates shared by the base price and a long-context tier."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: Rate
    output: Rate
    #: thinking ("thoughts") tokens; Gemini bills them as output, so omitted = output
    thinking: Rate | None = None
    #: prompt tokens served from the (implicit or explicit) context cache;
    #: omitted = input (no discount), the conservative choice for unknown models
    cached: Rate | None = None

    @property
    def thinking_rate(self) -> Decimal:
        """The effective thinking rate (``output`` when not given)."""
        return self.output if self.thinking is None else self.thinking

    @property
    def cached_rate(self) -> Decimal:
        """The effective cached-input rate (``input`` when not given)."""
        return self.input if self.cached is None else self.cached


class TierRates(_Rates):
    """Rates that apply when a call's prompt is longer than ``above_prompt_tokens``."""

    above_prompt_tokens: int = Field(gt=0)


class ModelPricingRates(_Rates):
    """The price of one model: base rates plus an optional long-context tier.

    Gemini Pro models charge more for prompts above 200k tokens; the tier is
    chosen per call by that call's prompt size.
    """

    long_context: TierRates | None = None
    #: free text shown in reports, e.g. the source and date of the price
    note: Annotated[str, Field(max_length=500)] = ""

    def rates_for_prompt(self, prompt_tokens: int) -> _Rates:
        """The rates that apply to one call with ``prompt_tokens`` prompt tokens."""
        tier = self.long_context
        if tier is not None and prompt_tokens > tier.above_prompt_tokens:
            return tier
        return self

    @property
    def is_free(self) -> bool:
        """True when every rate (any tier) is zero, e.g. ``offline`` and ``scripted``."""
        tiers: list[_Rates] = [self] + ([self.long_context] if self.long_context else [])
        return all(
            r.input == 0 and r.output == 0 and r.thinking_rate == 0 and r.cached_rate == 0
            for r in tiers
        )


def canonical_model_name(model: str) -> str:
    """The pricing key of a model name (:func:`navcore.model.modelspec.parse_model_spec`'s ``pricing_key``).

    ``models/`` is dropped and any ``scripted:<path>`` is ``scripted``. A name
    the parser does not know (a model a test or an embedder registered itself)
    is looked up as it is: it still needs its own entry in the table.
    """
    try:
        return parse_model_spec(model).pricing_key
    except ModelError:
        return model.strip()


class PricingTable(BaseModel):
    """All known model prices: the shipped table, possibly merged with an override."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: where the prices come from (free text, kept for reports)
    source: Annotated[str, Field(max_length=500)] = ""
    models: dict[Annotated[str, Field(min_length=1, max_length=200)], ModelPricingRates]

    @classmethod
    def from_mapping(cls, data: Any, origin: str) -> "PricingTable":
        """Validate parsed YAML/JSON; raise ``ConfigError`` naming every bad field."""
        if not isinstance(data, Mapping):
            raise ConfigError(
                f"{origin}: expected a mapping with a 'models' key, got {type(data).__name__}"
            )
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(f"{origin}: {format_validation_error(exc)}") from None

    def merged(self, override: Any, origin: str) -> "PricingTable":
        """This table with ``override`` (parsed YAML/JSON) merged in, field by field.

        A model the table already prices keeps the rates the override does not
        name; a new model must give at least ``input`` and ``output``. Errors
        name the override file and each offending field.
        """
        if not isinstance(override, Mapping):
            raise ConfigError(
                f"{origin}: expected a mapping with a 'models' key, got {type(override).__name__}"
            )
        base = self.model_dump(mode="python", exclude_none=True)
        unknown = sorted(set(override) - {"models", "source"})
        if unknown:
            raise ConfigError(f"{origin}: unknown key(s) {unknown}; allowed: models, source")
        models = override.get("models") or {}
        if not isinstance(models, Mapping):
            raise ConfigError(f"{origin}: models: expected a mapping of model name -> rates")
        for name, rates in models.items():
            key = canonical_model_name(str(name))
            if isinstance(rates, Mapping) and key in base["models"]:
                current = dict(base["models"][key])
                current.update(rates)
                base["models"][key] = current
            else:
                base["models"][key] = rates
        if "source" in override:
            base["source"] = f"{self.source}; overridden by {origin}".strip("; ")
        return PricingTable.from_mapping(base, origin)

    def _lookup(self, model: str) -> tuple[str, ModelPricingRates | None]:
        """The key and rates of ``model``: its own entry, else its endpoint's ``<endpoint>:*`` entry."""
        key = canonical_model_name(model)
        rates = self.models.get(key)
        endpoint, sep, _ = key.partition(":")
        if rates is None and sep:
            rates = self.models.get(f"{endpoint}:*")
        return key, rates

    def rates_for(self, model: str) -> ModelPricingRates:
        """The price of ``model`` (or of every model of its endpoint); refuse (``BudgetError``) one without."""
        key, rates = self._lookup(model)
        if rates is None:
            known = ", ".join(sorted(self.models))
            endpoint, sep, name = key.partition(":")
            declare = (f"declare it in navigator.yaml, e.g. endpoints: {{{endpoint}: {{prices: {{'{name}': "
                       "{input: 0, output: 0}}}} (0 is fine for a local server; '*' prices all its models), or "
                       if sep else "")
            raise BudgetError(
                f"model {model!r} has no price; {declare}{_HOW_TO_ADD.format(name=key)} "
                f"(priced models: {known})"
            )
        return rates

    def has_price(self, model: str) -> bool:
        """True when :meth:`rates_for` would succeed."""
        return self._lookup(model)[1] is not None


def _check_usage(usage: TokenUsage) -> None:
    if usage.cached_tokens > usage.input_tokens:
        raise BudgetError(
            f"usage reports {usage.cached_tokens} cached tokens but only {usage.input_tokens} "
            "input tokens; the provider's usage metadata is inconsistent, report it"
        )


def cost_micro_usd(usage: TokenUsage, rates: ModelPricingRates, *, calls: int = 1) -> int:
    """Exact cost of ``usage`` in integer micro-dollars (rounded up once).

    Cached tokens are part of ``input_tokens`` and are charged at the cached
    rate instead of the input rate; thinking tokens at the thinking rate.
    ``usage`` may sum several HTTP calls (a corrective re-ask); the
    long-context tier is then chosen by the mean prompt size per call, which is
    exact whenever the calls fall in the same tier (a re-ask repeats the prompt).
    """
    _check_usage(usage)
    if calls < 1:
        raise BudgetError("a priced usage must come from at least one call")
    tier = rates.rates_for_prompt(usage.input_tokens // calls)
    micros = (
        Decimal(usage.input_tokens - usage.cached_tokens) * tier.input
        + Decimal(usage.cached_tokens) * tier.cached_rate
        + Decimal(usage.output_tokens) * tier.output
        + Decimal(usage.thinking_tokens) * tier.thinking_rate
    )
    return int(micros.to_integral_value(rounding=ROUNDING))


def cost_usd(usage: TokenUsage, rates: ModelPricingRates, *, calls: int = 1) -> float:
    """The same cost in USD as a float: for display only — add micro-dollars, not these."""
    return cost_micro_usd(usage, rates, calls=calls) / _MICROS_PER_USD


def estimate_micro_usd(
    prompt_tokens: int, max_output_tokens: int, rates: ModelPricingRates
) -> int:
    """Upper-bound estimate of one call, for reserving budget before it is made.

    The whole prompt at the (uncached) input rate and ``max_output_tokens`` at
    the dearer of the output and thinking rates: Gemini's output cap covers
    thinking tokens too, so this bounds what one call can cost.
    """
    if prompt_tokens < 0 or max_output_tokens < 0:
        raise BudgetError("token counts for a cost estimate cannot be negative")
    tier = rates.rates_for_prompt(prompt_tokens)
    out_rate = max(tier.output, tier.thinking_rate)
    micros = Decimal(prompt_tokens) * tier.input + Decimal(max_output_tokens) * out_rate
    return math.ceil(micros)


def format_validation_error(exc: ValidationError) -> str:
    """One line naming every failing field: ``models.x.input: Input should be ...``."""
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "(root)"
        parts.append(f"{loc}: {err['msg']}")
    return "; ".join(parts)
