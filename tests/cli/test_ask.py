"""`navigator ask`: the cited answer end to end, the read/steer commands on research runs, refusals."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest_asyncio
from temporalio.client import Client

from durable_navigator.activities.research import LineCounter
from durable_navigator.navcore.run.citations import citation_spans
from durable_navigator.workers.devserver import port_in_use
from durable_navigator.workers.worker import build_worker

from tests.support.batch import priced_activities
from tests.support.cli import FIXTURE_REPO, ainvoke, json_of
from tests.support.e2e import NAVIGATOR, Sandbox
from tests.support.research import calls_answer, text_answer, write_research_script

QUESTION = "why does the budget plugin double-count tokens?"


def _citations_exist(answer: Path, repo: Path) -> list[str]:
    """Every citation of ``answer`` as written, after checking each names existing lines of ``repo``."""
    count = LineCounter(repo)
    labels = []
    for _, _, cite in citation_spans(answer.read_text()):
        lines = count(cite.path)
        assert lines is not None and cite.end <= lines, cite
        labels.append(cite.label())
    return labels


def test_ask_on_the_embedded_server_prints_a_cited_answer(tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    proc = subprocess.run(
        [str(NAVIGATOR), "ask", str(FIXTURE_REPO), QUESTION, "--out", str(tmp_path / "out")],
        cwd=tmp_path, env=box.env(), capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    link = re.search(r"Web UI: (\S+)", proc.stderr)
    assert link and link.group(1).startswith(f"http://127.0.0.1:{box.ui_port}/namespaces/default/workflows/ask-")
    wid = link.group(1).rsplit("/", 1)[1]
    answer = tmp_path / "out" / wid / "answer.md"
    assert answer.is_file()
    # the answer is printed, and every citation in it names lines that exist
    assert "## Answer" in proc.stdout and "src/budgetkit/plugin.py:" in proc.stdout
    cited = _citations_exist(answer, FIXTURE_REPO)
    assert any(c.startswith("src/budgetkit/plugin.py:") for c in cited)
    report = json.loads((answer.parent / "report.json").read_text())
    assert report["kind"] == "research" and report["workflow_id"] == wid and report["citations"]["checked"] > 0
    assert "completed normally: yes" in proc.stdout
    assert not port_in_use("127.0.0.1", box.port)


@pytest_asyncio.fixture(loop_scope="session")
async def served(client: Client, task_queue: str, tmp_path: Path) -> AsyncIterator[dict[str, str]]:
    """A worker (real providers, test prices) on the test's task queue and the CLI pointed at it."""
    (tmp_path / "navigator.yaml").write_text("{}\n")
    env = {"TEMPORAL_ADDRESS": client.service_client.config.target_host, "NAVIGATOR_TASK_QUEUE": task_queue,
           "NAVIGATOR_CONFIG": str(tmp_path / "navigator.yaml")}
    async with build_worker(client, task_queue, activities=priced_activities(tmp_path)):
        yield env


async def test_status_log_result_and_stop_work_on_a_research_run(served: dict[str, str], tmp_path: Path) -> None:
    model = write_research_script(tmp_path / "script.yaml", {
        "research.plan": [text_answer('["read the plugin"]')],
        "research.execute": ["", calls_answer({"name": "read_file", "args": {"path": "src/budgetkit/plugin.py"}},
                                              stall_s=60)],
    })
    started = json_of(await ainvoke(["ask", str(FIXTURE_REPO), QUESTION, "--model", model, "--detach", "--json",
                                     "--out", str(tmp_path / "out")], served))
    wid = started["workflow_id"]
    assert wid.startswith("ask-")
    status = None
    for _ in range(100):
        status = json_of(await ainvoke(["status", wid, "--json"], served))
        if status["report"] and status["report"]["status"] == "thinking" and status["report"]["stage_plan"]:
            break
    assert status and status["report"]["workflow"] == "research"
    assert "read the plugin" in status["report"]["stage_plan"]
    human = await ainvoke(["status", wid], served)
    assert "Research plan" in human.stdout and "cited files" in human.stdout
    listed = json_of(await ainvoke(["ls", "--json"], served))
    assert wid in [row["workflow_id"] for row in listed]
    stop = await ainvoke(["stop", wid, "--reason", "enough for now"], served)
    assert stop.exit_code == 0, stop.stderr
    result = json_of(await ainvoke(["result", wid, "--wait", "--json"], served))
    assert result["stop_reason"] == "stopped" and result["completed_normally"] is False
    assert Path(result["answer_path"]).is_file()
    human_result = await ainvoke(["result", wid], served)
    assert "completed normally: no" in human_result.stdout
    log = json_of(await ainvoke(["log", wid, "--json"], served))
    assert log["children"] == []
    actions = [e["action"] for e in log["entries"]]
    assert actions[0] == "research_plan" and "stopped" in actions


