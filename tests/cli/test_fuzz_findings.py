"""Bugs ``bench/fuzz_surfaces.py`` found (issue #29's fuzzing bar), each as the call that showed it.

Every case runs against the session's real dev server, so the call gets as far as a user's
would: a refusal must come before the RPC, with one error line and exit code 2, never a traceback.
"""

from __future__ import annotations

import os

import pytest
from temporalio.client import Client

from tests.support.cli import ainvoke

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
