"""Markdown for the Web UI: dollar amounts stay text (no math), user text is literal."""

from __future__ import annotations

from decimal import Decimal

from durable_navigator.navcore.batch.batch import BatchProgress, progress_markdown
from durable_navigator.navcore.navigator.report import (
    TurnReport,
    markdown_text,
    run_details_markdown,
    run_summary,
    steering_lines,
    turn_report_markdown,
)


def _report(**update: object) -> TurnReport:
    base = dict(step=3, status="awaiting_approval", mode="interactive", cost_this_turn_usd="$0.0012",
                cost_total_usd="$0.0040", budget_usd="$1.0000", map_tokens=3120, map_token_budget=8192,
                focus_areas=["src/budget/**"], reasoning="costs $2 and <b>bold</b> *stars*",
                proposed_diff=["+ rule src/budget/** → L4"], awaiting_turn=3, awaiting_kind="turn", decisions=4,
                stage_plan="### Plan\n1. **Find where $ is spent**")
    return TurnReport.model_validate({**base, **update})


def test_markdown_text_escapes_what_markdown_or_math_would_interpret() -> None:
    assert markdown_text("$0.0000 of $1.0000") == r"\$0.0000 of \$1.0000"
    assert markdown_text("a_b *c* <tag> [x](y) `z` | ~ # \\") == r"a\_b \*c\* \<tag\> \[x\](y) \`z\` \| \~ \# \\"


def test_turn_report_details_show_the_cost_as_text() -> None:
    md = turn_report_markdown(_report(), "why $ and _underscores_?")
    assert r"**Cost:** \$0.0040 of \$1.0000 (last turn \$0.0012)" in md
    assert "$" not in md.replace(r"\$", "")  # every dollar sign is escaped: no inline math anywhere
    assert r"**Goal:** why \$ and \_underscores\_?" in md
    assert r"costs \$2 and \<b\>bold\</b\> \*stars\*" in md
    assert "- `+ rule src/budget/** → L4`" in md and "**Awaiting a verdict on turn 3**" in md
    assert r"1. **Find where \$ is spent**" in md  # the stage plan stays markdown, its dollars literal


def test_static_summary_and_details() -> None:
    summary = run_summary("why are $ tokens\ndouble-counted?", "/src/budgetkit/", "offline")
    assert summary == r"explore budgetkit: why are \$ tokens double-counted? (offline)"
    details = run_details_markdown("why?", "/src/budgetkit", {"Budget": "$1.0000", "Model": "offline"})
    assert details.split("\n") == [r"**Goal:** why?", "", "**Repository:** `/src/budgetkit`", "",
                                   r"- **Budget:** \$1.0000", "- **Model:** offline"]


def test_batch_progress_details_escape_dollars() -> None:
    progress = BatchProgress(batch_id="b-1", jobs_total=2, pending=1, running=1, completed=0, failed=0, skipped=0,
                             spent_usd=Decimal("0.5"), in_flight_usd=Decimal("0.1"), returned_usd=Decimal(0),
                             total_usd=Decimal("5"), done=False, stop_requested="budget $ gone")
    md = progress_markdown(progress)
    assert r"spent \$0.5000 + in flight \$0.1000 of \$5.0000" in md
    assert "$" not in md.replace(r"\$", "")


def test_steering_lines_name_what_each_run_calls_its_plan_and_turns() -> None:
    """One writer of the stopped / awaiting / fallback lines for every run's Web UI details."""
    research = {"plan": "the research plan", "turn": "step turn"}
    assert steering_lines(_report(), **research) == ["**Awaiting a verdict on step turn 3** (approve / reject / stop)"]
    assert steering_lines(_report(awaiting_kind="plan"), **research)[0].startswith("**Awaiting a verdict on the "
                                                                                  "research plan**")
    stopped = steering_lines(_report(stop_reason="budget_exhausted", awaiting_turn=None, planning_fallback="$0 left"),
                             plan="the stage plan", turn="turn")
    assert stopped == [r"**Stopped:** budget\_exhausted", r"**Planning fallback:** \$0 left"]
