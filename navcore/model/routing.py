"""Budget-aware model routing: which model answers which call, as the run's spending grows.

A run profile's ``routing.rules`` (see :class:`RoutingConfig`) send calls to
other models than the run's own, e.g.::

    routing:
      rules:
        - {after_budget_fraction: 0.6, calls: [decide], model: "openai:gpt-4.1-mini",
           reason: "cheaper turns once 60% of the budget is spent"}
        - {calls: [compress, review], model: "ollama:qwen2.5-coder:7b"}

For each call the *last* matching rule wins (as the flight plan's rules do); a
rule matches when the call's kind is in ``calls`` (any call when empty) and
at least ``after_budget_fraction`` of the run's budget is spent. No rule
matches → the run's model. Every change of the model serving a kind of call
is a :class:`ModelSwitch` the workflow logs with its reason. Each call is
priced at its own model's rates by the ``model.request`` activity, and the
ledger keeps totals per model.

Pure and deterministic (integer micro-dollars in, a model name out): the
workflow evaluates it before every model call, and a replay gets the same answers.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

from durable_navigator.navcore.run.budget import format_usd
from durable_navigator.navcore.model.call_kinds import CALL_GROUPS, ROUTED_KINDS

__all__ = [
    "CALL_KINDS",
    "CALL_GROUPS",
    "RouteRule",
    "RoutingConfig",
    "RouteChoice",
    "ModelSwitch",
    "RoutingState",
    "MAX_SWITCHES_KEPT",
    "choose_model",
    "route_call",
    "switch_line",
]

#: the kinds of model call a routing rule may name, and its groups (``navcore.model.call_kinds``)
CALL_KINDS: tuple[str, ...] = ROUTED_KINDS
#: switches kept in state (the decision log keeps every one)
MAX_SWITCHES_KEPT = 20


def _kinds(names: list[str]) -> frozenset[str]:
    out: set[str] = set()
    for name in names:
        out.update(CALL_GROUPS.get(name, (name,)))
    return frozenset(out)


class RouteRule(BaseModel):
    """Send the calls of ``calls`` to ``model`` once ``after_budget_fraction`` of the budget is spent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: Annotated[str, Field(min_length=1, max_length=200)]
    #: call kinds or groups (decide, planning, review, stages, compress, or an exact kind); empty = every call
    calls: list[str] = []
    #: the share of the budget that must be spent before the rule applies (0 = from the start)
    after_budget_fraction: float = Field(0.0, ge=0.0, lt=1.0)
    #: why, in the decision log (default: the rule's condition)
    reason: Annotated[str, Field(max_length=300)] = ""

    @field_validator("calls")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        unknown = [c for c in value if c not in CALL_GROUPS and c not in CALL_KINDS]
        if unknown:
            allowed = ", ".join([*CALL_GROUPS, *CALL_KINDS])
            raise ValueError(f"unknown call kind(s) {unknown}; use {allowed}")
        return value

    def matches(self, kind: str, spent_micros: int, max_micros: int) -> bool:
        """True when this rule applies to a ``kind`` call at this spending (integer arithmetic, no float drift)."""
        if self.calls and kind not in _kinds(self.calls):
            return False
        # spent / max >= fraction, compared in integers (the fraction has at most 6 decimals that matter)
        return spent_micros * 1_000_000 >= round(self.after_budget_fraction * 1_000_000) * max_micros

    def condition(self) -> str:
        """The rule as words: ``decide after 60% of the budget``."""
        what = ", ".join(self.calls) if self.calls else "every call"
        when = f" after {self.after_budget_fraction:.0%} of the budget" if self.after_budget_fraction else ""
        return f"{what}{when}"


class RoutingConfig(BaseModel):
    """The routing rules of a run profile (none: every call uses the run's model)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rules: list[RouteRule] = Field(default_factory=list, max_length=32)

    def models(self) -> list[str]:
        """Every model a rule may route to (in rule order, once each)."""
        return list(dict.fromkeys(r.model for r in self.rules))


class RouteChoice(BaseModel):
    """The model for one call and why."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    #: 1-based index of the winning rule (None: the run's own model)
    rule: int | None = None
    reason: str = ""


class ModelSwitch(BaseModel):
    """The model serving a kind of call changed (logged, shown in status, the Web UI and report.json)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    step: int = Field(ge=0)
    kind: str
    from_model: str
    to_model: str
    reason: str
    spent_micros: int = Field(ge=0)
    max_micros: int = Field(gt=0)


class RoutingState(BaseModel):
    """Which model last served each kind of call, and the recent switches."""

    model_config = ConfigDict(extra="forbid")

    current: dict[str, str] = {}
    switches: list[ModelSwitch] = []
    #: switches ever made (``switches`` keeps the most recent ones)
    switch_count: int = 0


def choose_model(config: RoutingConfig, default: str, kind: str, spent_micros: int, max_micros: int) -> RouteChoice:
    """The model for a ``kind`` call now: the last matching rule's, else ``default``."""
    for index in range(len(config.rules), 0, -1):
        rule = config.rules[index - 1]
        if rule.matches(kind, spent_micros, max_micros):
            return RouteChoice(model=rule.model, rule=index, reason=rule.reason or rule.condition())
    return RouteChoice(model=default, reason="the run's model")


def route_call(
    state: RoutingState, config: RoutingConfig, default: str, kind: str, spent_micros: int, max_micros: int,
    step: int,
) -> tuple[str, ModelSwitch | None]:
    """The model for this call, and the switch it makes (recorded in ``state``), if any.

    Without rules nothing is recorded: every call uses ``default``.
    """
    if not config.rules:
        return default, None
    choice = choose_model(config, default, kind, spent_micros, max_micros)
    previous = state.current.get(kind, default)
    state.current[kind] = choice.model
    if choice.model == previous:
        return choice.model, None
    where = f"rule {choice.rule}: {choice.reason}" if choice.rule is not None else "no rule applies any more"
    switch = ModelSwitch(step=step, kind=kind, from_model=previous, to_model=choice.model,
                         reason=f"{where} (spent {format_usd(spent_micros)} of {format_usd(max_micros)})",
                         spent_micros=max(spent_micros, 0), max_micros=max_micros)
    state.switches = [*state.switches, switch][-MAX_SWITCHES_KEPT:]
    state.switch_count += 1
    return choice.model, switch


def switch_line(switch: ModelSwitch) -> str:
    """``step 4 · decide: gemini-2.5-flash → openai:gpt-4.1-mini · rule 1: ... (spent $0.61 of $1.00)``."""
    return f"step {switch.step} · {switch.kind}: {switch.from_model} → {switch.to_model} · {switch.reason}"
