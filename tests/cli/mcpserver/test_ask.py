"""The ``ask`` tool over stdio: the official MCP client, a spawned ``navigator mcp``, its embedded Temporal.

``ask`` starts a research run as ``navigator ask`` does (same request, validation, allowed roots,
budget and model), reports each executor turn, returns the cited answer and its outcome, and
stops the run when the client cancels the call; the answer stays readable afterwards
(``run_status``, ``navigator://runs/{id}/answer``).
"""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.cli.mcpserver.test_stdio import CALL_TIMEOUT_S, _allowed_tree
from tests.support.cli import FIXTURE_REPO
from tests.support.e2e import Sandbox
from tests.support.mcp import TOOLS, Progress, stdio_params, texts, wait_finished
from tests.support.research import calls_answer, finish_answer, text_answer, write_research_script

from durable_navigator.activities.research import LineCounter
from durable_navigator.navcore.run.citations import citation_spans

QUESTION = "why does the budget plugin double-count tokens?"


def _cited(answer: str, repo: Path) -> list[str]:
    """Every citation of ``answer``, after checking that each names lines that exist in ``repo``."""
    count = LineCounter(repo)
    labels = []
    for _, _, cite in citation_spans(answer):
        lines = count(cite.path)
        assert lines is not None and cite.end <= lines, cite
        labels.append(cite.label())
    return labels


