"""An interactive exploration driven through an 80-column pseudo-terminal: approve, reject with
feedback, edit with a bad field then a good one, stop — asserting what the screen shows (a VT100
emulator, pyte, renders the output the way a terminal would)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.support.cli import FIXTURE_REPO
from tests.support.e2e import NAVIGATOR, Sandbox
from tests.support.terminal import Terminal

REASONING = ("The ledger records usage per model, and the plugin calls record() in both before_call and "
             "after_call. That is the double count: before_call reserves tokens with an estimate and "
             "after_call records the actual usage again without releasing the reservation.")
SCRIPT = f"""
decisions:
  - action: update_flight_plan
    reasoning: "{REASONING}"
    updates: {{set_rules: [{{glob: "src/budgetkit/ledger.py", level: 4}}]}}
  - action: update_flight_plan
    reasoning: zoom into the cli
    updates: {{set_rules: [{{glob: "src/budgetkit/cli.py", level: 4}}]}}
  - action: update_flight_plan
    reasoning: zoom into the plugin
    updates: {{set_rules: [{{glob: "src/budgetkit/plugin.py", level: 4}}]}}
  - action: finalize_context
    summary: never reached, the user stops first
"""
STOP_REASON = "enough: the ledger and the plugin explain the double count, nothing else is needed"


def _words(text: str) -> str:
    return " ".join(text.split())


def _inside_panels(lines: list[str]) -> str:
    """The text inside panel borders, rows joined: what a reader sees once the wrapping is undone."""
    return _words(" ".join(line.strip("│ ") for line in lines if line.startswith("│")))


def _joined(lines: list[str]) -> str:
    """Rows joined without separators: undoes a terminal's own wrap of a long line (links, paths)."""
    return "".join(lines)


