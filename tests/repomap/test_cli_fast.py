"""``repo-map generate``'s fast path (no typer) prints what the typer app prints, byte for byte."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from durable_navigator.repomap.cli import app, fast_generate_args
from tests.support.repomap import copy_fixture

# the fast path ends with ``os._exit`` (no interpreter teardown): the module list is written then
_MAIN = ("import json, os, sys\n"
         "from durable_navigator.repomap.cli import main\n"
         "sys.argv = ['repo-map', *sys.argv[1:]]\n"
         "def report():\n"
         "    sys.stderr.write('\\nMODULES ' + json.dumps(sorted(sys.modules)) + '\\n')\n"
         "    sys.stderr.flush()\n"
         "_exit = os._exit\n"
         "os._exit = lambda code: (report(), _exit(code))\n"
         "try:\n    main()\n"
         "finally:\n    report()\n")


def _fast(args: list[str], env: dict[str, str]) -> tuple[int, str, str, set[str]]:
    proc = subprocess.run([sys.executable, "-c", _MAIN, *args], capture_output=True, text=True, timeout=120,
                          env={**__import__("os").environ, **env})
    err, _, mods = proc.stderr.rpartition("\nMODULES ")
    return proc.returncode, proc.stdout, err, set(json.loads(mods))


@pytest.mark.parametrize("extra", [
    ["--budget", "300", "--goal", "charge tokens"],
    ["--goal=charge tokens", "--budget=300", "--format", "json"],
    ["--budget", "120"],
    ["--format", "xml"],
    ["--budget", "7", "--goal", "tight"],
])
def test_fast_path_prints_what_typer_prints(tmp_path: Path, extra: list[str]) -> None:
    root = copy_fixture("python", tmp_path)
    env = {"NAVIGATOR_CACHE_DIR": str(tmp_path / "cache")}
    args = ["generate", str(root), *extra]
    assert fast_generate_args(args) is not None
    code, out, err, modules = _fast(args, env)
    typed = CliRunner().invoke(app, args, env=env)
    if "json" in extra:  # the metadata's timings_ms differ from run to run; the rest may not
        out, typed_out = (json.loads(o) for o in (out, typed.stdout))
        for doc in (out, typed_out):
            assert doc["metadata"].pop("timings_ms").keys() == {"open", "rank", "fit_render"}
    else:
        typed_out = typed.stdout
    assert (code, out) == (typed.exit_code, typed_out), err
    assert err.strip() == typed.stderr.strip()
    assert not any(m == "typer" or m.startswith("typer.") for m in modules)


def test_fast_path_exits_without_teardown_and_leaves_a_closed_cache(tmp_path: Path) -> None:
    """The fast path ends the process with ``os._exit`` after closing the cache: its write-ahead
    log is checkpointed and removed as on an ordinary exit, and the next run reads the cache warm."""
    root = copy_fixture("python", tmp_path)
    cache = tmp_path / "cache"
    args = [sys.executable, "-m", "durable_navigator.repomap.cli", "generate", str(root), "--budget", "300",
            "--cache-dir", str(cache)]
    first = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert first.returncode == 0 and first.stdout.startswith("# repo-map "), first.stderr
    db = next(cache.glob("repomap-*.sqlite3"))
    assert not Path(f"{db}-wal").exists()
    again = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert (again.returncode, again.stdout) == (0, first.stdout), again.stderr


def test_fast_path_with_a_plan_file(tmp_path: Path) -> None:
    root = copy_fixture("python", tmp_path)
    plan = tmp_path / "plan.yaml"
    plan.write_text("token_budget: 250\nfocus_symbols:\n  - symbol: charge\n")
    env = {"NAVIGATOR_CACHE_DIR": str(tmp_path / "cache")}
    args = ["generate", str(root), "--plan", str(plan), "--goal", "charge"]
    code, out, err, _ = _fast(args, env)
    typed = CliRunner().invoke(app, args, env=env)
    assert code == typed.exit_code == 0 and out == typed.stdout, err


@pytest.mark.parametrize("args", [
    [], ["stats", "x"], ["generate"], ["generate", "--help"], ["generate", "a", "b"], ["generate", ""],
    ["generate", "a", "--budget", "-1"], ["generate", "a", "--budget", "007"], ["generate", "a", "--budget", "+5"],
    ["generate", "a", "--budget", "1", "--budget", "2"], ["generate", "a", "--bogus", "1"],
    ["generate", "a", "--goal"], ["generate", "a", "--goal", "-x"], ["generate", "a", "--timings", "--timings"],
    ["generate", "a", "--"], ["generate", "a", "-h"],
])
def test_anything_unusual_goes_to_typer(args: list[str]) -> None:
    assert fast_generate_args(args) is None


def test_plain_command_lines_are_read_as_typer_reads_them() -> None:
    got = fast_generate_args(["generate", "--goal", "g h", "repo", "--budget=0", "--timings", "--jobs", "2",
                              "--cache-dir", "c", "--plan=p.yaml", "--format", "json"])
    assert got == {"path": Path("repo"), "goal": "g h", "budget": 0, "timings": True, "jobs": 2,
                   "cache_dir": Path("c"), "plan": Path("p.yaml"), "fmt": "json"}


def test_the_default_plan_is_flightplans_default() -> None:
    from dataclasses import asdict

    from durable_navigator.navtypes.flightplan import FlightPlan
    from durable_navigator.repomap.cli_generate import DefaultPlan

    plain = asdict(DefaultPlan(token_budget=300, goal="g"))
    model = FlightPlan(token_budget=300, goal="g").model_dump()
    assert plain.keys() == model.keys()
    assert {k: list(v) if isinstance(v, tuple) else v for k, v in plain.items()} == model


def test_the_engine_renders_the_default_plan_as_the_model(tmp_path: Path) -> None:
    from durable_navigator.navtypes.flightplan import FlightPlan
    from durable_navigator.repomap import RepoMap
    from durable_navigator.repomap.cli_generate import DefaultPlan

    rm = RepoMap.open(copy_fixture("python", tmp_path), cache_dir=tmp_path / "cache", jobs=1)
    for budget, goal in ((300, "charge tokens"), (4096, None), (60, "budget")):
        text = rm.render(FlightPlan(token_budget=budget, goal=goal)).text
        assert rm.render_text(DefaultPlan(token_budget=budget, goal=goal)) == text
        assert rm.render(DefaultPlan(token_budget=budget, goal=goal)).text == text


def test_a_warm_generate_imports_neither_typer_nor_pydantic(tmp_path: Path) -> None:
    root = copy_fixture("python", tmp_path)
    env = {"NAVIGATOR_CACHE_DIR": str(tmp_path / "cache")}
    args = ["generate", str(root), "--goal", "charge tokens", "--budget", "300"]
    first = _fast(args, env)
    code, out, err, modules = _fast(args, env)
    assert code == 0 and out == first[1], err
    heavy = sorted(m for m in modules if m.split(".")[0] in ("typer", "pydantic", "pydantic_core", "rich", "yaml"))
    assert heavy == []


def test_a_relative_cache_dir_builds_and_reuses_the_index(tmp_path: Path) -> None:
    """``--cache-dir cc`` (relative to the working directory) once failed every cold build:
    the read-only database connection opens the file by URI, which a relative path cannot be."""
    copy_fixture("python", tmp_path)
    for _ in range(2):  # cold, then warm from the same relative directory
        proc = subprocess.run([sys.executable, "-m", "durable_navigator.repomap.cli", "generate", "python",
                               "--cache-dir", "cc", "--budget", "300"],
                              capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("# repo-map ") and "[L" in proc.stdout
    assert (tmp_path / "cc").is_dir()
