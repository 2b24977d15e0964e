"""Running one fuzzed call and checking it: in a forked copy of a warm interpreter, or as a real process.

Two ways to run ``navigator ARGS`` (or ``repo-map ARGS``), both through the console script's own
entry point (``durable_navigator.cli.app:main``, ``durable_navigator.repomap.cli:main``), so the
exit code is what ``cli/exits.py`` hands to ``os._exit``:

* **in-process** (``mode="fork"``): a *zygote* — ``python bench/fuzz_exec.py --zygote``, one per
  parallel lane — imports the CLI once, single-threaded (no Temporal client, no runtime threads
  yet), then per request forks a child that sets ``sys.argv``, the environment, the working
  directory and fds 0/1/2 (files) and calls ``main()``, which ends the child with ``os._exit``.
  The zygote waits for it (killing its process group after the timeout) and answers with the exit
  code. This skips only the interpreter start and the imports a real process pays each time;
* **subprocess** (``mode="subprocess"``): the installed console script, ``.venv/bin/navigator``.

:func:`check` applies the per-call rules to either.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
ENTRY = {"navigator": ("durable_navigator.cli.app", "main"), "repo-map": ("durable_navigator.repomap.cli", "main")}
#: modules the zygote imports before it forks (the command modules a call would import anyway)
PRELOAD = ["durable_navigator.cli.app", "durable_navigator.cli.run_commands", "durable_navigator.cli.signatures",
           "durable_navigator.cli.explore", "durable_navigator.cli.ask", "durable_navigator.cli.investigate",
           "durable_navigator.cli.reads", "durable_navigator.cli.signals", "durable_navigator.cli.mapcmd",
           "durable_navigator.cli.batch", "durable_navigator.cli.batch_run", "durable_navigator.cli.server",
           "durable_navigator.cli.server_run", "durable_navigator.cli.config_cmd", "durable_navigator.cli.config_run",
           "durable_navigator.cli.serve", "durable_navigator.cli.mcpserver.command", "durable_navigator.repomap.cli",
           "durable_navigator.repomap.cli_app", "durable_navigator.repomap.cli_generate"]
TABLE = frozenset({0, 1, 2, 3, 4, 130})
#: arguments after which a call's expected exit code no longer holds (fuzz_calls' noise)
NOISE = frozenset({"--help", "--version", "--nope", "-z", "--json=1", "--JSON", "--budget", "--token", "--", "-",
                   "--help=1", "-hh", "--max-iter=2"})
_TB = re.compile(r"Traceback \(most recent call last\)|Fatal Python error|Segmentation fault|PyGILState_Release")
#: lines of click's usage-error frame around the one error line
_USAGE = re.compile(r"^(Usage: |Try '.*--help' for help\.$|\s*$)")
#: how a call killed past its bound is marked on its stderr: busy or blocked, and its CPU use
STUCK_MARK = "[fuzz] killed past its bound, "


@dataclass
class Call:
    """One generated call and what it needs."""

    index: int
    surface: str  # "navigator" | "repo-map"
    command: str  # "explore", "batch run", "repo-map generate", ...
    argv: list[str]
    timeout: float = 60.0
    #: exit codes a correct CLI gives for this call (None: any code of the table)
    expect: frozenset[int] | None = None
    #: the run id this call starts when it is accepted (``--id``), and its kind
    starts: str | None = None
    out_dir: str | None = None
    stdin: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    #: why this call exists, for the report (the edge it probes)
    probe: str = ""
    mode: str = "fork"


@dataclass
class Outcome:
    """What a call did and which rules it broke."""

    index: int
    surface: str
    command: str
    mode: str
    code: int
    seconds: float
    problems: list[str]
    stdout_tail: str = ""
    stderr_tail: str = ""


# ---- the zygote (a separate process; single-threaded)

def _child(req: dict[str, Any], out_path: str, err_path: str) -> None:
    """In the forked child: become the console script and run it (never returns)."""
    try:
        os.setsid()
        os.chdir(req["cwd"])
        os.environ.clear()
        os.environ.update(req["env"])
        fd = os.open(req.get("stdin") or os.devnull, os.O_RDONLY)
        os.dup2(fd, 0)
        for target, path in ((1, out_path), (2, err_path)):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd, target)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the command reads it as its stdin
        module, name = ENTRY[req["surface"]]
        sys.argv = [req["surface"], *req["argv"]]
        main = getattr(sys.modules[module], name)
        main()
        code = 0
    except SystemExit as exc:  # repo-map's typer path leaves this way; the interpreter would exit with it
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        if not isinstance(exc.code, (int, type(None))):
            print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - what the interpreter does with an uncaught exception
        import traceback

        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _serve_one(req: dict[str, Any]) -> dict[str, Any]:
    out_path, err_path = req["out"], req["err"]
    sys.stdout.flush()
    sys.stderr.flush()
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        _child(req, out_path, err_path)
    deadline = started + req["timeout"]
    code: int | None = None
    while code is None:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            break
        if time.monotonic() > deadline:
            state = stuck_state(pid)
            with_group_killed(pid)
            _, status = os.waitpid(pid, 0)
            return {"code": -999, "seconds": time.monotonic() - started, "stuck": state}
        time.sleep(0.005)
    return {"code": code, "seconds": time.monotonic() - started}


def _group_cpu_s(pgid: int) -> float:
    """CPU seconds used so far by the processes of group ``pgid`` (and their reaped children); Linux /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[2]) == pgid:
            total += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return total / tick


