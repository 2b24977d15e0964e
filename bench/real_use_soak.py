"""Real-use soak: ``navigator explore`` processes on changing real repositories, one long-running worker.

``python bench/real_use_soak.py [--explores 300] [--repos yarl,starlette,...] [--lanes 2] [--seed 11]``

What it does (how to read the figures: ``bench/README.md``, "real_use_soak.py"):

1. clones real repositories from the local mirrors (``/work/.mirror/<owner>+<name>/repo``,
   bare git dirs) into two workspaces each: a git clone that is moved between commits in
   place (``git checkout -f <commit>``, sometimes with uncommitted hand edits on top), and a
   copy outside git (``git archive`` of a commit) that is edited by hand between calls —
   files deleted, renamed, moved to a new folder, added, changed, a folder removed — and
   now and then replaced by a fresh copy of another commit;
2. mines goals from those repositories' commit messages (the commit's parent is the tree
   explored: the code as it was before the change);
3. starts ONE ``navigator server`` (embedded dev server on free ports, its own state dir)
   and ONE long-running ``navigator worker``; every call below has ``TEMPORAL_ADDRESS``
   pointing at that server, so that worker serves every exploration;
4. runs ``--explores`` ``navigator explore WORKSPACE GOAL`` processes with default flags
   (planning on, offline model, default budgets), ``--lanes`` at a time on disjoint
   workspaces, each workspace changed before each of its calls (with ``--edit-during F``, a
   share F of them also changed *while* the exploration runs); meanwhile a reader calls
   ``status ID --json``, ``status ID``, ``result ID --json``, ``result ID --wait --json``,
   ``log ID``, ``log ID --json``, ``ls`` and ``ls --json`` on running and finished runs;
5. records per call: exit code, signal, abort (signal, 134 / 139, ``Fatal Python error`` on
   stderr), wall time, and for explores the stop reason, whether ``context.md`` exists and
   is non-empty, and whether every file it names (the map's file lines, the summary's
   outlined files, the "Files not in the map" list) exists in the workspace at that moment;
6. writes ``bench/results/real-use-soak-<stamp>.json`` (every call, every change of every
   workspace, load averages, the worker's RSS) and ``.md``; exits 1 unless every call passed.

Scratch data (clones, server state, XDG dirs, outputs) lives under ``--data-dir``
(default ``$BENCH_DATA/soak-realuse-<stamp>``, outside the repository, never committed).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
NAVIGATOR = Path(sys.executable).parent / "navigator"
DEFAULT_REPOS = "yarl,starlette,structlog,attrs,typer,chi,cobra,express,ripgrep"
MIRRORS = {
    "yarl": "aio-libs+yarl", "starlette": "encode+starlette", "structlog": "hynek+structlog",
    "attrs": "python-attrs+attrs", "typer": "tiangolo+typer", "chi": "go-chi+chi", "cobra": "spf13+cobra",
    "express": "expressjs+express", "ripgrep": "BurntSushi+ripgrep", "koa": "koajs+koa", "rack": "rack+rack",
    "jinja": "pallets+jinja", "bytes": "tokio-rs+bytes", "ky": "sindresorhus+ky",
}
FATAL = re.compile(r"Fatal Python error|Segmentation fault|PyGILState_Release")
#: a line that opens a file in the rendered map (``repomap/layout.py:file_line``)
FILE_LINE = re.compile(r"^(?P<path>\S.*?) \[L\d (?:\d+B|\d+\.\dK|\d+\.\dM) \d+L\](?: why=\S*)?$")
SKIPPED_ITEM = re.compile(r"^  - `(?P<path>[^`]+)`$")
SKIPPED_REASON = re.compile(r"^- (?P<reason>[a-z_ ]+): \d+")
NOISE = re.compile(r"^(merge|bump|release|prepare|version|revert|update (the )?changelog|\[pre-commit|pre-commit|"
                   r"chore\(deps|build\(deps|docs?:|ci:)", re.I)
NOTEWORTHY = re.compile(r"Traceback|Error|error:|warning|WARN|fallback|not shown|vanished|retry", re.I)
CALL_TIMEOUT_S = 900
ABNORMAL_STOPS = {"failed", "approval_timeout"}


# -- tasks: goals mined from commit messages -----------------------------------------


@dataclass
class Task:
    """One goal: a commit's subject, explored on the tree of its parent."""

    repo: str
    commit: str
    parent: str
    goal: str


