"""The project's one exception hierarchy.

Every error a user can cause (bad input, bad configuration, an unknown model)
is a :class:`NavigatorError` whose message is one line that says what went
wrong and what to do next. The CLIs print ``str(exc)`` to stderr and exit
non-zero; activities turn them into non-retryable ``ApplicationError``s.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "NavigatorError",
    "ConfigError",
    "RepoError",
    "FlightPlanError",
    "BudgetError",
    "ModelError",
    "ArtifactError",
    "PathEscapeError",
    "validation_lines",
]


class NavigatorError(Exception):
    """Base class: a user-facing, one-line, actionable error."""

    #: stable machine-readable kind, used as ``ApplicationError.type``
    kind: str = "NavigatorError"

    def __init__(self, message: str) -> None:
        # One line: collapse anything a caller passed with newlines.
        super().__init__(" ".join(str(message).split()))


class ConfigError(NavigatorError):
    """Invalid configuration (navigator.yaml, environment, pricing override, jobs file)."""

    kind = "ConfigError"


class RepoError(NavigatorError):
    """The repository path is missing, not a directory, unreadable or empty."""

    kind = "RepoError"


class FlightPlanError(NavigatorError):
    """A flight plan (YAML or update) failed validation."""

    kind = "FlightPlanError"


class BudgetError(NavigatorError):
    """A budget is zero/negative or a model has no known price."""

    kind = "BudgetError"


class ModelError(NavigatorError):
    """Unknown model name, missing credentials, or a non-retryable provider error."""

    kind = "ModelError"


class ArtifactError(NavigatorError):
    """An artifact reference could not be resolved or failed its integrity check."""

    kind = "ArtifactError"


class PathEscapeError(NavigatorError):
    """A path resolves outside the repository root (``..``, absolute path or symlink)."""

    kind = "PathEscapeError"


def validation_lines(exc: Any) -> list[str]:
    """One ``field.path: message`` line per problem of a pydantic ``ValidationError``.

    The field is always named (pydantic's own ``str()`` starts with ``1 validation
    error for FlightPlanUpdate`` and puts the field on the next line).
    """
    lines = []
    for err in exc.errors(include_input=False):
        where = ".".join(str(part) for part in err.get("loc", ())) or "<root>"
        lines.append(f"{where}: {str(err.get('msg', '')).removeprefix('Value error, ')}")
    return lines