async def test_bad_input_is_refused_before_anything_starts(served: dict[str, str], client: Client, task_queue: str,
                                                           tmp_path: Path) -> None:
    out = tmp_path / "out"
    bad_profiles = tmp_path / "profiles.yaml"
    bad_profiles.write_text("helper:\n  kind: research\n  caps: {max_rounds: 0}\n")
    cases = [
        (["ask", str(tmp_path / "missing"), QUESTION], "does not exist"),
        (["ask", str(FIXTURE_REPO), "   "], "QUESTION is empty"),
        (["ask", str(FIXTURE_REPO), QUESTION, "--budget-usd", "0"], "must be above 0"),
        (["ask", str(FIXTURE_REPO), QUESTION, "--budget-usd", "lots"], "must be a number"),
        (["ask", str(FIXTURE_REPO), QUESTION, "--profile", "nobody"], "is not a profile"),
        (["ask", str(FIXTURE_REPO), QUESTION, "--profile", "navigator"], "is a navigate profile"),
        (["ask", str(FIXTURE_REPO), QUESTION, "--profiles", str(bad_profiles)], "caps.max_rounds"),
        (["ask", str(FIXTURE_REPO), QUESTION, "--model", "no-such-model"], "model"),
    ]
    for args, needle in cases:
        result = await ainvoke([*args, "--out", str(out)], served)
        assert result.exit_code == 2, (args, result.stderr)
        assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1, result.stderr
        assert needle in result.stderr, (needle, result.stderr)
    runs = [w.id async for w in client.list_workflows(f"TaskQueue = '{task_queue}'")]
    assert runs == [] and not out.exists()


def test_interactive_ask_through_a_pty(tmp_path: Path) -> None:
    """Approve the plan, try to edit a step (refused), reject its findings with feedback, approve the next."""
    from tests.cli.test_interactive_pty import Terminal
    from tests.support.research import finish_answer

    box = Sandbox.create(tmp_path)
    model = write_research_script(tmp_path / "script.yaml", {
        "research.plan": [text_answer('["read the plugin", "read the ledger"]')],
        "research.execute": ["", finish_answer(("BudgetPlugin refuses calls", "src/budgetkit/plugin.py:21-24")),
                             finish_answer(("Ledger sums tokens per model", "src/budgetkit/ledger.py:34-37"))],
        "research.refine": [text_answer("DECISION: FINISH\nREASON: the ledger it is")],
        "research.synthesize": [text_answer("The ledger sums tokens per model (src/budgetkit/ledger.py:34-37).")],
    })
    term = Terminal([str(NAVIGATOR), "ask", str(FIXTURE_REPO), QUESTION, "--interactive", "--model", model,
                     "--out", str(tmp_path / "out")], tmp_path, box.env())
    try:
        term.expect(r"research plan \(round 1\) · awaiting your verdict")
        term.expect(r"\[s\]top >")
        term.send("a")
        term.expect(r"sent approve for research plan \(round 1\)")
        term.expect(r"the findings of step 1 · awaiting your verdict")
        term.expect(r"\[s\]top >")
        term.send("e")
        term.expect(r"cannot be edited")
        term.expect(r"\[s\]top >")
        term.send("r")
        term.expect(r"feedback for the model >")
        term.send("not the plugin")
        term.expect(r"sent reject for the findings of step 1")
        term.expect(r"the findings of step 2 · awaiting your verdict")
        term.expect(r"\[s\]top >")
        term.send("a")
        term.expect(r"## Answer")
        term.expect(r"completed normally: yes")
    except BaseException:
        term.close(timeout_s=0.1)
        raise
    assert term.close() == 0, term.seen[-3000:]
    [answer] = list((tmp_path / "out").glob("*/answer.md"))
    text = answer.read_text()
    assert "src/budgetkit/ledger.py:34-37" in text and "plugin.py:21-24" not in text
