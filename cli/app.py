"""The ``navigator`` typer app: one ``typer.Typer()`` per command group, mounted here.

Groups: ``serve`` (server, worker), ``explore`` (explore), ``ask`` (ask), ``investigate`` (investigate), ``signals``
(approve, reject, stop, mode, budget), ``reads`` (status, log, result, ls, ui),
``config`` (show) and, when its module is installed, ``batch``.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Annotated

import typer

from durable_navigator.cli.ask import ask_app
from durable_navigator.cli.investigate import investigate_app
from durable_navigator.cli.common import GlobalOptions, config_of, print_json, stdout
from durable_navigator.cli.errors import EXIT_CODE_DOC, handles_errors
from durable_navigator.cli.exits import run_and_exit
from durable_navigator.cli.explore import explore_app
from durable_navigator.cli.reads import reads_app
from durable_navigator.cli.serve import serve_app
from durable_navigator.cli.signals import signals_app

__all__ = ["app", "main"]

app = typer.Typer(
    name="navigator",
    help=(
        "Durable navigator: an LLM explores a repository through a budgeted repo map inside a "
        f"Temporal workflow and hands over the best context window. {EXIT_CODE_DOC}"
    ),
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)
config_app = typer.Typer(help="Inspect the configuration.")


@app.callback()
def root(
    ctx: typer.Context,
    config: Annotated[
        Path | None,
        typer.Option("--config", help="navigator.yaml to use (default ./navigator.yaml, then the user config dir).",
                     envvar="NAVIGATOR_CONFIG"),
    ] = None,
    log_json: Annotated[
        bool | None, typer.Option("--log-json/--log-console", help="Log as JSON lines (default: readable console).")
    ] = None,
    log_level: Annotated[str | None, typer.Option("--log-level", help="debug, info, warning or error.")] = None,
) -> None:
    """Global options, stored for the commands (config is loaded lazily, errors reported by them)."""
    ctx.obj = GlobalOptions(config_path=config, log_json=log_json, log_level=log_level)


@config_app.command("show")
@handles_errors
def config_show(
    ctx: typer.Context,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Print the effective configuration (credentials shown only as set / unset)."""
    config = config_of(ctx)
    data = config.public_dict()
    if json_out:
        print_json(data)
        return
    stdout.print(f"config file: {config.source or '(none: defaults + environment)'}", markup=False)
    target = config.temporal.address or f"embedded {config.embedded.ip}:{config.embedded.port}"
    stdout.print(f"temporal: {target} · namespace {config.temporal.namespace} · task queue "
                 f"{config.temporal.task_queue}", markup=False)
    stdout.print(f"TEMPORAL_API_KEY: {'set' if config.temporal.api_key else 'unset'} · "
                 f"GEMINI/GOOGLE key: {'set' if config.gemini_key_present else 'unset'}")
    stdout.print(f"model: {config.model} · pricing override: {config.pricing_file or 'none'}", markup=False)
    stdout.print("endpoints (--model <endpoint>:<model>):", markup=False)
    for name, endpoint in data["endpoints"].items():
        key = "no key" if endpoint["api_key_env"] is None else \
            f"{endpoint['api_key_env']} {'set' if endpoint['api_key_set'] else 'unset'}"
        prices = ", ".join("every model" if m == "*" else m for m in sorted(endpoint["prices"])) or \
            "shipped table / pricing_file"
        origin = "built-in" if endpoint["builtin"] else "navigator.yaml"
        stdout.print(f"  {name}: {endpoint['base_url']} · {key} · tool calling {endpoint['tool_calling']} · "
                     f"prices: {prices} · {origin}", markup=False, soft_wrap=True)


app.add_typer(serve_app)
app.add_typer(explore_app)
app.add_typer(ask_app)
app.add_typer(investigate_app)
app.add_typer(signals_app)
app.add_typer(reads_app)
app.add_typer(config_app, name="config")


def _mount_batch() -> None:
    """Mount ``navigator batch`` if ``cli/batch.py`` (another module of this package) exists."""
    if importlib.util.find_spec("durable_navigator.cli.batch") is None:
        return
    # imported only when present; an ImportError inside it is a real bug and must surface
    module = importlib.import_module("durable_navigator.cli.batch")
    app.add_typer(module.batch_app, name="batch")


_mount_batch()


def main() -> None:
    """Console-script entry point (``navigator``): run the app, leave without interpreter teardown.

    See ``cli/exits.py`` for why (the Temporal bridge's threads abort a finalizing interpreter).
    """
    run_and_exit(app)
