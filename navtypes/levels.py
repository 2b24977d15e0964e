"""The verbosity levels of a map and the token-budget limits of a flight plan (no pydantic).

Re-exported by :mod:`navtypes.flightplan`; kept apart so the repo-map renderer
and a ``repo-map generate`` process use them without importing pydantic.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["Level", "MAX_TOKEN_BUDGET", "MIN_TOKEN_BUDGET", "MIN_TOKEN_BUDGET_MAX_FILES"]

MAX_TOKEN_BUDGET = 2_000_000
#: the smallest map the repo-map engine renders: its header line alone, every file hidden,
#: for a repository of up to MIN_TOKEN_BUDGET_MAX_FILES files (the engine refuses a plan
#: below it; ``tests/repomap_engine/test_min_budget.py`` checks the number with the exact
#: counter). The CLI and the jobs file refuse smaller budgets before anything starts.
MIN_TOKEN_BUDGET = 26
MIN_TOKEN_BUDGET_MAX_FILES = 999_999


class Level(IntEnum):
    """Verbosity of one file in the rendered map."""

    HIDDEN = 0  #: not shown
    PATH = 1  #: path (+ size); plus each expanded focus symbol after the definitions enclosing it
    OUTLINE = 2  #: symbol outline: signatures with line numbers
    DOCS = 3  #: outline + docstrings
    FULL = 4  #: full source
