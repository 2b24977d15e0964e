"""Fuzzing bar of the CLI and MCP surfaces (issue #29): generated calls, 0 tracebacks, 0 stuck runs, README's exit codes.

``python bench/fuzz_surfaces.py [--calls 10000] [--mcp-calls 600] [--lanes 2] [--seed 29] [--smoke]``

1. A sandbox: private XDG dirs and ``navigator.yaml`` (free embedded ports, its own SQLite file,
   ``defaults.max_iterations: 3`` so runs started over MCP stay short), a zoo of trees and YAML
   files (``fuzz_inputs.py``). ONE ``navigator server --headless`` and ONE long-running
   ``navigator worker``, as a user runs them.
2. ``--calls`` generated CLI calls of every ``navigator`` and ``repo-map`` command
   (``fuzz_calls.py``), on ``--lanes`` parallel lanes. Each call runs either *in-process* — a fork
   of a warm interpreter entering the console script's ``main`` (``fuzz_exec.py``) — or, for a
   labelled share of at least 1,000 in a full run, as a real process of the installed script.
   Alongside, ``--mcp-calls`` tool and resource calls through the official MCP client against one
   ``navigator mcp`` on stdio (``fuzz_mcp.py``).
3. Per call (``fuzz_exec.check``): no traceback, an exit code of README's table, one error line on
   exit 2, a parsable ``--json``, nothing half-written in ``--out``, the expected code where one is
   certain (a missing run → 4), no call stuck past its bound.
4. At the end every run still open is stopped with ``navigator stop`` (``batch stop``); a run still
   open 180 s later, or one whose workflow task keeps failing, is *stuck*; a run that failed is
   listed with the call that started it.
5. Failures are grouped by signature and each group is shrunk to a minimal repro (options removed
   while the failure stays). Writes ``bench/results/fuzz-surfaces-<stamp>.{json,md}``; exit 0 when
   nothing failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fuzz_calls import State, generate  # noqa: E402
from fuzz_exec import BIN, Call, Outcome, Zygote, check, execute  # noqa: E402
from fuzz_inputs import ROOT, build_zoo  # noqa: E402
from fuzz_report import RunFinding, log_tracebacks, shrink_groups, write_report  # noqa: E402
from durable_navigator.workers.devserver import free_port as _free_port

#: seconds every run still open gets to close after ``navigator stop``
STOP_BOUND_S = 180



def sandbox(root: Path) -> tuple[dict[str, str], int, str]:
    """The environment of every call, the server's gRPC port and the config text fuzzed configs start from."""
    port, ui_port = _free_port(), _free_port()
    base = (f"embedded:\n  port: {port}\n  ui_port: {ui_port}\n  db_filename: {root / 'state' / 'temporal.db'}\n")
    (root / "state").mkdir(parents=True)
    (root / "navigator.yaml").write_text(base + "defaults:\n  max_iterations: 3\n")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TEMPORAL_", "NAVIGATOR_", "GEMINI_", "GOOGLE_", "OPENAI_", "OPENROUTER_"))}
    env.update(NAVIGATOR_CONFIG=str(root / "navigator.yaml"), NAVIGATOR_IDLE_TIMEOUT_S="0",
               **{f"XDG_{d}_HOME": str(root / f"xdg-{d.lower()}") for d in ("STATE", "CACHE", "CONFIG", "DATA")})
    env.pop("COLUMNS", None)
    return env, port, base


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"navigator server exited early with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.3)
    raise SystemExit("navigator server did not open its port")


def _stop_proc(proc: subprocess.Popen[bytes], sig: int) -> int:
    proc.send_signal(sig)
    try:
        return proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        return proc.wait()


def _record_start(state: State, call: Call, code: int) -> None:
    """A call that started a run puts its id where later calls find it."""
    if not call.starts or code != 0:
        return
    options = call.argv[:call.argv.index("--")] if "--" in call.argv else call.argv
    if "--help" in options or "--version" in options:
        return  # exit 0, and nothing started (the noise added --help: seed 67's 'status of a finished id' exit 4)
    kind, _, wid = call.starts.partition(":")
    target = {"live": state.live, "parked": state.parked, "finished": state.finished, "batch": state.batches}[kind]
    target.append(wid)


