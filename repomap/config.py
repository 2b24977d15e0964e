"""Named configuration of the repo-map engine: every weight and threshold lives here.

Nothing in the engine uses an inline magic number for behaviour; stages take
the relevant sub-config so a caller (or a benchmark) can tune one knob and see
its effect.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, ClassVar, Literal

__all__ = ["DiscoverConfig", "RankConfig", "RenderConfig", "SearchConfig", "XrefConfig", "EngineConfig",
           "EngineConfigError"]

#: bump when parsing, queries or the per-file record layout change: it keys the cache
PARSER_VERSION = "rm-10"


class EngineConfigError(ValueError):
    """A configuration value out of its range, of the wrong type, or an unknown key."""


def Field(default: Any, *, gt: float | None = None, ge: float | None = None, lt: float | None = None,
          le: float | None = None) -> Any:
    """A field with a default and bounds (checked when a config is made)."""
    bounds = {k: v for k, v in (("gt", gt), ("ge", ge), ("lt", lt), ("le", le)) if v is not None}
    return dataclasses.field(default=default, metadata={"bounds": bounds})


_CHECKS = {"gt": (lambda v, b: v > b, "greater than"), "ge": (lambda v, b: v >= b, "greater than or equal to"),
           "lt": (lambda v, b: v < b, "less than"), "le": (lambda v, b: v <= b, "less than or equal to")}


class _Cfg:
    """Frozen dataclass configs with the part of pydantic's model API the engine and its callers use.

    Plain dataclasses, not pydantic models: a ``repo-map generate`` process builds
    an ``EngineConfig`` on every start, and pydantic's import and model building
    were a fifth of a warm render's CPU. Every field has a default; its type is
    the default's (an int for a float field is taken as that float, a list for
    a tuple field as the tuple, a dict for a nested config as that config);
    bounds are checked; unknown keys are refused (``EngineConfigError``).
    ``model_dump_json`` writes what pydantic wrote (cache keys hash it).
    """

    model_fields: ClassVar[dict[str, dataclasses.Field]]

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            value = _coerce(type(self).__name__, f, getattr(self, f.name))
            object.__setattr__(self, f.name, value)

    @classmethod
    def model_validate(cls, data: Any) -> Any:
        """A config from a mapping (nested mappings for nested configs) or an instance."""
        if isinstance(data, cls):
            return data
        if not isinstance(data, dict):
            raise EngineConfigError(f"{cls.__name__}: expected a mapping, got {type(data).__name__}")
        unknown = sorted(set(data) - set(cls.model_fields))
        if unknown:
            raise EngineConfigError(f"{cls.__name__}: unknown key(s) {', '.join(unknown)}")
        return cls(**data)

    @classmethod
    def model_validate_json(cls, text: str | bytes) -> Any:
        return cls.model_validate(json.loads(text))

    def model_dump(self, mode: str = "python") -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self.model_fields:
            v = getattr(self, name)
            if isinstance(v, _Cfg):
                v = v.model_dump(mode)
            elif isinstance(v, tuple) and mode == "json":
                v = list(v)
            out[name] = v
        return out

    def model_dump_json(self) -> str:
        return _json(self.model_dump("json"))

    def model_copy(self, update: dict[str, Any] | None = None) -> Any:
        return dataclasses.replace(self, **(update or {}))  # type: ignore[type-var]


def _config(cls: type) -> type:
    out = dataclasses.dataclass(frozen=True)(cls)
    out.model_fields = {f.name: f for f in dataclasses.fields(out)}
    return out


def _coerce(owner: str, f: dataclasses.Field, v: Any) -> Any:
    default = f.default
    where = f"{owner}.{f.name}"
    if isinstance(default, _Cfg):
        if isinstance(v, dict):
            return type(default).model_validate(v)
        if not isinstance(v, type(default)):
            raise EngineConfigError(f"{where}: expected {type(default).__name__}, got {type(v).__name__}")
        return v
    if isinstance(default, bool):
        if not isinstance(v, bool):
            raise EngineConfigError(f"{where}: expected a bool, got {v!r}")
        return v
    if isinstance(default, float):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise EngineConfigError(f"{where}: expected a number, got {v!r}")
        v = float(v)
    elif isinstance(default, int):
        if isinstance(v, bool) or not (isinstance(v, int) or (isinstance(v, float) and v.is_integer())):
            raise EngineConfigError(f"{where}: expected an integer, got {v!r}")
        v = int(v)
    elif isinstance(default, tuple):
        if not isinstance(v, (tuple, list)):
            raise EngineConfigError(f"{where}: expected a sequence, got {v!r}")
        if default and isinstance(default[0], float):
            if len(v) != len(default):
                raise EngineConfigError(f"{where}: expected {len(default)} numbers, got {len(v)}")
            v = tuple(float(x) for x in v)
        else:
            v = tuple(v)
            if any(not isinstance(x, str) for x in v):
                raise EngineConfigError(f"{where}: expected strings, got {v!r}")
    for op, bound in f.metadata.get("bounds", {}).items():
        ok, words = _CHECKS[op]
        if not ok(v, bound):
            raise EngineConfigError(f"{where}: input should be {words} {bound}, got {v!r}")
    return v


def _json(v: Any) -> str:
    """Compact JSON as pydantic-core writes it (floats: ``1e-9``, not Python's ``1e-09``)."""
    if isinstance(v, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{_json(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_json(x) for x in v) + "]"
    if isinstance(v, float):
        r = repr(v)
        if "e" in r:
            mant, exp = r.split("e")
            r = f"{mant}e{int(exp)}"
        return r
    return json.dumps(v)


@_config
class DiscoverConfig(_Cfg):
    """What files the engine indexes, and what it skips (each skip counted by reason)."""

    max_file_bytes: int = Field(1_048_576, gt=0)
    #: bytes sniffed for a NUL to call a file binary
    binary_sniff_bytes: int = Field(8192, gt=0)
    #: average line length above which a file is treated as minified
    minified_avg_line: int = Field(300, gt=0)
    #: only files at least this big can be called minified (short one-liners are fine)
    minified_min_bytes: int = Field(2048, ge=0)
    #: a "generated" marker must appear within this many leading bytes
    generated_header_bytes: int = Field(512, gt=0)
    lockfile_names: tuple[str, ...] = (
        "package-lock.json", "yarn.lock", "pnpm-lock.yaml", "poetry.lock", "Cargo.lock",
        "Gemfile.lock", "composer.lock", "go.sum", "uv.lock", "Pipfile.lock",
    )
    #: directory names never descended into outside git (vendored/tooling state)
    skip_dirs: tuple[str, ...] = (".git", "__pycache__", ".hg", ".svn", "node_modules", ".venv",
                                  ".tox", ".mypy_cache", ".pytest_cache")


@_config
class RankConfig(_Cfg):
    """Weights of the personalized-PageRank + BM25 blend."""

    #: lower than the classic 0.85 so the walk stays near the personalized files
    damping: float = Field(0.6, gt=0.0, lt=1.0)
    iterations: int = Field(30, gt=0, le=500)
    tolerance: float = Field(1e-9, gt=0.0)
    #: identifiers defined in more files than this carry no graph edges (too common)
    max_def_files: int = Field(40, gt=0)
    bm25_k1: float = Field(1.2, gt=0.0)
    bm25_b: float = Field(0.75, ge=0.0, le=1.0)
    #: blend of the final score: pagerank share vs lexical share (normalized to max 1)
    pagerank_weight: float = Field(0.35, ge=0.0)
    lexical_weight: float = Field(0.65, ge=0.0)
    #: personalization mass per signal kind
    goal_weight: float = Field(1.0, ge=0.0)
    ident_weight: float = Field(2.0, ge=0.0)
    path_weight: float = Field(3.0, ge=0.0)
    #: a goal word that names a file (``budget`` -> ``navcore/run/budget.py``, ``flight plan`` ->
    #: ``flightplan.py``), weighted down by how many files it names
    name_weight: float = Field(1.0, ge=0.0)
    trace_weight: float = Field(4.0, ge=0.0)
    focus_path_weight: float = Field(5.0, ge=0.0)
    focus_symbol_weight: float = Field(5.0, ge=0.0)
    #: additive score boost of an explicitly focused file (keeps it on top of the ranking)
    focus_score_boost: float = Field(1.0, ge=0.0)
    #: goal words shorter than this are ignored for lexical matching
    min_term_len: int = Field(2, ge=1)


@_config
class RenderConfig(_Cfg):
    """How files are drawn and how the budget fitter values content."""

    #: value of one file at each level (index = level), multiplied by score ** score_power
    level_value: tuple[float, float, float, float, float] = (0.0, 0.3, 1.5, 2.0, 3.5)
    #: sharpens the ranking's say in the budget: > 1 favours detail on the top files over
    #: path lines of many weakly relevant ones
    score_power: float = Field(4.0, gt=0.0)
    #: floor added to every score so unranked files still order by cost, not arbitrarily
    score_floor: float = Field(1e-4, gt=0.0)
    #: value multiplier of files whose level an explicit rule requested
    rule_value_multiplier: float = Field(2.0, gt=0.0)
    #: a level an explicit rule asked for is degraded only after every auto-level file has
    #: given way (the plan's choices first, the engine's fill with what is left)
    protect_rules: bool = True
    #: at most this many docstring lines per symbol at level 3
    doc_max_lines: int = Field(8, gt=0)
    #: at most this many "why" signals per file line
    why_max: int = Field(3, ge=0)
    #: highest-ranked files listed in MapMetadata.top_files
    top_files: int = Field(20, ge=0)
    #: fit passes re-checking the exact count (each pass degrades more if over)
    max_fit_passes: int = Field(12, gt=0)


@_config
class SearchConfig(_Cfg):
    """Symbol-level search: files by BM25 first, then the definitions inside them (``symsearch.py``)."""

    #: files (by whole-file BM25) whose definitions are scored; at least ``limit`` x this factor
    candidate_files: int = Field(40, gt=0)
    candidate_factor: int = Field(3, gt=0)
    bm25_k1: float = Field(1.2, gt=0)
    bm25_b: float = Field(0.75, ge=0, le=1)
    #: a query term that is part of the definition's name (``loads`` in ``TimedSerializer.loads``)
    name_weight: float = Field(1.5, ge=0)
    #: weight of the file's own BM25 score (normalized to 1 for the best file)
    file_weight: float = Field(1.0, ge=0)
    #: an identifier the query names exactly (``BudgetLedger``, ``url_path_for``) that a definition has
    exact_name_bonus: float = Field(4.0, ge=0)
    #: definitions listed per file, so one long file cannot take every slot
    max_per_file: int = Field(3, gt=0)
    #: ``hybrid``: the keyword hits fused with the learned chunk ranker's best chunks by reciprocal
    #: rank (``hybridsearch.py``); ``keyword``: the keyword hits alone
    mode: Literal["keyword", "hybrid"] = "hybrid"
    #: hits each list contributes to the fusion
    fuse_depth: int = Field(30, gt=0)
    #: reciprocal-rank constant: a hit ranked r in a list adds ``weight / (rrf_k + r)``
    rrf_k: float = Field(10.0, gt=0)
    keyword_weight: float = Field(1.0, ge=0)
    #: the ranker's list counts double (dev, tool query: file@1 0.66 -> 0.69, symbol@5 0.58 -> 0.62)
    ranker_weight: float = Field(2.0, ge=0)
    #: the ranker reads the repository's git history (``.git``) when there is one
    history: bool = True


@_config
class XrefConfig(_Cfg):
    """Reference resolution behind ``callers`` / ``callees`` (``xref*.py``)."""

    #: Python sites one query resolves with jedi (the likeliest first); the rest are judged by
    #: scope evidence. A count, not a time, so the answer does not depend on the machine's load
    python_max_sites: int = Field(40, ge=0)
    #: files one query opens in jedi (each costs a parse and its imports' inference on first use)
    python_max_files: int = Field(8, ge=0)
    #: safety net only: wall seconds one query may spend in jedi (pathological code)
    python_budget_s: float = Field(30.0, gt=0)
    #: sites resolved per query at most (a name used in thousands of places)
    max_sites: int = Field(2000, gt=0)
    #: engine versions of one root whose Python shadow trees are kept in the cache dir
    keep_shadows: int = Field(3, ge=1)


@_config
class EngineConfig(_Cfg):
    """Everything the engine can be tuned with; the default suits most repositories."""

    discover: DiscoverConfig = DiscoverConfig()
    rank: RankConfig = RankConfig()
    render: RenderConfig = RenderConfig()
    search: SearchConfig = SearchConfig()
    xref: XrefConfig = XrefConfig()
    #: at most this many files per worker task in cold indexing (bounds each result's size)
    index_chunk_files: int = Field(512, gt=0)
    #: sets the smallest worker task of a cold index: 1/(4 x this) of a worker's share of the
    #: bytes (tasks shrink with the work left; smaller = smoother finish, more overhead)
    chunks_per_worker: int = Field(16, gt=0)
    #: below this many files to parse, cold indexing stays in-process
    parallel_min_files: int = Field(48, ge=0)
