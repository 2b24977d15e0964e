"""The parts of the fleet soak (``bench/fleet_soak.py``): network namespaces, host workers, repositories.

A *host* is a long-running ``navigator worker`` with its own HOME, XDG directories and cache
(:class:`tests.support.hosts.Host`), optionally inside a network namespace of its own joined to the
root namespace by a veth pair: it then reaches Temporal and the object store only through their
veth address, never through a loopback it shares with them. A *client* is a HOME of its own in the
root namespace running the installed ``navigator`` CLI.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

from tests.support.e2e import NAVIGATOR
from tests.support.hosts import Host
from tests.support.netns import Netns

__all__ = ["FleetHost", "Repo", "make_repos", "POLLING_WITHIN_S"]

#: a cold worker on a loaded 2-core machine
POLLING_WITHIN_S = 90.0
#: fixed author and dates: the same commit (and so the same pack) in every soak
GIT_ENV = {"GIT_AUTHOR_NAME": "soak", "GIT_AUTHOR_EMAIL": "soak@example.invalid", "GIT_COMMITTER_NAME": "soak",
           "GIT_COMMITTER_EMAIL": "soak@example.invalid", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}


@dataclass
class FleetHost:
    """A worker host: its :class:`Host` tree, its namespace (or none) and its current process."""

    host: Host
    netns: Netns | None = None
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    kills: int = 0
    log_offset: int = field(default=0)

    @classmethod
    def create(cls, root: Path, endpoint_url: str, temporal_address: str, task_queue: str, prefix: str,
               netns: Netns | None) -> FleetHost:
        """A host whose config names the store at ``endpoint_url`` and Temporal at ``temporal_address``."""
        store = SimpleNamespace(endpoint_url=endpoint_url)
        return cls(Host.create(root, store, temporal_address, task_queue, prefix), netns)  # type: ignore[arg-type]

    def start(self) -> None:
        """Start ``navigator worker`` (in the namespace, if any) and wait until it polls."""
        cmd = [str(NAVIGATOR), "worker"]
        if self.netns is not None:
            cmd = ["ip", "netns", "exec", self.netns.name, *cmd]
        log_path = self.host.root / "worker.log"
        self.log_offset = log_path.stat().st_size if log_path.exists() else 0
        with log_path.open("ab") as log:
            # `ip netns exec` execs the command: the pid is the worker's, a SIGKILL reaches it
            self.proc = subprocess.Popen(cmd, cwd=self.host.root / "cwd", env=self.host.env(), stdout=log,
                                         stderr=subprocess.STDOUT)
        self.starts += 1
        deadline = time.monotonic() + POLLING_WITHIN_S
        while "worker polling" not in self.host.log()[self.log_offset:]:
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"host {self.host.root.name} did not start: {self.host.log()[-2000:]}")
            time.sleep(0.3)

    def kill(self) -> None:
        """SIGKILL the worker (ours, by pid)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.kills += 1
        self.proc = None

    def stop(self) -> None:
        """SIGTERM the worker (ours), SIGKILL after a minute."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc = None
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.proc = None


@dataclass(frozen=True)
class Repo:
    """One soak repository: a committed work tree (path and snapshot sources) and its bare clone (git URL)."""

    name: str
    tree: Path
    url: str


def make_repos(sources: list[Path], work: Path) -> list[Repo]:
    """Each source folder copied to ``work/trees/<name>``, committed on ``main`` with fixed dates, and cloned
    bare to ``work/git/<name>.git`` (served as ``file://``: no network)."""
    repos = []
    for src in sources:
        tree, bare = work / "trees" / src.name, work / "git" / f"{src.name}.git"
        shutil.copytree(src, tree)
        for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", f"{src.name} for the soak"]):
            subprocess.run(["git", *args], cwd=tree, env={**GIT_ENV, "PATH": "/usr/bin:/bin",
                                                         "HOME": str(work)}, check=True, capture_output=True)
        bare.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "-q", "--bare", str(tree), str(bare)], check=True, capture_output=True)
        repos.append(Repo(src.name, tree, f"file://{bare}"))
    return repos
