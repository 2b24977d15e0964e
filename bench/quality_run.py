"""Running the product's default path for the quality benchmark: one server, one worker, many CLI calls.

``Stack`` starts ONE ``navigator server`` (the embedded Temporal dev server, on
free ports, with its SQLite file in a private state dir) and ONE long-running
``navigator worker``, both with ``XDG_*`` / ``NAVIGATOR_CACHE_DIR`` pointing
into that state dir, so nothing touches the user's config, state, cache or
artifacts. Every exploration is then a separate ``navigator explore REPO GOAL
--tokens B --json`` process with ``TEMPORAL_ADDRESS`` set to that server (so
``explore`` runs no in-process worker: the long-running worker serves it) and
otherwise default flags (offline model, planning auto, default iteration cap and
USD budget; no ``navigator.yaml`` is found). The engine alone is ``repo-map
generate REPO --goal GOAL --budget B`` with the same cache dir.

A call that exits non-zero, times out or prints no result is recorded as such
(exit code, stderr tail); it is never retried. The one exception is a call
whose worker exited under it (``CallResult.worker_died``): the worker is
restarted, the incident (with the worker's last log lines) is recorded, and the
runner re-runs that task x budget at the end of the run, since what failed was
the environment, not the call.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from durable_navigator.workers.devserver import free_port

__all__ = ["Stack", "CallResult", "free_port", "bin_path"]

EXPLORE_TIMEOUT_S = 600.0
ENGINE_TIMEOUT_S = 600.0
_READY_TIMEOUT_S = 120.0
_WATCH_EVERY_S = 0.2
_TAIL_CHARS = 2000



def bin_path(name: str) -> str:
    """An installed console script of this interpreter's environment (``navigator``, ``repo-map``)."""
    beside = Path(sys.executable).parent / name
    if not beside.is_file():
        raise SystemExit(f"{beside} not found; install the project into this venv (pip install -e '.[test,bench]')")
    return str(beside)


@dataclass
class CallResult:
    """One CLI call: what a script calling the product sees."""

    argv: list[str]
    exit_code: int | None  # None: killed at the timeout
    seconds: float
    stdout: str
    stderr: str
    load1: float
    #: the long-running worker exited while this call waited on it (an environment failure)
    worker_died: bool = False

    @property
    def ok(self) -> bool:
        """Exit code 0."""
        return self.exit_code == 0

    @property
    def stderr_tail(self) -> str:
        """The end of stderr, for the record of a failed call."""
        return self.stderr[-_TAIL_CHARS:]


def _run(argv: list[str], env: dict[str, str], cwd: Path, timeout: float,
         alive: Callable[[], bool] | None = None) -> CallResult:
    """Run one CLI process; kill it at ``timeout`` or as soon as ``alive()`` turns false (the worker
    serving it died: an explore would otherwise wait for a worker until the timeout)."""
    t0 = time.perf_counter()
    note = ""
    with tempfile.TemporaryFile() as out_f, tempfile.TemporaryFile() as err_f:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdout=out_f, stderr=err_f)
        try:
            while True:
                try:
                    proc.wait(timeout=_WATCH_EVERY_S)
                    break
                except subprocess.TimeoutExpired:
                    if time.perf_counter() - t0 > timeout:
                        note = "\n[bench] killed at the timeout"
                    elif alive is not None and not alive():
                        note = "\n[bench] killed: the worker serving this call exited"
                    else:
                        continue
                    break
        finally:  # at the timeout, a dead worker, or the benchmark itself being stopped
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        seconds = time.perf_counter() - t0
        out_f.seek(0)
        err_f.seek(0)
        out, err = out_f.read(), err_f.read() + note.encode()
    code = None if note else proc.returncode
    return CallResult(argv, code, round(seconds, 3), out.decode("utf-8", "replace"),
                      err.decode("utf-8", "replace"), round(os.getloadavg()[0], 2),
                      worker_died="worker serving" in note)


