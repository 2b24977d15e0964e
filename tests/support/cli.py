"""CLI test helpers: run the typer app in a thread (commands call ``asyncio.run``)."""

from __future__ import annotations

from tests.support import FIXTURE_REPO as FIXTURE_REPO_DIR

import asyncio
import json
from collections.abc import Mapping
from typing import Any

from typer.testing import CliRunner, Result

from durable_navigator.cli.app import app

FIXTURE_REPO = FIXTURE_REPO_DIR
RUNNER = CliRunner()


def invoke(args: list[str], env: Mapping[str, str] | None = None) -> Result:
    """Run ``navigator ARGS`` in-process; exceptions other than exits propagate."""
    return RUNNER.invoke(app, args, env=dict(env or {}), catch_exceptions=False)


async def ainvoke(args: list[str], env: Mapping[str, str] | None = None) -> Result:
    """:func:`invoke` from async tests: a thread, so the command gets its own event loop."""
    return await asyncio.to_thread(invoke, args, env)


def json_of(result: Result) -> Any:
    """The command's stdout parsed as JSON (fails with the output on error)."""
    assert result.exit_code == 0, (result.exit_code, result.stdout, result.stderr)
    return json.loads(result.stdout)
