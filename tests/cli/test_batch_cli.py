"""``navigator batch run|status|results|stop`` against the session dev server and a test worker."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest
import yaml
from tests.support.batch import FIXTURE_REPO, batch_request, job, priced_activities, start_batch, write_script
from temporalio.service import RPCError
from typer.testing import CliRunner

from durable_navigator.cli.app import app


@pytest.fixture
def cli_env(client, task_queue, tmp_path, monkeypatch) -> Path:
    """Point the CLI at the test server and task queue; no config file, no credentials."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TEMPORAL_ADDRESS", client.service_client.config.target_host)
    monkeypatch.setenv("NAVIGATOR_TASK_QUEUE", task_queue)
    monkeypatch.setenv("NAVIGATOR_CONFIG", str(tmp_path / "navigator.yaml"))
    (tmp_path / "navigator.yaml").write_text("{}\n")
    for key in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "TEMPORAL_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    return tmp_path


async def invoke(*args: str) -> tuple[int, str, str]:
    """Run the CLI in a thread (its commands call ``asyncio.run`` themselves)."""
    result = await asyncio.to_thread(CliRunner().invoke, app, list(args))
    return result.exit_code, result.stdout, result.stderr


async def test_bad_jobs_file_reports_each_job_and_starts_nothing(cli_env: Path) -> None:
    jobs = {"jobs": [{"repo": str(FIXTURE_REPO), "goal": "ok"},
                     {"repo": "missing-repo", "goal": "x"},
                     {"repo": str(FIXTURE_REPO), "goal": "y", "model": "gpt-5"}]}
    (cli_env / "jobs.yaml").write_text(yaml.safe_dump(jobs))
    code, _, err = await invoke("batch", "run", "jobs.yaml", "--budget-usd", "1", "--id", "batch-bad")
    assert code == 2, err
    assert "job 1 (line 5) field 'repo'" in err and "job 2 (line 7) field 'model'" in err and "unknown model" in err


async def test_run_status_results_stop(cli_env: Path, start_worker, tmp_path) -> None:
    script = write_script(tmp_path / "s.yaml", steps=1)
    jobs = {"defaults": {"model": script, "token_budget": 1500, "max_iterations": 4},
            "jobs": [{"repo": str(FIXTURE_REPO), "goal": f"goal {i}"} for i in range(2)]}
    (cli_env / "jobs.yaml").write_text(yaml.safe_dump(jobs))
    async with start_worker(priced_activities(tmp_path)):
        code, out, err = await invoke("batch", "run", "jobs.yaml", "--budget-usd", "0.5", "--concurrency", "2",
                                      "--id", "batch-cli-1", "--out", "out", "--json")
        assert code == 0, err
        result = json.loads(out)
        assert [o["status"] for o in result["outcomes"]] == ["completed", "completed"]
        assert Path(result["results_path"]).is_file()
        code, out, err = await invoke("batch", "status", "batch-cli-1", "--json")
        assert code == 0, err
        assert json.loads(out)["done"] is True and json.loads(out)["completed"] == 2
        code, out, err = await invoke("batch", "results", "batch-cli-1")
        assert code == 0, err
        assert "batch-cli-1" in out and "completed" in out
        code, _, err = await invoke("batch", "stop", "batch-cli-1")
        assert code == 4, err  # the batch is closed: nothing to stop
        code, _, err = await invoke("batch", "status", "no-such-batch")
        assert code == 4, err


async def test_batch_results_status_stop_of_an_exploration_id_say_it_is_not_a_batch(client, cli_env: Path) -> None:
    # no worker: the run just needs to exist as a NavigatorWorkflow; exit 4 as for any id with no batch
    handle = await client.start_workflow("NavigatorWorkflow", id="nav-not-a-batch", task_queue="nowhere-fix-a")
    try:
        for command in ("results", "status", "stop"):
            code, _, err = await invoke("batch", command, handle.id)
            assert code == 4, (code, err)
            assert err.startswith("Error: ") and err.count("\n") == 1, err
            assert "nav-not-a-batch is not a batch" in " ".join(err.split()), err
        # `batch stop` refused before signalling: the exploration got no `stop` of a batch's shape
        history = await handle.fetch_history()
        assert not [e for e in history.events if e.HasField("workflow_execution_signaled_event_attributes")]
    finally:
        await handle.terminate()


