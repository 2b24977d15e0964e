"""Soak: many offline explorations while workers are SIGKILLed and the server restarts.

``python bench/soak.py [--explorations 50] [--kills 10] [--files 1000] [--workers 2]``

What it does (details and how to read the figures: ``bench/SOAK.md``):

1. generates a deterministic ~1,000-file multi-language repository
   (``bench/gen_large_tree.py``) in a temporary folder;
2. starts the embedded dev server (``temporal server start-dev``) on a
   persistent SQLite file, and N worker subprocesses (this file, ``worker``
   mode) with a fake ``GEMINI_API_KEY`` in their environment;
3. runs one ``BatchWorkflow`` of E explorations (model ``offline``; each
   decision metered with its real prompt token count and priced, so ledgers
   have something to sum);
4. meanwhile SIGKILLs a random worker at random moments and starts it again
   (K kills), and once, half-way, restarts the dev server on the same database;
5. verifies: every exploration completed; per exploration the decision log has
   one entry per step (none lost, none duplicated) and as many model entries
   as completed ``decide`` attempts (``model.request`` activities) in its history;
   every ledger equals the sum of its recorded usage and stays within its limit; the batch spent the sum of its
   children; the fake key appears in no history;
6. writes ``bench/results/soak-<stamp>.json`` and ``.md``: throughput
   (explorations/min), history bytes per exploration, kills, restarts.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from pydantic import BaseModel, ConfigDict, Field  # noqa: E402

__all__ = ["SoakConfig", "main"]

FAKE_KEY = "AIzaFAKE-soak-credential-5e5e5e5e"
SOAK_PRICES = {"models": {"offline": {"input": Decimal("0.10"), "output": Decimal("0.40")}}}
#: output tokens each metered offline decision reports (below any max_output_tokens)
METERED_OUTPUT_TOKENS = 64
GOAL_TEMPLATES = [
    "how does {a} call into {b}?",
    "where is {a} configured and who uses it?",
    "why could {a} return a stale value from {b}?",
    "add retries around {a} without breaking {b}",
    "which modules depend on {a}?",
]


class SoakConfig(BaseModel):
    """Knobs of one soak run (named, recorded in the results)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    explorations: int = Field(50, ge=1)
    workers: int = Field(2, ge=1)
    kills: int = Field(10, ge=0)
    files: int = Field(1000, ge=10)
    seed: int = 7
    concurrency: int = Field(6, ge=1)
    token_budget: int = 4096
    max_iterations: int = 8
    kill_every_s: tuple[float, float] = (4.0, 10.0)
    total_budget_usd: Decimal = Decimal("2.00")
    out_dir: Path = ROOT / "bench" / "results"
    timeout_s: float = 3600.0


# -- worker mode ---------------------------------------------------------------


class MeteredModel:
    """The real offline model; its answers report the prompt's token count as usage."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def request(self, req: Any, ctx: Any) -> Any:
        from durable_navigator.navcore.run.decision import TokenUsage

        answer = await self.inner.request(req, ctx)
        usage = TokenUsage(input_tokens=ctx.prompt_tokens, output_tokens=METERED_OUTPUT_TOKENS)
        return answer.model_copy(update={"usage": usage})


class MeteredRegistry:
    """The worker's real registry, every model metered."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.spec, self.check = inner.spec, inner.check

    def model(self, model: str) -> Any:
        return MeteredModel(self.inner.model(model))


async def run_worker(target: str, task_queue: str, artifacts: str) -> None:
    """A full navigator worker (navigator + batch) with metered offline decisions."""
    from temporalio.client import Client

    from durable_navigator.activities.artifacts import LocalArtifactStore
    from durable_navigator.activities.pricing_loader import TablePricer
    from durable_navigator.activities.navigator import NavigatorActivities
    from durable_navigator.navcore.model.pricing import PricingTable
    from durable_navigator.workers.converter import DATA_CONVERTER
    from durable_navigator.workers.logging import configure_logging
    from durable_navigator.workers.worker import build_worker

    configure_logging(json_output=True, level="warning")
    client = await Client.connect(target, data_converter=DATA_CONVERTER)
    acts = NavigatorActivities(
        LocalArtifactStore(artifacts),
        pricer=TablePricer(PricingTable.from_mapping(SOAK_PRICES, "soak")),
    )
    acts.models = MeteredRegistry(acts.models)  # type: ignore[assignment]
    worker = build_worker(client, task_queue, activities=acts)
    print("worker ready", flush=True)
    await worker.run()


