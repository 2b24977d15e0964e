"""Shared plumbing of the command groups: global options, config, asyncio, JSON output."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import typer
from pydantic import BaseModel

from durable_navigator.cli.consoles import stdout

from durable_navigator.cli.config import NavigatorConfig, load_config
from durable_navigator.cli.options import GlobalOptions
from durable_navigator.workers.logging import configure_logging

__all__ = [
    "GlobalOptions",
    "JsonOpt",
    "WorkflowIdArg",
    "stdout",
    "config_of",
    "run_async",
    "cancel_and_wait",
    "print_json",
    "to_jsonable",
]

T = TypeVar("T")


# the shared option types live with the global options (typer only: light command signatures use them)
from durable_navigator.cli.options import JsonOpt, WorkflowIdArg  # noqa: E402


def config_of(ctx: typer.Context) -> NavigatorConfig:
    """Load (once) and return the configuration; also configures logging once."""
    opts = ctx.find_root().obj
    if not isinstance(opts, GlobalOptions):
        opts = GlobalOptions()
        ctx.find_root().obj = opts
    if opts._config is None:
        config = load_config(opts.config_path)
        json_output = opts.log_json if opts.log_json is not None else config.log.json_output
        level = opts.log_level or config.log.level
        # CLI logs are diagnostics: warnings and up unless asked, so progress stays readable
        configure_logging(json_output=json_output, level=level if opts.log_level else "warning")
        if not opts.log_level:
            # the in-process worker logs every failed activity attempt with a traceback; the
            # command reports the run's failure itself, so keep the terminal readable
            logging.getLogger("temporalio").setLevel(logging.ERROR)
        opts._config = config
    return opts._config


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run one command's coroutine (sync typer commands wrap ``asyncio.run``)."""
    return asyncio.run(coro)


async def cancel_and_wait(*tasks: asyncio.Future[Any]) -> None:
    """Cancel ``tasks`` still pending and wait until each has finished.

    A command never leaves a Temporal call running behind it: a call left pending
    when ``asyncio.run`` returns is completed (or cancelled) later by the SDK's Rust
    thread, which then calls into a Python that may already be shutting down.
    Results and errors of the tasks are the caller's business; here they are consumed.
    """
    pending = [task for task in tasks if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        # asyncio.wait never raises the tasks' errors; our own cancellation still propagates
        await asyncio.wait(pending)
    for task in tasks:
        if not task.cancelled():
            task.exception()  # mark it retrieved: no "exception was never retrieved" at exit


def to_jsonable(value: Any) -> Any:
    """pydantic models / lists / dicts → plain JSON types."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, Path):
        return str(value)
    return value


def print_json(value: Any) -> None:
    """Write ``value`` as indented JSON to stdout (sorted keys for stable scripts)."""
    typer.echo(json.dumps(to_jsonable(value), indent=2, sort_keys=True, default=str))