async def test_status_of_a_running_batch_shows_its_progress(client, cli_env: Path, start_worker, task_queue,
                                                            tmp_path) -> None:
    """`navigator status <batch id>` while the batch runs (found by bench/fuzz_surfaces.py seed 59).

    The batch answers `get_progress`, not an exploration's `get_status`: `status` asked for the latter and
    exited 2 ("query get_status failed") whenever it caught a batch still running — a race in the fuzz run
    (its batches finish in seconds), deterministic here: the job's task queue has no worker, so the batch
    stays running with its job started and never finished.
    """
    script = write_script(tmp_path / "s.yaml", steps=1)
    req = batch_request(tmp_path, [job(0, script)], max_concurrency=1, task_queue=f"nowhere-{uuid.uuid4()}")
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_batch(client, task_queue, req)
        try:
            child = client.get_workflow_handle(f"{req.batch_id}-job-00000")
            async with asyncio.timeout(60):
                while True:  # the batch has started its job: it is running and answers queries
                    try:
                        await child.describe()
                        break
                    except RPCError:
                        await asyncio.sleep(0.2)
            code, out, err = await invoke("status", req.batch_id)
            assert code == 0, (code, err)
            text = " ".join(out.split())
            assert f"{req.batch_id} · running" in text and "1 jobs · pending 0 · running 1" in text, text
            assert f"navigator batch results {req.batch_id}" in text, text
            code, out, err = await invoke("status", req.batch_id, "--json")
            assert code == 0, (code, err)
            row = json.loads(out)
            assert row["workflow_type"] == "BatchWorkflow" and row["status"] == "running", row
            assert row["batch"]["jobs_total"] == 1 and row["batch"]["running"] == 1 and row["error"] is None, row
            for command in ("log", "approve"):  # an exploration's queries: a batch has none, and says so
                code, _, err = await invoke(command, req.batch_id)
                assert code == 2 and err.count("\n") == 1, (command, code, err)
                assert f"navigator batch status {req.batch_id}" in " ".join(err.split()), err
            for args in (["mode", req.batch_id, "interactive"], ["budget", req.batch_id, "0.5"]):
                code, _, err = await invoke(*args)  # signals a batch has no handler for: refused, not lost
                assert code == 2 and f"{req.batch_id} is a batch" in " ".join(err.split()), (args, code, err)
        finally:
            await handle.terminate()


async def test_navigator_stop_of_a_batch_reaches_it(client, cli_env: Path, start_worker, task_queue,
                                                     tmp_path) -> None:
    """`navigator stop <batch id>` (fuzz smoke, seed 29): it sent an exploration's StopInput, whose `turn`
    field a BatchStopInput forbids; the batch's worker logged a traceback and dropped the signal, so the
    command said "sent stop" and the batch never heard it."""
    script = write_script(tmp_path / "s.yaml", steps=1)
    req = batch_request(tmp_path, [job(0, script)], max_concurrency=1, task_queue=f"nowhere-{uuid.uuid4()}")
    async with start_worker(priced_activities(tmp_path)):
        handle = await start_batch(client, task_queue, req)
        try:
            code, out, err = await invoke("stop", req.batch_id, "--reason", "enough for today")
            assert code == 0, (code, err)
            async with asyncio.timeout(60):
                while True:
                    code, out, err = await invoke("batch", "status", req.batch_id, "--json")
                    assert code == 0, (code, err)
                    if json.loads(out)["stop_requested"] is not None:
                        break
                    await asyncio.sleep(0.3)
            assert json.loads(out)["stop_requested"] == "enough for today"
        finally:
            await handle.terminate()
