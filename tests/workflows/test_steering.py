"""Human steering sticks: an edit or a rejection's feedback is not undone by the next turns.

The offline model in an interactive run on the real dev server: a human edits a
proposed turn to show an unrelated file in full, later rejects a turn saying
"drop tests"; every later turn keeps both (the keys are pinned), and feedback
may name a file by its path's tail.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta
from pathlib import Path

from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.navcore.navigator.messages import ApproveInput, EditFlightPlanInput, RejectInput
from durable_navigator.navcore.navigator.report import TurnReport
from durable_navigator.navcore.navigator.requests import ExplorationRequest
from durable_navigator.navcore.navigator.state import ExecutionMode, StopReason
from durable_navigator.navtypes.flightplan import FlightPlanUpdate, Level, VerbosityRule
from durable_navigator.workflows.navigator import NavigatorWorkflow
from tests.support.navigator import with_hand_rules
from tests.support import FIXTURE_REPO

GOAL = "why does the budget plugin double-count tokens when the ledger records streamed usage?"
#: unrelated to the goal and ranked low: the policy alone zooms it back out
PINNED_FILE = "src/misc/colors07.py"


def _repo(tmp_path: Path) -> Path:
    """The fixture repository plus twenty unrelated modules (so the pinned file ranks far down)."""
    import shutil

    root = tmp_path / "repo"
    shutil.copytree(FIXTURE_REPO, root)
    for i in range(20):
        (root / "src" / "misc").mkdir(parents=True, exist_ok=True)
        body = "\n\n".join(f"def paint_{j}(canvas, colour):\n    return canvas.fill(colour, {j})" for j in range(12))
        (root / "src" / "misc" / f"colors{i:02d}.py").write_text(f'"""Colour helpers {i}."""\n\n{body}\n')
    return root


async def _drive(handle, steer) -> None:  # noqa: ANN001 - a workflow handle and a callback
    """Answer every turn: ``steer(turn)`` may edit / reject it; otherwise approve."""
    answered: set[int] = set()
    while True:
        try:
            report: TurnReport = await handle.query(NavigatorWorkflow.get_status)
        except Exception:  # noqa: BLE001 - the run may just have closed
            return
        if report.stop_reason is not None and report.awaiting_turn is None:
            return
        turn = report.awaiting_turn
        if turn is not None and report.awaiting_kind == "turn" and turn not in answered:
            answered.add(turn)
            if not await steer(turn):
                await handle.signal(NavigatorWorkflow.approve, ApproveInput(turn=turn, sender="t"))
        await asyncio.sleep(0.1)


async def test_an_edit_and_a_rejection_stick_for_the_rest_of_the_run(client, task_queue, start_worker,
                                                                      tmp_path: Path) -> None:
    # the hand rules take several turns (the default learned allocation finalizes on its second)
    acts = with_hand_rules(NavigatorActivities(LocalArtifactStore(tmp_path / "artifacts"), pricer=TablePricer.load()))
    req = ExplorationRequest(repo_path=str(_repo(tmp_path)), goal=GOAL, model="offline", token_budget=1500,
                             max_iterations=10, out_dir=str(tmp_path / "out"), planning="off",
                             mode=ExecutionMode.INTERACTIVE)
    steered: dict[str, int] = {}

    async def steer(turn: int) -> bool:
        if "edit" not in steered:
            steered["edit"] = turn
            update = FlightPlanUpdate(set_rules=[VerbosityRule(glob=PINNED_FILE, level=Level.FULL)])
            await handle.execute_update(NavigatorWorkflow.edit_flight_plan,
                                        EditFlightPlanInput(turn=turn, update=update, sender="t"))
            return False  # then approve it
        if "reject" not in steered:
            steered["reject"] = turn
            await handle.signal(NavigatorWorkflow.reject, RejectInput(
                turn=turn, sender="t", feedback="drop tests, and expand test_plugin.py is not needed either"))
            return True
        return False

    async with start_worker(acts):
        handle = await client.start_workflow(NavigatorWorkflow.run, req, id=f"steer-{uuid.uuid4()}",
                                             task_queue=task_queue, execution_timeout=timedelta(seconds=120))
        await _drive(handle, steer)
        result = await handle.result()
        plan = await handle.query(NavigatorWorkflow.get_flight_plan)
        log = await handle.query(NavigatorWorkflow.get_decision_log)
    assert result.stop_reason in (StopReason.FINALIZED, StopReason.MAX_ITERATIONS)
    assert "edit" in steered and "reject" in steered
    levels = {r.glob: r.level for r in plan.rules}
    assert levels[PINNED_FILE] == Level.FULL and PINNED_FILE in plan.pinned
    assert "tests/**" in plan.exclude and "tests/**" in plan.pinned
    # no later turn lowered the pinned file or brought the tests back
    after_edit = [e for e in log.entries if e.step > steered["edit"] and e.config_diff is not None]
    for e in after_edit:
        changed = {r.glob: r.level for r in e.config_diff.set_rules}
        assert changed.get(PINNED_FILE, Level.FULL) == Level.FULL or "pinned by the user" in (e.error or "")
        assert "tests/**" not in e.config_diff.remove_exclude or "pinned by the user" in (e.error or "")
    follow = [e for e in log.entries if e.step > steered["reject"] and e.reasoning.startswith("follow feedback")]
    assert follow and "exclude tests/**" in follow[0].reasoning


def test_feedback_names_a_file_by_its_tail_and_a_symbol_by_its_short_name(tmp_path: Path) -> None:
    from durable_navigator.activities.models.offline.config import OfflinePolicyConfig
    from durable_navigator.activities.models.offline.feedback import feedback_update
    from durable_navigator.activities.models.offline.terms import parse_feedback
    from durable_navigator.navtypes.flightplan import FlightPlan
    from durable_navigator.repomap import RepoMap

    engine = RepoMap.open(FIXTURE_REPO, cache_dir=tmp_path / "cache", jobs=1)
    update, notes = feedback_update(engine, FlightPlan(), parse_feedback(
        "look at budgetkit/ledger.py and Ledger.record; ignore tests"), OfflinePolicyConfig())
    assert any(r.glob == "src/budgetkit/ledger.py" for r in update.set_rules), notes
    assert any(f.symbol.endswith("::Ledger.record") for f in update.add_focus_symbols), notes
    assert update.add_exclude == ["tests/**"]
    assert {"src/budgetkit/ledger.py", "tests/**"} <= set(update.pin)
