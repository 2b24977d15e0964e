"""``navigator export ID`` end to end: a real offline exploration on the test dev server (a real worker),
exported by the CLI; the exported history replays with the project's replay code unchanged, the case
holds the run's goal, repository, commit and pack, and ``navigator eval --cases`` re-scores it. The
refusals (unknown id, a run still running or not completed, an occupied --out) write nothing."""

from __future__ import annotations

import json
import shutil
import uuid
from datetime import timedelta
from pathlib import Path

from tests.support.batch import priced_activities
from tests.support.cli import FIXTURE_REPO, ainvoke, json_of
from tests.support.evalrepo import make_eval_repo
from tests.support.git import commit_all, git, init_repo
from tests.support.navigator import NO_LOOP_GUARD, ZOOM_BUDGET, ZOOM_OUT_CLI, ScriptProvider, make_activities, \
    make_request, run
from tests.workflows.test_replay import replay
from temporalio.client import Client

from durable_navigator.navcore.evaluation.cases import CASE_FILE, QualityCase
from durable_navigator.navcore.navigator.requests import ExplorationRequest
from durable_navigator.navcore.run_kinds import EXPLORE

GOAL = "Make heavy parcels cost more to ship than light parcels do today"


async def _explore(repo: Path, tmp_path: Path, *extra: str) -> dict:
    return json_of(await ainvoke(["explore", str(repo), GOAL, "--tokens", "1024", "--json",
                                  "--out", str(tmp_path / "runs"), *extra]))


async def test_an_exported_run_replays_and_its_case_is_rescored(eval_env: dict[str, str], start_worker,
                                                                tmp_path: Path) -> None:
    repo = tmp_path / "shop"
    make_eval_repo(repo)
    head = git(repo, "rev-parse", "HEAD")
    async with start_worker(priced_activities(tmp_path)):
        result = await _explore(repo, tmp_path)
        wid = result["workflow_id"]
        exported = json_of(await ainvoke(["export", wid, "--out", str(tmp_path / "case"), "--json"]))
        assert exported["folder"] == str(tmp_path / "case")
        # the case: the run's request and pack, HEAD at run time, the files the pack shows in full
        case = QualityCase.model_validate_json((tmp_path / "case" / CASE_FILE).read_text())
        assert (case.id, case.goal, case.repo, case.commit) == (wid, GOAL, str(repo), head)
        assert case.model == "offline" and case.token_budget == 1024 and case.stop_reason == result["stop_reason"]
        assert case.gold_source == "pack-full" and "every line visible" in case.gold_note
        pack = Path(result["context_path"]).read_text()
        assert (tmp_path / "case" / "context.md").read_text() == pack
        assert "shop/shipping.py" in case.gold_files, case.gold_files
        for path in case.gold_files:  # each right file is in the pack whole
            assert (repo / path).read_text().rstrip("\n") in pack, path
        # the history: the project's replay code replays the exported file as it is
        assert case.histories == [f"history/{wid}.json"] and exported["history_files"] == [
            str(tmp_path / "case" / "history" / f"{wid}.json")]
        await replay(tmp_path / "case" / case.histories[0])
        # --gold names the right files; a file not in the repository at the commit is refused
        named = json_of(await ainvoke(["export", wid, "--out", str(tmp_path / "named"), "--gold", "shop/cart.py",
                                       "--json"]))
        assert (named["gold_files"], named["gold_source"]) == (["shop/cart.py"], "user")
        bad = await ainvoke(["export", wid, "--out", str(tmp_path / "bad"), "--gold", "shop/nothing.py"])
        assert bad.exit_code == 2 and "--gold shop/nothing.py is not a non-empty file of" in bad.stderr, bad.stderr
        # eval --cases: the case's commit explored again, scored against its right files
        code = await ainvoke(["eval", "--cases", str(tmp_path / "case"), "--tokens", "1024", "--out",
                              str(tmp_path / "ev")])
    assert code.exit_code == 0, (code.stdout, code.stderr)
    report = json.loads((tmp_path / "ev" / "eval.json").read_text())
    assert [r["task"]["goal"] for r in report["tasks"]] == [GOAL]
    assert report["tasks"][0]["task"]["commit"] == head and report["tasks"][0]["task"]["repo"] == str(repo)
    nav = next(t for t in report["totals"] if t["method"] == "navigator:offline")
    # the offline model is deterministic: the same commit, goal and budget show the same files in full
    assert (nav["line_recall"], nav["file_hit"], nav["failed"]) == (1.0, 1.0, 0), nav
    assert {t["method"] for t in report["totals"]} == {"navigator:offline", "engine", "chunk-bm25"}
    assert "1 quality case exported by `navigator export`" in (tmp_path / "ev" / "eval.md").read_text()
    assert not (tmp_path / "bad").exists() and not list(tmp_path.glob(".bad.tmp-*"))
    assert git(repo, "worktree", "list").count("\n") == 0  # the case's checkout is gone


