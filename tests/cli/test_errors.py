"""Exit codes and error texts of commands that fail before (or without) a server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.support.cli import FIXTURE_REPO, invoke, json_of

from durable_navigator.cli.config import load_config
from durable_navigator.cli.connect import ui_base_for
from durable_navigator.workers.devserver import free_port, workflow_ui_url


def test_help_lists_every_command() -> None:
    result = invoke(["--help"])
    assert result.exit_code == 0
    for name in ("server", "worker", "explore", "approve", "reject", "stop", "mode", "budget",
                 "status", "log", "result", "ls", "ui"):
        assert name in result.stdout
    assert "Exit codes" in result.stdout


def test_unreachable_address_exits_3(isolated_config: Callable[..., dict[str, str]]) -> None:
    env = isolated_config(TEMPORAL_ADDRESS=f"127.0.0.1:{free_port()}")
    result = invoke(["status", "nav-x"], env)
    assert result.exit_code == 3
    assert result.stderr.startswith("Error: cannot reach Temporal at 127.0.0.1:")
    assert result.stderr.count("\n") == 1 and result.stdout == ""


def test_nothing_on_embedded_port_exits_3(isolated_config: Callable[..., dict[str, str]]) -> None:
    env = isolated_config()
    for args in (["log", "nav-x"], ["approve", "nav-x", "--turn", "1"], ["ls"],
                 ["explore", str(FIXTURE_REPO), "goal", "--detach"]):
        result = invoke(args, env)
        assert result.exit_code == 3, (args, result.stderr)
        assert "nothing listens on 127.0.0.1:" in result.stderr and "navigator server" in result.stderr


def test_explore_refuses_bad_input_before_any_server(isolated_config: Callable[..., dict[str, str]], tmp_path: Path) -> None:
    env = isolated_config()
    repo = str(FIXTURE_REPO)
    cases = [
        ([str(tmp_path / "missing"), "goal"], "does not exist"),
        ([str(FIXTURE_REPO / "README.md"), "goal"], "is not a directory"),
        ([repo, "   "], "GOAL is empty"),
        ([repo, "goal", "--budget-usd", "0"], "must be above 0"),
        ([repo, "goal", "--budget-usd", "lots"], "must be a number of dollars"),
        ([repo, "goal", "--model", "gpt-9"], "unknown model 'gpt-9'"),
        ([repo, "goal", "--model", "gemini-9-ultra"], "has no price"),
        ([repo, "goal", "--tokens", "99999999"], "is above the largest map of 2,000,000 tokens"),
        ([repo, "goal", "--model", f"scripted:{tmp_path / 'nope.yaml'}"], "nope.yaml does not exist"),
    ]
    for args, message in cases:
        result = invoke(["explore", *args], env)
        assert result.exit_code == 2, (args, result.stderr)
        assert message in result.stderr, (args, result.stderr)
        assert result.stderr.startswith("Error: ")
    assert not (tmp_path / "temporal.db").exists()  # nothing started, nothing half-written


def test_gemini_without_key_is_refused_for_a_local_worker(
    isolated_config: Callable[..., dict[str, str]], tmp_path: Path
) -> None:
    """The in-process worker is this process: the same check runs here, before any server starts."""
    env = isolated_config(GEMINI_API_KEY="", GOOGLE_API_KEY="")
    result = invoke(["explore", str(FIXTURE_REPO), "goal", "--model", "gemini-2.5-flash",
                     "--out", str(tmp_path / "out")], env)
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: model 'gemini-2.5-flash' cannot be served by the in-process worker: "
                                    "no Gemini credentials on the worker: set GEMINI_API_KEY")
    assert result.stderr.count("\n") == 1 and result.stdout == ""
    assert not (tmp_path / "temporal.db").exists() and not (tmp_path / "out").exists()


def test_invalid_config_is_printed_field_by_field(tmp_path: Path) -> None:
    cfg = tmp_path / "navigator.yaml"
    cfg.write_text("defaults:\n  budget_usd: -1\ntemporal:\n  namespace: ''\n")
    result = invoke(["ls"], {"NAVIGATOR_CONFIG": str(cfg)})
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert lines[0] == "Error: 2 configuration problem(s):"
    assert sorted(line.split(":")[0].strip() for line in lines[1:]) == ["- defaults.budget_usd", "- temporal.namespace"]


def test_usage_errors_exit_2(isolated_config: Callable[..., dict[str, str]]) -> None:
    env = isolated_config()
    assert invoke(["ls", "--status", "bogus"], env).exit_code == 2
    result = invoke(["budget", "nav-x", "abc"], env)
    assert result.exit_code == 2 and "ADD_USD must be a number" in result.stderr
    assert invoke(["mode", "nav-x", "sideways"], env).exit_code == 2
    assert invoke(["explore"], env).exit_code == 2


def test_ui_link_of_a_run_needs_its_server(isolated_config: Callable[..., dict[str, str]]) -> None:
    """A link is printed only for a run that exists (exit 4 otherwise, tests/cli/test_servers.py); with no
    server there is neither the run nor its Web UI: exit 3."""
    env = isolated_config()
    result = invoke(["ui", "nav-abc"], env)
    assert result.exit_code == 3, result.stderr
    assert result.stdout == "" and "nothing listens on 127.0.0.1:" in result.stderr
    remote = invoke(["ui", "nav-abc"], {**env, "TEMPORAL_ADDRESS": "temporal.internal:7233"})
    assert remote.exit_code == 2 and "TEMPORAL_UI_URL" in remote.stderr
    cloud = load_config(cwd=Path("/"), env={"TEMPORAL_ADDRESS": "ns.acct.tmprl.cloud:7233", "TEMPORAL_NAMESPACE": "ns.acct"})
    base = ui_base_for(cloud)
    assert base is not None
    assert workflow_ui_url(base, cloud.temporal.namespace, "nav-abc") == \
        "https://cloud.temporal.io/namespaces/ns.acct/workflows/nav-abc"


def test_config_show_never_prints_credentials(isolated_config: Callable[..., dict[str, str]]) -> None:
    env = isolated_config(TEMPORAL_API_KEY="tmprl-very-secret-1", GEMINI_API_KEY="gem-very-secret-2")
    for args in (["config", "show"], ["config", "show", "--json"]):
        result = invoke(args, env)
        assert result.exit_code == 0
        assert "very-secret" not in result.stdout + result.stderr
    data = json_of(invoke(["config", "show", "--json"], env))
    assert data["temporal"]["api_key_set"] is True and data["gemini_key_present"] is True


def test_explore_refuses_a_bad_run_profile(isolated_config: Callable[..., dict[str, str]], tmp_path: Path) -> None:
    env = isolated_config()
    bad = tmp_path / "profile.yaml"
    bad.write_text("loop:\n  bogus: 1\n")
    result = invoke(["explore", str(FIXTURE_REPO), "goal", "--profile", str(bad)], env)
    assert result.exit_code == 2
    assert result.stderr == f"Error: {bad}: loop.bogus: Extra inputs are not permitted (1 error(s) in total)\n"
    missing = invoke(["explore", str(FIXTURE_REPO), "goal", "--profile", str(tmp_path / "nope.yaml")], env)
    assert missing.exit_code == 2 and "does not exist" in missing.stderr


def test_explore_refuses_an_unknown_planning_mode(isolated_config: Callable[..., dict[str, str]]) -> None:
    result = invoke(["explore", str(FIXTURE_REPO), "goal", "--planning", "maybe"], isolated_config())
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: invalid planning:") and result.stderr.count("\n") == 1


def test_the_shipped_example_run_profile_loads_and_readme_names_it() -> None:
    from durable_navigator.activities.profiles import load_run_profile
    from tests.support import REPO_ROOT

    example = REPO_ROOT / "examples" / "run-profile.yaml"
    profile = load_run_profile(example)
    assert profile.name == "careful-review" and profile.stall.stop_after == 10 and profile.planning.review
    assert profile.stream is not None and profile.stream.first_chunk_timeout_s == 90
    assert "examples/run-profile.yaml" in (REPO_ROOT / "README.md").read_text()