def git(*args: str, cwd: Path | None = None, git_dir: Path | None = None) -> str:
    cmd = ["git", *(["--git-dir", str(git_dir)] if git_dir else []), *args]
    return subprocess.run(cmd, cwd=cwd, check=True, capture_output=True, text=True).stdout


def mine_tasks(repo: str, mirror: Path, n: int, rng: random.Random) -> list[Task]:
    """``n`` commits spread over the whole history whose subject reads like a goal."""
    rows = []
    for line in git("log", "--no-merges", "--format=%H%x1f%P%x1f%s", "HEAD", git_dir=mirror).splitlines():
        sha, parents, subject = line.split("\x1f")
        goal = re.sub(r"\s*\((#|gh-)\d+\)\s*$", "", subject).strip()
        if len(parents.split()) == 1 and 4 <= len(goal.split()) <= 20 and not NOISE.match(goal) \
                and "dependabot" not in goal.lower():
            rows.append(Task(repo, sha, parents, goal))
    if len(rows) < n:
        raise SystemExit(f"{repo}: only {len(rows)} usable commits, need {n}")
    # evenly spread over history (far-apart checkouts rename and delete a lot), shuffled
    step = len(rows) / n
    picked = [rows[min(int(i * step + rng.random() * step), len(rows) - 1)] for i in range(n)]
    rng.shuffle(picked)
    return picked


# -- workspaces and the changes made to them between calls ---------------------------


SOURCE_EXT = {".py", ".go", ".js", ".ts", ".rs", ".rb", ".md", ".rst", ".toml", ".json", ".yml", ".yaml"}
NEW_FILE = {
    ".py": "def {name}(value):\n    \"\"\"{goal}\"\"\"\n    return value\n",
    ".go": "package main\n\n// {name}: {goal}\nfunc {name}(v int) int {{ return v }}\n",
    ".js": "// {goal}\nfunction {name}(v) {{ return v; }}\nmodule.exports = {{ {name} }};\n",
    ".rs": "/// {goal}\npub fn {name}(v: u32) -> u32 {{ v }}\n",
}


@dataclass
class Workspace:
    """A directory explored again and again, changed before each call."""

    name: str
    repo: str
    kind: str  # "git" (a clone, moved between commits in place) or "copy" (no .git, edited by hand)
    path: Path
    mirror: Path
    tasks: list[Task]
    lane: int = 0
    calls: int = 0
    head: str = ""

    def files(self) -> list[Path]:
        out = []
        for dirpath, dirnames, filenames in os.walk(self.path):
            dirnames[:] = [d for d in dirnames if d != ".git"]
            out += [Path(dirpath, f) for f in filenames]
        return sorted(out)

    def export(self, commit: str) -> None:
        """Replace the copy's contents with a fresh ``git archive`` of ``commit`` (a new copy)."""
        shutil.rmtree(self.path, ignore_errors=True)
        self.path.mkdir(parents=True)
        archive = subprocess.run(["git", "--git-dir", str(self.mirror), "archive", "--format=tar", commit],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(self.path)], input=archive, check=True)
        self.head = commit


def _rel(ws: Workspace, p: Path) -> str:
    return str(p.relative_to(ws.path))


def hand_edits(ws: Workspace, rng: random.Random, goal: str) -> dict[str, Any]:
    """Delete, rename, move, add and change files by hand (and now and then drop a folder)."""
    files = [p for p in ws.files() if p.suffix in SOURCE_EXT]
    rng.shuffle(files)
    done: dict[str, list[str]] = {"deleted": [], "renamed": [], "added": [], "changed": [], "dropped_dir": []}
    for p in files[: rng.randint(1, 3)]:
        p.unlink()
        done["deleted"].append(_rel(ws, p))
    for p in files[3: 3 + rng.randint(1, 2)]:
        target = p.with_name(f"{p.stem}_moved{p.suffix}") if rng.random() < 0.5 \
            else ws.path / "relocated" / p.parent.relative_to(ws.path) / p.name
        target.parent.mkdir(parents=True, exist_ok=True)
        p.rename(target)
        done["renamed"].append(f"{_rel(ws, p)} -> {_rel(ws, target)}")
    ext = Counter(p.suffix for p in files if p.suffix in NEW_FILE).most_common(1)
    suffix = ext[0][0] if ext else ".py"
    words = [w.lower() for w in re.findall(r"[A-Za-z]{4,}", goal)] or ["soak"]
    name = "soak_" + "_".join(rng.sample(words, min(2, len(words))))
    new = ws.path / f"{name}_{ws.calls}{suffix}"
    new.write_text(NEW_FILE[suffix].format(name=name, goal=goal.replace('"', "'").replace("*/", "")))
    done["added"].append(_rel(ws, new))
    for p in files[6:8]:
        with p.open("a", encoding="utf-8", errors="replace") as fh:
            fh.write(f"\n\n{'#' if p.suffix in {'.py', '.rb', '.toml', '.yml', '.yaml'} else '//'} soak edit {ws.calls}\n")
        done["changed"].append(_rel(ws, p))
    if rng.random() < 0.25:
        dirs = Counter(p.parent for p in ws.files() if p.parent != ws.path)
        small = sorted(d for d, count in dirs.items() if count <= 8 and ".git" not in d.parts)
        if small:
            victim = rng.choice(small)
            shutil.rmtree(victim)
            done["dropped_dir"].append(_rel(ws, victim))
    return {k: v for k, v in done.items() if v}