def stuck_state(pgid: int, window_s: float = 2.0) -> str:
    """Whether a call past its bound is *busy* (burning CPU: slow) or *blocked* (idle: waiting on something
    that never comes, like an open() of a FIFO) — watched for ``window_s`` before it is killed."""
    if not os.path.isdir("/proc"):
        return "unknown"
    before = _group_cpu_s(pgid)
    time.sleep(window_s)
    after = _group_cpu_s(pgid)
    kind = "busy" if after - before > 0.1 * window_s else "blocked"
    return f"{kind}: {after:.0f} s CPU in all, {after - before:.1f} s in the last {window_s:.0f} s"


def with_group_killed(pid: int) -> None:
    """SIGKILL the process group ``pid`` leads (our own child's), ignoring a group already gone."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def zygote_main() -> None:
    """Import the CLI, then answer one JSON request per stdin line with one JSON line on stdout."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    import importlib

    for module in PRELOAD:
        importlib.import_module(module)
    assert threading.active_count() == 1, "the zygote must not fork with threads running"
    proto = os.fdopen(os.dup(1), "w")
    print(json.dumps({"ready": True}), file=proto, flush=True)
    for line in sys.stdin.buffer:
        req = json.loads(line)
        print(json.dumps(_serve_one(req)), file=proto, flush=True)


class Zygote:
    """One lane of in-process calls (a zygote process, used by one thread at a time)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, __file__, "--zygote"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, text=True, start_new_session=True)
        assert self.proc.stdout is not None
        ready = self.proc.stdout.readline()
        if not ready:
            raise RuntimeError("the fuzz zygote did not start")
        self.lock = threading.Lock()
        #: busy / blocked, of the last call that outlived its bound
        self.last_stuck = ""

    def run(self, call: Call, env: dict[str, str], cwd: str, out: str, err: str) -> tuple[int, float]:
        req = {"surface": call.surface, "argv": call.argv, "env": env, "cwd": cwd, "stdin": call.stdin,
               "out": out, "err": err, "timeout": call.timeout}
        with self.lock:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
            answer = json.loads(self.proc.stdout.readline())
        self.last_stuck = answer.get("stuck", "")
        return answer["code"], answer["seconds"]

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            with_group_killed(self.proc.pid)
            self.proc.wait()


def run_subprocess(call: Call, env: dict[str, str], cwd: str) -> tuple[int, float, bytes, bytes]:
    """The installed console script as a real process; -999 after the timeout (its group killed, and
    whether it was busy or blocked appended to its stderr)."""
    started = time.monotonic()
    argv = [os.fsencode(str(BIN / call.surface)), *(os.fsencode(a) for a in call.argv)]
    stdin = open(call.stdin or os.devnull, "rb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=call.timeout)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        state = stuck_state(proc.pid)
        with_group_killed(proc.pid)
        out, err = proc.communicate()
        err += f"\n{STUCK_MARK}{state}\n".encode()
        code = -999
    finally:
        stdin.close()
    return code, time.monotonic() - started, out, err


def execute(call: Call, env: dict[str, str], cwd: str, zygote: Zygote | None) -> tuple[int, float, str, str]:
    """Run ``call`` the way its mode says; (code, seconds, stdout, stderr)."""
    if call.mode == "fork" and zygote is not None:
        with tempfile.TemporaryDirectory(prefix="fz-io-") as io:
            out, err = os.path.join(io, "out"), os.path.join(io, "err")
            code, seconds = zygote.run(call, env, cwd, out, err)
            err_text = _text(Path(err).read_bytes())
            if code == -999:
                err_text += f"\n{STUCK_MARK}{zygote.last_stuck}\n"
            return code, seconds, _text(Path(out).read_bytes()), err_text
    code, seconds, out_b, err_b = run_subprocess(call, env, cwd)
    return code, seconds, _text(out_b), _text(err_b)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


# ---- the rules

def error_lines(stderr: str) -> list[str]:
    """The lines of an exit-2 stderr that are neither click's usage frame nor a configuration bullet."""
    return [line for line in stderr.splitlines() if not _USAGE.match(line) and not line.startswith("  - ")]


