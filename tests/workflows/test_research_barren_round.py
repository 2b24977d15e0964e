"""A later round that adds no findings: the refinery decides, the stall guard only catches a CONTINUE (real server).

The guard used to stop as ``stalled`` before asking the refinery, so a run whose follow-up search
found nothing new (every offline run that took a second round) reported ``completed_normally:
false`` and an answer that "ended early" although the refinery would have said FINISH.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.client import Client

from durable_navigator.navcore.research.research import ResearchResult

from tests.support.batch import priced_activities
from tests.support.research import (
    COST,
    finish_answer,
    research_request,
    run_research,
    text_answer,
    write_research_script,
)

_CONTINUE = text_answer("DECISION: CONTINUE\nMISSING: what the stream end does\nREASON: half of it")


def _script(path: Path, second_verdict: dict) -> str:
    """Round 1 finds one thing; round 2's step finds nothing; the second refinery says ``second_verdict``."""
    return write_research_script(path, {
        "research.plan": [text_answer('["read the plugin"]'), text_answer('["search for the stream end"]')],
        "research.execute": ["", finish_answer(("after_call records usage and adds its price",
                                                "src/budgetkit/plugin.py:26-29")),
                             finish_answer()],
        "research.refine": [_CONTINUE, second_verdict],
        "research.synthesize": [text_answer("after_call records usage (src/budgetkit/plugin.py:26-29).")],
    })


@pytest.mark.parametrize(("verdict", "reason", "normal"), [
    (text_answer("DECISION: FINISH\nREASON: nothing more to find"), "finalized", True),
    (_CONTINUE, "stalled", False),
])
async def test_a_barren_round_ends_as_the_refinery_says(client: Client, task_queue: str, tmp_path: Path,
                                                        start_worker, verdict: dict, reason: str,
                                                        normal: bool) -> None:
    model = _script(tmp_path / "script.yaml", verdict)
    async with start_worker(priced_activities(tmp_path)):
        result: ResearchResult = await run_research(client, task_queue, research_request(tmp_path, model=model))
    assert (result.stop_reason.value, result.completed_normally) == (reason, normal), result.stop_detail
    # two rounds ran (a third would repeat the barren one); the second refinery was asked either way
    assert (result.rounds, result.steps, result.findings) == (2, 2, 1)
    assert result.cost_micros == 7 * COST  # 2 plans + 2 turns + 2 refinery calls + the answer
    report = json.loads(Path(result.report_path or "").read_text())
    assert report["completed_normally"] is normal and report["stop_reason"] == reason
    answer = Path(result.answer_path or "").read_text()
    assert "src/budgetkit/plugin.py:26-29" in answer
    assert ("ended early" in answer) is (not normal)


async def test_a_failed_refinery_call_is_no_normal_end(client: Client, task_queue: str, tmp_path: Path,
                                                       start_worker) -> None:
    """#29: the refinery call failed and ``ask`` still said ``completed_normally: yes`` (stop reason
    ``finalized``). Only a FINISH is a normal end: the run answers from its findings, says why it is not
    complete in the result, report.json and answer.md, and ends ``failed`` like any failed model call."""
    model = write_research_script(tmp_path / "script.yaml", {
        "research.plan": [text_answer('["read the plugin"]')],
        "research.execute": ["", finish_answer(("after_call records usage and adds its price",
                                                "src/budgetkit/plugin.py:26-29"))],
        "research.refine": [{"error": "fatal", "usage": {"input_tokens": 10}}],
        "research.synthesize": [text_answer("after_call records usage (src/budgetkit/plugin.py:26-29).")],
    })
    async with start_worker(priced_activities(tmp_path)):
        result: ResearchResult = await run_research(client, task_queue, research_request(tmp_path, model=model))
    assert not result.completed_normally and result.stop_reason.value == "failed", result
    assert "the refinery call failed" in (result.stop_detail or "")
    report = json.loads(Path(result.report_path or "").read_text())
    assert report["completed_normally"] is False and "the refinery call failed" in report["stop_detail"]
    answer = Path(result.answer_path or "").read_text()
    assert "src/budgetkit/plugin.py:26-29" in answer  # still answered from the findings
    assert "ended early" in answer and "the refinery call failed" in answer
