"""What the MCP server costs: ``tools/call explore`` → result vs ``navigator explore``, same goal, same repo.

``python bench/mcp_overhead.py [--reps 5] [--cold-reps 2] [--repo .] [--goal "..."]``

Both paths are the default user path — the installed ``navigator`` console script, the
offline model, default flags (token budget, USD budget, planning) — on this repository,
with a private ``navigator.yaml`` (free embedded ports, SQLite, state and cache dirs in a
temporary folder). The client of the MCP path is the official one (``mcp.Client`` over
stdio, spawning ``navigator mcp``). Runs of the two paths alternate, after one untimed
warm-up run of each (parse cache, imports).

* **warm** — a ``navigator server`` is running (the README's recommended topology). CLI: one
  ``navigator explore REPO GOAL --json`` process per run (it connects, starts its in-process
  worker, follows the run, prints). MCP: one long-lived ``navigator mcp``; each run is one
  ``tools/call explore`` timed from the call to its result. For every run the workflow's own
  duration (start → close, from Temporal) is read, so **overhead = wall − workflow time**:
  what each path adds around the same durable run.
* **cold** — nothing running. CLI: ``navigator explore`` starts the embedded server itself.
  MCP: spawn ``navigator mcp`` → ``initialize`` answered → first ``tools/call explore`` →
  result (the first call waits for the embedded server the server starts in the background).

Writes ``bench/results/mcp-overhead.json`` (every figure, load averages, revision) and
``bench/results/mcp-overhead.md`` (the table).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from temporalio.client import Client as TemporalClient

from durable_navigator.workers.converter import DATA_CONVERTER
from durable_navigator.workers.devserver import free_port, port_in_use

ROOT = Path(__file__).resolve().parents[1]
NAVIGATOR = Path(sys.executable).parent / "navigator"
RESULTS = ROOT / "bench" / "results"
DEFAULT_GOAL = "how does the navigator enforce the USD budget?"


@dataclass
class Sample:
    """One timed run."""

    path: str  #: cli | mcp
    phase: str  #: warm | cold
    wall_s: float
    workflow_s: float | None = None
    run_id: str | None = None
    stop_reason: str | None = None
    iterations: int | None = None
    load1: float = field(default_factory=lambda: os.getloadavg()[0])
    #: cold MCP only: spawn → initialize answered, and initialize → first result
    initialize_s: float | None = None

    @property
    def overhead_s(self) -> float | None:
        return None if self.workflow_s is None else self.wall_s - self.workflow_s


class Bench:
    """A private configuration and the processes of one benchmark run."""

    def __init__(self, work: Path, repo: Path, goal: str) -> None:
        self.work, self.repo, self.goal = work, repo, goal
        self.port, self.ui_port = free_port(), free_port()
        (work / "navigator.yaml").write_text(
            f"embedded:\n  port: {self.port}\n  ui_port: {self.ui_port}\n  db_filename: {work / 'temporal.db'}\n"
            f"defaults:\n  out_dir: {work / 'out'}\n")
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith(("TEMPORAL_", "NAVIGATOR_", "GEMINI_", "GOOGLE_"))}
        self.env.update(NAVIGATOR_CONFIG=str(work / "navigator.yaml"), XDG_STATE_HOME=str(work / "state"),
                        XDG_CACHE_HOME=str(work / "cache"), NAVIGATOR_MODEL="offline")

    def stdio(self) -> StdioServerParameters:
        return StdioServerParameters(command=str(NAVIGATOR), args=["mcp"], env=self.env, cwd=str(self.work))

    def cli_explore(self, phase: str) -> Sample:
        start = time.monotonic()
        proc = subprocess.run([str(NAVIGATOR), "explore", str(self.repo), self.goal, "--json"], cwd=self.work,
                              env=self.env, capture_output=True, text=True, timeout=900)
        wall = time.monotonic() - start
        if proc.returncode != 0:
            raise SystemExit(f"navigator explore failed ({proc.returncode}): {proc.stderr[-2000:]}")
        out = json.loads(proc.stdout)
        return Sample("cli", phase, wall, run_id=out["workflow_id"], stop_reason=out["stop_reason"],
                      iterations=out["iterations"])

    async def mcp_explore(self, client: Client, phase: str) -> Sample:
        start = time.monotonic()
        result = await client.call_tool("explore", {"repo": str(self.repo), "goal": self.goal})
        wall = time.monotonic() - start
        if result.is_error:
            raise SystemExit(f"explore over MCP failed: {result.content}")
        out = result.structured_content
        return Sample("mcp", phase, wall, run_id=out["run_id"], stop_reason=out["stop_reason"],
                      iterations=out["iterations"])

    async def mcp_cold(self) -> Sample:
        spawned = time.monotonic()
        async with Client(self.stdio(), read_timeout_seconds=900) as client:
            ready = time.monotonic()
            sample = await self.mcp_explore(client, "cold")
        sample.initialize_s = ready - spawned
        sample.wall_s += sample.initialize_s  # spawn → first result
        await self._wait_port_free()
        return sample

    async def _wait_port_free(self) -> None:
        for _ in range(300):
            if not port_in_use("127.0.0.1", self.port):
                return
            await asyncio.sleep(0.1)

    async def workflow_seconds(self, samples: list[Sample]) -> None:
        """Start → close of each sample's run, as Temporal recorded it (needs a server on the port)."""
        client = await TemporalClient.connect(f"127.0.0.1:{self.port}", data_converter=DATA_CONVERTER)
        for sample in samples:
            desc = await client.get_workflow_handle(sample.run_id).describe()
            if desc.start_time and desc.close_time:
                sample.workflow_s = (desc.close_time - desc.start_time).total_seconds()


