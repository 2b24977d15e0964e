"""Renderings at 80 columns and piped: nothing cropped, links whole, one logical line per line piped."""

from __future__ import annotations

import io
from datetime import UTC, datetime
from decimal import Decimal

from rich.console import Console

from durable_navigator.cli.consoles import CliConsole
from durable_navigator.cli.display import (
    decision_lines,
    print_block,
    print_lines,
    result_panel,
    runs_blocks,
    turn_panel,
)
from durable_navigator.cli.progress import IndexProgressBar, progress_text
from durable_navigator.navcore.navigator.activity_io import PackFigures
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navcore.navigator.report import TurnReport
from durable_navigator.navcore.navigator.requests import ExplorationResult
from durable_navigator.navcore.navigator.state import DecisionLogEntry, StopReason

REASONING = ("The ledger records usage per model, and the plugin calls record() in both before_call and "
             "after_call. That is the double count: every call is charged twice. Zoom into the ledger.")


def _report(**update: object) -> TurnReport:
    base = dict(step=2, status="awaiting_approval", mode="interactive", cost_this_turn_usd="$0.0012",
                cost_total_usd="$0.0040", budget_usd="$1.0000", map_tokens=3120, map_token_budget=8192,
                focus_areas=["src/budget/**"], reasoning=REASONING,
                proposed_diff=["+ rule src/budget/ledger.py → L4", "- rule tests/**"], awaiting_turn=2,
                awaiting_kind="turn", decisions=3)
    return TurnReport.model_validate({**base, **update})


def _console(width: int = 80, terminal: bool = True) -> tuple[Console, io.StringIO]:
    buf = io.StringIO()
    console = CliConsole(file=buf, width=width, force_terminal=terminal, color_system=None, highlight=False)
    return console, buf


def test_turn_panel_shows_cost_reasoning_in_full_and_the_diff_at_80_columns() -> None:
    console, buf = _console()
    print_block(console, turn_panel(_report(), title="turn 2 · awaiting your verdict"))
    lines = buf.getvalue().splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    inside = " ".join(line.strip("│ ").strip() for line in lines[1:-1])
    assert " ".join(REASONING.split()) in " ".join(inside.replace("Reasoning: ", "").split())
    assert "cost of this turn $0.0012 · total $0.0040 of $1.0000" in inside
    assert "+ rule src/budget/ledger.py → L4" in inside and "- rule tests/**" in inside
    assert len([ln for ln in lines if ln.startswith("│")]) >= 5  # the reasoning wrapped, not cut to one line


def test_result_panel_wraps_a_long_stop_reason() -> None:
    result = ExplorationResult(
        workflow_id="nav-x-1", stop_reason=StopReason.STOPPED, stop_detail="stopped by user because " + "x " * 60,
        iterations=3, decisions=4, cost_micros=0, cost_usd=Decimal(0), max_usd=Decimal(1), usage=TokenUsage(),
        model_attempts=0,
    )
    console, buf = _console()
    print_block(console, result_panel(result))
    text = buf.getvalue()
    assert all(len(line) <= 80 for line in text.splitlines())
    joined = " ".join(line.strip("│╭╮╰╯─ ") for line in text.splitlines())
    assert joined.count("x") >= 60  # every word of the stop detail is on screen


def test_result_panel_shows_the_pack_against_its_budget() -> None:
    result = ExplorationResult(
        workflow_id="nav-x-1", stop_reason=StopReason.FINALIZED, iterations=3, decisions=4, cost_micros=0,
        cost_usd=Decimal(0), max_usd=Decimal(1), usage=TokenUsage(), model_attempts=0,
        pack=PackFigures(token_budget=8192, tokens=8150, map_tokens=7480, map_token_budget=7537,
                         map_rerendered=True, shortened=["decision log"]),
    )
    console, buf = _console(width=200)
    print_block(console, result_panel(result))
    assert ("context.md: 8150/8192 tokens (map 7480, rendered at 7537 to fit); shortened: decision log "
            "(whole in report.json)") in buf.getvalue()