# -- orchestration ---------------------------------------------------------------


class Fleet:
    """The worker subprocesses: spawn, SIGKILL, respawn (and count it all)."""

    def __init__(self, target: str, task_queue: str, work: Path, size: int) -> None:
        self.target, self.task_queue, self.work, self.size = target, task_queue, work, size
        self.procs: list[subprocess.Popen[bytes] | None] = [None] * size
        self.kills = 0
        self.respawns = 0
        self.env = dict(os.environ, GEMINI_API_KEY=FAKE_KEY, GOOGLE_API_KEY=FAKE_KEY,
                        XDG_CACHE_HOME=str(work / "cache"))

    def spawn(self, slot: int) -> None:
        log = (self.work / f"worker-{slot}.log").open("ab")
        proc = subprocess.Popen(
            [sys.executable, __file__, "worker", self.target, self.task_queue, str(self.work / "artifacts")],
            env=self.env, stdout=subprocess.PIPE, stderr=log,
        )
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        if "worker ready" not in line:
            raise RuntimeError(f"worker {slot} did not start; see {self.work / f'worker-{slot}.log'}")
        self.procs[slot] = proc

    def kill(self, slot: int) -> None:
        proc = self.procs[slot]
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            self.kills += 1
        self.procs[slot] = None

    def heal(self) -> None:
        """Respawn every slot whose worker is not running (killed, or died on a server restart)."""
        for slot, proc in enumerate(self.procs):
            if proc is None or proc.poll() is not None:
                self.spawn(slot)
                self.respawns += 1

    def stop_all(self) -> None:
        for slot in range(self.size):
            proc = self.procs[slot]
            if proc is not None and proc.poll() is None:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
            self.procs[slot] = None


def _goals(repo: Path, n: int, seed: int) -> list[str]:
    """Deterministic goals naming real files of the generated repository."""
    rng = random.Random(seed)
    stems = sorted({p.stem for p in repo.rglob("*.*") if p.suffix not in {".md", ".json", ".yaml"}})
    return [rng.choice(GOAL_TEMPLATES).format(a=rng.choice(stems), b=rng.choice(stems)) for _ in range(n)]


def _batch_request(cfg: SoakConfig, repo: Path, out: Path, batch_id: str) -> Any:
    from durable_navigator.navcore.batch.batch import BatchJob, BatchLimits, BatchRequest
    from durable_navigator.navcore.navigator.requests import ModelCallConfig

    jobs = [
        BatchJob(index=i, name=f"soak-{i}", repo_path=str(repo), goal=goal, model="offline",
                 token_budget=cfg.token_budget, max_iterations=cfg.max_iterations, max_output_tokens=512)
        for i, goal in enumerate(_goals(repo, cfg.explorations, cfg.seed))
    ]
    return BatchRequest(
        batch_id=batch_id, jobs=jobs, total_budget_usd=cfg.total_budget_usd, max_concurrency=cfg.concurrency,
        out_dir=str(out), limits=BatchLimits(job_timeout_s=cfg.timeout_s),
        # a killed decide is retried after 5 s of silence, not the production minute
        model_call=ModelCallConfig(max_attempts=20, heartbeat_s=5, start_to_close_s=120, initial_interval_s=0.5),
    )


async def _closed(client: Any, workflow_id: str) -> bool:
    """True once the workflow has closed (tolerates the server being down)."""
    from temporalio.client import WorkflowExecutionStatus

    try:
        desc = await client.get_workflow_handle(workflow_id).describe()
    except Exception:  # noqa: BLE001 - the server may be restarting; ask again later
        return False
    return desc.status != WorkflowExecutionStatus.RUNNING


