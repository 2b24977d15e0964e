"""The root command's options, kept on ``ctx.obj`` (stdlib only: the root of ``navigator --help``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from durable_navigator.cli.config import NavigatorConfig

__all__ = ["GlobalOptions"]


@dataclass
class GlobalOptions:
    """Options of the root callback, kept on ``ctx.obj``."""

    config_path: Path | None = None
    log_json: bool | None = None
    log_level: str | None = None
    _config: NavigatorConfig | None = None
