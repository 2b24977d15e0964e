"""Tracebacks bench/fuzz_surfaces.py found: each input is now refused on one line with exit code 2.

Each case failed before its fix with a Python traceback (pydantic ``ValidationError``,
``OSError`` ENAMETOOLONG, ``UnicodeDecodeError``) or with the wrong exit code.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import FIXTURE_REPO, invoke

#: how a non-UTF-8 command-line byte reaches Python (surrogateescape)
NOT_UTF8 = "ab\udcff"


def _refused(result: object, needle: str, code: int = 2) -> str:
    stderr = result.stderr  # type: ignore[attr-defined]
    assert result.exit_code == code, (result.exit_code, stderr)  # type: ignore[attr-defined]
    assert stderr.startswith("Error: ") and stderr.count("\n") == 1, stderr  # one line, no traceback
    assert needle in " ".join(stderr.split()), stderr
    return stderr


@pytest.mark.parametrize("args, needle", [
    (["--tokens", "2147483648"], "above the largest map"),
    (["--tokens", "-1"], "below the minimum map size"),
    # the limit and what to do, not pydantic's "at most 8000 characters"
    (["--goal", "x" * 10_000], "--goal is 10,000 characters long, over the limit of 8,000; shorten it"),
    (["--goal", NOT_UTF8], "not UTF-8"),
])
def test_map_refuses_a_token_budget_or_goal_its_plan_cannot_hold(
    isolated_config: Callable[..., dict[str, str]], args: list[str], needle: str
) -> None:
    _refused(invoke(["map", str(FIXTURE_REPO), *args], isolated_config()), needle)


@pytest.mark.parametrize("option, value", [("--port", "-1"), ("--ui-port", "70000"), ("--port", "0")])
def test_server_refuses_a_port_that_is_not_one(isolated_config: Callable[..., dict[str, str]], tmp_path: Path,
                                               option: str, value: str) -> None:
    _refused(invoke(["server", option, value], isolated_config()), f"{option} {value} is not a TCP port")
    assert not (tmp_path / "temporal.db").exists()


@pytest.mark.parametrize("command", ["status", "log", "result"])
def test_an_empty_run_id_is_bad_input_not_an_unreachable_server(
    isolated_config: Callable[..., dict[str, str]], tmp_path: Path, command: str
) -> None:
    # one line, not click's usage frame around an "Invalid value for 'WORKFLOW_ID'" line
    _refused(invoke([command, ""], isolated_config()), "the id is empty; copy the id from `navigator ls`")
    assert not (tmp_path / "temporal.db").exists()


@pytest.mark.parametrize("command", ["explore", "ask", "investigate", "map"])
def test_a_repository_path_too_long_for_the_file_system_is_refused(
    isolated_config: Callable[..., dict[str, str]], tmp_path: Path, command: str
) -> None:
    args = [command, "/" + "a" * 5_000] + ([] if command == "map" else ["x y", "--detach"])
    stderr = _refused(invoke(args, isolated_config()), "cannot be read (File name too long)")
    assert len(stderr) < 300, stderr  # the 5,000 characters are not repeated
    assert not (tmp_path / "temporal.db").exists()


@pytest.mark.parametrize("where", ["--config", "--profile", "--profiles"])
def test_a_file_that_is_not_utf8_text_is_refused(
    isolated_config: Callable[..., dict[str, str]], tmp_path: Path, where: str
) -> None:
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"a: \xff\xfe\x00\x81 binary")
    if where == "--config":
        args = ["--config", str(blob), "ls"]
    elif where == "--profile":
        args = ["explore", str(FIXTURE_REPO), "x y", "--profile", str(blob), "--detach"]
    else:
        args = ["ask", str(FIXTURE_REPO), "x y", "--profiles", str(blob), "--detach"]
    _refused(invoke(args, isolated_config()), "not UTF-8 text")
    assert not (tmp_path / "temporal.db").exists()


@pytest.mark.parametrize("sender, needle", [(NOT_UTF8, "not valid UTF-8"), ("s" * 5_000, "at most 200")])
def test_approve_refuses_a_sender_no_message_takes(
    isolated_config: Callable[..., dict[str, str]], tmp_path: Path, sender: str, needle: str
) -> None:
    # one line, not click's usage frame around an "Invalid value for '--sender'" line
    _refused(invoke(["approve", "nav-x", "--sender", sender], isolated_config()), needle)
    assert not (tmp_path / "temporal.db").exists()  # refused before any server is started or reached


@pytest.mark.parametrize("args, needle", [
    (["nav-x", "b"], "MODE 'b' is not a mode; use autonomous or interactive"),
    (["nav-x", ""], "MODE '' is not a mode"),
])
def test_mode_refuses_a_mode_that_is_not_one_on_one_line(
    isolated_config: Callable[..., dict[str, str]], tmp_path: Path, args: list[str], needle: str
) -> None:
    _refused(invoke(["mode", *args], isolated_config()), needle)
    assert not (tmp_path / "temporal.db").exists()


def test_mode_without_its_mode_names_the_missing_argument_on_one_line(
    isolated_config: Callable[..., dict[str, str]]
) -> None:
    # `navigator mode -- autonomous`: the mode taken as the id; click listed the choices one per line
    result = invoke(["mode", "--", "autonomous"], isolated_config())
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    frame = ("Usage: ", "Try 'navigator mode --help'")
    errors = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith(frame)]
    assert errors == ["Error: Missing argument 'MODE'."], result.stderr


def test_mcp_http_on_a_host_that_is_not_an_address_is_one_line_before_anything_starts(
    isolated_config: Callable[..., dict[str, str]], tmp_path: Path
) -> None:
    # before: two "navigator mcp: …" lines and an embedded server started, then the error
    _refused(invoke(["mcp", "--http", "--host", "999.1.1.1", "--port", "0"], isolated_config()),
             "--host 999.1.1.1 is not an address")
    assert not (tmp_path / "temporal.db").exists()


def test_mcp_allow_root_too_long_for_the_file_system_is_one_line_before_anything_starts(
    isolated_config: Callable[..., dict[str, str]], tmp_path: Path
) -> None:
    # before: OSError ENAMETOOLONG out of Path.is_dir() as a traceback, exit 1
    stderr = _refused(invoke(["mcp", "--allow-root", "a" * 300], isolated_config()),
                      "--allow-root aaaa")
    assert "cannot be read (File name too long); pass an existing directory" in stderr and len(stderr) < 300, stderr
    assert not (tmp_path / "temporal.db").exists()
