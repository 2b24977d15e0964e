"""``navigator --help`` loads no command module; every command is listed with its own help; every
option shows its default. (Start-up *time* is measured by ``bench/cli_startup.py``, never here.)"""

from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version

import pytest
import typer.main

from durable_navigator.cli.app import COMMANDS, app
from durable_navigator.cli.lazy import load_command
from tests.support.e2e import NAVIGATOR

#: what ``navigator --help`` must not import: each costs a noticeable part of a second
HEAVY = ("temporalio", "pydantic", "rich", "yaml", "numpy", "durable_navigator.navcore",
         "durable_navigator.workers", "durable_navigator.repomap", "durable_navigator.cli.explore")


def _imported_by(args: list[str]) -> set[str]:
    """The modules a fresh interpreter holds after running ``navigator ARGS`` (help output discarded)."""
    code = ("import json, sys\n"
            "from durable_navigator.cli.app import app\n"
            "try:\n    app(sys.argv[1:], prog_name='navigator')\nexcept SystemExit:\n    pass\n"
            "sys.stderr.write('MODULES ' + json.dumps(sorted(sys.modules)) + '\\n')")
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)
    marker = [line for line in proc.stderr.splitlines() if line.startswith("MODULES ")]
    assert marker and "Usage: navigator" in proc.stdout or "navigator (durable-navigator)" in proc.stdout, proc.stderr
    return set(json.loads(marker[0][len("MODULES "):]))


@pytest.mark.parametrize("args", [["--help"], ["--version"], ["server", "--help"], ["explore", "--help"],
                                  ["ask", "--help"], ["investigate", "--help"], ["status", "--help"],
                                  ["ls", "--help"], ["approve", "--help"], ["mode", "--help"], ["map", "--help"],
                                  ["worker", "--help"], ["mcp", "--help"], ["batch", "--help"],
                                  ["batch", "run", "--help"], ["config", "show", "--help"]])
def test_root_help_and_version_import_no_command_module(args: list[str]) -> None:
    modules = _imported_by(args)
    heavy = sorted(m for m in modules if m.startswith(HEAVY))
    if args[0] == "server":
        # a command's own help loads that command's module, and only what it needs
        assert "durable_navigator.cli.server" in modules and "durable_navigator.cli.explore" not in modules
        return
    # a command's help comes from its light signature module (cli/run_commands.py, cli/signatures.py)
    assert heavy == [], heavy


def test_help_lists_every_command_in_table_order_and_version_prints() -> None:
    shown = subprocess.run([str(NAVIGATOR), "--help"], capture_output=True, text=True, timeout=60, check=True)
    listed = [line.split()[0] for line in shown.stdout.split("Commands:")[1].splitlines() if line.strip()]
    assert listed == list(COMMANDS)
    assert "Exit codes: 0 ok" in " ".join(shown.stdout.split())
    printed = subprocess.run([str(NAVIGATOR), "--version"], capture_output=True, text=True, timeout=60, check=True)
    assert printed.stdout.strip() == f"navigator (durable-navigator) {version('durable-navigator')}"


def _all_commands() -> list[tuple[str, object]]:
    found: list[tuple[str, object]] = []
    for name, spec in COMMANDS.items():
        command = load_command(name, spec)
        found.append((name, command))
        for sub_name, sub in getattr(command, "commands", {}).items():
            found.append((f"{name} {sub_name}", sub))
    return found


def test_the_table_matches_each_commands_own_help() -> None:
    for name, spec in COMMANDS.items():
        command = load_command(name, spec)
        assert command.get_short_help_str(limit=500) == spec.help, name  # type: ignore[attr-defined]
        assert len(spec.help) <= 60, f"{name}: keep the one-line help short enough for 80 columns"
    # nothing a command module defines is missing from the table
    root = typer.main.get_command(app)
    for module_app in {(s.module, s.app) for s in COMMANDS.values() if not s.group}:
        converted = typer.main.get_command(getattr(__import__(module_app[0], fromlist=["x"]), module_app[1]))
        names = set(getattr(converted, "commands", {}) or {converted.name})
        assert names <= set(COMMANDS), names - set(COMMANDS)
    assert root.list_commands(None) == list(COMMANDS)  # type: ignore[arg-type]


def test_every_option_shows_its_default() -> None:
    missing = []
    for name, command in _all_commands():
        ctx = typer.Context(command, info_name=name)  # type: ignore[arg-type]
        for param in command.params:  # type: ignore[attr-defined]
            if param.param_type_name != "option" or param.name == "help":
                continue
            record = param.get_help_record(ctx)
            if record is None or "default:" not in record[1]:
                missing.append(f"{name} {param.opts[0]}")
    assert missing == [], missing
