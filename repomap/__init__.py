"""The repo-map engine: index a repository, rank it for a goal, render a flight plan under a budget.

A plain library (no Temporal)::

    rm = RepoMap.open(root)
    result = rm.render(FlightPlan(token_budget=4096, goal="why are tokens double-counted?"))
    result.text, result.metadata, result.files
"""

from __future__ import annotations

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
