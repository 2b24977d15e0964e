"""The flight plan: what the navigator tunes turn by turn.

A :class:`FlightPlan` tells the repo-map engine how verbose to be per path,
what to focus on and how many tokens the rendered map may use. It is small,
typed and deterministic, so it lives in workflow state and in history.

Semantics (the engine in ``repomap/`` implements them):

* ``rules`` are ordered ``glob -> level`` pairs; for each file the **last**
  matching rule wins (like ``.gitignore``), so appending a rule refines.
* A file no rule matches gets ``default_level``; ``None`` means *auto*: the
  engine assigns levels by task relevance to fill the budget.
* ``exclude`` globs hide files entirely (level 0) and beat every rule.
* ``focus_paths`` / ``focus_symbols`` raise ranking weight; focused content is
  degraded last when the budget forces degradation. A focus symbol with
  ``expand=True`` is shown in full inside a file rendered at level 2 or 3.
* The rendered map never exceeds ``token_budget``.
* ``pinned`` keys (a rule's or an exclude's glob, a focus glob or symbol) are a
  human's choices — an edit, or what the model did to follow feedback: later
  updates that do not pin them themselves cannot change or remove them.

Globs use ``fnmatch``-style matching on POSIX relative paths where ``**``
matches across directories and a bare directory prefix such as ``src/budget``
or ``src/budget/`` matches everything below it. A glob without ``/`` also matches
a basename at any depth (``*.py``), except that a glob that is exactly the path of a
file of the repository names that file only (``Makefile`` is the root one when there
is one; ``**/Makefile`` is every Makefile).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, field_validator

# the level scale and the budget limits need no pydantic: the repo-map renderer imports them from there
from durable_navigator.navtypes.levels import MAX_TOKEN_BUDGET, MIN_TOKEN_BUDGET, MIN_TOKEN_BUDGET_MAX_FILES, Level

__all__ = [
    "Level",
    "VerbosityRule",
    "FocusPath",
    "FocusSymbol",
    "FlightPlan",
    "FlightPlanUpdate",
    "MAX_TOKEN_BUDGET",
    "MIN_TOKEN_BUDGET",
    "MIN_TOKEN_BUDGET_MAX_FILES",
    "MAX_PLAN_RULES",
    "MAX_UPDATE_ITEMS",
    "MAX_FOCUS_ITEMS",
]

#: most verbosity rules one flight plan holds
MAX_PLAN_RULES = 256
#: most entries of each list of one update (rules set, focus added, ...)
MAX_UPDATE_ITEMS = 64
#: most focus paths / focus symbols / excludes one flight plan holds
MAX_FOCUS_ITEMS = 128

class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)


Glob = Annotated[str, Field(min_length=1, max_length=512)]
Weight = Annotated[float, Field(gt=0.0, le=100.0)]


def _check_glob(value: str) -> str:
    value = value.strip()
    if not value:
        raise ValueError("glob must not be empty")
    if value.startswith("/") or value.startswith("\\") or (len(value) > 1 and value[1] == ":"):
        raise ValueError("glob must be relative to the repository root (no leading '/')")
    if ".." in value.replace("\\", "/").split("/"):
        raise ValueError("glob must not contain '..' segments")
    return value.replace("\\", "/")


class VerbosityRule(_Strict):
    """``glob -> level``; the last matching rule in a plan wins."""

    glob: Glob
    level: Level

    _v = field_validator("glob")(classmethod(lambda cls, v: _check_glob(v)))


class FocusPath(_Strict):
    """A path or glob whose files get extra ranking weight."""

    glob: Glob
    weight: Weight = 1.0

    _v = field_validator("glob")(classmethod(lambda cls, v: _check_glob(v)))


class FocusSymbol(_Strict):
    """A symbol to emphasise: a qualified id ``path::Class.method`` or a bare name.

    ``path::`` (nothing after the colons) is the file's module-level code: the lines
    no definition spans (imports, constants, top-level statements).
    """

    symbol: Annotated[str, Field(min_length=1, max_length=512)]
    weight: Weight = 1.0
    #: show this symbol's full source even when its file renders at level 1, 2 or 3 (at level 1
    #: the file shows only its expanded symbols, each after the definitions enclosing it)
    expand: bool = True


class FlightPlan(_Strict):
    """Per-path verbosity, focus and token budget for one map render."""

    token_budget: Annotated[int, Field(gt=0, le=MAX_TOKEN_BUDGET)] = 4096
    default_level: Level | None = None
    rules: Annotated[list[VerbosityRule], Field(max_length=MAX_PLAN_RULES)] = []
    focus_paths: Annotated[list[FocusPath], Field(max_length=MAX_FOCUS_ITEMS)] = []
    focus_symbols: Annotated[list[FocusSymbol], Field(max_length=MAX_FOCUS_ITEMS)] = []
    goal: Annotated[str | None, Field(max_length=8000)] = None
    exclude: Annotated[list[Glob], Field(max_length=MAX_FOCUS_ITEMS)] = []
    #: attach a short "why" (top ranking signals) to each file line
    show_why: bool = True
    #: keys a human set (rule / exclude / focus globs, focus symbols): model turns never undo them
    pinned: Annotated[list[str], Field(max_length=256)] = []

    @field_validator("exclude")
    @classmethod
    def _exclude_globs(cls, v: list[str]) -> list[str]:
        return [_check_glob(g) for g in v]

    def apply(self, update: "FlightPlanUpdate") -> "FlightPlan":
        """Return a new plan with ``update`` merged in (validated deep merge).

        Rules are keyed by glob: an update to an existing glob moves it to the
        end with its new level (so it wins); focus entries are keyed by glob /
        symbol and replaced; removals name the key. A change to a ``pinned``
        key is left out unless the update pins that key itself (see
        :meth:`FlightPlanUpdate.blocked_by`); the update's own pins are added.
        """
        locked = set(self.pinned) - set(update.pin)
        removed_rules = set(update.remove_rules) - locked
        rules = [r for r in self.rules if r.glob not in removed_rules]
        for new in update.set_rules:
            if new.glob in locked and any(r.glob == new.glob for r in rules):
                continue
            rules = [r for r in rules if r.glob != new.glob] + [new]
        removed_paths = set(update.remove_focus_paths) - locked
        focus_paths = [f for f in self.focus_paths if f.glob not in removed_paths]
        for new in update.add_focus_paths:
            if new.glob in locked and any(f.glob == new.glob for f in focus_paths):
                continue
            focus_paths = [f for f in focus_paths if f.glob != new.glob] + [new]
        removed_symbols = set(update.remove_focus_symbols) - locked
        focus_symbols = [f for f in self.focus_symbols if f.symbol not in removed_symbols]
        for new in update.add_focus_symbols:
            if new.symbol in locked and any(f.symbol == new.symbol for f in focus_symbols):
                continue
            focus_symbols = [f for f in focus_symbols if f.symbol != new.symbol] + [new]
        removed_exclude = set(update.remove_exclude) - locked
        exclude = [g for g in self.exclude if g not in removed_exclude]
        exclude += [g for g in update.add_exclude if g not in exclude]
        data = self.model_dump()
        data.update(
            rules=[r.model_dump() for r in rules],
            focus_paths=[f.model_dump() for f in focus_paths],
            focus_symbols=[f.model_dump() for f in focus_symbols],
            exclude=exclude,
            pinned=[*self.pinned, *(k for k in dict.fromkeys(update.pin) if k not in self.pinned)],
        )
        if update.token_budget is not None:
            data["token_budget"] = update.token_budget
        if update.default_level is not None:
            data["default_level"] = update.default_level
        if update.goal is not None:
            data["goal"] = update.goal
        return FlightPlan.model_validate(data)


class FlightPlanUpdate(_Strict):
    """The ``updates`` argument of the model's ``update_flight_plan`` call."""

    token_budget: Annotated[int | None, Field(gt=0, le=MAX_TOKEN_BUDGET)] = None
    default_level: Level | None = None
    set_rules: Annotated[list[VerbosityRule], Field(max_length=MAX_UPDATE_ITEMS)] = []
    remove_rules: Annotated[list[Glob], Field(max_length=MAX_UPDATE_ITEMS)] = []
    add_focus_paths: Annotated[list[FocusPath], Field(max_length=MAX_UPDATE_ITEMS)] = []
    remove_focus_paths: Annotated[list[Glob], Field(max_length=MAX_UPDATE_ITEMS)] = []
    add_focus_symbols: Annotated[list[FocusSymbol], Field(max_length=MAX_UPDATE_ITEMS)] = []
    remove_focus_symbols: Annotated[list[str], Field(max_length=MAX_UPDATE_ITEMS)] = []
    add_exclude: Annotated[list[Glob], Field(max_length=MAX_UPDATE_ITEMS)] = []
    remove_exclude: Annotated[list[Glob], Field(max_length=64)] = []
    goal: Annotated[str | None, Field(max_length=8000)] = None
    #: keys this update pins (a human's choice, or what the model does to follow feedback)
    pin: Annotated[list[Glob], Field(max_length=64)] = []

    def keys(self) -> list[str]:
        """Every rule / exclude / focus key this update touches (for pinning a human's edit)."""
        keys = [r.glob for r in self.set_rules] + list(self.remove_rules)
        keys += [f.glob for f in self.add_focus_paths] + list(self.remove_focus_paths)
        keys += [f.symbol for f in self.add_focus_symbols] + list(self.remove_focus_symbols)
        keys += list(self.add_exclude) + list(self.remove_exclude)
        return list(dict.fromkeys(keys))

    def pinned(self) -> "FlightPlanUpdate":
        """This update with every key it touches pinned (a human's edit)."""
        return self.model_copy(update={"pin": list(dict.fromkeys([*self.pin, *self.keys()]))[:64]})

    def blocked_by(self, plan: "FlightPlan") -> list[str]:
        """Keys this update would change that ``plan`` pins (they are left out when it applies)."""
        locked = set(plan.pinned) - set(self.pin)
        return [k for k in self.keys() if k in locked]

    @field_validator("add_exclude")
    @classmethod
    def _exclude_globs(cls, v: list[str]) -> list[str]:
        return [_check_glob(g) for g in v]

    def is_empty(self) -> bool:
        """True when applying this update would change nothing."""
        return self == FlightPlanUpdate()