@dataclass
class Stack:
    """The private server + worker every call of one benchmark run goes through."""

    state: Path
    incidents: list[dict] = field(default_factory=list)
    _server: subprocess.Popen | None = None
    _worker: subprocess.Popen | None = None
    address: str = ""
    worker_restarts: int = 0

    @property
    def cache_dir(self) -> Path:
        """The engine's index cache (shared by the worker, ``repo-map`` and the baselines)."""
        return self.state / "cache" / "repomap"

    def env(self) -> dict[str, str]:
        """Environment of every product process: private dirs, our server, no credentials."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("TEMPORAL_", "NAVIGATOR_", "GEMINI_", "GOOGLE_", "XDG_"))}
        env.update({
            "XDG_CONFIG_HOME": str(self.state / "config"),
            "XDG_STATE_HOME": str(self.state / "state"),
            "XDG_CACHE_HOME": str(self.state / "cache"),
            "XDG_DATA_HOME": str(self.state / "data"),
            "NAVIGATOR_CACHE_DIR": str(self.state / "cache"),
        })
        if self.address:
            env["TEMPORAL_ADDRESS"] = self.address
        return env

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> None:
        """Start the server (wait for its JSON line) and the worker (wait for 'worker polling')."""
        self.state.mkdir(parents=True, exist_ok=True)
        port, ui_port = free_port(), free_port()
        argv = [bin_path("navigator"), "server", "--port", str(port), "--ui-port", str(ui_port),
                "--db", str(self.state / "temporal.db"), "--headless", "--json"]
        self._server = subprocess.Popen(argv, env=self.env(), cwd=self.state, stdout=subprocess.PIPE,
                                        stderr=open(self.state / "server.stderr", "ab"), start_new_session=True)
        info = self._read_json(self._server)
        self.address = info["grpc"]
        self._start_worker()

    def _read_json(self, proc: subprocess.Popen) -> dict:
        buf = ""
        deadline = time.monotonic() + _READY_TIMEOUT_S
        assert proc.stdout is not None
        while time.monotonic() < deadline:
            line = proc.stdout.readline().decode()
            if not line:
                raise SystemExit(f"navigator server exited ({proc.wait()}); see {self.state / 'server.stderr'}")
            buf += line
            try:
                return json.loads(buf)
            except json.JSONDecodeError:
                continue
        raise SystemExit("navigator server did not print its addresses in time")

    def _start_worker(self) -> None:
        log = open(self.state / "worker.log", "ab")
        self._worker = subprocess.Popen([bin_path("navigator"), "worker"], env=self.env(), cwd=self.state,
                                        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + _READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._worker.poll() is not None:
                raise SystemExit(f"navigator worker exited ({self._worker.returncode}); see {self.state / 'worker.log'}")
            if b"worker polling" in (self.state / "worker.log").read_bytes():
                return
            time.sleep(0.2)
        raise SystemExit("navigator worker did not start polling in time")

    def check(self, where: str) -> None:
        """Record (and recover from) a server or worker that died since the last call."""
        if self._server is not None and self._server.poll() is not None:
            self.incidents.append({"what": "server exited", "code": self._server.returncode, "where": where})
            raise SystemExit(f"navigator server exited ({self._server.returncode}) before {where}; run aborted")
        if self._worker is not None and self._worker.poll() is not None:
            tail = (self.state / "worker.log").read_bytes()[-_TAIL_CHARS:].decode("utf-8", "replace")
            # 'shutting down' is what the worker logs on SIGTERM/SIGINT: someone else stopped it
            cause = "stopped by a signal from outside the benchmark" if "shutting down" in tail else "crashed"
            self.incidents.append({"what": f"worker exited ({cause})", "code": self._worker.returncode,
                                   "where": where, "time": time.strftime("%H:%M:%S"), "log_tail": tail})
            self.worker_restarts += 1
            self._start_worker()

    def worker_rss_mb(self) -> float | None:
        """Resident memory of the worker process (it keeps one engine per repository it served)."""
        if self._worker is None:
            return None
        try:
            for line in Path(f"/proc/{self._worker.pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
        except OSError:
            return None
        return None

    def stop(self) -> None:
        """SIGTERM the worker (graceful), SIGINT the server (it closes its SQLite file)."""
        for proc, sig in ((self._worker, signal.SIGTERM), (self._server, signal.SIGINT)):
            if proc is None or proc.poll() is not None:
                continue
            proc.send_signal(sig)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.incidents.append({"what": "did not stop in 30 s; killed", "pid": proc.pid})
                proc.kill()
                proc.wait()

    # ---------------------------------------------------------------- calls
    def explore(self, root: Path, goal: str, budget: int) -> CallResult:
        """``navigator explore ROOT GOAL --tokens B --json`` against the running worker."""
        # `--` ends the options: a goal may start with "-" (a commit message's bullet)
        argv = [bin_path("navigator"), "explore", "--tokens", str(budget), "--json", "--", str(root), goal]
        worker = self._worker
        return _run(argv, self.env(), self.state, EXPLORE_TIMEOUT_S,
                    alive=lambda: worker is not None and worker.poll() is None)

    def terminate(self, workflow_id: str) -> int:
        """Terminate a run whose ``explore`` was killed, so it does not compete with later calls."""
        argv = [bin_path("temporal"), "workflow", "terminate", "--workflow-id", workflow_id,
                "--address", self.address, "--reason", "bench: its explore was killed (worker exited)"]
        return subprocess.run(argv, env=self.env(), cwd=self.state, capture_output=True).returncode

    def engine(self, root: Path, goal: str, budget: int) -> CallResult:
        """``repo-map generate ROOT --goal GOAL --budget B`` (the map an LLM navigator sees first)."""
        argv = [bin_path("repo-map"), "generate", str(root), "--goal", goal, "--budget", str(budget),
                "--cache-dir", str(self.cache_dir)]
        return _run(argv, self.env(), self.state, ENGINE_TIMEOUT_S)

    def index(self, root: Path) -> CallResult:
        """``repo-map stats ROOT``: indexes the checkout once (cold), so later calls time warm runs."""
        argv = [bin_path("repo-map"), "stats", str(root), "--cache-dir", str(self.cache_dir)]
        return _run(argv, self.env(), self.state, ENGINE_TIMEOUT_S)
