"""#29's repros at the command line: each is refused on one line before anything starts.

Each case failed before the fix: ``--budget-usd 0.0000001`` started a run that could never run,
``nan`` printed a 52-line ``decimal.InvalidOperation`` traceback, an empty repository started a
run that failed at its scan, a goal starting with ``-`` gave no hint about ``--``, ``ui`` printed a
link to a run that does not exist (exit 0), a jobs file with two problems in one job reported one,
and an empty jobs file pointed at ``bench/SOAK.md``. ``--detach`` keeps the old behaviour bounded:
with no server it ended with exit 3 instead of starting anything.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from temporalio.client import Client

from tests.support.cli import FIXTURE_REPO, ainvoke, invoke

RUN_COMMANDS = ("explore", "ask", "investigate")


def _refused(result: object, needle: str) -> str:
    stderr = result.stderr  # type: ignore[attr-defined]
    assert result.exit_code == 2, (result.exit_code, stderr)  # type: ignore[attr-defined]
    assert stderr.startswith("Error: ") and stderr.count("\n") == 1, stderr  # one line, no traceback
    assert needle in stderr, stderr
    return stderr


@pytest.mark.parametrize("budget, needle", [
    ("0.0000001", "below one micro-dollar"),
    ("nan", "must be a finite number"),
    ("-inf", "must be a finite number"),
    ("1e-400", "below one micro-dollar"),
    ("1e9", "out of range"),
    ("-3", "must be above 0"),
    ("0.5.5", "must be a number of dollars"),
])
def test_a_budget_no_run_can_use_is_refused_before_anything_starts(
    isolated_config: Callable[..., dict[str, str]], tmp_path: Path, budget: str, needle: str
) -> None:
    env = isolated_config()
    for command in RUN_COMMANDS:
        result = invoke([command, str(FIXTURE_REPO), "x y", "--budget-usd", budget, "--detach"], env)
        _refused(result, needle)
    assert not (tmp_path / "temporal.db").exists()


def test_an_empty_repository_is_refused_with_one_message_on_every_surface(
    isolated_config: Callable[..., dict[str, str]], tmp_path: Path
) -> None:
    env = isolated_config()
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    messages = {_refused(invoke([command, str(empty), "x y", "--detach"], env), "has no indexable files")
                for command in RUN_COMMANDS}
    mapped = invoke(["map", str(empty)], env)
    assert mapped.exit_code == 2 and "has no indexable files" in mapped.stderr
    assert len(messages) == 1, messages  # the same line from explore, ask and investigate
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(f"jobs:\n  - {{repo: {empty}, goal: x}}\n")
    batch = invoke(["batch", "run", str(jobs), "--budget-usd", "1"], env)
    assert batch.exit_code == 2 and next(iter(messages)).removeprefix("Error: ").strip() in batch.stderr
    assert not (tmp_path / "temporal.db").exists()


def test_a_goal_that_starts_with_a_dash_hints_at_double_dash(isolated_config: Callable[..., dict[str, str]]) -> None:
    env = isolated_config()
    for command, text in (("explore", "GOAL"), ("ask", "QUESTION"), ("investigate", "GOAL")):
        result = invoke([command, str(FIXTURE_REPO), "-w flag handling"], env)
        assert result.exit_code == 2, result.stderr
        assert f"If the {text} starts with '-', put -- before it: navigator {command} REPO -- \"-w …\"" in \
            " ".join(result.stderr.split()).replace("│", "").replace("  ", " "), result.stderr


def test_a_goal_with_control_characters_is_refused(isolated_config: Callable[..., dict[str, str]]) -> None:
    _refused(invoke(["explore", str(FIXTURE_REPO), "why\x1b[2J", "--detach"], isolated_config()),
             "control characters")


def test_a_jobs_file_reports_every_problem_of_a_job(isolated_config: Callable[..., dict[str, str]],
                                                    tmp_path: Path) -> None:
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(f'jobs:\n  - {{repo: {FIXTURE_REPO}, goal: "", model: nonsense}}\n')
    result = invoke(["batch", "run", str(jobs), "--budget-usd", "1"], isolated_config())
    assert result.exit_code == 2, result.stderr
    assert "2 configuration problem(s)" in result.stderr
    assert "job 0 (line 2) field 'goal'" in result.stderr and "unknown model 'nonsense'" in result.stderr
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    said = invoke(["batch", "run", str(empty), "--budget-usd", "1"], isolated_config())
    assert said.exit_code == 2 and "SOAK" not in said.stderr
    assert "a list of jobs, each with 'repo' and 'goal'" in said.stderr and "README.md, section Batch" in said.stderr


async def test_ui_of_a_run_that_does_not_exist_exits_4(client: Client, tmp_path: Path) -> None:
    (tmp_path / "navigator.yaml").write_text("{}\n")
    env = {"TEMPORAL_ADDRESS": client.service_client.config.target_host, "TEMPORAL_UI_URL": "http://127.0.0.1:1",
           "NAVIGATOR_CONFIG": str(tmp_path / "navigator.yaml")}
    result = await ainvoke(["ui", "nav-does-not-exist"], env)
    assert result.exit_code == 4, (result.stdout, result.stderr)
    assert result.stdout == "" and "no run with id nav-does-not-exist" in result.stderr
