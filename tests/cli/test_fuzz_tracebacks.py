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
    (["--goal", "x" * 10_000], "at most 8000 characters"),
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
    result = invoke([command, ""], isolated_config())
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert "the id is empty" in result.stderr
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
    result = invoke(["approve", "nav-x", "--sender", sender], isolated_config())
    assert result.exit_code == 2, (result.exit_code, result.stderr)
    assert needle in result.stderr and "Traceback" not in result.stderr, result.stderr
    assert not (tmp_path / "temporal.db").exists()  # refused before any server is started or reached


def test_mcp_http_on_a_host_that_is_not_an_address_is_one_line_before_anything_starts(
    isolated_config: Callable[..., dict[str, str]], tmp_path: Path
) -> None:
    # before: two "navigator mcp: …" lines and an embedded server started, then the error
    _refused(invoke(["mcp", "--http", "--host", "999.1.1.1", "--port", "0"], isolated_config()),
             "--host 999.1.1.1 is not an address")
    assert not (tmp_path / "temporal.db").exists()