async def test_a_continued_run_in_a_subfolder_exports_every_run_and_rescores(
        eval_env: dict[str, str], client: Client, task_queue: str, start_worker, tmp_path: Path) -> None:
    """A run that continued as new exports one history per run (each replays); a repository that is a folder
    inside a git work tree (a monorepo's package) keeps its paths: --gold is checked there, and eval --cases
    explores that folder of the commit's checkout."""
    mono = tmp_path / "mono"
    shutil.copytree(FIXTURE_REPO, mono / "pkg")
    init_repo(mono)
    head = commit_all(mono, "The budget kit as one package of a larger repository")
    provider = ScriptProvider(steps=[ZOOM_BUDGET, ZOOM_OUT_CLI] * 3)
    req = make_request(tmp_path, repo_path=str(mono / "pkg"), max_iterations=6, continue_as_new_events=50,
                       profile=NO_LOOP_GUARD)
    async with start_worker(make_activities(tmp_path, provider)):
        result = await run(client, task_queue, req, "nav-continued/in a subfolder")
    assert result.continued_runs >= 1
    exported = json_of(await ainvoke(["export", result.workflow_id, "--out", str(tmp_path / "cases" / "one"),
                                      "--gold", "src/budgetkit/ledger.py", "--json"]))
    runs = result.continued_runs + 1
    # the id is percent-encoded in the names (a "/" cannot be in a file name) and read back by the replay test
    assert exported["histories"] == [f"history/nav-continued%2Fin%20a%20subfolder_run{i}.json"
                                     for i in range(1, runs + 1)]
    assert exported["commit"] == git(mono, "rev-parse", "HEAD") and head
    for path in exported["history_files"]:
        await replay(Path(path))
    async with start_worker(priced_activities(tmp_path)):
        code = await ainvoke(["eval", "--cases", str(tmp_path / "cases"), "--tokens", "1024", "--out",
                              str(tmp_path / "ev")])
    assert code.exit_code == 0, (code.stdout, code.stderr)
    task = json.loads((tmp_path / "ev" / "eval.json").read_text())["tasks"][0]
    lines = len((mono / "pkg" / "src/budgetkit/ledger.py").read_text().splitlines())
    assert task["task"]["subdir"] == "pkg" and task["task"]["gold_lines"] == {
        "src/budgetkit/ledger.py": list(range(1, lines + 1))}
    nav = [s for s in task["scores"] if s["method"] == "navigator:offline"]
    assert nav and nav[0]["status"] == "completed" and nav[0]["file_hit"] == 1.0, nav


async def test_export_refuses_what_it_cannot_export(eval_env: dict[str, str], client: Client, start_worker,
                                                   tmp_path: Path) -> None:
    out = tmp_path / "case"
    result = await ainvoke(["export", "nav-no-such-run", "--out", str(out)])
    assert result.exit_code == 4 and "nav-no-such-run" in result.stderr, result.stderr
    # a run that never ends here (no worker polls its queue) is still running
    req = ExplorationRequest(repo_path=str(tmp_path), goal=GOAL, out_dir=str(tmp_path / "runs"))
    handle = await client.start_workflow(EXPLORE.workflow_type, req, id=f"nav-{uuid.uuid4()}",
                                         task_queue=f"nobody-{uuid.uuid4()}", execution_timeout=timedelta(minutes=5))
    result = await ainvoke(["export", handle.id, "--out", str(out)])
    assert result.exit_code == 2 and "is still running; wait for it" in result.stderr, result.stderr
    await handle.terminate("test")
    result = await ainvoke(["export", handle.id, "--out", str(out)])
    assert result.exit_code == 2 and "is terminated: it wrote no context pack" in result.stderr, result.stderr
    out.mkdir()
    result = await ainvoke(["export", handle.id, "--out", str(out)])
    assert result.exit_code == 2 and "already exists; pass another --out" in result.stderr, result.stderr
    assert list(out.iterdir()) == [] and not list(tmp_path.glob(".case.tmp-*"))


async def test_eval_cases_refuses_bad_input_before_any_work(eval_env: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    broken = tmp_path / "broken" / "one"
    broken.mkdir(parents=True)
    (broken / CASE_FILE).write_text('{"goal": "x"}')
    cases = [
        (["--cases", str(tmp_path / "missing")], "is not a folder"),
        (["--cases", str(tmp_path / "empty")], "holds no case.json; export runs into it"),
        (["--cases", str(tmp_path / "broken")], "is not a quality case"),
        (["--cases", str(tmp_path / "empty"), str(tmp_path)], "not both"),
        (["--cases", str(tmp_path / "empty"), "--tasks", "3"], "--cases runs every case in DIR"),
    ]
    for args, says in cases:
        result = await ainvoke(["eval", *args, "--out", str(tmp_path / "ev")])
        assert result.exit_code == 2 and says in result.stderr, (args, result.stderr)
        assert not (tmp_path / "ev").exists()
