"""``NavigatorPreflight`` + ``navigator.check_model``: a worker says which models it can serve."""

from __future__ import annotations

import ast
import dataclasses
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import activity
from temporalio.client import Client
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

import durable_navigator.workflows.preflight as module
from durable_navigator.activities.artifacts import LocalArtifactStore
from durable_navigator.activities.models.registry import ModelRegistry
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.activities.preflight import model_problem, needs_worker_check, refuse_unless_served
from durable_navigator.navtypes.errors import ModelError
from durable_navigator.navcore.model.preflight import (
    NOT_SERVED_HERE_TYPE,
    PREFLIGHT_WORKFLOW,
    ModelCheckInput,
    ModelCheckResult,
)
from durable_navigator.workers.worker import build_worker

HISTORY = Path(__file__).resolve().parents[1] / "histories" / "preflight_models.json"
KEY = "AIza-worker-side-key-0000000000"


async def _check(client: Client, task_queue: str, tmp_path: Path, models: list[str]) -> ModelCheckResult:
    activities = NavigatorActivities(LocalArtifactStore(tmp_path / "artifacts"), pricer=TablePricer.load())
    async with build_worker(client, task_queue, activities=activities):
        return await client.execute_workflow(
            PREFLIGHT_WORKFLOW, ModelCheckInput(models=models), id=f"preflight-{uuid.uuid4().hex[:12]}",
            task_queue=task_queue, result_type=ModelCheckResult, execution_timeout=timedelta(seconds=30),
        )


async def test_verdicts_come_from_the_worker(client: Client, task_queue: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(key, raising=False)
    missing = tmp_path / "nope.yaml"
    result = await _check(client, task_queue, tmp_path,
                          ["offline", "gemini-2.5-flash", "gemini-9-ultra", "gpt-9", f"scripted:{missing}", "offline"])
    problems = result.problems()
    assert [v.model for v in result.verdicts] == ["offline", "gemini-2.5-flash", "gemini-9-ultra", "gpt-9",
                                                  f"scripted:{missing}"]
    assert "offline" not in problems
    assert problems["gemini-2.5-flash"].startswith("no Gemini credentials on the worker")
    assert "no price" in problems["gemini-9-ultra"]
    assert problems["gpt-9"].startswith("unknown model 'gpt-9'")
    assert str(missing) in problems[f"scripted:{missing}"]
    assert result.worker  # who answered

    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    again = await _check(client, f"{task_queue}-keyed", tmp_path, ["gemini-2.5-flash"])
    assert again.problems() == {}


class _LeakyRegistry(ModelRegistry):
    def model(self, model: str) -> object:  # type: ignore[override]
        raise ModelError(f"provider refused key {KEY} for {model}")


def test_a_problem_never_carries_the_key() -> None:
    problem = model_problem("gemini-2.5-flash", registry=_LeakyRegistry(), pricer=TablePricer.load(),
                            env={"GEMINI_API_KEY": KEY})
    assert problem is not None and KEY not in problem and "***" in problem


def test_offline_needs_no_worker_check_and_the_rest_do() -> None:
    assert not needs_worker_check("offline")
    assert all(needs_worker_check(m) for m in ("scripted:x.yaml", "gemini-2.5-flash", "gpt-9"))
    registry = ModelRegistry(engines=lambda root: None)
    assert model_problem("offline", registry=registry, pricer=TablePricer.load(), env={}) is None


def test_history_is_committed_and_the_module_is_deterministic() -> None:
    assert HISTORY.is_file()  # replayed by tests/histories/test_replay.py
    tree = ast.parse(Path(module.__file__).read_text())
    forbidden = {"time", "random", "os", "threading", "subprocess", "socket", "uuid", "pathlib"}
    imported = [n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
    imported += [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    assert not [m for m in imported if m.removeprefix("durable_navigator.").split(".")[0] in forbidden]
    top_level_project = [n.module for n in tree.body if isinstance(n, ast.ImportFrom) and n.module
                         and n.module.startswith("durable_navigator.")]
    assert top_level_project == []  # only inside workflow.unsafe.imports_passed_through()


@pytest.mark.parametrize("queue, says", [
    ("navigator", "the task goes back to task queue 'navigator'"),
    ("navigator/host/7@box", "the run sends it on to the shared task queue 'navigator'"),
])
async def test_a_refusal_names_the_queue_a_worker_that_can_serve_takes_it_from(queue: str, says: str,
                                                                               monkeypatch) -> None:
    """A host's own queue has one poller: its refusal says the run sends the task to the shared queue."""
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)  # this worker has no key for the run's model
    env = ActivityEnvironment()
    env.info = dataclasses.replace(env.info, task_queue=queue)

    @activity.defn(name="model.prepare")
    async def prepare() -> None:
        refuse_unless_served(["gemini-2.5-flash"], registry=ModelRegistry(engines=lambda root: None), pricer=TablePricer.load())

    with pytest.raises(ApplicationError) as err:
        await env.run(prepare)
    assert err.value.type == NOT_SERVED_HERE_TYPE and says in str(err.value)
