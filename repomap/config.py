"""Named configuration of the repo-map engine: every weight and threshold lives here.

Nothing in the engine uses an inline magic number for behaviour; stages take
the relevant sub-config so a caller (or a benchmark) can tune one knob and see
its effect.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DiscoverConfig", "RankConfig", "RenderConfig", "SearchConfig", "XrefConfig", "EngineConfig"]

#: bump when parsing, queries or the per-file record layout change: it keys the cache
PARSER_VERSION = "rm-7"


class _Cfg(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


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
    #: a goal word that names a file (``budget`` -> ``navcore/budget.py``, ``flight plan`` ->
    #: ``flightplan.py``), weighted down by how many files it names
    name_weight: float = Field(1.0, ge=0.0)
    trace_weight: float = Field(4.0, ge=0.0)
    focus_path_weight: float = Field(5.0, ge=0.0)
    focus_symbol_weight: float = Field(5.0, ge=0.0)
    #: additive score boost of an explicitly focused file (keeps it on top of the ranking)
    focus_score_boost: float = Field(1.0, ge=0.0)
    #: goal words shorter than this are ignored for lexical matching
    min_term_len: int = Field(2, ge=1)


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


class EngineConfig(_Cfg):
    """Everything the engine can be tuned with; the default suits most repositories."""

    discover: DiscoverConfig = DiscoverConfig()
    rank: RankConfig = RankConfig()
    render: RenderConfig = RenderConfig()
    search: SearchConfig = SearchConfig()
    xref: XrefConfig = XrefConfig()
    #: at most this many files per worker task in cold indexing (bounds each result's size)
    index_chunk_files: int = Field(512, gt=0)
    #: worker tasks per worker process (byte-balanced; more = smoother finish, more overhead)
    chunks_per_worker: int = Field(16, gt=0)
    #: below this many files to parse, cold indexing stays in-process
    parallel_min_files: int = Field(48, ge=0)
