"""The stop a client's cancellation sends: delivered despite the cancelled scope, bounded, never raising.

A cancelled ``explore`` must end as a cancellation whatever happens to its stop: the run
may have finished meanwhile, Temporal may be gone (the stop fails), or unreachable (the
stop hangs). The end-to-end cancellation (stop delivered, run ends ``stopped``) is in
``test_stdio.py``.
"""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from durable_navigator.cli.errors import RunNotFoundError, TemporalUnreachableError
from durable_navigator.cli.mcpserver import runs, tools
from durable_navigator.cli.mcpserver.paths import AllowedRoots


class _Backend:
    roots = AllowedRoots([])


async def _cancelled_call(capsys: pytest.CaptureFixture[str]) -> tuple[bool, str]:
    """A tool call cancelled by its client, stopping its run on the way out: (ended cancelled?, stderr)."""
    cancelled = False
    with anyio.CancelScope() as scope:
        scope.cancel()
        try:
            await anyio.sleep(10)
        except anyio.get_cancelled_exc_class():
            cancelled = True
            await tools._stop_for_cancel(object(), _Backend(), "nav-x-00000000")  # type: ignore[arg-type]
            raise
    return cancelled and scope.cancelled_caught, capsys.readouterr().err


async def test_the_stop_is_sent_although_the_call_is_cancelled(monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    sent: list[tuple[str, str]] = []

    async def stop_run(session: Any, roots: AllowedRoots, run_id: str, reason: str) -> None:
        await anyio.sleep(0.05)  # a real round trip: would be cancelled at once without the shield
        sent.append((run_id, reason))

    monkeypatch.setattr(runs, "stop_run", stop_run)
    ended_cancelled, err = await _cancelled_call(capsys)
    assert ended_cancelled and sent == [("nav-x-00000000", tools.CANCEL_REASON)] and err == ""


@pytest.mark.parametrize("error", [
    RunNotFoundError("run nav-x-00000000 has already finished (completed)"),
    TemporalUnreachableError("Temporal refused the describe for nav-x-00000000: connection refused"),
    RuntimeError("Connection closed"),  # whatever the client library raises when the server went away
])
async def test_a_stop_that_fails_leaves_the_call_cancelled(monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str], error: Exception) -> None:
    async def stop_run(*_: Any) -> None:
        raise error

    monkeypatch.setattr(runs, "stop_run", stop_run)
    ended_cancelled, err = await _cancelled_call(capsys)
    assert ended_cancelled
    assert f"could not stop nav-x-00000000 after the client cancelled: {error}" in err


async def test_a_stop_that_hangs_gives_up_after_the_timeout(monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    async def stop_run(*_: Any) -> None:
        await anyio.sleep_forever()  # Temporal unreachable: the client keeps retrying

    monkeypatch.setattr(runs, "stop_run", stop_run)
    monkeypatch.setattr(tools, "STOP_TIMEOUT_S", 0.3)
    began = time.monotonic()
    ended_cancelled, err = await _cancelled_call(capsys)
    assert ended_cancelled and 0.3 <= time.monotonic() - began < 5
    assert "could not stop nav-x-00000000 within 0.3 s" in err