def test_interactive_session_through_a_pty(tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    script = tmp_path / "decisions.yaml"
    script.write_text(SCRIPT)
    term = Terminal(
        [str(NAVIGATOR), "explore", str(FIXTURE_REPO), "why are tokens double-counted?", "--interactive",
         "--planning", "off", "--model", f"scripted:{script}", "--out", str(tmp_path / "out")],
        tmp_path, box.env(), columns=80,
    )
    try:
        link = term.expect(r"Web UI: http://127\.0\.0\.1:\d+/namespaces/default/workflows/nav-\S+")
        term.expect(r"turn 1 · awaiting your verdict")
        term.expect(r"\[a\]pprove +\[r\]eject +\[e\]dit +\[s\]top >")
        term.send("a")
        term.expect(r"sent approve for turn 1")

        term.expect(r"turn 2 · awaiting your verdict")
        term.expect(r"\[s\]top >")
        term.send("r")
        term.expect(r"feedback for the model >")
        term.send("focus on the ledger, not the cli")
        term.expect(r"sent reject for turn 2")

        term.expect(r"turn 3 · awaiting your verdict")
        term.expect(r"\[s\]top >")
        term.send("e")
        term.expect(r"update >")
        term.send("{set_rules: [{glob: 'src/budgetkit/pricing.py', level: 9}]}")  # no level 9
        term.expect(r"not a valid flight-plan update")
        term.expect(r"\[s\]top >")
        term.send("e")
        term.expect(r"update >")
        term.send("{set_rules: [{glob: 'src/budgetkit/pricing.py', level: 3}]}")
        term.expect(r"turn 3 · edited plan")
        term.expect(r"\[s\]top >")
        term.send("s")
        term.expect(r"reason \(enter for 'stopped by user'\) >")
        term.send(STOP_REASON)
        term.expect(r"sent stop for turn 3")
        term.expect(r"context written to ")
    except BaseException:
        term.close(timeout_s=0.1)
        raise
    code = term.close()
    lines = term.screen_lines()
    screen = term.screen_text()
    assert code == 0, screen[-3000:]
    assert all(len(line) <= 80 for line in lines)

    # the first turn's panel: the reasoning in full (wrapped over several rows), the cost of the turn, the diff
    first = lines[lines.index(next(ln for ln in lines if "turn 1 · awaiting your verdict" in ln)):]
    first = first[:next(i for i, ln in enumerate(first) if ln.startswith("╰")) + 1]
    panel = _inside_panels(first)
    assert _words(REASONING) in panel.replace("Reasoning: ", "")
    assert len(first) >= 6  # not cut to one line
    assert "cost of this turn $0.0000 · total $0.0000 of $1.0000" in panel
    assert "+ rule src/budgetkit/ledger.py → L4" in panel

    # the edit prompt names the bad field; the good edit shows the edited plan
    assert re.search(r"not a valid flight-plan update: set_rules\.0\.level: Input should be 0, 1, 2, 3 or\s+4",
                     screen), screen[-3000:]
    assert "+ rule src/budgetkit/pricing.py → L3" in _inside_panels(lines)

    # the result panel shows the whole stop reason; the link and the path are whole once unwrapped
    result = lines[lines.index(next(ln for ln in lines if ln.startswith("╭─ nav-"))):]
    assert _words(STOP_REASON) in _inside_panels(result)
    wid = link.rsplit("/", 1)[1]
    assert link in _joined(lines)
    context = tmp_path / "out" / wid / "context.md"
    assert f"context written to {context}" in _joined(lines)
    report_text = (context.parent / "report.json").read_text()
    report = json.loads(report_text)
    assert report["stop_reason"] == "stopped" and STOP_REASON in report["stop_detail"]
    assert "focus on the ledger, not the cli" in report_text
    assert context.read_text().strip()


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
        tmp_path, {**box.env(), "NAVIGATOR_PRICING_FILE": str(prices)}, columns=80,
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
        term.expect(r"total \$0\.5000 of \$1\.5000")  # $0.40 + $0.10 for the second call
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


ORCHESTRATOR = """
text:
  investigate.plan: ['{"stages": [{"title": "the model stage", "task": "look", "criteria": ["x is cited"]}]}']
  investigate.review: ['{"critique": "fine"}', '{"critique": "fine"}', '{"critique": "fine"}', '{"critique": "fine"}']
  investigate.confirm: ['{"exit": true, "reason": "ok"}', '{"exit": true, "reason": "ok"}',
                        '{"exit": true, "reason": "ok"}', '{"exit": true, "reason": "ok"}']
  investigate.compress: ['{"record": "record 0"}', '{"record": "record 1"}']
  investigate.criteria: ['{"criteria": [{"criterion": "x", "met": false}]}',
                         '{"criteria": [{"criterion": "x", "met": false}]}']
  investigate.reflect: ['{"drop": [], "reason": "keep"}']
"""
QUICK_WORKER = ("quick:\n  kind: research\n  model: offline\n"
                "  caps: {max_rounds: 1, max_plan_steps: 2, max_executor_turns: 3, max_calls: 30}\n")


def test_interactive_investigation_plan_edited_as_a_file_through_a_pty(tmp_path: Path) -> None:
    """[e]dit writes the plan to a YAML file; a bad edit is refused naming the field and the plan still
    waits; a good edit replaces it, and the approved, edited stages are the ones that run."""
    box = Sandbox.create(tmp_path)
    script = tmp_path / "orch.yaml"
    script.write_text(ORCHESTRATOR)
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text(QUICK_WORKER)
    term = Terminal(
        [str(NAVIGATOR), "investigate", str(FIXTURE_REPO), "how is usage recorded?", "--interactive",
         "--max-stages", "2", "--model", f"scripted:{script}", "--worker", "quick", "--profiles", str(profiles),
         "--out", str(tmp_path / "out")],
        tmp_path, box.env(), columns=80,
    )
    try:
        term.expect(r"the investigation plan · awaiting your verdict")
        term.expect(r"\[e\]dit +\[s\]top >")
        term.send("e")
        path = Path(re.sub(r"^the plan is in |:$", "", term.expect(r"the plan is in \S+\.yaml:")))
        assert "the model stage" in path.read_text()
        term.expect(r"c cancels\) >")
        path.write_text("stages:\n  - {title: the plugin, task: read it, criteria: []}\n")
        term.send("")
        term.expect(r"stages\.0\.criteria: ")
        term.expect(r"\[s\]top >")
        term.send("e")
        path = Path(re.sub(r"^the plan is in |:$", "", term.expect(r"the plan is in \S+\.yaml:")))
        term.expect(r"c cancels\) >")
        path.write_text("stages:\n  - {title: the plugin, task: read the plugin, criteria: [x], max_loops: 1}\n"
                        "  - {title: the ledger, task: read the ledger, criteria: [x]}\n")
        term.send("")
        term.expect(r"now has 2 stages")
        term.expect(r"\[s\]top >")
        term.send("a")
        term.expect(r"sent approve for the investigation plan")
        report = term.expect(r"report written to \S+report\.md").removeprefix("report written to ")
    except BaseException:
        term.close(timeout_s=0.1)
        raise
    assert term.close() == 0, term.seen[-3000:]
    text = Path(report).read_text()
    assert "## Stage 0: the plugin" in text and "## Stage 1: the ledger" in text and "the model stage" not in text