async def test_ask_answers_with_citations_and_refuses_what_navigator_ask_refuses(tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    root, repo = _allowed_tree(tmp_path)
    params = stdio_params(box.env(), tmp_path, "--allow-root", str(root))
    async with Client(params, read_timeout_seconds=CALL_TIMEOUT_S) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        assert set(listed) == TOOLS and "ask" in TOOLS
        schema = listed["ask"].input_schema
        assert set(schema["required"]) == {"repo", "question"}
        assert set(schema["properties"]) == {"repo", "question", "budget_usd", "model"}
        assert {"run_id", "cost_usd", "stop_reason", "completed_normally", "answer_uri"} <= set(
            listed["ask"].output_schema["properties"])
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        assert "navigator://runs/{run_id}/answer" in templates

        # the offline model answers, every citation names lines that exist, each turn is reported
        progress = Progress()
        result = await client.call_tool("ask", {"repo": str(repo), "question": QUESTION}, progress_callback=progress)
        assert not result.is_error, texts(result)
        out = result.structured_content
        answer = texts(result)[0]
        assert out["run_id"].startswith("ask-budgetkit-") and json.loads(texts(result)[1])["run_id"] == out["run_id"]
        assert out["stop_reason"] == "finalized" and out["completed_normally"] is True, out
        assert out["cost_usd"] == 0.0 and out["citations"] > 0
        assert "## Answer" in answer
        assert any(c.startswith("src/budgetkit/plugin.py:") for c in _cited(answer, repo)), answer
        steps = progress.steps
        assert steps == sorted(set(steps)) and len(steps) >= 2, progress.seen  # strictly increasing, as MCP requires
        assert all(m and m.startswith("turn ") and "$" in m for _, _, m in progress.seen[:-1]), progress.seen
        assert progress.seen[-1][2].startswith(f"finished after {out['iterations']} turns: finalized")

        # durable and readable afterwards: the answer resource, report, run_status, list_runs
        run_id = out["run_id"]
        assert (await client.read_resource(out["answer_uri"])).contents[0].text == answer
        report = json.loads((await client.read_resource(out["report_uri"])).contents[0].text)
        assert report["kind"] == "research" and report["workflow_id"] == run_id
        status = await client.call_tool("run_status", {"run_id": run_id})
        assert status.structured_content["kind"] == "ask" and status.structured_content["state"] == "completed"
        assert status.structured_content["goal"] == QUESTION
        assert status.structured_content["outcome"]["citations"] == out["citations"]
        assert texts(status)[0] == answer
        runs = (await client.call_tool("list_runs", {"repo": str(repo)})).structured_content["runs"]
        assert [(r["run_id"], r["kind"], r["goal"]) for r in runs] == [(run_id, "ask", QUESTION)]
        with pytest.raises(Exception, match="research run"):  # a research run has no context pack
            await client.read_resource(f"navigator://runs/{run_id}/context")

        # refusals are tool errors with a clear line, before any run starts, and the server keeps serving
        (tmp_path / "outside.yaml").write_text("text: {}\n")  # a model script outside the allowed roots
        for bad, words in [
            ({"repo": str(FIXTURE_REPO), "question": QUESTION}, "outside the allowed roots"),
            ({"repo": str(root / "escape" / FIXTURE_REPO.name), "question": QUESTION}, "outside the allowed roots"),
            ({"repo": str(root / "missing"), "question": QUESTION}, "does not exist"),
            ({"repo": str(repo / "README.md"), "question": QUESTION}, "not a directory"),
            ({"repo": str(repo), "question": "   "}, "question is empty"),
            ({"repo": str(repo), "question": QUESTION, "budget_usd": 0}, "budget_usd"),
            ({"repo": str(repo), "question": QUESTION, "model": "no-such-model"}, "model"),
            ({"repo": str(repo), "question": QUESTION, "model": f"scripted:{tmp_path / 'outside.yaml'}"},
             "outside the allowed roots"),
        ]:
            refused = await client.call_tool("ask", bad)
            assert refused.is_error, bad
            assert words in texts(refused)[0], (bad, texts(refused))
        runs = (await client.call_tool("list_runs", {})).structured_content["runs"]
        assert [r["run_id"] for r in runs] == [run_id]  # nothing refused was started


async def test_cancelling_ask_stops_the_research_which_still_answers(tmp_path: Path) -> None:
    box = Sandbox.create(tmp_path)
    root, repo = _allowed_tree(tmp_path)
    model = write_research_script(root / "slow-research.yaml", {
        "research.plan": [text_answer('["read the plugin", "read the ledger"]')],
        "research.execute": ["", finish_answer(("BudgetPlugin refuses calls past the limit", "src/budgetkit/plugin.py:13-24")),
                             *[calls_answer({"name": "list_directory", "args": {"path": "src"}}, stall_s=30)] * 8],
        "research.synthesize": [text_answer("The plugin refuses calls past its limit (src/budgetkit/plugin.py:13-24).")],
    })
    params = stdio_params(box.env(), tmp_path, "--allow-root", str(root))
    async with Client(params, read_timeout_seconds=CALL_TIMEOUT_S) as client:
        progress = Progress()
        call: dict = {}

        async def ask() -> None:
            call["result"] = await client.call_tool("ask", {"repo": str(repo), "question": QUESTION, "model": model},
                                                    progress_callback=progress)

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            await progress.reached(1, CALL_TIMEOUT_S)
            [run] = (await client.call_tool("list_runs", {})).structured_content["runs"]
            assert run["kind"] == "ask"
            with anyio.fail_after(60):  # turn 1 has found something; the stalled turn 2 is in flight
                while not ((live := (await client.call_tool("run_status", {"run_id": run["run_id"]})).structured_content)
                           ["step"] or 0) >= 1 or live["navigator_status"] != "thinking":
                    await anyio.sleep(0.2)
            tg.cancel_scope.cancel()  # the client cancels the call: notifications/cancelled
        assert "result" not in call
        status = await wait_finished(client, run["run_id"], CALL_TIMEOUT_S)
        outcome = status.structured_content["outcome"]
        assert outcome["stop_reason"] == "stopped" and outcome["completed_normally"] is False, outcome
        assert "cancelled by the MCP client" in (outcome["stop_detail"] or "")
        answer = texts(status)[0]
        assert "src/budgetkit/plugin.py:13-24" in answer, answer


async def test_ask_and_explore_refuse_what_no_run_can_use_at_once(tmp_path: Path) -> None:
    # the fuzzer's repros: ``ask`` with budget_usd 1e-12 (no whole micro-dollar) was not answered
    # within 300 s, and a tree of only binaries started a run that failed at its scan; both tools
    # must refuse them before anything starts, with the line `navigator ask|explore` prints
    box = Sandbox.create(tmp_path)
    root, repo = _allowed_tree(tmp_path)
    binaries = root / "binaries"
    binaries.mkdir()
    (binaries / "logo.png").write_bytes(b"\x89PNG\0\0\x01")
    params = stdio_params(box.env(), tmp_path, "--allow-root", str(root))
    async with Client(params, read_timeout_seconds=CALL_TIMEOUT_S) as client:
        for tool, text in (("ask", "question"), ("explore", "goal")):
            for bad, words in (({"repo": str(repo), "budget_usd": 1e-12}, "budget_usd"),
                               ({"repo": str(repo), "budget_usd": 0.0000004}, "budget_usd"),
                               ({"repo": str(binaries)}, "has no indexable files")):
                with anyio.fail_after(30):  # a refusal, not a run
                    refused = await client.call_tool(tool, {**bad, text: QUESTION})
                assert refused.is_error, (tool, bad, texts(refused))
                assert words in texts(refused)[0] and "\n" not in texts(refused)[0].strip(), (tool, bad, texts(refused))
        listed = await client.call_tool("list_runs", {})
        assert listed.structured_content["runs"] == [], listed.structured_content  # nothing was started
