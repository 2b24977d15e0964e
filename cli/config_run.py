"""What ``cli/config_cmd.py``'s commands run: ``navigator config show``: the effective configuration.

The commands' signatures and help are in :mod:`cli.config_cmd` (standard library + typer only,
so their ``--help`` imports nothing of this)."""

from __future__ import annotations

import typer

from durable_navigator.cli.common import config_of, print_json, stdout
from durable_navigator.cli.errors import handles_errors

__all__ = ["run_config_show"]


@handles_errors
def run_config_show(
    ctx: typer.Context,
    json_out: bool,
) -> None:
    """The ``navigator config show`` command (its options and help: :mod:`cli.config_cmd`)."""
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
