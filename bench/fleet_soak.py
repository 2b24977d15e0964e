"""Fleet soak (issue #31): 3 hosts, 3 clients, explorations and asks over 5 repositories given three ways.

``python bench/fleet_soak.py [--runs 60] [--hosts 3] [--clients 3] [--throughput-runs 15] [--no-netns]``
(run as root for the network namespaces; details and how to read the figures: ``bench/SOAK.md``).

Hosts are long-running ``navigator worker`` processes, each with its own HOME/XDG/cache and, by default,
its own network namespace (veth to Temporal and SeaweedFS in the root namespace). Clients run the
installed CLI (``navigator explore`` / ``navigator ask``, offline model, default flags) with HOMEs of
their own. Sources: a snapshot (``REPO`` a path, the store an object store: the CLI's ``auto`` pick), a git
URL + ``--ref main`` (a bare ``file://`` repository), and a path (``--source path``: the hosts see the
fixture trees at the same path, as workers with a shared mount would).

Phases: 1, 2 and 3 hosts without faults (throughput; the 1-host packs are the reference), then the
fault phase on all hosts: one host SIGKILLed and restarted, the Temporal dev server restarted on its
SQLite file, SeaweedFS restarted on its data directory. Results: ``bench/results/fleet-soak-<stamp>.{json,md}``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT.parent))
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from fleet import FleetHost, Repo, make_repos  # noqa: E402

from tests.support.netns import Netns, netns_usable  # noqa: E402
from fleet_checks import check_run, masked  # noqa: E402

__all__ = ["main"]

SOURCES = [ROOT / "tests/fixtures/navigator_repo", *(ROOT / "tests/fixtures/repos" / n
                                                       for n in ("go", "python", "typescript", "java"))]
KINDS = ("snapshot", "git", "path")
EXPLORE_GOALS = ("how are errors handled and reported?", "where is configuration loaded?")
ASK_QUESTIONS = ("which function is the entry point?", "where are requests validated?")
_WID = re.compile(r"\b(?:nav|ask)-[a-z0-9-]+-[0-9a-f]{8}\b")
TASK_QUEUE = "navigator"
#: a command's one-line refusal while Temporal or the store is down (nothing was started)
_REFUSED = re.compile(r"cannot reach Temporal|opening the bucket failed")


@dataclass(frozen=True)
class Req:
    """One distinct request: command, source kind, repository, text."""

    command: str
    kind: str
    repo: Repo
    text: str

    @property
    def key(self) -> str:
        return f"{self.command} {self.kind} {self.repo.name} :: {self.text}"


def requests(repos: list[Repo]) -> list[Req]:
    """Every repository three ways, explore and ask alternating: 15 distinct requests for 5 repositories."""
    out = []
    for r, repo in enumerate(repos):
        for k, kind in enumerate(KINDS):
            command = "explore" if (r + k) % 2 == 0 else "ask"
            texts = EXPLORE_GOALS if command == "explore" else ASK_QUESTIONS
            out.append(Req(command, kind, repo, texts[(r + k) % 2]))
    return out


def _where(req: Req) -> list[str]:
    """REPO and its source options as a user gives them (a plain path: the CLI picks a snapshot by itself)."""
    if req.kind == "git":
        return [req.repo.url, "--ref", "main"]
    return [str(req.repo.tree), *(["--source", "path"] if req.kind == "path" else [])]


async def run_one(cli: FleetHost, req: Req) -> dict[str, Any]:
    """Run ``req`` from the client ``cli`` to the files on its disk; what happened, the masked pack."""
    out = cli.host.root / "out"
    t0 = time.monotonic()
    failures: list[str] = []
    where = _where(req)
    for _ in range(60):
        done = await asyncio.to_thread(cli.host.run, req.command, where[0], req.text, *where[1:], "--json",
                                       "--out", str(out), timeout=900)
        if done.returncode == 0 or not _REFUSED.search(done.stderr) or _WID.search(done.stdout + done.stderr):
            break
        # refused before anything started (Temporal or the store is down): what a user does, again
        failures.append("refused: " + done.stderr.strip().splitlines()[-1][:200])
        await asyncio.sleep(5)
    found = _WID.search(done.stdout + done.stderr)
    wid = json.loads(done.stdout)["workflow_id"] if done.returncode == 0 else (found.group(0) if found else "")
    deadline = time.monotonic() + 300
    while done.returncode != 0 and wid and time.monotonic() < deadline and "failed:" not in done.stderr:
        # the followed command lost the server (a fault of this soak): the run goes on, bring it home
        failures.append(done.stderr.strip().splitlines()[-1][:300] if done.stderr.strip() else f"exit {done.returncode}")
        await asyncio.sleep(5)
        done = await asyncio.to_thread(cli.host.run, "result", wid, "--wait", "--json", "--out", str(out), timeout=900)
    if done.returncode != 0:
        return {"key": req.key, "workflow_id": wid, "ok": False, "error": done.stderr[-1500:], "failures": failures}
    shown = json.loads(done.stdout)
    pack = Path(shown["context_path"] if req.command == "explore" else shown["answer_path"])
    return {"key": req.key, "workflow_id": wid, "ok": True, "seconds": round(time.monotonic() - t0, 1),
            "pack": masked(pack.read_text()), "failures": failures, "command": req.command}


async def run_phase(clients: list[FleetHost], reqs: list[Req], on_done: Any = None) -> dict[str, Any]:
    """``reqs`` spread over the clients (each one request at a time); wall time and every row."""
    queue: asyncio.Queue[Req] = asyncio.Queue()
    for req in reqs:
        queue.put_nowait(req)
    rows: list[dict[str, Any]] = []

    async def client_loop(cli: FleetHost) -> None:
        while not queue.empty():
            req = queue.get_nowait()
            rows.append(await run_one(cli, req))
            print(f"  {len(rows)}/{len(reqs)} {rows[-1]['key'][:70]} ok={rows[-1]['ok']}", flush=True)
            if on_done is not None:
                await on_done(len(rows))

    t0 = time.monotonic()
    await asyncio.gather(*(client_loop(c) for c in clients))
    wall = time.monotonic() - t0
    return {"runs": len(rows), "wall_s": round(wall, 1), "runs_per_min": round(len(rows) / (wall / 60), 2),
            "rows": rows}


class Faults:
    """The fault phase's three faults, each fired once when that many runs have come home."""

    def __init__(self, runs: int, hosts: list[FleetHost], server: Any, s3: Any) -> None:
        self.at = {"kill_host": max(runs * 15 // 100, 1), "restart_temporal": runs * 40 // 100,
                   "restart_store": runs * 65 // 100}
        self.hosts, self.server, self.s3 = hosts, server, s3
        self.events: list[str] = []
        self.fired: set[str] = set()
        self.t0 = time.monotonic()
        self.busy = asyncio.Lock()

    def _say(self, text: str) -> None:
        self.events.append(f"{time.monotonic() - self.t0:7.1f}s {text}")
        print(f"  FAULT {self.events[-1]}", flush=True)

    async def __call__(self, done: int) -> None:
        for name, at in self.at.items():
            if done >= at and name not in self.fired:
                self.fired.add(name)
                async with self.busy:
                    await getattr(self, name)()
                    await self.heal()

    async def kill_host(self) -> None:
        victim = self.hosts[-1]
        victim.kill()
        self._say(f"SIGKILL host {victim.host.root.name} (runs in flight)")
        await asyncio.sleep(5)
        await asyncio.to_thread(victim.start)
        self._say(f"host {victim.host.root.name} started again")

    async def restart_temporal(self) -> None:
        await asyncio.to_thread(self.server.stop)
        self._say("Temporal dev server stopped")
        await asyncio.sleep(2)
        self.server.start()
        await self.server.wait_ready()
        self._say("Temporal dev server started again on the same SQLite file")

    async def restart_store(self) -> None:
        await asyncio.to_thread(self.s3.stop)
        self._say("SeaweedFS stopped")
        await asyncio.sleep(2)
        await asyncio.to_thread(self.s3.restart)
        self._say("SeaweedFS started again on the same data directory")

    async def heal(self) -> None:
        """Start again every host whose worker died by itself (counted: a worker should survive a restart)."""
        for h in self.hosts:
            if h.proc is None or h.proc.poll() is not None:
                self._say(f"host {h.host.root.name} had exited (code {h.proc.returncode if h.proc else '-'}); "
                          "started again")
                await asyncio.to_thread(h.start)


async def soak(ns: argparse.Namespace) -> dict[str, Any]:
    """The whole soak; the figures."""
    from temporalio.client import Client

    from durable_navigator.workers.converter import DATA_CONVERTER
    from durable_navigator.workers.devserver import DevServer, DevServerConfig, free_port
    from tests.support.seaweed import SeaweedS3

    work = Path(tempfile.mkdtemp(prefix="navigator-fleet-soak-"))
    why_not = None if ns.no_netns else netns_usable()
    use_netns = not ns.no_netns and why_not is None
    repos = make_repos(SOURCES, work)
    reqs = requests(repos)
    s3 = SeaweedS3(work / "seaweed", bind="0.0.0.0" if use_netns else "127.0.0.1")
    (work / "seaweed").mkdir()
    await asyncio.to_thread(s3.start)
    server = DevServer(DevServerConfig(ip="0.0.0.0" if use_netns else "127.0.0.1", port=free_port(),
                                       ui_port=free_port(), db_filename=work / "temporal.db", headless=True),
                       log_path=work / "server.log")
    server.start()
    await server.wait_ready()
    port, s3_port = server.config.port, s3.endpoint_url.rsplit(":", 1)[1]
    local = f"127.0.0.1:{port}"
    prefix = f"fleet-{uuid.uuid4().hex[:8]}"
    spaces = [Netns(f"fleet31-h{i}", 231 - i) for i in range(ns.hosts)] if use_netns else []
    hosts, clients = [], []
    try:
        for i in range(ns.hosts):
            space = spaces[i].create() if use_netns else None
            ip = space.host_ip if space else "127.0.0.1"
            hosts.append(FleetHost.create(work / f"host-{i}", f"http://{ip}:{s3_port}", f"{ip}:{port}", TASK_QUEUE,
                                          prefix, space))
        for i in range(ns.clients):
            clients.append(FleetHost.create(work / f"client-{i}", s3.endpoint_url, local, TASK_QUEUE, prefix, None))
        phases: dict[str, Any] = {}
        for n in range(1, ns.hosts + 1):
            await asyncio.to_thread(hosts[n - 1].start)
            print(f"phase: {n} host(s), no faults", flush=True)
            phases[f"{n}_hosts"] = await run_phase(clients, reqs if n == 1 else reqs[:ns.throughput_runs])
        faults = Faults(ns.runs, hosts, server, s3)
        print(f"phase: faults, {ns.runs} runs on {ns.hosts} hosts", flush=True)
        fault_reqs = [reqs[i % len(reqs)] for i in range(ns.runs)]
        phases["faults"] = await run_phase(clients, fault_reqs, faults)
        # after the faults (Temporal restarted): the checks read every run's history
        client = await Client.connect(local, data_converter=DATA_CONVERTER)
        checks = [await check_run(client, r["workflow_id"], r["command"])
                  for p in phases.values() for r in p["rows"] if r["ok"]]
    finally:
        for h in hosts:
            h.stop()
        await asyncio.to_thread(server.stop)
        s3.stop()
        for space in spaces:
            space.delete()
    return figures(ns, phases, checks, faults, hosts, use_netns, why_not, work)


def figures(ns: argparse.Namespace, phases: dict[str, Any], checks: list[dict[str, Any]], faults: Faults,
            hosts: list[FleetHost], use_netns: bool, why_not: str | None, work: Path) -> dict[str, Any]:
    """Sum the checks; compare every pack with the 1-host reference of the same request."""
    reference = {r["key"]: r["pack"] for r in phases["1_hosts"]["rows"] if r["ok"]}
    rows = [r for p in phases.values() for r in p["rows"]]
    differ = sorted({r["key"] for r in rows if r["ok"] and reference.get(r["key"]) != r["pack"]})
    return {
        "config": {k: v for k, v in vars(ns).items()},
        "netns": use_netns, "netns_unusable": why_not, "work_dir": str(work),
        "load_avg": os.getloadavg(),
        "throughput_runs_per_min": {k: phases[f"{k}_hosts"]["runs_per_min"] for k in range(1, ns.hosts + 1)},
        "fault_phase": {"runs": phases["faults"]["runs"], "wall_s": phases["faults"]["wall_s"],
                        "runs_per_min": phases["faults"]["runs_per_min"]},
        "runs_total": len(rows),
        "lost_runs": sum(not r["ok"] for r in rows),
        "cli_failures_then_recovered": [f for r in rows for f in r["failures"] if not f.startswith("refused")],
        "cli_refusals_then_retried": [f for r in rows for f in r["failures"] if f.startswith("refused")],
        "completed": sum(c["complete"] for c in checks),
        "steps_ok": sum(c["steps_ok"] for c in checks),
        "decisions_match_result": sum(c["decisions_match_result"] for c in checks),
        "lost_decisions": sum(c["lost"] for c in checks),
        "duplicated_decisions": sum(c["duplicated"] for c in checks),
        "ledgers_ok": sum(c["ledger_ok"] and c["tokens_ok"] for c in checks),
        "decisions_total": sum(c["decisions"] for c in checks),
        "checked_runs": len(checks),
        "packs_identical": sum(1 for r in rows if r["ok"] and reference.get(r["key"]) == r["pack"]),
        "packs_differing": differ,
        "faults": faults.events,
        "host_starts": {h.host.root.name: h.starts for h in hosts},
        "errors": [r.get("error", "")[-600:] for r in rows if not r["ok"]],
        "rows": [{k: v for k, v in r.items() if k != "pack"} for r in rows],
        "checks": checks,
    }


def passed(fig: dict[str, Any]) -> bool:
    """Every check held."""
    n = fig["checked_runs"]
    return (fig["lost_runs"] == 0 and n == fig["runs_total"] and fig["completed"] == n and fig["steps_ok"] == n
            and fig["lost_decisions"] == 0 and fig["duplicated_decisions"] == 0 and fig["ledgers_ok"] == n
            and fig["decisions_match_result"] == n and not fig["packs_differing"])


def markdown(fig: dict[str, Any]) -> str:
    """The figures as a note."""
    cfg = fig["config"]
    hosts = "own network namespaces (veth)" if fig["netns"] else f"no netns ({fig['netns_unusable'] or '--no-netns'})"
    return "\n".join([
        f"# Fleet soak — {'PASS' if passed(fig) else 'FAIL'}",
        "",
        f"- {cfg['hosts']} hosts ({hosts}; own HOME/XDG/cache each), {cfg['clients']} clients, 5 repositories "
        "× snapshot / git URL + --ref / path, explore and ask, offline model, default flags",
        f"- runs: {fig['runs_total']} ({fig['fault_phase']['runs']} in the fault phase) · lost: {fig['lost_runs']} · "
        f"completed: {fig['completed']}/{fig['checked_runs']}",
        f"- decisions: {fig['decisions_total']} · lost: {fig['lost_decisions']} · duplicated: "
        f"{fig['duplicated_decisions']} · steps in order: {fig['steps_ok']}/{fig['checked_runs']} · log = result's "
        f"count: {fig['decisions_match_result']}/{fig['checked_runs']}",
        f"- ledgers equal to recorded usage: {fig['ledgers_ok']}/{fig['checked_runs']}",
        f"- packs byte-identical (masked ids/times) to the 1-host no-fault run: {fig['packs_identical']}/"
        f"{fig['runs_total'] - fig['lost_runs']}" + (f" · differing: {fig['packs_differing']}" if fig["packs_differing"] else ""),
        f"- throughput (runs/min, {cfg['clients']} clients, no faults): "
        + ", ".join(f"{k} host(s) {v}" for k, v in fig["throughput_runs_per_min"].items())
        + f" · fault phase {fig['fault_phase']['runs_per_min']} ({fig['fault_phase']['wall_s']} s)",
        f"- followed commands that lost the server and were brought home with `navigator result --wait`: "
        f"{len(fig['cli_failures_then_recovered'])} · commands refused (server or store down, nothing started) and "
        f"given again: {len(fig['cli_refusals_then_retried'])}",
        f"- host starts: {fig['host_starts']} · load average at the end: {[round(x, 2) for x in fig['load_avg']]}",
        "", "## Faults", "", *[f"    {e}" for e in fig["faults"]], "",
    ])


def main(argv: list[str] | None = None) -> int:
    """CLI entry."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=60, help="runs of the fault phase (default 60)")
    ap.add_argument("--hosts", type=int, default=3)
    ap.add_argument("--clients", type=int, default=3)
    ap.add_argument("--throughput-runs", type=int, default=15, help="runs of the 2- and 3-host phases (1 host: all 15)")
    ap.add_argument("--no-netns", action="store_true", help="hosts share the root network namespace")
    ap.add_argument("--out-dir", type=Path, default=ROOT / "bench" / "results")
    ns = ap.parse_args(argv)
    fig = asyncio.run(soak(ns))
    ns.out_dir.mkdir(parents=True, exist_ok=True)
    stem = ns.out_dir / f"fleet-soak-{time.strftime('%Y%m%d-%H%M%S')}"
    fig["config"]["out_dir"] = str(ns.out_dir)
    stem.with_suffix(".json").write_text(json.dumps(fig, indent=2, sort_keys=True, default=str) + "\n")
    stem.with_suffix(".md").write_text(markdown(fig))
    print(markdown(fig))
    print(f"wrote {stem}.json and .md")
    return 0 if passed(fig) else 1


if __name__ == "__main__":
    sys.exit(main())