def fuzz_cli(args: argparse.Namespace, state: State, env: dict[str, str], cwd: Path) -> list[tuple[Call, Outcome]]:
    """Generate and run ``args.calls`` calls on ``args.lanes`` lanes; (call, outcome) pairs in order."""
    rng = random.Random(args.seed)
    # a little above the minimum's share, so the draw reaches it
    share = max(args.subprocess_share, min(1.0, 1.08 * args.min_subprocess / max(args.calls, 1)))
    zygotes = [Zygote(env) for _ in range(args.lanes)]
    free = list(zygotes)
    lock = threading.Lock()
    results: list[tuple[Call, Outcome]] = []

    def run(call: Call) -> Outcome:
        with lock:
            zygote = free.pop()
        try:
            code, seconds, out, err = execute(call, env, str(cwd), zygote)
        finally:
            with lock:
                free.append(zygote)
        problems = check(call, code, out, err)
        return Outcome(call.index, call.surface, call.command, call.mode, code, round(seconds, 3), problems,
                       out[-1200:] if problems else "", err[-2000:] if problems else "")

    started = time.monotonic()
    try:
        with ThreadPoolExecutor(max_workers=args.lanes) as pool:
            pending: dict[Future[Outcome], Call] = {}
            made = 0
            while made < args.calls or pending:
                if made < args.calls and time.monotonic() - started > args.cli_deadline_s:
                    print(f"  deadline: stopping at {made} calls", file=sys.stderr, flush=True)
                    args.calls = made
                while made < args.calls and len(pending) < args.lanes:
                    call = generate(rng, state, made)
                    call.mode = "subprocess" if rng.random() < share else "fork"
                    pending[pool.submit(run, call)] = call
                    made += 1
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    call = pending.pop(future)
                    outcome = future.result()
                    _record_start(state, call, outcome.code)
                    results.append((call, outcome))
                    if len(results) % args.progress_every == 0:
                        _progress(results, args.calls, time.monotonic() - started)
    finally:
        for zygote in zygotes:
            zygote.close()
    results.sort(key=lambda pair: pair[0].index)
    return results


def _progress(results: list[tuple[Call, Outcome]], total: int, elapsed: float) -> None:
    """One progress line: calls, problems, rate, and where the lane time goes."""
    bad = sum(bool(o.problems) for _, o in results)
    spent: Counter[str] = Counter()
    for call, outcome in results:
        spent[f"{call.command}/{outcome.mode}"] += outcome.seconds
    top = ", ".join(f"{k} {v:.0f}s" for k, v in spent.most_common(5))
    print(f"  {len(results)}/{total} calls, {bad} with problems, {elapsed:.0f} s "
          f"({len(results) / max(elapsed, 1e-9):.2f}/s); lane time: {top}", file=sys.stderr, flush=True)


async def _open_runs(port: int) -> list[tuple[str, int]]:
    """(workflow id, attempt of its pending workflow task) of every open workflow."""
    from temporalio.client import Client

    client = await Client.connect(f"127.0.0.1:{port}")
    found = []
    async for wf in client.list_workflows("ExecutionStatus = 'Running'"):
        desc = await client.get_workflow_handle(wf.id, run_id=wf.run_id).describe()
        pending = desc.raw_description.pending_workflow_task
        found.append((wf.id, pending.attempt if pending and pending.attempt else 0))
    return found


async def _failed_runs(port: int) -> list[tuple[str, str]]:
    """(workflow id, failure message) of every run that failed (or was terminated / timed out)."""
    from temporalio.client import Client

    client = await Client.connect(f"127.0.0.1:{port}")
    found = []
    query = "ExecutionStatus = 'Failed' OR ExecutionStatus = 'TimedOut' OR ExecutionStatus = 'Terminated'"
    async for wf in client.list_workflows(query):
        message = str(wf.status)
        async for event in client.get_workflow_handle(wf.id, run_id=wf.run_id).fetch_history_events():
            if event.HasField("workflow_execution_failed_event_attributes"):
                failure = event.workflow_execution_failed_event_attributes.failure
                message = (failure.message + (f" <- {failure.cause.message}" if failure.HasField("cause") else ""))
        found.append((wf.id, message[:400]))
    return found


def settle_runs(port: int, env: dict[str, str], cwd: Path) -> dict[str, Any]:
    """Stop every open run, wait for them to close; report the stuck and the failed ones."""
    opened = asyncio.run(_open_runs(port))
    failing_tasks = [(wid, attempt) for wid, attempt in opened if attempt >= 2]
    codes = Counter()
    for wid, _ in opened:
        argv = ["batch", "stop", wid] if "batch" in wid else ["stop", wid]
        proc = subprocess.run([str(BIN / "navigator"), *argv], env=env, cwd=cwd, capture_output=True, timeout=120)
        codes[proc.returncode] += 1
    deadline = time.monotonic() + STOP_BOUND_S
    still = opened
    while still and time.monotonic() < deadline:
        time.sleep(5)
        still = asyncio.run(_open_runs(port))
    ls = subprocess.run([str(BIN / "navigator"), "ls", "--json", "--status", "running", "--limit", "1000"], env=env,
                        cwd=cwd, capture_output=True, text=True, timeout=120)
    return {"open_at_end": len(opened), "stop_exit_codes": dict(codes),
            "workflow_task_failing": [RunFinding(w, f"workflow task attempt {a}").__dict__ for w, a in failing_tasks],
            "stuck_after_stop": [RunFinding(w, f"still running {STOP_BOUND_S} s after stop (task attempt {a})").__dict__
                                 for w, a in still],
            "failed_runs": [RunFinding(w, m).__dict__ for w, m in asyncio.run(_failed_runs(port))],
            "ls_running_after": ls.stdout.strip()[:2000]}


