"""References to content-addressed artifacts (maps, prompts, decisions, results).

Large data never enters workflow history: activities store it in an artifact
store and hand the workflow an :class:`ArtifactRef` (hash + size + media type +
a short summary). The store itself lives in ``activities/artifacts.py``.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["ArtifactRef", "SUMMARY_MAX_CHARS"]

#: a reference's summary is for humans in the Web UI; keep history small
SUMMARY_MAX_CHARS = 160


class ArtifactRef(BaseModel):
    """A pointer to immutable bytes in an artifact store, addressed by SHA-256."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sha256: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    size: int = Field(ge=0)
    media_type: str = Field("text/plain; charset=utf-8", max_length=100)
    summary: str = Field("", max_length=SUMMARY_MAX_CHARS)

    @property
    def short(self) -> str:
        """A short human label, e.g. ``sha256:9f1e2a3b…(12345 B)``."""
        return f"sha256:{self.sha256[:12]}…({self.size} B)"
