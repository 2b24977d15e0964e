"""An interactive exploration driven through a pseudo-terminal: approve, reject with feedback, edit, stop."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import subprocess
import time
from pathlib import Path

from tests.support.cli import FIXTURE_REPO
from tests.support.e2e import NAVIGATOR, Sandbox

SCRIPT = """
decisions:
  - action: update_flight_plan
    reasoning: zoom into the ledger
    updates: {set_rules: [{glob: "src/budgetkit/ledger.py", level: 4}]}
  - action: update_flight_plan
    reasoning: zoom into the cli
    updates: {set_rules: [{glob: "src/budgetkit/cli.py", level: 4}]}
  - action: update_flight_plan
    reasoning: zoom into the plugin
    updates: {set_rules: [{glob: "src/budgetkit/plugin.py", level: 4}]}
  - action: finalize_context
    summary: never reached, the user stops first
"""
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


class Terminal:
    """The master side of a pty running one process; ``expect`` reads until a pattern shows up."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]) -> None:
        master, slave = pty.openpty()
        self.proc = subprocess.Popen(args, cwd=cwd, env={**env, "TERM": "xterm"}, stdin=slave, stdout=slave,
                                     stderr=slave, start_new_session=True, close_fds=True)
        os.close(slave)
        self.master = master
        self.seen = ""
        self.cursor = 0

    def expect(self, pattern: str, timeout_s: float = 120.0) -> str:
        deadline = time.monotonic() + timeout_s
        regex = re.compile(pattern)
        while True:
            match = regex.search(self.seen, self.cursor)
            if match:
                self.cursor = match.end()
                return match.group(0)
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.proc.poll() is not None and not self._read(0.2):
                raise AssertionError(f"never saw {pattern!r}; output so far:\n{self.seen[-4000:]}")
            self._read(min(remaining, 0.5))

    def _read(self, timeout_s: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout_s)
        if not ready:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        self.seen += ANSI.sub("", data.decode("utf-8", "replace"))
        return bool(data)

    def send(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def close(self, timeout_s: float = 60.0) -> int:
        """Wait for the process (killing its group if it hangs); returns its exit code."""
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait()
        finally:
            while self._read(0.1):
                pass
            os.close(self.master)


def test_interactive_session_through_a_pty(tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    script = tmp_path / "decisions.yaml"
    script.write_text(SCRIPT)
    term = Terminal(
        [str(NAVIGATOR), "explore", str(FIXTURE_REPO), "why are tokens double-counted?", "--interactive",
         "--model", f"scripted:{script}", "--out", str(tmp_path / "out")],
        tmp_path, box.env(),
    )
    try:
        term.expect(r"Web UI: http://127\.0\.0\.1:\d+/namespaces/default/workflows/nav-\S+")
        term.expect(r"turn 1 · awaiting your verdict")
        term.expect(r"\+ rule src/budgetkit/ledger\.py → L4")
        term.expect(r"\[a\]pprove +\[r\]eject +\[e\]dit +\[s\]top >")
        term.send("a")
        term.expect(r"sent approve for turn 1")

        term.expect(r"turn 2 · awaiting your verdict")
        term.expect(r"\+ rule src/budgetkit/cli\.py → L4")
        term.expect(r"\[s\]top >")
        term.send("r")
        term.expect(r"feedback for the model >")
        term.send("focus on the ledger, not the cli")
        term.expect(r"sent reject for turn 2")

        term.expect(r"turn 3 · awaiting your verdict")
        term.expect(r"\[s\]top >")
        term.send("e")
        term.expect(r"update >")
        term.send("{set_rules: [{glob: 'src/budgetkit/pricing.py', level: 3}]}")
        term.expect(r"turn 3 · edited plan")
        term.expect(r"\+ rule src/budgetkit/pricing\.py → L3")
        term.expect(r"\[s\]top >")
        term.send("s")
        term.expect(r"reason \(enter for 'stopped by user'\) >")
        term.send("")
        term.expect(r"sent stop for turn 3")
        context = term.expect(r"context written to \S+context\.md").split("to ", 1)[1]
    except BaseException:
        term.close(timeout_s=0.1)
        raise
    code = term.close()
    assert code == 0, term.seen[-3000:]
    report_text = (Path(context).parent / "report.json").read_text()
    report = json.loads(report_text)
    assert "stopped" in json.dumps(report)
    assert "focus on the ledger, not the cli" in report_text
    assert Path(context).read_text().strip()


BUDGET_SCRIPT = """
decisions:
  - action: update_flight_plan
    reasoning: zoom into the ledger
    updates: {set_rules: [{glob: "src/budgetkit/ledger.py", level: 4}]}
    usage: {input_tokens: 4000}
  - action: update_flight_plan
    reasoning: zoom into the plugin
    updates: {set_rules: [{glob: "src/budgetkit/plugin.py", level: 4}]}
    usage: {input_tokens: 1000}
"""
#: $100 per million input tokens: the first call costs $0.40 of a $0.50 budget
PRICES = "models:\n  scripted: {input: 100, output: 0, thinking: 0, cached: 0}\n"


def test_interactive_budget_park_raise_then_stop(tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    script = tmp_path / "decisions.yaml"
    script.write_text(BUDGET_SCRIPT)
    prices = tmp_path / "prices.yaml"
    prices.write_text(PRICES)
    term = Terminal(
        [str(NAVIGATOR), "explore", str(FIXTURE_REPO), "where is the ledger?", "--interactive", "--tokens", "2000",
         "--budget-usd", "0.50", "--model", f"scripted:{script}", "--out", str(tmp_path / "out")],
        tmp_path, {**box.env(), "NAVIGATOR_PRICING_FILE": str(prices)},
    )
    try:
        term.expect(r"turn 1 · awaiting your verdict")
        term.expect(r"\[s\]top >")
        term.send("a")
        term.expect(r"budget exhausted: \[r\]aise +\[f\]inalize +\[a\]bort >")
        term.send("r")
        term.expect(r"add how many USD\? >")
        term.send("1")
        term.expect(r"turn 2 · awaiting your verdict")
        term.expect(r"\$0\.5000/\$1\.5000")  # $0.40 + $0.10 for the second call
        term.expect(r"\[s\]top >")
        term.send("s")
        term.expect(r"reason \(enter for 'stopped by user'\) >")
        term.send("done here")
        term.expect(r"stop reason: stopped")
        term.expect(r"cost: \$0\.\d+ of \$1\.5000")
    except BaseException:
        term.close(timeout_s=0.1)
        raise
    assert term.close() == 0, term.seen[-3000:]
