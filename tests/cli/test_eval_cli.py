"""``navigator eval REPO`` end to end: a git repository built here, the session's Temporal dev server and a
real worker (offline model), the report's figures checked; ``--resume`` after the command was killed; the
bad-input refusals (before any work)."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.batch import priced_activities
from tests.support.evalrepo import TASK_MESSAGES, make_eval_repo
from tests.support.git import commit_all, git, init_repo
from temporalio.client import WorkflowExecutionStatus
from typer.testing import CliRunner

from durable_navigator.cli.app import app

NAVIGATOR = Path(sys.executable).parent / "navigator"


async def invoke(*args: str) -> tuple[int, str, str]:
    """Run the CLI in a thread (its commands call ``asyncio.run`` themselves)."""
    result = await asyncio.to_thread(CliRunner().invoke, app, list(args))
    return result.exit_code, result.stdout, result.stderr


def _check_report(out: Path, repo: Path, shas: list[str], budgets: list[int]) -> dict:
    """The figures of eval.json agree with its records, the tasks are the repository's, eval.md shows them."""
    report = json.loads((out / "eval.json").read_text())
    tasks = [r["task"] for r in report["tasks"]]
    assert [t["commit"] for t in tasks] == shas
    assert [t["goal"] for t in tasks] == list(TASK_MESSAGES)
    assert [t["parent"] for t in tasks[1:]] == shas[:-1]  # each task is explored at its own parent
    shipping = tasks[2]
    assert shipping["gold_lines"] == {"shop/shipping.py": [7]} and shipping["gold_anchor_lines"] == {"shop/shipping.py": 0}
    methods = {"navigator:offline", "engine", "chunk-bm25"}
    assert {(t["method"], t["tokens_budget"]) for t in report["totals"]} == {(m, b) for m in methods for b in budgets}
    for total in report["totals"]:
        scores = [s for r in report["tasks"] for s in r["scores"]
                  if s["method"] == total["method"] and s["tokens_budget"] == total["tokens_budget"]]
        assert total["tasks"] == len(scores) == 4 and total["failed"] == 0
        assert total["line_recall"] == pytest.approx(sum(s["line_recall"] for s in scores) / 4)
        assert all(s["tokens"] <= total["tokens_budget"] for s in scores)
        if total["method"] != "chunk-bm25":
            assert total["wins"] + total["ties"] + total["losses"] == 4
    md = (out / "eval.md").read_text()
    for total in report["totals"]:
        assert f"| {total['method']} | {total['line_recall']:.3f} | {total['file_hit']:.3f} |" in md
    assert "tune nothing" in md and "offline: 0 / 0" in md
    html = (out / "eval.html").read_text()
    # the plots are inline SVG: nothing fetched, nothing run; each recall bar carries its figure
    assert html.count("<svg") == 6 and "<script" not in html and "http" not in html.replace(
        'xmlns="http://www.w3.org/2000/svg"', "")
    for total in report["totals"]:
        assert f"<title>{total['method']} · {total['tokens_budget']:,} tokens: {total['line_recall']:.3f}</title>" in html
    # the user's work tree and history are untouched; the checkouts are gone
    assert git(repo, "status", "--porcelain") == "" and git(repo, "worktree", "list").count("\n") == 0
    return report


async def test_eval_end_to_end(eval_env: dict[str, str], start_worker, tmp_path: Path) -> None:
    repo = tmp_path / "shop"
    shas = make_eval_repo(repo)
    head = git(repo, "rev-parse", "HEAD")
    async with start_worker(priced_activities(tmp_path)):
        code, out, err = await invoke("eval", str(repo), "--tokens", "1024", "--tokens", "2048", "--out", "ev")
    assert code == 0, (out, err)
    report = _check_report(tmp_path / "ev", repo, shas, [1024, 2048])
    assert git(repo, "rev-parse", "HEAD") == head
    # the explorations saw the parent, not the commit: the shipping task's pack shows the old line
    runs = sorted((tmp_path / "ev" / "runs").glob("*/*/context.md"))
    assert len(runs) == 8
    shipping_pack = [p.read_text() for p in runs if "heavy parcels" in p.read_text()]
    assert shipping_pack and all("int(weight_kg) * 3" not in text for text in shipping_pack)
    # the engine alone finds each changed line on this small repository at either budget
    engine = [t for t in report["totals"] if t["method"] == "engine"]
    assert all(t["line_recall"] == 1.0 for t in engine), engine
    # compare: B is A with one navigator task scored lower -> one loss of B on that method and budget
    worse = json.loads((tmp_path / "ev" / "eval.json").read_text())
    nav = next(s for s in worse["tasks"][0]["scores"] if s["method"] == "navigator:offline" and s["tokens_budget"] == 1024)
    nav["line_recall"] = -1.0
    (tmp_path / "worse.json").write_text(json.dumps(worse))
    code, out, err = await invoke("eval", "compare", "ev", "worse.json", "--json")
    assert code == 0, err
    rows = {(r["method"], r["tokens_budget"]): r for r in json.loads(out)}
    assert len(rows) == 6 and all(r["shared_tasks"] == 4 for r in rows.values())
    assert (rows[("navigator:offline", 1024)]["b_losses"], rows[("navigator:offline", 2048)]["b_losses"]) == (1, 0)
    code, out, err = await invoke("eval", "compare", "ev", "ev")
    assert code == 0 and "| engine | 1,024 | 1.000 | 1.000 | +0.000 |" in out, (out, err)
    code, _, err = await invoke("eval", "compare", "ev", "shop")
    assert code == 2 and "is not an eval report" in err, err
    if CHROMIUM is not None:
        _check_html_in_chromium(tmp_path / "ev" / "eval.html", tmp_path)


