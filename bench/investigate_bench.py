"""Investigation benchmark (issue 15): ``navigator investigate`` on real repositories, the default user path.

Each case is one real repository (a local checkout of a mirror; nothing is downloaded) and a two-clause
goal. Every run goes through ONE private ``navigator server`` + ONE ``navigator worker`` (the same
``Stack`` as the quality benchmark) and the installed CLI with default flags (offline model: no API
key is set): ``navigator investigate CHECKOUT GOAL --json``.

Figures per case: planning rounds, stages (done / dropped), worker children, criteria met / total,
cost, wall seconds, history bytes (the parent's history and its children's, as JSON), and **evidence
existence** — every evidence citation of report.json re-checked here against the checkout (the file
exists and the cited lines are inside it), independently of the workflow's own check.

Usage::

    .venv/bin/python bench/investigate_bench.py            # all cases
    .venv/bin/python bench/investigate_bench.py starlette  # some

Raw records go to ``$BENCH_DATA/investigate-runs/<stamp>/`` (default /tmp); the table to
``bench/results/investigate-bench.{md,json}``.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from temporalio.client import Client

from durable_navigator.navcore.run.citations import parse_citations
from durable_navigator.workers.converter import DATA_CONVERTER

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
MIRRORS = Path("/work/.mirror")
TIMEOUT_S = 1800.0
CASES: dict[str, tuple[str, str]] = {
    "starlette": ("encode+starlette", "how does the router match a request to an endpoint; "
                                      "where are middleware applied to the application?"),
    "itsdangerous": ("pallets+itsdangerous", "how is a signature created and verified; "
                                             "where is the timestamp age checked?"),
    "typer": ("tiangolo+typer", "how are command parameters turned into click options; "
                                "where is the completion installed?"),
    "durable-navigator": ("", "how does a model call reserve and reconcile the budget; "
                              "where do subagents get their budget slices?"),
}


def _quality_run() -> Any:
    spec = importlib.util.spec_from_file_location("quality_run", BENCH / "quality_run.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["quality_run"] = module
    spec.loader.exec_module(module)
    return module


def checkout(mirror: str, dest: Path) -> Path:
    """A local checkout of a mirror's HEAD (``git clone --shared``: no network, no copy of objects)."""
    if not mirror:
        return REPO
    target = dest / mirror
    if not target.exists():
        subprocess.run(["git", "clone", "-q", "--shared", str(MIRRORS / mirror / "repo"), str(target)], check=True)
    return target


def evidence_existence(report: dict[str, Any], root: Path) -> tuple[int, int]:
    """(existing, total) evidence citations of report.json, checked against the checkout here."""
    total = ok = 0
    for stage in report.get("stages", []):
        for crit in stage.get("criteria_status", []):
            for label in crit.get("evidence", []):
                for cite in parse_citations(label):
                    total += 1
                    path = (root / cite.path).resolve()
                    if path.is_file() and path.is_relative_to(root.resolve()):
                        lines = len(path.read_bytes().splitlines())
                        ok += int(1 <= cite.start <= cite.end <= lines)
    return ok, total


async def history_bytes(address: str, workflow_ids: list[str]) -> int:
    """Bytes of the runs' histories as JSON (every run of each id)."""
    client = await Client.connect(address, data_converter=DATA_CONVERTER)
    total = 0
    for wid in workflow_ids:
        async for run in client.list_workflows(f"WorkflowId = '{wid}'"):
            history = await client.get_workflow_handle(wid, run_id=run.run_id).fetch_history()
            total += len(history.to_json().encode())
    return total