def _mcp_thread(args: argparse.Namespace, env: dict[str, str], cwd: Path, state: State, box: dict[str, Any]) -> None:
    import anyio

    from fuzz_mcp import fuzz_mcp

    try:
        box["outcomes"], box["ended"] = anyio.run(fuzz_mcp, env, cwd, state.zoo, args.mcp_calls, args.seed + 1,
                                                  [*state.finished])
    except Exception as exc:  # noqa: BLE001 - reported as the MCP phase's own failure
        box["outcomes"], box["ended"] = [], {"session_error": f"{type(exc).__name__}: {exc}"[:500]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000, help="generated CLI calls")
    parser.add_argument("--mcp-calls", type=int, default=600, help="generated MCP tool / resource calls")
    parser.add_argument("--lanes", type=int, default=2, help="CLI calls at once")
    parser.add_argument("--subprocess-share", type=float, default=0.0, help="share run as real processes")
    parser.add_argument("--min-subprocess", type=int, default=1000, help="at least this many real processes")
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--cli-deadline-s", type=float, default=1e9, help="start no CLI call after this many seconds")
    parser.add_argument("--progress-every", type=int, default=250, help="a progress line every N calls")
    parser.add_argument("--huge-mb", type=int, default=8, help="size of the huge file of the zoo")
    parser.add_argument("--no-shrink", action="store_true", help="skip shrinking failures to minimal repros")
    parser.add_argument("--smoke", action="store_true", help="100 CLI + 20 MCP calls, a 1 MB huge file (CI)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--keep", action="store_true", help="keep the sandbox (printed) for inspection")
    args = parser.parse_args(argv)
    if args.smoke:  # CI: about a minute; the seed run is detached (not awaited), failures are not shrunk
        args.calls, args.mcp_calls, args.huge_mb, args.min_subprocess = 100, 20, 1, 15
        args.lanes, args.no_shrink = max(args.lanes, 4), True
    tmp = Path(tempfile.mkdtemp(prefix="fuzz-surfaces-"))
    env, port, base = sandbox(tmp)
    zoo = build_zoo(tmp / "zoo", random.Random(args.seed), per_kind=12, huge_mb=args.huge_mb, config_base=base)
    state = State(zoo=zoo, out_root=tmp / "outs")
    started = time.monotonic()
    log = (tmp / "server.log").open("wb")
    server = subprocess.Popen([str(BIN / "navigator"), "server", "--headless"], cwd=tmp, env=env,
                              stdout=log, stderr=log, start_new_session=True)
    worker = None
    try:
        _wait_port(port, server)
        worker = subprocess.Popen([str(BIN / "navigator"), "worker"], cwd=tmp, env=env, stdout=log, stderr=log,
                                  start_new_session=True)
        seed = subprocess.run([str(BIN / "navigator"), "explore", str(zoo.good_repo), "how is the budget enforced?",
                               "--max-iterations", "2", "--json", "--id", "fz-seed", "--out", str(tmp / "seed-out"),
                               *(["--detach"] if args.smoke or args.calls == 0 else [])],
                              cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
        if seed.returncode != 0:
            print("the seed exploration failed:", seed.stderr[-3000:], file=sys.stderr)
            return 1
        if args.smoke:  # detached, so the worker's start overlaps the seed's; its result is awaited here
            subprocess.run([str(BIN / "navigator"), "result", "fz-seed", "--wait"], cwd=tmp, env=env,
                           capture_output=True, timeout=600)
        state.finished.append("fz-seed")
        mcp_box: dict[str, Any] = {}
        mcp = threading.Thread(target=_mcp_thread, args=(args, env, tmp, state, mcp_box), daemon=True)
        mcp.start()
        # the lanes' working directory: its parent (`..`, a fuzzed repository argument) is the sandbox —
        # bounded and the same on every run — not the machine's /tmp (100k+ files of other processes, which
        # made `repo-map generate ..` a cold index of an unbounded tree that outlived its bound)
        lanes_cwd = tmp / "cwd"
        lanes_cwd.mkdir()
        pairs = fuzz_cli(args, state, env, lanes_cwd)
        mcp.join(timeout=1800)
        cli_wall = time.monotonic() - started
        runs = settle_runs(port, env, tmp)
        groups = shrink_groups(pairs, env, str(lanes_cwd), skip=args.no_shrink)
    finally:
        if worker is not None:
            _stop_proc(worker, signal.SIGTERM)
        _stop_proc(server, signal.SIGINT)
        log.close()
    runs["worker_log_tracebacks"] = log_tracebacks(tmp / "server.log")
    paths = write_report(args, pairs, groups, mcp_box.get("outcomes", []), mcp_box.get("ended", {}), runs,
                         wall_s=time.monotonic() - started, cli_wall_s=cli_wall, sandbox=tmp)
    if not args.keep:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"sandbox kept: {tmp}")
    summary = json.loads(paths[0].read_text())["totals"]
    print(json.dumps(summary, indent=1))
    print(f"results: {paths[0]} {paths[1]}")
    return 0 if summary["failing_calls"] == 0 and summary["stuck_runs"] == 0 and summary["mcp_problems"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