def change(ws: Workspace, task: Task, rng: random.Random) -> dict[str, Any]:
    """Change the workspace before a call on it; return what was done (recorded in the results)."""
    record: dict[str, Any] = {"workspace": ws.name, "call": ws.calls}
    if ws.kind == "git":
        before = ws.head
        git("checkout", "-q", "-f", task.parent, cwd=ws.path)
        ws.head = task.parent
        record["checkout"] = {"from": before[:12], "to": task.parent[:12]}
        if before:
            stat = git("diff", "--name-status", "-M", before, task.parent, cwd=ws.path).split("\n")
            record["checkout"]["diff"] = dict(Counter(line[:1] for line in stat if line))
        if ws.calls % 4 == 3:  # uncommitted edits on top of the checkout
            record["hand_edits"] = hand_edits(ws, rng, task.goal)
    elif ws.calls == 0 or ws.calls % 3 == 0:
        before = ws.head
        ws.export(task.parent)
        record["fresh_copy"] = {"from": before[:12], "to": task.parent[:12]}
    else:
        record["hand_edits"] = hand_edits(ws, rng, task.goal)
    return record


# -- calls --------------------------------------------------------------------------


@dataclass
class Call:
    """One CLI process."""

    kind: str
    args: list[str]
    lane: str
    code: int = 0
    signal: str | None = None
    aborted: bool = False
    wall_s: float = 0.0
    started_at: float = 0.0
    loadavg: tuple[float, float, float] = (0.0, 0.0, 0.0)
    ok: bool = True
    problems: list[str] = field(default_factory=list)
    workflow_id: str | None = None
    workspace: str | None = None
    repo: str | None = None
    stop_reason: str | None = None
    context_bytes: int | None = None
    files_named: int | None = None
    missing_files: list[str] = field(default_factory=list)
    #: what changed in the workspace while this call ran (``--edit-during``)
    edited_during: Any = None
    #: files the context pack reports as vanished during the run (calls with edits during them)
    vanished_noted: int | None = None
    #: stderr lines of a passing call that look like trouble (warnings, tracebacks, fallbacks)
    stderr_notes: list[str] = field(default_factory=list)
    stderr_tail: str = ""