def run_case(stack: Any, name: str, root: Path, goal: str, out: Path) -> dict[str, Any]:
    argv = [stack_bin("navigator"), "investigate", str(root), goal, "--json", "--out", str(out)]
    start = time.monotonic()
    proc = subprocess.run(argv, env=stack.env(), capture_output=True, timeout=TIMEOUT_S)
    seconds = time.monotonic() - start
    if proc.returncode != 0:
        return {"case": name, "error": proc.stderr.decode()[-2000:], "seconds": round(seconds, 1)}
    result = json.loads(proc.stdout)
    report = json.loads(Path(result["report_json_path"]).read_text())
    ok, total = evidence_existence(report, root)
    ids = [result["workflow_id"], *(c["workflow_id"] for c in result["children"])]
    stages = report["stages"]
    return {
        "case": name, "repo": str(root), "goal": goal, "workflow_id": result["workflow_id"],
        "stop_reason": result["stop_reason"], "completed_normally": result["completed_normally"],
        "plan_rounds": result["plan_rounds"], "stages": len(stages),
        "stages_done": sum(s["status"] == "done" for s in stages),
        "stages_dropped": sum(s["status"] == "dropped" for s in stages),
        "loops": sum(s["loops"] for s in stages), "children": len(result["children"]),
        "children_normal": sum(bool(c["completed_normally"]) for c in result["children"]),
        "criteria_met": result["criteria_met"], "criteria_total": result["criteria_total"],
        "cost_usd": result["cost_usd"], "seconds": round(seconds, 1),
        "history_bytes": asyncio.run(history_bytes(stack.address, ids)),
        "parent_history_bytes": asyncio.run(history_bytes(stack.address, ids[:1])),
        "evidence_existing": ok, "evidence_total": total, "report": result["report_path"],
    }


def stack_bin(name: str) -> str:
    return str(Path(sys.executable).parent / name)


def markdown(records: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    lines = [f"# navigator investigate — benchmark ({meta['date']})", "",
             f"{meta['note']}", "",
             "| case | stop | plan rounds | stages (done/dropped) | loops | children (normal) | criteria met | "
             "cost USD | seconds | history bytes: parent / with children | evidence existing |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        if "error" in r:
            lines.append(f"| {r['case']} | error: {r['error'][-200:]!r} | | | | | | | {r['seconds']} | | |")
            continue
        lines.append(f"| {r['case']} | {r['stop_reason']} | {r['plan_rounds']} | {r['stages']} "
                     f"({r['stages_done']}/{r['stages_dropped']}) | {r['loops']} | {r['children']} "
                     f"({r['children_normal']}) | {r['criteria_met']}/{r['criteria_total']} | {r['cost_usd']} | "
                     f"{r['seconds']} | {r['parent_history_bytes']} / {r['history_bytes']} | "
                     f"{r['evidence_existing']}/{r['evidence_total']} |")
    lines += ["", "History bytes are the runs' histories as JSON (`WorkflowHistory.to_json`, base64 payloads); "
              "evidence existing = evidence citations of report.json whose file and lines exist in the checkout, "
              "re-checked by the benchmark itself.", "", "Goals:", ""] + [f"- {r['case']}: {r.get('goal', '')}" for r in records]
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> None:
    names = argv or list(CASES)
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    run_dir = Path(os.environ.get("BENCH_DATA", "/tmp")) / "investigate-runs" / stamp
    run_dir.mkdir(parents=True, exist_ok=True)
    stack = _quality_run().Stack(run_dir / "state")
    stack.start()
    records = []
    try:
        for name in names:
            mirror, goal = CASES[name]
            root = checkout(mirror, run_dir / "checkouts")
            stack.check(name)
            record = run_case(stack, name, root, goal, run_dir / "out")
            print(json.dumps(record), flush=True)
            records.append(record)
    finally:
        stack.stop()
    meta = {"date": stamp, "note": "offline model (no key), default flags, one `navigator server` + one "
            "`navigator worker`, 2 cores shared with other agents' work (seconds are indicative only); cost is 0 because "
            "the offline model is free."}
    (run_dir / "records.json").write_text(json.dumps(records, indent=2))
    (BENCH / "results" / "investigate-bench.json").write_text(json.dumps({"meta": meta, "records": records}, indent=2))
    (BENCH / "results" / "investigate-bench.md").write_text(markdown(records, meta))
    print(markdown(records, meta))


if __name__ == "__main__":
    main(sys.argv[1:])
