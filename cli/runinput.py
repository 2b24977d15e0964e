"""The one validation of what starts a run: repository, goal text, USD budget, the request model.

``navigator explore|ask|investigate``, the MCP tools and a batch's per-job check all go
through these functions, and the request is built by validating the very pydantic model the
workflow takes (:func:`validated`), so no surface accepts what another refuses and nothing
reaches a workflow that its own input model would reject there. Every refusal is a
:class:`~navtypes.errors.NavigatorError` (one line, what to do; exit code 2), raised before
anything starts: never a traceback, never a failed run left behind.
"""

from __future__ import annotations

import unicodedata
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, TypeAdapter, ValidationError

from durable_navigator.navcore.run.budget import MAX_RUN_USD, MIN_RUN_USD, RunUsd
from durable_navigator.navtypes.errors import BudgetError, ConfigError
from durable_navigator.repomap.fsnames import is_utf8
from durable_navigator.repomap.presence import require_files

__all__ = ["parse_usd", "budget_or_default", "check_text", "text_problem", "check_repository", "validated",
           "USD_RANGE", "MAX_TEXT_CHARS"]

M = TypeVar("M", bound=BaseModel)

#: how a refusal names the accepted range
USD_RANGE = f"between {MIN_RUN_USD:f} and {MAX_RUN_USD:,.0f} dollars"
_USD = TypeAdapter(RunUsd)
#: characters a goal may hold besides printable ones
_ALLOWED_CONTROLS = frozenset("\t\n\r")
#: how much of a refused value a message repeats
_SHOWN_CHARS = 40
#: the longest goal or question: the ``max_length`` of every request model's text field (and ``FlightPlan.goal``)
MAX_TEXT_CHARS = 8000


def parse_usd(text: str | Decimal | float | int, name: str = "--budget-usd") -> Decimal:
    """A USD budget as every run takes it (:data:`navcore.run.budget.RunUsd`), or a ``BudgetError``.

    Refused: anything that is not a number (``abc``, ``nan``, ``inf``), zero, negative, an amount
    that rounds to no micro-dollar at all (``1e-7``: the ledger counts whole micro-dollars, so the
    run could not spend anything), and more than :data:`navcore.run.budget.MAX_RUN_USD`.
    """
    shown = repr(str(text)[:_SHOWN_CHARS])
    try:
        value = text if isinstance(text, Decimal) else Decimal(str(text).strip())
    except (InvalidOperation, ValueError):
        raise BudgetError(f"{name} must be a number of dollars such as 0.50, got {shown}") from None
    if not value.is_finite():
        raise BudgetError(f"{name} must be a finite number of dollars such as 0.50, got {shown}")
    if value <= 0:
        raise BudgetError(f"{name} must be above 0 (got {shown}); a run cannot spend nothing")
    try:
        return _USD.validate_python(value)
    except ValidationError:
        if value < MIN_RUN_USD:
            raise BudgetError(f"{name} {shown} is below one micro-dollar, the budget ledger's unit, so the run "
                              f"could spend nothing; pass at least {MIN_RUN_USD:f}") from None
        raise BudgetError(f"{name} {shown} is out of range; pass an amount {USD_RANGE}") from None


def budget_or_default(given: str | None, default: float | Decimal, source: str | None) -> Decimal:
    """``--budget-usd`` when given, else the configured default (named with its file when refused)."""
    if given is not None:
        return parse_usd(given)
    return parse_usd(str(default), f"defaults.budget_usd{f' in {source}' if source else ''}")


def text_problem(text: str, what: str) -> str | None:
    """Why ``text`` cannot be a goal or question (``what`` names it), or ``None`` when it can."""
    if not text.strip():
        return f"{what} is empty"
    if text.strip() == "-":
        # ``-`` is not "read it from stdin" here: taken as a goal it started a run about nothing
        return f"{what} is a lone '-' (a goal is not read from stdin)"
    if not any(c.isalnum() for c in text):
        return f"{what} holds no word (only {text.strip()[:_SHOWN_CHARS]!r})"
    if not is_utf8(text):
        return f"{what} is not valid text (it holds bytes that are not UTF-8)"
    bad = sorted({c for c in text if unicodedata.category(c) == "Cc" and c not in _ALLOWED_CONTROLS})
    if bad:
        return f"{what} holds control characters ({', '.join(repr(c) for c in bad[:3])})"
    if len(text.strip()) > MAX_TEXT_CHARS:
        # said here, with the limit, before the request model's own "at most 8000 characters"
        return f"{what} is {len(text.strip()):,} characters long, over the limit of {MAX_TEXT_CHARS:,}"
    return None


def check_text(text: str, what: str, example: str) -> str:
    """``text`` stripped, or a ``ConfigError`` saying what is wrong and showing ``example``."""
    problem = text_problem(text, what)
    if problem is not None:
        advice = "shorten it to what you want found" if len(text.strip()) > MAX_TEXT_CHARS else "write it as plain text"
        raise ConfigError(f"{problem}; {advice}, e.g. {example}")
    return text.strip()


def check_repository(repo: Path | str) -> Path:
    """The resolved repository root; ``RepoError`` when it is missing, not a folder, cannot be read, or has
    nothing to map (the engine's own checks: ``repomap.discover.check_root``, then ``require_files``)."""
    return require_files(repo)


def validated(model_class: type[M], /, **fields: Any) -> M:
    """``model_class(**fields)``, every problem on one line (``invalid goal: …; invalid budget_usd: …``) when it fails.

    The model is the workflow's own input model, so what passes here passes there.
    """
    try:
        return model_class(**fields)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_input=False, include_url=False):
            field = ".".join(str(p) for p in err["loc"]) or model_class.__name__
            problems.append(f"invalid {field}: {err['msg']}")
        raise ConfigError("; ".join(problems)) from None
