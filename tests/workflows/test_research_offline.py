"""The offline model runs the whole research workflow without a key, deterministically (real server)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from temporalio.client import Client

from durable_navigator.navcore.run.citations import parse_citations
from durable_navigator.navcore.navigator.report import DecisionLogView
from durable_navigator.navcore.research.research import ResearchResult
from durable_navigator.workflows.research import ResearchWorkflow

from tests.support.batch import priced_activities
from tests.support.research import research_request, start_research

#: this repository (the worktree the tests run from)
PROJECT = Path(__file__).resolve().parents[2]
#: the folders that hold the navigator's run-time code: where its USD budget is enforced
RUNTIME_PACKAGES = ("navtypes", "navcore", "workflows", "activities")


def _runtime_copy(dest: Path) -> Path:
    """The committed files of :data:`RUNTIME_PACKAGES`, copied into ``dest``.

    The whole project is ~650 files, growing with every test and benchmark added; each
    ``get_callers`` the offline research issues costs jedi parses of its candidate files (3-7 s a
    query on a loaded 2-core machine), which took this test past its 120 s limit at load 25. The
    question is about the run-time code, so the answer is researched there: same workflow, same
    tools, same sources, a fraction of the files.
    """
    listed = subprocess.run(["git", "ls-files", "-z", "--", *RUNTIME_PACKAGES], cwd=PROJECT, check=True,
                            capture_output=True, text=True).stdout.split("\0")
    for rel in filter(None, listed):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(PROJECT / rel, target)
    return dest


async def _run(client: Client, task_queue: str, tmp_path: Path, **kw) -> tuple[ResearchResult, DecisionLogView]:  # type: ignore[no-untyped-def]
    handle = await start_research(client, task_queue, research_request(tmp_path, **kw))
    result: ResearchResult = await handle.result()
    return result, await handle.query(ResearchWorkflow.get_decision_log)


async def test_how_the_navigator_enforces_the_usd_budget(client: Client, task_queue: str, tmp_path: Path,
                                                         start_worker) -> None:
    """The issue's "done": the answer's citations point into the ledger and the guard."""
    async with start_worker(priced_activities(tmp_path)):
        result, view = await _run(client, task_queue, tmp_path, repo_path=str(_runtime_copy(tmp_path / "repo")),
                                  question="how does the navigator enforce the USD budget?")
    answer = Path(result.answer_path or "").read_text()
    body = answer.split("## Findings")[0]
    cited = {c.path for c in parse_citations(body)}
    assert {"navcore/run/budget.py", "workflows/blocks/model_call.py"} <= cited, body
    assert "ledger.reserve(" in answer and "class BudgetLedger" in answer
    assert result.completed_normally and result.cost_micros == 0  # offline is free
    actions = [e.action for e in view.entries]
    assert {"research_plan", "call_tools", "finish_step", "aggregate", "research_refine", "research_answer"} <= set(actions)


async def test_offline_research_is_deterministic(client: Client, task_queue: str, tmp_path: Path,
                                                 start_worker) -> None:
    async with start_worker(priced_activities(tmp_path)):
        first, log1 = await _run(client, task_queue, tmp_path / "a")
        second, log2 = await _run(client, task_queue, tmp_path / "b")
    body = [Path(r.answer_path or "").read_text().split("\n", 3)[3] for r in (first, second)]  # past the repo line
    assert body[0] == body[1] and "src/budgetkit/plugin.py" in body[0]
    assert [(e.action, e.diff_lines) for e in log1.entries] == [(e.action, e.diff_lines) for e in log2.entries]