def check(call: Call, code: int, out: str, err: str) -> list[str]:
    """The rules ``call`` broke (empty: none). Each problem starts with its category."""
    problems: list[str] = []
    if code == -999:
        # busy (slow: a tree too big for the bound) or blocked (a hang): the stderr mark says which
        state = err.rsplit(STUCK_MARK, 1)[1].split(":", 1)[0].strip() if STUCK_MARK in err else "unknown"
        problems.append(f"stuck: no exit within {call.timeout:.0f} s ({state})")
    elif code not in TABLE:
        problems.append(f"bad-exit: {code} is not in README's table")
    if _TB.search(out) or _TB.search(err):
        problems.append("traceback: " + _first_tb_line(out + "\n" + err))
    if code == 2 and not _is_help(err):
        lines = error_lines(err)
        if len(lines) != 1:
            problems.append(f"multi-line-error: {len(lines)} error lines on stderr")
    # --help / --version, an unknown option or a doubled --json decide the code before the probed value does
    noisy = (any(a in NOISE for a in call.argv) or call.argv.count("--json") > 1
             or "--config" in call.argv or "--log-level" in call.argv)  # a fuzzed config / level decides first
    if call.expect is not None and code in TABLE and code not in call.expect and not noisy:
        problems.append(f"unexpected-exit: {code}, expected {sorted(call.expect)} ({call.probe})")
    if code == 1 and call.surface == "repo-map":
        problems.append("exit-1: repo-map exits 1 only on a bug")
    if code == 0 and "--json" in call.argv and not {"--help", "--version"} & set(call.argv) and not _json_ok(out):
        problems.append("bad-json: --json output does not parse")
    if call.out_dir:
        problems.extend(_out_problems(Path(call.out_dir), code))
    return problems


def _is_help(err: str) -> bool:
    """A group called without a command prints its help (click: exit 2), which is no error line."""
    return err.startswith("Usage: ") and "Error" not in err and ("Commands:" in err or "Options:" in err)


def _first_tb_line(text: str) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        if _TB.search(line):
            tail = [ln for ln in lines[i:] if ln and not ln.startswith(" ")]
            return (tail[-1] if tail else line)[:300]
    return ""


def _json_ok(out: str) -> bool:
    text = out.strip()
    if not text:
        return False
    try:
        json.loads(text)
        return True
    except json.JSONDecodeError:
        try:
            for line in text.splitlines():
                json.loads(line)
            return True
        except json.JSONDecodeError:
            return False


def _out_problems(out: Path, code: int) -> list[str]:
    """Nothing written on a refusal; every run folder complete otherwise."""
    if not out.is_dir():
        return []
    entries = list(out.iterdir())
    if code == 2 and entries:
        return [f"half-written: exit 2 left {len(entries)} entr(y/ies) in --out: {sorted(e.name for e in entries)[:3]}"]
    problems = []
    for run in entries:
        if not run.is_dir():
            continue
        names = {p.name for p in run.iterdir()}
        partial = [n for n in names if n.endswith((".tmp", ".part", "~"))]
        if partial:
            problems.append(f"half-written: {run.name} holds {partial}")
        if "report.json" in names:
            try:
                json.loads((run / "report.json").read_text())
            except (json.JSONDecodeError, UnicodeDecodeError):
                problems.append(f"half-written: {run.name}/report.json does not parse")
        elif names and code == 0:
            problems.append(f"half-written: {run.name} has {sorted(names)} but no report.json")
    return problems


if __name__ == "__main__":
    if sys.argv[1:] == ["--zygote"]:
        zygote_main()
