"""structlog setup: JSON lines, bound / Temporal ids, secret masking."""

from __future__ import annotations

import io
import subprocess
import sys
import json
import logging

import pytest

from durable_navigator.workers.logging import bind_ids, clear_ids, configure_logging, get_logger


@pytest.fixture
def buffer() -> io.StringIO:
    buf = io.StringIO()
    yield buf
    clear_ids()
    # leave a sane default for later tests in the same process
    configure_logging(force=True)


def test_json_lines_with_bound_and_temporal_ids(buffer: io.StringIO, monkeypatch: pytest.MonkeyPatch) -> None:
    configure_logging(json_output=True, stream=buffer, force=True)
    bind_ids(workflow_id="wf-bound")
    get_logger("t").info("hello", step=3)
    # (the CLI quiets the "temporalio" logger in-process; any stdlib logger carries the same extra)
    logging.getLogger("sdk.like").warning(
        "from the sdk", extra={"temporal_activity": {"workflow_id": "wf-act", "activity_id": "7", "activity_type": "navigator.decide"}}
    )
    first, second = (json.loads(line) for line in buffer.getvalue().splitlines())
    assert first["event"] == "hello" and first["workflow_id"] == "wf-bound" and first["step"] == 3
    assert first["level"] == "info" and "timestamp" in first
    assert second["workflow_id"] == "wf-act" and second["activity_id"] == "7"
    assert second["activity_type"] == "navigator.decide"


def test_secrets_from_env_are_masked(buffer: io.StringIO, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-very-secret-key")
    configure_logging(json_output=True, stream=buffer, force=True)
    get_logger("t").info("calling with AIza-very-secret-key", header="key=AIza-very-secret-key")
    logging.getLogger("x").error("AIza-very-secret-key in stdlib")
    text = buffer.getvalue()
    assert "AIza-very-secret-key" not in text
    assert text.count("***") == 3


def test_console_renderer_is_default(buffer: io.StringIO) -> None:
    configure_logging(stream=buffer, force=True)
    get_logger("t").warning("plain words", n=1)
    line = buffer.getvalue().strip()
    assert "plain words" in line and "n=1" in line and not line.startswith("{")


def test_configure_is_once_unless_forced(buffer: io.StringIO) -> None:
    configure_logging(json_output=True, stream=buffer, force=True)
    configure_logging(json_output=False)  # ignored: already configured
    get_logger("t").info("still json")
    assert json.loads(buffer.getvalue().splitlines()[-1])["event"] == "still json"


def test_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown log level"):
        configure_logging(level="loud", force=True)


_CORE_PROBE = """
import logging, threading
from temporalio.runtime import Runtime
from durable_navigator.workers.logging import configure_logging, route_core_logs

configure_logging(level="info")
route_core_logs(core_level="INFO")  # the probe logs at INFO; commands route WARN and up
seen = threading.Event()
class Seen(logging.Handler):
    def emit(self, record):
        if "core-probe-line" in record.getMessage():
            seen.set()
logging.getLogger("temporalio.core").addHandler(Seen())
Runtime.default()._core_runtime.write_test_info_log("core-probe-line", "x")
assert seen.wait(30), "the Core line was never forwarded"
"""


def test_core_log_lines_go_to_the_log_handler_not_stdout() -> None:
    """Core's own console logger writes to stdout: a Core warning once landed after `explore --json`'s result."""
    proc = subprocess.run([sys.executable, "-c", _CORE_PROBE], capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr
    assert "core-probe-line" not in proc.stdout
    assert "core-probe-line" in proc.stderr  # through configure_logging's handler