def test_decision_log_piped_is_one_line_per_item_and_wrapped_with_indent_on_a_terminal() -> None:
    entry = DecisionLogEntry(step=1, action="update_flight_plan", reasoning=REASONING * 2, verdict="reject",
                             feedback="look at the ledger", diff_lines=["+ rule a/** → L4"],
                             at=datetime(2026, 1, 1, tzinfo=UTC))
    piped, out = _console(terminal=False)
    print_lines(piped, decision_lines([entry]))
    lines = out.getvalue().splitlines()
    assert lines[0] == "step 1 · update_flight_plan · reject · $0.0000 · map 0→0 tok"
    assert lines[1] == "  + rule a/** → L4"
    assert lines[2] == "  " + " ".join((REASONING * 2).split())  # whole, not cut at 80 columns
    assert lines[3] == "  feedback: look at the ledger"
    term, screen = _console(terminal=True)
    print_lines(term, decision_lines([entry]))
    shown = screen.getvalue().splitlines()
    assert all(len(line) <= 80 for line in shown)
    assert all(line.startswith("  ") for line in shown[2:-2])  # continuation lines keep the indent


def test_runs_blocks_fit_a_narrow_screen() -> None:
    rows = [{"workflow_id": "nav-budgetkit-1a2b3c4d", "status": "running", "navigator_status": "awaiting_approval",
             "iteration": 2, "cost_usd": 0.0012, "start_time": "2026-11-22T19:47:12.530000+00:00",
             "goal": "why are   tokens double-counted?"}]
    assert runs_blocks(rows) == [
        "nav-budgetkit-1a2b3c4d · running: awaiting_approval · iter 2 · $0.0012 · 2026-11-22 19:47",
        "  why are tokens double-counted?",
    ]


def test_index_progress_piped_prints_a_line_then_the_end() -> None:
    console, buf = _console(terminal=False)
    with IndexProgressBar(console, min_files=10) as bar:
        bar.update(0, 500)
        bar.update(250, 500, rate=1234.5)  # within LINE_EVERY_S of the first line: not printed
        bar.update(500, 500, rate=1500.0)
    assert buf.getvalue().splitlines() == [progress_text(0, 500, None), "indexing 500/500 files · 1,500 files/s"]
    small, quiet = _console(terminal=False)
    with IndexProgressBar(small) as bar:
        bar.update(5, 5)
    assert quiet.getvalue() == ""  # a small repository indexes too fast for a bar


def test_status_reads_the_full_reasoning_from_the_artifact_store(tmp_path) -> None:
    import json

    from durable_navigator.activities.artifacts import LocalArtifactStore
    from durable_navigator.navcore.navigator.report import HISTORY_REASONING_CHARS
    from durable_navigator.cli import handles

    full = "survey: " + "rank and zoom; " * 60
    trimmed = full[:HISTORY_REASONING_CHARS]
    store = LocalArtifactStore(tmp_path)
    ref = store.put_bytes(json.dumps({"reasoning": full}).encode(), "application/json")
    assert handles.with_full_reasoning(_report(reasoning=trimmed, reasoning_ref=ref), store).reasoning == full
    # the configured store does not hold it (a worker with another store): the trimmed text, marked as cut
    elsewhere = LocalArtifactStore(tmp_path / "elsewhere")
    assert handles.with_full_reasoning(_report(reasoning=trimmed, reasoning_ref=ref), elsewhere).reasoning == \
        trimmed + "…"
    assert handles.with_full_reasoning(_report(), store).reasoning == REASONING


def test_plan_text_drops_markdown_marks() -> None:
    from durable_navigator.cli.display import plan_text

    plan = "### Plan (1 stages)\n1. **Inspect the src/ area** (max 5 iterations) ← current\n   - [ ] `src/**` is shown"
    assert plan_text(plan) == "Plan (1 stages)\n1. Inspect the src/ area (max 5 iterations) ← current\n   - [ ] `src/**` is shown"
    assert "← current" not in plan_text(plan, current=False)
