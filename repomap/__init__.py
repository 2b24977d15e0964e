"""The repo-map engine: index a repository, rank it for a goal, render a flight plan under a budget.

A plain library (no Temporal)::

    rm = RepoMap.open(root)
    result = rm.render(FlightPlan(token_budget=4096, goal="why are tokens double-counted?"))
    result.text, result.metadata, result.files

The public names are imported on first use (PEP 562), so importing a submodule
-- the ``repo-map`` CLI's ``--help``, the token counter -- does not load the
engine, numpy and pydantic behind it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from durable_navigator.navtypes.lazy import lazy_names

if TYPE_CHECKING:
    from durable_navigator.repomap.config import DiscoverConfig, EngineConfig, RankConfig, RenderConfig
    from durable_navigator.repomap.engine import RepoMap
    from durable_navigator.repomap.types import RankedFile, RenderResult, SearchHit, Symbol, SymbolRef

__all__ = [
    "RepoMap",
    "EngineConfig",
    "DiscoverConfig",
    "RankConfig",
    "RenderConfig",
    "RenderResult",
    "RankedFile",
    "SearchHit",
    "Symbol",
    "SymbolRef",
]

_WHERE = {
    "RepoMap": "engine",
    "EngineConfig": "config",
    "DiscoverConfig": "config",
    "RankConfig": "config",
    "RenderConfig": "config",
    "RenderResult": "types",
    "RankedFile": "types",
    "SearchHit": "types",
    "Symbol": "types",
    "SymbolRef": "types",
}


__getattr__ = lazy_names(__name__, globals(), {name: f".{module}" for name, module in _WHERE.items()})


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