class Soak:
    """The server, the worker, the shared registry of runs, and every call made."""

    def __init__(self, data: Path, seed: int) -> None:
        self.data, self.rng = data, random.Random(seed)
        self.calls: list[Call] = []
        self.changes: list[dict[str, Any]] = []
        self.running: dict[str, str] = {}  # workflow id -> workspace
        self.finished: list[str] = []
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.worker: subprocess.Popen[bytes] | None = None
        self.server: subprocess.Popen[bytes] | None = None
        self.rss_kb: list[tuple[float, int]] = []
        self.t0 = time.monotonic()
        self.env = self._sandbox()

    def _sandbox(self) -> dict[str, str]:
        from durable_navigator.workers.devserver import free_port

        self.port, self.ui_port = free_port(), free_port()
        state = self.data / "state"
        state.mkdir(parents=True, exist_ok=True)
        (self.data / "navigator.yaml").write_text(
            f"embedded:\n  port: {self.port}\n  ui_port: {self.ui_port}\n  db_filename: {state / 'temporal.db'}\n")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "NAVIGATOR_", "GEMINI_",
                                                                         "GOOGLE_", "OPENAI_"))}
        env.update(NAVIGATOR_CONFIG=str(self.data / "navigator.yaml"), XDG_STATE_HOME=str(self.data / "xdg-state"),
                   XDG_CACHE_HOME=str(self.data / "xdg-cache"), TEMPORAL_ADDRESS=f"127.0.0.1:{self.port}",
                   COLUMNS="120")
        return env

    def start(self) -> None:
        """``navigator server`` (no TEMPORAL_ADDRESS: it is the embedded server) and one worker."""
        server_env = {k: v for k, v in self.env.items() if k != "TEMPORAL_ADDRESS"}
        self.server = subprocess.Popen([str(NAVIGATOR), "server"], cwd=self.data, env=server_env,
                                       stdout=(self.data / "server.out").open("wb"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while True:
            if self.server.poll() is not None:
                raise SystemExit(f"navigator server exited with {self.server.returncode}; see {self.data}/server.out")
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", self.port)) == 0:
                    break
            if time.monotonic() > deadline:
                raise SystemExit("navigator server did not open its port in 120 s")
            time.sleep(0.3)
        self.worker = subprocess.Popen([str(NAVIGATOR), "worker"], cwd=self.data, env=self.env,
                                       stdout=(self.data / "worker.out").open("wb"), stderr=subprocess.STDOUT)

    def stop(self) -> dict[str, int | None]:
        codes: dict[str, int | None] = {}
        for name, proc, sig in (("worker", self.worker, signal.SIGTERM), ("server", self.server, signal.SIGINT)):
            if proc is None:
                continue
            if proc.poll() is None:
                proc.send_signal(sig)
                try:
                    proc.wait(timeout=90)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            codes[name] = proc.returncode
        return codes

    def sample_worker(self) -> None:
        if self.worker is None:
            return
        try:
            status = Path(f"/proc/{self.worker.pid}/status").read_text()
        except OSError:
            return
        match = re.search(r"VmRSS:\s+(\d+) kB", status)
        if match:
            with self.lock:
                self.rss_kb.append((round(time.monotonic() - self.t0, 1), int(match.group(1))))

    def run(self, call: Call, cwd: Path, on_started: Any = None) -> tuple[str, str]:
        """Run one CLI process; fills code / signal / abort / wall time; returns (stdout, stderr)."""
        call.loadavg = tuple(round(x, 2) for x in os.getloadavg())  # type: ignore[assignment]
        call.started_at = round(time.monotonic() - self.t0, 2)
        t0 = time.monotonic()
        proc = subprocess.Popen([str(NAVIGATOR), *call.args], cwd=cwd, env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        err_lines: list[str] = []

        def read_err() -> None:
            assert proc.stderr is not None
            for line in proc.stderr:
                err_lines.append(line)
                match = re.search(r"started (nav-\S+)", line)
                if match and on_started is not None:
                    on_started(match.group(1))

        reader = threading.Thread(target=read_err, daemon=True)
        reader.start()
        killer = threading.Timer(CALL_TIMEOUT_S, lambda: os.killpg(proc.pid, signal.SIGKILL))
        killer.start()
        assert proc.stdout is not None
        out = proc.stdout.read()
        proc.wait()
        killer.cancel()
        reader.join(timeout=10)
        err = "".join(err_lines)
        call.wall_s = round(time.monotonic() - t0, 3)
        call.code = proc.returncode
        if proc.returncode < 0:
            call.signal = signal.Signals(-proc.returncode).name
        call.aborted = proc.returncode < 0 or proc.returncode in (134, 139) or bool(FATAL.search(err))
        if call.aborted:
            call.problems.append(f"abort ({call.signal or call.code})")
        return out, err

    def record(self, call: Call, err: str) -> None:
        call.ok = not call.problems
        call.stderr_notes = [line[:300] for line in err.splitlines() if NOTEWORTHY.search(line)][:10]
        if not call.ok:
            call.stderr_tail = err[-1500:]
        with self.lock:
            self.calls.append(call)
            n = len(self.calls)
        self.sample_worker()
        if not call.ok or n % 25 == 0:
            flag = "" if call.ok else f"  FAILED: {call.problems}"
            print(f"[{time.monotonic() - self.t0:7.1f}s] call {n}: {call.kind} {call.workspace or ''} "
                  f"exit {call.code} {call.wall_s:.1f}s{flag}", file=sys.stderr, flush=True)


# -- explore calls and their checks -----------------------------------------------------


def check_context(ws: Workspace, context: Path, call: Call, before: set[str] | None = None) -> None:
    """``context.md`` exists, is non-empty and names only files of the tree as it is now.

    ``before``: the tree's files before a change made *during* the call; then a file may be
    named if it exists in either tree, and "vanished during the run" notes are expected.
    """
    if not context.is_file() or context.stat().st_size == 0:
        call.problems.append("context.md missing or empty")
        return
    text = context.read_text(encoding="utf-8", errors="replace")
    call.context_bytes = len(text.encode())
    named: set[str] = set()
    vanished: list[str] = []
    section, reason = "", ""
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
            continue
        if section == "Summary":
            for part in line.split("; "):
                if part.startswith("outlined: "):
                    # the offline summary lists 12 files and then " …"
                    named.update(x.strip().removesuffix("…").strip() for x in part[len("outlined: "):].split(","))
        elif section == "Files not in the map":
            if m := SKIPPED_REASON.match(line):
                reason = m.group("reason")
            elif m := SKIPPED_ITEM.match(line):
                named.add(m.group("path"))
                if reason.startswith("vanished"):
                    vanished.append(m.group("path"))
        elif section == "Repository map" and (m := FILE_LINE.match(line)):
            named.add(m.group("path"))
    named.discard("")
    call.files_named = len(named)
    call.missing_files = sorted(p for p in named if not os.path.lexists(ws.path / p) and p not in (before or ()))
    if call.missing_files:
        call.problems.append(f"names {len(call.missing_files)} file(s) not in the tree: {call.missing_files[:5]}")
    if before is not None:
        call.vanished_noted = len(vanished)
    elif vanished:
        # nothing changes the tree during a call: a file "vanished" means the index was stale
        call.problems.append(f"files reported vanished during the run: {vanished[:5]}")
    if not any(FILE_LINE.match(line) for line in text.splitlines()):
        call.problems.append("the map shows no file")


def _during(soak: Soak, ws: Workspace, call: Call, started: threading.Event, finished: threading.Event,
            record: dict[str, Any]) -> None:
    """Change the workspace while its exploration runs (``--edit-during``)."""
    rng = random.Random(f"during-{ws.name}-{ws.calls}")
    if not started.wait(CALL_TIMEOUT_S) or finished.wait(rng.uniform(0.5, 8.0)):
        record["during"] = "missed: the call ended first"
        return
    if ws.kind == "git":  # switch the checkout under the running exploration
        target = ws.tasks[(ws.calls + 1) % len(ws.tasks)].parent
        git("checkout", "-q", "-f", target, cwd=ws.path)
        record["during"] = {"checkout": {"from": ws.head[:12], "to": target[:12]}}
        ws.head = target
    else:
        record["during"] = {"hand_edits": hand_edits(ws, rng, call.args[-1])}
    record["during_at_s"] = round(time.monotonic() - soak.t0, 2)


def explore(soak: Soak, ws: Workspace, lane: int, edit_during: float) -> None:
    task = ws.tasks[ws.calls % len(ws.tasks)]
    record = change(ws, task, random.Random(f"{ws.name}-{ws.calls}"))
    with soak.lock:
        soak.changes.append(record)
    json_out = ws.calls % 3 == 2  # one call in three asks for --json (an output flag; defaults otherwise)
    # options first, then '--': a goal may start with '-' (a commit subject such as "--help output ...")
    call = Call("explore --json" if json_out else "explore",
                ["explore", *(["--json"] if json_out else []), "--", str(ws.path), task.goal],
                f"lane{lane}", workspace=ws.name, repo=ws.repo)
    cwd = soak.data / f"lane{lane}"
    cwd.mkdir(exist_ok=True)
    before = {_rel(ws, p) for p in ws.files()}
    started_evt, finished_evt = threading.Event(), threading.Event()
    during = None
    if edit_during > 0 and random.Random(f"pick-{ws.name}-{ws.calls}").random() < edit_during:
        during = threading.Thread(target=_during, args=(soak, ws, call, started_evt, finished_evt, record))
        during.start()

    def started(wid: str) -> None:
        call.workflow_id = wid
        with soak.lock:
            soak.running[wid] = ws.name
        started_evt.set()

    out, err = soak.run(call, cwd, on_started=started)
    finished_evt.set()
    started_evt.set()
    if during is not None:
        during.join()
        call.edited_during = record.get("during")
    ws.calls += 1
    with soak.lock:
        if call.workflow_id:
            soak.running.pop(call.workflow_id, None)
            soak.finished.append(call.workflow_id)
    if call.code != 0 and not call.aborted:
        call.problems.append(f"exit {call.code}")
    if call.workflow_id is None:
        call.problems.append("no run started")
        soak.record(call, err)
        return
    report_path = cwd / "navigator-out" / call.workflow_id / "report.json"
    report: dict[str, Any] = {}
    try:
        report = json.loads(report_path.read_text())
        call.stop_reason = report["stop_reason"]
    except (OSError, ValueError, KeyError) as exc:
        call.problems.append(f"report.json unreadable: {exc}")
    if json_out and call.code == 0:
        try:
            if json.loads(out)["stop_reason"] != call.stop_reason:
                call.problems.append("--json stop reason differs from report.json")
        except (ValueError, KeyError):
            call.problems.append("--json output does not parse")
    if call.stop_reason in ABNORMAL_STOPS:
        call.problems.append(f"stop reason {call.stop_reason}: {str(report.get('stop_detail'))[:300]}")
    # a tree changed during the call may be named as it was before the change or after it
    check_context(ws, cwd / "navigator-out" / call.workflow_id / "context.md", call,
                  before if isinstance(call.edited_during, dict) else None)
    soak.record(call, err)


def lane_loop(soak: Soak, lane: int, workspaces: list[Workspace], n: int, edit_during: float) -> None:
    rng = random.Random(lane * 7919 + n)
    order = list(workspaces)
    for i in range(n):
        if soak.done.is_set():
            return
        if i % len(order) == 0:
            rng.shuffle(order)
        explore(soak, order[i % len(order)], lane, edit_during)
        if soak.worker is not None and soak.worker.poll() is not None:
            print(f"the worker exited with {soak.worker.returncode}; stopping", file=sys.stderr)
            soak.done.set()
            return


# -- the reader: status / result / log / ls between and during explorations ---------------


READS = [("status --json", 4), ("status", 1), ("result --json", 3), ("result --wait --json", 2),
         ("log", 2), ("log --json", 1), ("ls", 1), ("ls --json", 1)]


def reader_loop(soak: Soak, seed: int, pause: tuple[float, float]) -> None:
    rng = random.Random(seed)
    kinds, weights = zip(*READS)
    while not soak.done.is_set():
        with soak.lock:
            running, finished = list(soak.running), list(soak.finished[-40:])
        kind = rng.choices(kinds, weights)[0]
        pool = running if kind in ("status --json", "result --wait --json", "status") and running else finished
        if not pool and not kind.startswith("ls"):
            soak.done.wait(1.0)
            continue
        wid = rng.choice(pool) if pool else ""
        verb, *flags = kind.split()
        if kind.startswith("result") and "--wait" not in kind and wid in running:
            wid = rng.choice(finished) if finished else wid
        args = [verb, *flags, "--limit", "10"] if verb == "ls" else [verb, wid, *flags]
        call = Call(kind, args, "reader", workflow_id=wid or None)
        out, err = soak.run(call, soak.data)
        if call.code != 0 and not call.aborted:
            call.problems.append(f"exit {call.code}")
        if "--json" in flags and call.code == 0:
            try:
                payload = json.loads(out)
                if verb == "result":
                    call.stop_reason = payload.get("stop_reason")
            except ValueError:
                call.problems.append("--json output does not parse")
        soak.record(call, err)
        soak.done.wait(rng.uniform(*pause))


# -- figures -----------------------------------------------------------------------------


def summarize(soak: Soak, workspaces: list[Workspace], meta: dict[str, Any]) -> dict[str, Any]:
    calls = soak.calls
    explores = [c for c in calls if c.kind.startswith("explore")]
    failures = [c for c in calls if not c.ok]
    causes: Counter[str] = Counter()
    for c in failures:
        for p in c.problems:
            causes[re.sub(r"[:(].*", "", p).strip()] += 1
    walls = sorted(c.wall_s for c in explores) or [0.0]
    per_repo: dict[str, dict[str, int]] = {}
    for c in explores:
        row = per_repo.setdefault(c.repo or "?", {"explores": 0, "failed": 0, "git": 0, "copy": 0})
        row["explores"] += 1
        row["failed"] += not c.ok
        row["git" if (c.workspace or "").endswith("-git") else "copy"] += 1
    return {
        **meta,
        "calls": len(calls),
        "explores": len(explores),
        "reads": len(calls) - len(explores),
        "failed_calls": len(failures),
        "aborts": sum(c.aborted for c in calls),
        "failures_by_cause": dict(causes),
        "by_kind": {k: dict(Counter(f"exit {c.code}" for c in calls if c.kind == k))
                    for k in sorted({c.kind for c in calls})},
        "stop_reasons": dict(Counter(c.stop_reason for c in explores)),
        "per_repo": per_repo,
        "explore_wall_s": {"median": walls[len(walls) // 2], "p95": walls[int(len(walls) * 0.95) - 1]
                           if len(walls) > 1 else walls[0], "max": walls[-1], "sum": round(sum(walls), 1)},
        "files_named_checked": sum(c.files_named or 0 for c in explores),
        "edited_during": {"calls": sum(isinstance(c.edited_during, dict) for c in explores),
                          "missed": sum(isinstance(c.edited_during, str) for c in explores),
                          "vanished_noted": sum(c.vanished_noted or 0 for c in explores)},
        "calls_with_stderr_notes": sum(bool(c.stderr_notes) for c in calls),
        "stderr_notes": dict(Counter(re.sub(r"nav-\S+|\d+", "#", n)[:160] for c in calls for n in c.stderr_notes)),
        "changes": {"checkouts": sum("checkout" in r for r in soak.changes),
                    "fresh_copies": sum("fresh_copy" in r for r in soak.changes),
                    "hand_edit_rounds": sum("hand_edits" in r for r in soak.changes),
                    "files_deleted": sum(len(r.get("hand_edits", {}).get("deleted", [])) for r in soak.changes),
                    "files_renamed": sum(len(r.get("hand_edits", {}).get("renamed", [])) for r in soak.changes),
                    "files_added": sum(len(r.get("hand_edits", {}).get("added", [])) for r in soak.changes),
                    "dirs_dropped": sum(len(r.get("hand_edits", {}).get("dropped_dir", [])) for r in soak.changes)},
        "workspaces": [{"name": w.name, "repo": w.repo, "kind": w.kind, "lane": w.lane, "calls": w.calls,
                        "mirror": str(w.mirror)} for w in workspaces],
        "worker_rss_kb": {"first": soak.rss_kb[0][1] if soak.rss_kb else None,
                          "max": max((r for _, r in soak.rss_kb), default=None),
                          "last": soak.rss_kb[-1][1] if soak.rss_kb else None, "samples": soak.rss_kb},
        "failures": [asdict(c) for c in failures],
        "change_log": soak.changes,
        "rows": [{k: v for k, v in asdict(c).items() if k not in ("stderr_tail",)} for c in calls],
    }


def markdown(fig: dict[str, Any]) -> str:
    ok = fig["failed_calls"] == 0 and fig["aborts"] == 0
    ch, w = fig["changes"], fig["explore_wall_s"]
    lines = [
        f"# Real-use soak {fig['stamp']} — {'PASS' if ok else 'FAIL'}",
        "",
        f"`{fig['command']}` · revision `{fig['revision']}` · {fig['wall_s']} s wall · load average "
        f"{fig['loadavg_start']} at start, {fig['loadavg_end']} at the end (2-core shared machine)",
        "",
        f"- **calls: {fig['calls']}** ({fig['explores']} `navigator explore`, {fig['reads']} status / result / log / "
        f"ls) · **failed: {fig['failed_calls']}** · **aborts: {fig['aborts']}**",
        f"- failures by cause: {fig['failures_by_cause'] or 'none'}",
        f"- stop reasons: {fig['stop_reasons']}",
        f"- explore wall time: median {w['median']} s · p95 {w['p95']} s · max {w['max']} s",
        f"- files named by the context packs and checked against the tree: {fig['files_named_checked']}",
        f"- explorations whose workspace was also changed while they ran: {fig['edited_during']['calls']} "
        f"({fig['edited_during']['vanished_noted']} files noted as vanished during the run; "
        f"{fig['edited_during']['missed']} calls ended before the change) · passing calls with warning-like "
        f"stderr lines: {fig['calls_with_stderr_notes']}",
        f"- changes between calls: {ch['checkouts']} checkouts in place, {ch['fresh_copies']} fresh copies, "
        f"{ch['hand_edit_rounds']} rounds of hand edits ({ch['files_deleted']} files deleted, {ch['files_renamed']} "
        f"renamed or moved, {ch['files_added']} added, {ch['dirs_dropped']} folders removed)",
        f"- one `navigator server`, one `navigator worker` (exit codes at the end: {fig['stop_codes']}); worker RSS "
        f"{fig['worker_rss_kb']['first']} → max {fig['worker_rss_kb']['max']} kB",
        "",
        "| repo | explores | failed | git clone | copy outside git |",
        "|---|---:|---:|---:|---:|",
        *[f"| {r} | {v['explores']} | {v['failed']} | {v['git']} | {v['copy']} |" for r, v in fig["per_repo"].items()],
        "",
        "| command | exit codes |",
        "|---|---|",
        *[f"| `{k}` | {v} |" for k, v in fig["by_kind"].items()],
    ]
    for f in fig["failures"][:30]:
        lines += ["", f"- FAILED `{shlex.join(f['args'])}` ({f['workspace'] or f['lane']}): {f['problems']}"]
    return "\n".join(lines) + "\n"


def prepare(data: Path, names: list[str], explores: int, mirror_root: Path, rng: random.Random) -> list[Workspace]:
    per_ws = -(-explores // (2 * len(names)))
    workspaces = []
    for name in names:
        mirror = mirror_root / MIRRORS[name] / "repo"
        tasks = mine_tasks(name, mirror, 2 * per_ws, rng)
        clone = data / "repos" / f"{name}-git"
        if not clone.exists():
            git("clone", "-q", "--no-checkout", str(mirror), str(clone))
        workspaces.append(Workspace(f"{name}-git", name, "git", clone, mirror, tasks[:per_ws]))
        workspaces.append(Workspace(f"{name}-copy", name, "copy", data / "repos" / f"{name}-copy", mirror,
                                    tasks[per_ws:]))
    return workspaces


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--explores", type=int, default=300)
    parser.add_argument("--repos", default=DEFAULT_REPOS, help=f"comma-separated, of {sorted(MIRRORS)}")
    parser.add_argument("--lanes", type=int, default=2, help="explorations at once (on disjoint workspaces)")
    parser.add_argument("--read-pause", type=float, nargs=2, default=(1.0, 4.0), help="seconds between reads")
    parser.add_argument("--edit-during", type=float, default=0.0,
                        help="share of explorations whose workspace is also changed WHILE they run (0..1)")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--mirror-root", type=Path, default=Path("/work/.mirror"))
    parser.add_argument("--data-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results")
    args = parser.parse_args(argv)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    data = (args.data_dir or Path(os.environ.get("BENCH_DATA", "/work/bench-data")) / f"soak-realuse-{stamp}")
    data = data.resolve()
    if ROOT in data.parents:
        raise SystemExit("--data-dir must be outside the repository")
    data.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    names = [n.strip() for n in args.repos.split(",") if n.strip()]
    workspaces = prepare(data, names, args.explores, args.mirror_root, rng)
    lanes = max(1, args.lanes)
    for i, ws in enumerate(workspaces):
        ws.lane = (i + i // 2) % lanes  # a repo's clone and copy in different lanes, kinds mixed per lane
    soak = Soak(data, args.seed)
    revision = git("describe", "--always", "--dirty", cwd=ROOT).strip()
    load_start = [round(x, 2) for x in os.getloadavg()]
    print(f"data dir {data}; {len(workspaces)} workspaces; starting server and worker", file=sys.stderr)
    soak.start()
    t0 = time.monotonic()
    reader = threading.Thread(target=reader_loop, args=(soak, args.seed, tuple(args.read_pause)), daemon=True)
    try:
        reader.start()
        with ThreadPoolExecutor(max_workers=lanes) as pool:
            share = [args.explores // lanes + (i < args.explores % lanes) for i in range(lanes)]
            futures = [pool.submit(lane_loop, soak, i, [w for w in workspaces if w.lane == i], share[i],
                                   args.edit_during)
                       for i in range(lanes)]
            for fut in futures:
                fut.result()
        soak.done.set()
        reader.join(timeout=CALL_TIMEOUT_S)
    finally:
        soak.done.set()
        stop_codes = soak.stop()
    meta = {"stamp": stamp, "command": shlex.join([Path(sys.executable).name, "bench/real_use_soak.py",
                                                   *(argv if argv is not None else sys.argv[1:])]),
            "revision": revision, "data_dir": str(data), "wall_s": round(time.monotonic() - t0, 1),
            "loadavg_start": load_start, "loadavg_end": [round(x, 2) for x in os.getloadavg()],
            "cpus": os.cpu_count(), "stop_codes": stop_codes, "config": {k: str(v) for k, v in vars(args).items()},
            "tasks": {w.name: [asdict(t) for t in w.tasks[: max(w.calls, 1)]] for w in workspaces}}
    fig = summarize(soak, workspaces, meta)
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"real-use-soak-{stamp}"
    stem.with_suffix(".json").write_text(json.dumps(fig, indent=1, default=str) + "\n")
    stem.with_suffix(".md").write_text(markdown(fig))
    print(markdown(fig))
    print(f"wrote {stem}.json and .md", file=sys.stderr)
    return 0 if fig["failed_calls"] == 0 and fig["aborts"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
