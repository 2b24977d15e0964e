"""Fixtures of the CLI tests (helpers live in ``cli_support.py``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from durable_navigator.workers.devserver import free_port


@pytest.fixture
def isolated_config(tmp_path: Path) -> Callable[..., dict[str, str]]:
    """Environment pointing the CLI at a private navigator.yaml (embedded ports free, db in tmp)."""

    def make(**extra: str) -> dict[str, str]:
        cfg = tmp_path / "navigator.yaml"
        cfg.write_text(
            "embedded:\n"
            f"  port: {free_port()}\n  ui_port: {free_port()}\n  db_filename: {tmp_path / 'temporal.db'}\n"
        )
        return {"NAVIGATOR_CONFIG": str(cfg), "TEMPORAL_ADDRESS": "", **extra}

    return make
