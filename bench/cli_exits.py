"""Exit soak: the installed ``navigator`` CLI, called N times, never aborts at exit.

``python bench/cli_exits.py [--calls 1000] [--explores 40] [--parallel 2] [--seed 7]``

What it does:

1. writes a private ``navigator.yaml`` (free embedded ports, SQLite and XDG dirs in
   a temporary folder) and starts ``navigator server`` and one ``navigator worker``
   as long-running processes — the topology the README recommends;
2. seeds a few finished runs with ``navigator explore`` (offline model, default
   flags otherwise), then calls the CLI ``--calls`` times in a shuffled mix:
   ``status`` (plain, ``--json``, ``--watch --json``), ``result`` (plain,
   ``--json``, ``--wait --json``), ``log --json``, ``ls`` (plain, ``--json``) on
   finished runs, more ``explore`` calls (the default path: no ``TEMPORAL_ADDRESS``,
   so each explore also runs its own in-process worker next to the long-running one),
   and error paths (unknown run → 4, usage error → 2, bad ``--tokens`` → 2);
3. counts, per command, every exit code, every abort (a signal, 134 / 139, or
   ``Fatal Python error`` / ``Segmentation fault`` on stderr) and every exit code
   other than the expected one, and checks ``--json`` output parses;
4. prints a summary and writes ``bench/results/cli-exits-<stamp>.json``.

Exit status: 0 when there were 0 aborts and 0 unexpected exit codes.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from durable_navigator.workers.devserver import free_port as _free_port

ROOT = Path(__file__).resolve().parents[1]
NAVIGATOR = Path(sys.executable).parent / "navigator"
FIXTURE_REPO = ROOT / "tests" / "fixtures" / "navigator_repo"
GOALS = [
    "how is the budget enforced?",
    "where are tokens counted twice?",
    "what does the ledger store?",
    "how does the CLI reach the plugin?",
]
FATAL = re.compile(r"Fatal Python error|Segmentation fault|PyGILState_Release")
#: a CLI call that takes longer than this is a hang, reported as such
CALL_TIMEOUT_S = 300


@dataclass
class Outcome:
    """One CLI process."""

    kind: str
    args: list[str]
    expected: int
    code: int
    seconds: float
    aborted: bool
    bad_json: bool
    stderr_tail: str = ""
    #: the run an ``explore`` call made (read from its ``--json`` output)
    workflow_id: str | None = None


@dataclass
class Summary:
    """What the run measured."""

    calls: int
    aborts: int
    unexpected_codes: int
    bad_json: int
    wall_s: float
    by_kind: dict[str, dict[str, int]] = field(default_factory=dict)
    failures: list[dict[str, object]] = field(default_factory=list)



def _sandbox(root: Path) -> tuple[dict[str, str], int]:
    port, ui_port = _free_port(), _free_port()
    (root / "navigator.yaml").write_text(
        f"embedded:\n  port: {port}\n  ui_port: {ui_port}\n  db_filename: {root / 'state' / 'temporal.db'}\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "NAVIGATOR_", "GEMINI_", "GOOGLE_"))}
    env.update(NAVIGATOR_CONFIG=str(root / "navigator.yaml"), XDG_STATE_HOME=str(root / "xdg-state"),
               XDG_CACHE_HOME=str(root / "xdg-cache"), COLUMNS="200")
    return env, port


def _wait_port(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 90) -> None:
    import socket

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"navigator server exited early with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit("navigator server did not open its port")


def _call(kind: str, args: list[str], expected: int, env: dict[str, str], cwd: Path) -> Outcome:
    started = time.monotonic()
    try:
        proc = subprocess.run([str(NAVIGATOR), *args], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=CALL_TIMEOUT_S)
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, out, err = -999, "", f"timeout after {CALL_TIMEOUT_S}s: {exc}"
    seconds = time.monotonic() - started
    aborted = code < 0 or code in (134, 139) or bool(FATAL.search(err))
    bad_json = False
    if "--json" in args and code == 0:
        try:
            for line in out.splitlines() if "--watch" in args else [out]:
                json.loads(line)
        except json.JSONDecodeError:
            bad_json = True
    tail = err[-800:] if aborted or code != expected or bad_json else ""
    wid = json.loads(out).get("workflow_id") if kind == "explore" and code == 0 and not bad_json else None
    return Outcome(kind, args, expected, code, round(seconds, 3), aborted, bad_json, tail, wid)


def _explore(goal: str, out: Path, extra: list[str] | None = None) -> tuple[str, list[str], int]:
    return ("explore", ["explore", str(FIXTURE_REPO), goal, "--json", "--max-iterations", "4",
                        "--out", str(out), *(extra or [])], 0)


def _read_calls(wid: str) -> list[tuple[str, list[str], int]]:
    return [
        ("status --json", ["status", wid, "--json"], 0),
        ("status", ["status", wid], 0),
        ("status --watch --json", ["status", wid, "--watch", "--json"], 0),
        ("result --json", ["result", wid, "--json"], 0),
        ("result", ["result", wid], 0),
        ("result --wait --json", ["result", wid, "--wait", "--json"], 0),
        ("log --json", ["log", wid, "--json"], 0),
        ("ls --json", ["ls", "--json", "--limit", "10"], 0),
        ("ls", ["ls", "--limit", "10"], 0),
    ]


def _plan(n: int, explores: int, wids: list[str], out: Path, rng: random.Random) -> list[tuple[str, list[str], int]]:
    errors = [
        ("status <unknown> (4)", ["status", "nav-no-such-run", "--json"], 4),
        ("result <unknown> (4)", ["result", "nav-no-such-run"], 4),
        ("usage error (2)", ["status"], 2),
        ("explore --tokens 5 (2)", ["explore", str(FIXTURE_REPO), "goal", "--tokens", "5"], 2),
    ]
    plan = [_explore(rng.choice(GOALS), out) for _ in range(explores)]
    n_errors = max(n // 25, len(errors))
    plan += [errors[i % len(errors)] for i in range(n_errors)]
    reads = n - len(plan)
    plan += [rng.choice(_read_calls(rng.choice(wids))) for _ in range(reads)]
    rng.shuffle(plan)
    return plan


def _summarize(outcomes: list[Outcome], wall_s: float) -> Summary:
    by_kind: dict[str, Counter[str]] = {}
    for o in outcomes:
        by_kind.setdefault(o.kind, Counter())[f"exit {o.code}"] += 1
    failures = [asdict(o) for o in outcomes if o.aborted or o.code != o.expected or o.bad_json]
    return Summary(
        calls=len(outcomes),
        aborts=sum(o.aborted for o in outcomes),
        unexpected_codes=sum(o.code != o.expected for o in outcomes),
        bad_json=sum(o.bad_json for o in outcomes),
        wall_s=round(wall_s, 1),
        by_kind={k: dict(sorted(v.items())) for k, v in sorted(by_kind.items())},
        failures=failures[:50],
    )


def _stop(proc: subprocess.Popen[bytes], sig: int) -> int:
    proc.send_signal(sig)
    try:
        return proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000, help="CLI processes in total (seeding included)")
    parser.add_argument("--explores", type=int, default=40, help="explore calls among them (after seeding)")
    parser.add_argument("--seed-runs", type=int, default=4, help="finished runs made first, read by the rest")
    parser.add_argument("--parallel", type=int, default=2, help="CLI processes at once")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="cli-exits-") as tmp:
        root = Path(tmp)
        env, port = _sandbox(root)
        server = subprocess.Popen([str(NAVIGATOR), "server", "--headless"], cwd=root, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        worker = None
        try:
            _wait_port(port, server)
            worker = subprocess.Popen([str(NAVIGATOR), "worker"], cwd=root, env=env,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            started = time.monotonic()
            seeds = [_call(*_explore(GOALS[i % len(GOALS)], root / "out"), env, root) for i in range(args.seed_runs)]
            wids = [s.workflow_id for s in seeds if s.workflow_id]
            if not wids:
                print("no seed run finished:", seeds[0].stderr_tail, file=sys.stderr)
                return 1
            plan = _plan(args.calls - len(seeds), args.explores, wids, root / "out", rng)
            done = [0]
            lock = threading.Lock()

            def run(item: tuple[str, list[str], int]) -> Outcome:
                outcome = _call(*item, env, root)
                with lock:
                    done[0] += 1
                    if done[0] % 100 == 0:
                        print(f"  {done[0] + len(seeds)}/{args.calls} calls", file=sys.stderr, flush=True)
                return outcome

            with ThreadPoolExecutor(max_workers=args.parallel) as pool:
                outcomes = seeds + list(pool.map(run, plan))
            summary = _summarize(outcomes, time.monotonic() - started)
        finally:
            if worker is not None:
                _stop(worker, signal.SIGTERM)
            _stop(server, signal.SIGINT)
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = args.out / f"cli-exits-{stamp}.json"
    path.write_text(json.dumps({"config": {k: str(v) for k, v in vars(args).items()}, **asdict(summary),
                                "loadavg": os.getloadavg()}, indent=2) + "\n")
    print(json.dumps({k: v for k, v in asdict(summary).items() if k != "failures"}, indent=2))
    for failure in summary.failures[:5]:
        print("failure:", json.dumps(failure)[:1000], file=sys.stderr)
    print(f"{summary.calls} calls · {summary.aborts} aborts · {summary.unexpected_codes} unexpected exit codes · "
          f"{summary.bad_json} unparsable --json outputs · {summary.wall_s}s wall · {path}")
    return 0 if summary.aborts == 0 and summary.unexpected_codes == 0 and summary.bad_json == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