async def _cold(bench: Bench, reps: int) -> list[Sample]:
    samples: list[Sample] = []
    for _ in range(reps):
        samples.append(await asyncio.to_thread(bench.cli_explore, "cold"))
        await bench._wait_port_free()
        samples.append(await bench.mcp_cold())
    return samples


@contextlib.asynccontextmanager
async def _navigator_server(bench: Bench) -> AsyncIterator[None]:
    """``navigator server`` on the private configuration, for the duration of the block."""
    server = subprocess.Popen([str(NAVIGATOR), "server"], cwd=bench.work, env=bench.env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not port_in_use("127.0.0.1", bench.port):
            if server.poll() is not None:
                raise SystemExit("navigator server did not start")
            await asyncio.sleep(0.2)
        yield
    finally:
        server.send_signal(2)
        server.wait(timeout=60)
        await bench._wait_port_free()


async def _warm(bench: Bench, reps: int) -> list[Sample]:
    samples: list[Sample] = []
    async with _navigator_server(bench):
        async with Client(bench.stdio(), read_timeout_seconds=900) as client:
            await bench.mcp_explore(client, "warm-up")
            await asyncio.to_thread(bench.cli_explore, "warm-up")
            for _ in range(reps):
                samples.append(await bench.mcp_explore(client, "warm"))
                samples.append(await asyncio.to_thread(bench.cli_explore, "warm"))
        await bench.workflow_seconds(samples)
    return samples


def _stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {"median": statistics.median(ordered), "min": ordered[0], "max": ordered[-1], "n": len(ordered)}


def _summary(samples: list[Sample]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for phase in ("warm", "cold"):
        for path in ("cli", "mcp"):
            group = [s for s in samples if s.phase == phase and s.path == path]
            if not group:
                continue
            row: dict[str, Any] = {"wall_s": _stats([s.wall_s for s in group])}
            if all(s.workflow_s is not None for s in group):
                row["workflow_s"] = _stats([s.workflow_s for s in group])  # type: ignore[misc]
                row["overhead_s"] = _stats([s.overhead_s for s in group])  # type: ignore[misc]
            if path == "mcp" and phase == "cold":
                row["initialize_s"] = _stats([s.initialize_s for s in group])  # type: ignore[misc]
            row["load1"] = _stats([s.load1 for s in group])
            out[f"{phase}/{path}"] = row
    return out


def _markdown(meta: dict[str, Any], summary: dict[str, Any]) -> str:
    def cell(row: dict[str, Any], key: str) -> str:
        if key not in row:
            return "—"
        s = row[key]
        return f"{s['median']:.2f} ({s['min']:.2f}–{s['max']:.2f})"

    lines = [
        "# MCP server overhead (`bench/mcp_overhead.py`)",
        "",
        f"{meta['when']} · revision {meta['revision']} · {meta['cpus']} CPUs · repo `{meta['repo']}` · "
        f"goal \"{meta['goal']}\" · offline model, default flags · {meta['reps']} warm / {meta['cold_reps']} cold "
        "runs per path, alternating. Seconds: median (min–max).",
        "",
        "| phase / path | wall | workflow start→close | overhead = wall − workflow | load (1 min) |",
        "|---|---|---|---|---|",
    ]
    names = {"cli": "`navigator explore`", "mcp": "MCP `tools/call explore` → result"}
    for key, row in summary.items():
        phase, path = key.split("/")
        lines.append(f"| {phase} · {names[path]} | {cell(row, 'wall_s')} | {cell(row, 'workflow_s')} | "
                     f"{cell(row, 'overhead_s')} | {cell(row, 'load1')} |")
    cold = summary.get("cold/mcp")
    if cold:
        lines += ["", f"Cold MCP: spawn → `initialize` answered {cell(cold, 'initialize_s')} s (included in its wall "
                  "time; the first call then waits for the embedded server the MCP server starts in the background)."]
    warm_cli, warm_mcp = summary.get("warm/cli"), summary.get("warm/mcp")
    if warm_cli and warm_mcp and "overhead_s" in warm_cli and "overhead_s" in warm_mcp:
        lines += ["", f"Warm, per run: the MCP call adds {warm_mcp['overhead_s']['median']:.2f} s around the workflow; "
                  f"`navigator explore` adds {warm_cli['overhead_s']['median']:.2f} s (process start, imports, "
                  "connect, in-process worker start, preflight, follow, print). Difference of the medians, MCP − CLI: "
                  f"{warm_mcp['wall_s']['median'] - warm_cli['wall_s']['median']:+.2f} s wall."]
    return "\n".join(lines) + "\n"


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--cold-reps", type=int, default=2)
    parser.add_argument("--repo", type=Path, default=ROOT)
    parser.add_argument("--goal", default=DEFAULT_GOAL)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcp-bench-") as tmp:
        bench = Bench(Path(tmp), args.repo.resolve(), args.goal)
        samples = await _warm(bench, args.reps)
        cold = await _cold(bench, args.cold_reps)
        async with _navigator_server(bench):  # the cold runs' durations, from the same database
            await bench.workflow_seconds(cold)
        samples += cold
    revision = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True).stdout.strip()
    meta = {"when": time.strftime("%Y-%m-%d %H:%M"), "revision": revision, "cpus": os.cpu_count(),
            "python": platform.python_version(), "repo": str(args.repo.resolve()), "goal": args.goal,
            "reps": args.reps, "cold_reps": args.cold_reps}
    summary = _summary(samples)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "mcp-overhead.json").write_text(json.dumps(
        {"meta": meta, "summary": summary, "samples": [asdict(s) | {"overhead_s": s.overhead_s} for s in samples]},
        indent=2) + "\n")
    table = _markdown(meta, summary)
    (RESULTS / "mcp-overhead.md").write_text(table)
    print(table)


if __name__ == "__main__":
    asyncio.run(main())