async def _chaos(cfg: SoakConfig, client: Any, batch_id: str, fleet: Fleet, server: Any, rng: random.Random,
                 log: list[str]) -> int:
    """Kill workers at random moments until the batch closes; restart the server once, half-way."""
    restarts, t0 = 0, time.monotonic()
    while not await _closed(client, batch_id):
        await asyncio.sleep(rng.uniform(*cfg.kill_every_s))
        if fleet.kills < cfg.kills and not await _closed(client, batch_id):
            slot = rng.randrange(fleet.size)
            fleet.kill(slot)
            log.append(f"{time.monotonic() - t0:7.1f}s SIGKILL worker {slot} (kill {fleet.kills})")
            await asyncio.sleep(rng.uniform(0.2, 2.0))
            if fleet.kills == max(cfg.kills // 2, 1) and restarts == 0:
                await asyncio.to_thread(server.stop)
                log.append(f"{time.monotonic() - t0:7.1f}s dev server stopped")
                await asyncio.sleep(1.0)
                server.start()
                await server.wait_ready()
                restarts += 1
                log.append(f"{time.monotonic() - t0:7.1f}s dev server restarted on the same SQLite file")
        await asyncio.to_thread(fleet.heal)
    return restarts


# -- verification ------------------------------------------------------------------

#: decision-log actions that come from a ``decide`` model call
MODEL_ACTIONS = {"update_flight_plan", "finalize_context", "invalid", "call_tools"}


def _model_requests(histories: list[Any]) -> dict[str, int]:
    """``model.request`` attempts of ``decide`` calls over every run of one exploration.

    Attempts are the workflow's (one activity per attempt, its number in the input), so a
    killed attempt shows up as a timed-out activity followed by a new one, not as a retry.
    """
    from temporalio.api.enums.v1 import EventType

    closing = {
        EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: ("completed", "activity_task_completed_event_attributes"),
        EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED: ("failed", "activity_task_failed_event_attributes"),
        EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: ("timed_out", "activity_task_timed_out_event_attributes"),
        EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED: ("canceled", "activity_task_canceled_event_attributes"),
    }
    counts = {"completed": 0, "failed": 0, "timed_out": 0, "canceled": 0, "reattempts": 0}
    for history in histories:
        decides: set[int] = set()
        for e in history.events:
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                attrs = e.activity_task_scheduled_event_attributes
                if attrs.activity_type.name != "model.request":
                    continue
                inp = json.loads(attrs.input.payloads[0].data)
                if inp.get("kind") == "decide":
                    decides.add(e.event_id)
                    counts["reattempts"] += inp.get("attempt", 1) > 1
            elif e.event_type in closing:
                name, field = closing[e.event_type]
                if getattr(e, field).scheduled_event_id in decides:
                    counts[name] += 1
    return counts


def _retried_attempts(histories: list[Any]) -> dict[str, int]:
    """Activity attempts beyond the first, by activity type (what the kills cost)."""
    from temporalio.api.enums.v1 import EventType

    retried: dict[str, int] = {}
    for history in histories:
        types = {
            e.event_id: e.activity_task_scheduled_event_attributes.activity_type.name for e in history.events
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        }
        for e in history.events:
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED and e.activity_task_started_event_attributes.attempt > 1:
                name = types.get(e.activity_task_started_event_attributes.scheduled_event_id, "?")
                retried[name] = retried.get(name, 0) + e.activity_task_started_event_attributes.attempt - 1
    return retried


async def _histories(client: Any, workflow_id: str) -> list[Any]:
    runs = [r async for r in client.list_workflows(f"WorkflowId = '{workflow_id}'")]
    runs.sort(key=lambda r: r.start_time)
    return [await client.get_workflow_handle(workflow_id, run_id=r.run_id).fetch_history() for r in runs]


async def _check_exploration(client: Any, outcome: Any) -> dict[str, Any]:
    """One exploration's checks: complete, steps, decide completions, ledger, key, history size."""
    from durable_navigator.navcore.navigator.report import DecisionLogView

    histories = await _histories(client, outcome.workflow_id)
    texts = [h.to_json() for h in histories]
    view = await client.get_workflow_handle(outcome.workflow_id).query("get_decision_log", result_type=DecisionLogView)
    entries = [e for e in view.entries if e.action != "budget_refused"]
    steps = [e.step for e in entries]
    model_entries = sum(1 for e in entries if e.action in MODEL_ACTIONS)
    requests = _model_requests(histories)
    completions = requests["completed"]
    return {
        "workflow_id": outcome.workflow_id,
        "complete": outcome.status.value == "completed" and outcome.stop_reason != "failed",
        "stop_reason": outcome.stop_reason,
        "steps_ok": steps == list(range(1, len(steps) + 1)),
        "decisions": len(entries),
        "decide_completions": completions,
        # lost: a completed decide missing from the log; duplicated: logged more often than decided
        "lost": max(completions - model_entries, 0),
        "duplicated": max(model_entries - completions, 0) + (len(steps) - len(set(steps))),
        "ledger_ok": outcome.spent_micros == sum(e.cost_micros for e in entries)
        and outcome.usage.input_tokens == sum(e.input_tokens for e in entries),
        # the hard cap: never above the slice of the pool the batch gave this exploration
        "within_limit": outcome.spent_micros <= outcome.allotted_micros,
        "decide_attempts": requests,
        "spent_micros": outcome.spent_micros,
        "runs": len(histories),
        "history_bytes": sum(len(t.encode()) for t in texts),
        "key_leaked": any(FAKE_KEY in t for t in texts),
        "retried": _retried_attempts(histories),
    }


async def _verify(client: Any, result: Any) -> dict[str, Any]:
    rows = [await _check_exploration(client, o) for o in result.outcomes]
    batch_histories = await _histories(client, result.batch_id)
    batch_bytes = sum(len(h.to_json().encode()) for h in batch_histories)
    n = max(len(rows), 1)
    return {
        "explorations": len(rows),
        "completed": sum(r["complete"] for r in rows),
        "steps_ok": sum(r["steps_ok"] for r in rows),
        "lost_decisions": sum(r["lost"] for r in rows),
        "duplicated_decisions": sum(r["duplicated"] for r in rows),
        "ledgers_ok": sum(r["ledger_ok"] for r in rows),
        "within_limit": sum(r["within_limit"] for r in rows),
        "decide_attempts": {k: sum(r["decide_attempts"][k] for r in rows) for k in rows[0]["decide_attempts"]}
        if rows else {},
        "decisions_total": sum(r["decisions"] for r in rows),
        "batch_spent_equals_children": sum(r["spent_micros"] for r in rows) == int(result.spent_usd * 1_000_000),
        "keys_leaked": sum(r["key_leaked"] for r in rows),
        "child_history_bytes_per_exploration": sum(r["history_bytes"] for r in rows) / n,
        "batch_history_bytes_per_exploration": batch_bytes / n,
        "batch_runs": len(batch_histories),
        "retried_attempts": {k: sum(r["retried"].get(k, 0) for r in rows)
                             for k in sorted({k for r in rows for k in r["retried"]})},
        "stop_reasons": {s: sum(1 for r in rows if r["stop_reason"] == s) for s in sorted({r["stop_reason"] for r in rows})},
        "rows": rows,
    }


# -- main ------------------------------------------------------------------------


def _prewarm(repo: Path, cache_home: Path) -> float:
    """Index the repository once into the workers' shared cache; return the seconds it took.

    Indexing is measured apart from exploration throughput; workers then open
    the repository from the warm cache (a kill during a cold scan would stall
    that exploration for the scan's whole 15-minute start-to-close timeout).
    """
    os.environ["XDG_CACHE_HOME"] = str(cache_home)
    from durable_navigator.repomap import RepoMap

    t0 = time.monotonic()
    RepoMap.open(repo)
    return time.monotonic() - t0


async def soak(cfg: SoakConfig) -> dict[str, Any]:
    """Run the whole soak; return the figures (also written under ``cfg.out_dir``)."""
    from gen_large_tree import generate
    from temporalio.client import Client

    from durable_navigator.navcore.batch.batch import BatchResult
    from durable_navigator.workers.converter import DATA_CONVERTER
    from durable_navigator.workers.devserver import DevServer, DevServerConfig, free_port

    work = Path(tempfile.mkdtemp(prefix="navigator-soak-"))
    repo = work / "repo"
    generate(repo, cfg.files, cfg.seed)
    index_s = await asyncio.to_thread(_prewarm, repo, work / "cache")
    server = DevServer(DevServerConfig(port=free_port(), ui_port=free_port(), db_filename=work / "temporal.db",
                                       headless=True), log_path=work / "server.log")
    server.start()
    await server.wait_ready()
    fleet = Fleet(server.address, "soak", work, cfg.workers)
    events: list[str] = []
    try:
        client = await Client.connect(server.address, data_converter=DATA_CONVERTER)
        await asyncio.to_thread(fleet.heal)
        batch_id = f"soak-{int(time.time())}"
        req = _batch_request(cfg, repo, work / "out", batch_id)
        t0 = time.monotonic()
        handle = await client.start_workflow("BatchWorkflow", req, id=batch_id, task_queue="soak",
                                             result_type=BatchResult)
        restarts = await asyncio.wait_for(_chaos(cfg, client, batch_id, fleet, server, random.Random(cfg.seed),
                                                 events), cfg.timeout_s)
        result: BatchResult = await handle.result()
        wall_s = time.monotonic() - t0
        checks = await _verify(client, result)
    finally:
        fleet.stop_all()
        await asyncio.to_thread(server.stop)
    return {
        "config": json.loads(cfg.model_dump_json()),
        "wall_s": round(wall_s, 1),
        "explorations_per_min": round(len(result.outcomes) / (wall_s / 60), 2),
        "worker_kills": fleet.kills,
        "worker_respawns": fleet.respawns - cfg.workers,
        "server_restarts": restarts,
        "batch_spent_usd": str(result.spent_usd),
        "events": events,
        "work_dir": str(work),
        "repo_files": sum(1 for p in repo.rglob("*") if p.is_file()),
        "index_s": round(index_s, 1),
        **checks,
    }


def _passed(fig: dict[str, Any]) -> bool:
    n = fig["explorations"]
    return (fig["completed"] == n and fig["lost_decisions"] == 0 and fig["duplicated_decisions"] == 0
            and fig["ledgers_ok"] == n and fig["within_limit"] == n and fig["steps_ok"] == n
            and fig["batch_spent_equals_children"] and fig["keys_leaked"] == 0)


def _markdown(fig: dict[str, Any]) -> str:
    ok = _passed(fig)
    lines = [
        f"# Soak run — {'PASS' if ok else 'FAIL'}",
        "",
        f"- explorations: {fig['completed']}/{fig['explorations']} completed "
        f"(stop reasons: {fig['stop_reasons']}) on a {fig['repo_files']}-file repository",
        f"- worker SIGKILLs: {fig['worker_kills']} · extra worker starts: {fig['worker_respawns']} · "
        f"dev-server restarts: {fig['server_restarts']}",
        f"- decisions: {fig['decisions_total']} · lost: {fig['lost_decisions']} · duplicated: "
        f"{fig['duplicated_decisions']} · step sequences intact: {fig['steps_ok']}/{fig['explorations']}",
        f"- ledgers equal to recorded usage: {fig['ledgers_ok']}/{fig['explorations']} · batch spent = sum of "
        f"children: {fig['batch_spent_equals_children']} (${fig['batch_spent_usd']}) · key leaks: {fig['keys_leaked']}",
        f"- spent within the exploration's limit: {fig['within_limit']}/{fig['explorations']} · `decide` attempts "
        f"(`model.request`): {fig['decide_attempts']} (timed_out = lost with a killed worker, booked at their "
        "upper bound; reattempts = the workflow's next attempts)",
        f"- wall time {fig['wall_s']} s → **{fig['explorations_per_min']} explorations/min** with "
        f"{fig['config']['workers']} workers, concurrency {fig['config']['concurrency']}",
        f"- history bytes per exploration: child {fig['child_history_bytes_per_exploration']:.0f} B "
        f"(JSON) + batch share {fig['batch_history_bytes_per_exploration']:.0f} B ({fig['batch_runs']} batch runs)",
        f"- activity attempts retried after kills: {fig['retried_attempts']} · repository indexing (once, "
        f"before the batch): {fig['index_s']} s",
        "",
        "## Chaos timeline",
        "",
        *[f"    {e}" for e in fig["events"]],
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """CLI entry: ``worker TARGET QUEUE ARTIFACTS`` or the soak itself."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["worker"]:
        asyncio.run(run_worker(*args[1:4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("explorations", "kills", "files", "workers", "concurrency", "seed", "max_iterations"):
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=SoakConfig.model_fields[name].default)
    ns = parser.parse_args(args)
    cfg = SoakConfig(**{k: v for k, v in vars(ns).items()})
    figures = asyncio.run(soak(cfg))
    cfg.out_dir.mkdir(parents=True, exist_ok=True)
    stem = cfg.out_dir / f"soak-{time.strftime('%Y%m%d-%H%M%S')}-{cfg.explorations}x"
    stem.with_suffix(".json").write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
    stem.with_suffix(".md").write_text(_markdown(figures))
    print(_markdown(figures))
    print(f"wrote {stem}.json and .md")
    return 0 if _passed(figures) else 1


if __name__ == "__main__":
    sys.exit(main())
