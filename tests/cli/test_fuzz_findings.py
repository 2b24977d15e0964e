"""Bugs ``bench/fuzz_surfaces.py`` found (issue #29's fuzzing bar), each as the call that showed it.

Every case runs against the session's real dev server, so the call gets as far as a user's
would: a refusal must come before the RPC, with one error line and exit code 2, never a traceback.
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import timedelta

import pytest
from temporalio.client import Client

from tests.support.batch import priced_activities
from tests.support.cli import ainvoke
from tests.support.investigation import branch_request

#: what a non-UTF-8 byte in argv becomes (Python decodes argv with surrogateescape)
NOT_UTF8 = os.fsdecode(b"nav-\xff")


@pytest.mark.parametrize("args", [
    ["status", NOT_UTF8], ["log", NOT_UTF8], ["result", NOT_UTF8, "--json"], ["stop", NOT_UTF8],
    ["approve", NOT_UTF8], ["reject", NOT_UTF8, "-f", "x"], ["mode", NOT_UTF8, "autonomous"],
    ["budget", NOT_UTF8, "0.1"], ["batch", "status", NOT_UTF8], ["batch", "stop", NOT_UTF8],
])
async def test_a_non_utf8_run_id_is_refused_not_a_traceback(client: Client, tmp_path, args: list[str]) -> None:
    (tmp_path / "navigator.yaml").write_text("{}\n")
    env = {"TEMPORAL_ADDRESS": client.service_client.config.target_host,
           "NAVIGATOR_CONFIG": str(tmp_path / "navigator.yaml")}
    result = await ainvoke(args, env)
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and "not valid UTF-8" in errors[0], result.stderr


async def test_ls_of_a_non_utf8_repository_is_refused_before_the_query(client: Client, tmp_path) -> None:
    # before: the list query carried the surrogate and the RPC raised UnicodeEncodeError (a traceback)
    (tmp_path / "navigator.yaml").write_text("{}\n")
    env = {"TEMPORAL_ADDRESS": client.service_client.config.target_host,
           "NAVIGATOR_CONFIG": str(tmp_path / "navigator.yaml")}
    result = await ainvoke(["ls", "--repo", os.fsdecode(b"/nonexistent/\xff")], env)
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "--repo" in result.stderr and "not valid UTF-8" in result.stderr, result.stderr


@pytest.mark.parametrize("level", ["loud", "", "5"])
async def test_an_unknown_log_level_is_a_usage_error_not_a_traceback(client: Client, tmp_path, level: str) -> None:
    (tmp_path / "navigator.yaml").write_text("{}\n")
    env = {"TEMPORAL_ADDRESS": client.service_client.config.target_host,
           "NAVIGATOR_CONFIG": str(tmp_path / "navigator.yaml")}
    result = await ainvoke(["--log-level", level, "status", "nav-x"], env)
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and "use debug, info, warning or error" in errors[0], result.stderr
    assert (await ainvoke(["--log-level", "DEBUG", "status", "nav-x"], env)).exit_code == 4  # levels in any case


@pytest.mark.parametrize("command", ["generate", "stats"])
def test_repo_map_with_a_file_as_cache_dir_exits_2_with_one_line(tmp_path, command: str) -> None:
    from typer.testing import CliRunner

    from durable_navigator.repomap.cli_app import app
    from tests.support.cli import FIXTURE_REPO

    not_a_dir = tmp_path / "cache-file"
    not_a_dir.write_text("x")
    for cache in (not_a_dir, not_a_dir / "below"):
        result = CliRunner().invoke(app, [command, str(FIXTURE_REPO), "--cache-dir", str(cache)],
                                    catch_exceptions=False)
        assert result.exit_code == 2, (result.exit_code, result.stdout)
        err = result.stderr
        assert err.count("\n") == 1 and "cannot be used" in err and "--cache-dir" in err, err


@pytest.mark.parametrize("command", ["generate", "stats"])
def test_repo_map_on_a_path_too_long_for_the_file_system_exits_2_with_one_line(command: str) -> None:
    from typer.testing import CliRunner

    from durable_navigator.repomap.cli_app import app

    # before: OSError ENAMETOOLONG out of Path.exists() as a traceback, exit 1 (repo-map's "a bug" code)
    result = CliRunner().invoke(app, [command, "a" * 300], catch_exceptions=False)
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    err = result.stderr
    assert err.count("\n") == 1 and "cannot be read (File name too long)" in err, err
    assert "pass the path of a checked-out repository" in err and len(err) < 300, err


async def test_log_of_a_finished_branches_run_lists_its_branches(
        client: Client, task_queue: str, tmp_path, start_worker) -> None:
    # before: exit 2, "Query handler for 'get_decision_log' expected but not found" (the parent keeps no log)
    from durable_navigator.workflows.branches import ExploreBranchesWorkflow

    wid = f"branches-log-{uuid.uuid4()}"
    async with start_worker(priced_activities(tmp_path)):
        result = await client.execute_workflow(ExploreBranchesWorkflow.run, branch_request(tmp_path), id=wid,
                                               task_queue=task_queue, execution_timeout=timedelta(seconds=180))
    (tmp_path / "navigator.yaml").write_text("{}\n")
    env = {"TEMPORAL_ADDRESS": client.service_client.config.target_host,
           "NAVIGATOR_CONFIG": str(tmp_path / "navigator.yaml"), "NAVIGATOR_TASK_QUEUE": task_queue}
    human = await ainvoke(["log", wid], env)
    assert human.exit_code == 0, (human.exit_code, human.stderr)
    assert "no decisions of its own" in human.stdout, human.stdout
    assert all(c.workflow_id in " ".join(human.stdout.split()) for c in result.children), human.stdout
    as_json = await ainvoke(["log", wid, "--json"], env)
    assert as_json.exit_code == 0, (as_json.exit_code, as_json.stderr)
    assert {c["workflow_id"] for c in json.loads(as_json.stdout)["children"]} == {
        c.workflow_id for c in result.children}


async def test_ls_of_a_repo_path_too_long_for_the_file_system_answers_not_a_traceback(client: Client, tmp_path) -> None:
    # before: OSError ENAMETOOLONG out of Path.is_dir() as a traceback, exit 1 (fuzz seed 53)
    (tmp_path / "navigator.yaml").write_text("{}\n")
    env = {"TEMPORAL_ADDRESS": client.service_client.config.target_host,
           "NAVIGATOR_CONFIG": str(tmp_path / "navigator.yaml")}
    result = await ainvoke(["ls", "--repo", "a" * 300, "--json"], env)
    assert result.exit_code == 0, (result.exit_code, result.stderr)
    assert json.loads(result.stdout) == []


@pytest.mark.parametrize("option", ["--reason", "--sender"])
def test_batch_stop_with_non_utf8_text_is_refused_on_one_line(isolated_config, option: str) -> None:
    from tests.support.cli import invoke

    # before: pydantic ValidationError (string_unicode) for BatchStopInput as a traceback, exit 1 (fuzz seed 53)
    result = invoke(["batch", "stop", "fz-batch-1", option, NOT_UTF8], isolated_config())
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
    assert f"{option} " in result.stderr and "not valid UTF-8" in result.stderr, result.stderr


@pytest.mark.parametrize("command", [["stop", "nav-x"], ["batch", "stop", "fz-batch-1"]])
@pytest.mark.parametrize("reason, needle", [(NOT_UTF8, "not valid UTF-8"), ("r" * 501, "at most 500")])
def test_a_stop_reason_no_message_takes_is_refused_by_its_option(
    isolated_config, tmp_path, command: list[str], reason: str, needle: str
) -> None:
    from tests.support.cli import invoke

    # one option check serves both stop commands (batch stop checked inline; a 501-character reason was cut to 500)
    result = invoke([*command, "--reason", reason], isolated_config())
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert result.stderr.startswith("Error: --reason ") and result.stderr.count("\n") == 1, result.stderr
    assert needle in result.stderr, result.stderr
    assert not (tmp_path / "temporal.db").exists()  # refused before any server is started or reached
