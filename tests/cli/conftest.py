"""Fixtures of the CLI tests (helpers live in ``cli_support.py``)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from durable_navigator.workers.devserver import free_port


@pytest.fixture(autouse=True)
def _logging_as_it_was() -> Iterator[None]:
    """Undo the logging set up by an in-process command (``--log-level DEBUG``, a handler on the runner's
    stderr) when the test ends: configured once per process, it leaked into later tests' stderr (a
    ``Using selector`` debug line, or "Logging error" on the closed stream) where a real call is a new process."""
    from durable_navigator.workers import logging as navigator_logging

    root = logging.getLogger()
    handlers, level, configured = root.handlers[:], root.level, navigator_logging._state["configured"]
    yield
    root.handlers, navigator_logging._state["configured"] = handlers, configured
    root.setLevel(level)


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


@pytest.fixture
def eval_env(client, task_queue, tmp_path, monkeypatch) -> dict[str, str]:
    """The CLI pointed at the test server and task queue, with a private config and cache dir, and the
    artifact store of the tests' workers (``tmp_path/artifacts``: the eval scores the packs from it)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "navigator.yaml").write_text(f"artifacts:\n  dir: {tmp_path / 'artifacts'}\n")
    env = {"TEMPORAL_ADDRESS": client.service_client.config.target_host, "NAVIGATOR_TASK_QUEUE": task_queue,
           "NAVIGATOR_CONFIG": str(tmp_path / "navigator.yaml"), "NAVIGATOR_CACHE_DIR": str(tmp_path / "cache")}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for key in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "TEMPORAL_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    return env
