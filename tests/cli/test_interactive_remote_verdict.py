"""Issue #29: an interactive prompt must follow verdicts given elsewhere, and keep what it printed.

Through an 80-column pseudo-terminal (pyte renders it as a terminal would): turn 1 is approved from
ANOTHER terminal (`navigator approve ID`) while the prompt waits — the prompt notices within seconds and
moves on to turn 2 (it used to keep showing turn 1 until the user typed); turn 2 is rejected at the
prompt, and `sent reject for turn 2` is still on the screen once turn 3's panel and its progress are
drawn (the live progress line used to erase it).
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from tests.support.cli import FIXTURE_REPO
from tests.support.e2e import NAVIGATOR, Sandbox
from tests.support.terminal import Terminal

SCRIPT = """
decisions:
  - action: update_flight_plan
    reasoning: zoom into the ledger
    updates: {set_rules: [{glob: "src/budgetkit/ledger.py", level: 4}],
              add_focus_paths: [{glob: src/budgetkit/ledger.py}, {glob: src/budgetkit/plugin.py}]}
  - action: update_flight_plan
    reasoning: zoom into the cli
    updates: {set_rules: [{glob: "src/budgetkit/cli.py", level: 4}], add_focus_paths: [{glob: src/budgetkit/cli.py}]}
  - action: update_flight_plan
    reasoning: zoom into the plugin
    updates: {set_rules: [{glob: "src/budgetkit/plugin.py", level: 4}]}
  - action: finalize_context
    summary: never reached, the user stops first
"""
#: the prompt must notice a verdict from elsewhere within this long (it polls the run's status)
NOTICE_WITHIN_S = 5.0


def test_prompt_follows_a_verdict_from_another_terminal_and_keeps_its_lines(tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    script = tmp_path / "decisions.yaml"
    script.write_text(SCRIPT)
    term = Terminal(
        [str(NAVIGATOR), "explore", str(FIXTURE_REPO), "where is usage recorded?", "--interactive",
         "--planning", "off", "--model", f"scripted:{script}", "--out", str(tmp_path / "out")],
        tmp_path, box.env(), columns=80,
    )
    try:
        link = term.expect(r"Web UI: http://127\.0\.0\.1:\d+/namespaces/default/workflows/nav-\S+")
        wid = link.rsplit("/", 1)[1]
        term.expect(r"turn 1 · awaiting your verdict")
        term.expect(r"\[s\]top >")
        other = subprocess.run([str(NAVIGATOR), "approve", wid], cwd=tmp_path, env=box.env(),
                               capture_output=True, text=True, timeout=120)
        assert other.returncode == 0, other.stderr
        approved = time.monotonic()
        term.expect(r"turn 1 was answered elsewhere", timeout_s=NOTICE_WITHIN_S)
        term.expect(r"turn 2 · awaiting your verdict", timeout_s=NOTICE_WITHIN_S)
        assert time.monotonic() - approved < NOTICE_WITHIN_S
        term.expect(r"\[s\]top >")
        term.send("r")
        term.expect(r"feedback for the model >")
        term.send("look at the plugin instead")
        term.expect(r"sent reject for turn 2")
        term.expect(r"turn 3 · awaiting your verdict")
        term.expect(r"\[s\]top >")
        shown = term.screen_text()  # what the terminal shows while turn 3 waits
        term.send("s")
        term.expect(r"reason \(enter for 'stopped by user'\) >")
        term.send("")
        term.expect(r"context written to ")
    except BaseException:
        term.close(timeout_s=0.1)
        raise
    assert term.close() == 0, term.screen_text()[-3000:]
    assert "sent reject for turn 2" in shown, shown[-3000:]
    assert ("turn 1 was answered elsewhere (another terminal, or `navigator approve|reject|stop`)"
            in " ".join(shown.split())), shown[-3000:]
    assert all(len(line) <= 80 for line in term.screen_lines())
    final = term.screen_text()
    assert "sent reject for turn 2" in final and "sent stop for turn 3" in final, final[-3000:]