CHROMIUM = shutil.which("chromium")
_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
          "--disable-component-update", "--disable-sync", "--no-first-run"]


def _check_html_in_chromium(page: Path, tmp_path: Path) -> None:
    """``eval.html`` in headless Chromium: a screenshot of a real page, and every plot laid out with
    its bars (a script in a copy of the page counts the SVGs the browser drew wider than 100 px that
    hold bars, and writes the count into the title, which ``--dump-dom`` prints)."""
    html = page.read_text()
    plots = html.count("<svg")
    assert plots >= 6, plots
    probe = tmp_path / "eval-probe.html"
    probe.write_text(html.replace("</body>", "<script>document.title = 'plots:' + [...document.querySelectorAll('svg')]"
                                  ".filter(s => s.getBoundingClientRect().width > 100 && s.querySelector('rect'))"
                                  ".length;</script></body>"))
    dom = subprocess.run([CHROMIUM, *_FLAGS, "--dump-dom", probe.as_uri()], capture_output=True, text=True,
                         timeout=120)
    assert f"<title>plots:{plots}</title>" in dom.stdout, (dom.stdout[:500], dom.stderr[-1500:])
    shot = tmp_path / "eval.png"
    subprocess.run([CHROMIUM, *_FLAGS, f"--screenshot={shot}", "--window-size=1100,2400", page.as_uri()],
                   capture_output=True, timeout=120, check=True)
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000, len(png)  # a drawn page, not a blank


async def test_eval_resumes_after_the_command_was_killed(eval_env: dict[str, str], start_worker, client,
                                                         tmp_path: Path) -> None:
    repo = tmp_path / "shop"
    shas = make_eval_repo(repo)
    out = tmp_path / "ev"
    async with start_worker(priced_activities(tmp_path)):
        proc = subprocess.Popen([str(NAVIGATOR), "eval", str(repo), "--tokens", "1024", "--out", str(out)],
                                env={**os.environ, **eval_env}, cwd=tmp_path, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            async with asyncio.timeout(60):  # the batch has started: eval-run.json names it and it exists
                while True:
                    if (out / "eval-run.json").is_file():
                        batch_id = json.loads((out / "eval-run.json").read_text())["batch_id"]
                        try:
                            desc = await client.get_workflow_handle(batch_id).describe()
                            break
                        except Exception:  # noqa: BLE001 - not started yet
                            pass
                    assert proc.poll() is None, proc.communicate()
                    await asyncio.sleep(0.1)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
        assert desc.status == WorkflowExecutionStatus.RUNNING  # killed while its batch ran
        assert not (out / "eval.json").exists()
        code, _, err = await invoke("eval", str(repo), "--out", str(out))
        assert code == 2 and "already holds an eval; pass --resume" in err, err
        code, stdout, err = await invoke("eval", str(repo), "--out", str(out), "--resume")
    assert code == 0, (stdout, err)
    report = _check_report(out, repo, shas, [1024])
    assert report["batch_id"] == batch_id
    for k in range(4):  # every exploration ran once: the resumed batch joined the running one
        runs = [w async for w in client.list_workflows(f"WorkflowId = '{batch_id}-job-{k:05d}'")]
        assert len(runs) == 1, runs


async def test_eval_refuses_bad_input_before_any_work(eval_env: dict[str, str], tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    young = tmp_path / "young"
    young.mkdir()
    init_repo(young)
    (young / "a.py").write_text("x = 1\n")
    commit_all(young, "Start the project with a first module")
    repo = tmp_path / "shop"
    make_eval_repo(repo)
    cases = [
        ((str(plain),), "is not a git repository"),
        ((str(tmp_path / "missing"),), "is not a folder"),
        ((str(young),), "no commit of"),
        ((str(repo), "--tokens", "10"), "--tokens 10 is below the minimum map size"),
        ((str(repo), "--model", "no-such-model"), "no-such-model"),
        ((str(repo), "--budget-usd", "0"), "--budget-usd must be above 0"),
        ((str(repo), "--resume"), "holds no eval to resume"),
    ]
    for args, says in cases:
        code, out, err = await invoke("eval", *args, "--out", str(tmp_path / "ev"))
        assert code == 2, (args, code, out, err)
        assert err.startswith("Error: ") and err.count("\n") == 1 and says in " ".join(err.split()), (args, err)
        assert not (tmp_path / "ev").exists(), args  # nothing half-written
    assert git(repo, "worktree", "list").count("\n") == 0
