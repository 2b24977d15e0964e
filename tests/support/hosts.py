"""Separate "hosts" on one machine: a worker and a CLI that share nothing but Temporal and the object store.

Each :class:`Host` has its own HOME, XDG config/cache/state/data directories, working directory
and ``navigator.yaml`` (the same ``artifacts:`` bucket, the S3 keys by variable name), so a hidden
shared-disk assumption — a file one process writes and the other reads, the default local artifact
directory — shows up as a missing file instead of passing by accident.
"""

from __future__ import annotations

import os
import signal
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.e2e import NAVIGATOR
from tests.support.seaweed import ACCESS_KEY, BUCKET, SECRET_KEY, SeaweedS3

__all__ = ["Host", "KEY_ENV", "host_pair"]

#: the variables the hosts' navigator.yaml names for the S3 keys (their values: the test server's)
KEY_ENV = {"NAV_S3_ACCESS": ACCESS_KEY, "NAV_S3_SECRET": SECRET_KEY}


@dataclass
class Host:
    """One simulated host: a directory tree of its own and an environment pointing only into it."""

    root: Path
    temporal_address: str
    task_queue: str

    @classmethod
    def create(cls, root: Path, s3: SeaweedS3, temporal_address: str, task_queue: str, prefix: str) -> Host:
        """A host whose navigator.yaml names ``s3``'s bucket under ``prefix``."""
        for sub in ("home", "config", "cache", "state", "data", "cwd"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        (root / "navigator.yaml").write_text(
            f"artifacts:\n  url: s3://{BUCKET}/{prefix}\n  endpoint_url: {s3.endpoint_url}\n"
            "  access_key_env: NAV_S3_ACCESS\n  secret_key_env: NAV_S3_SECRET\n")
        return cls(root, temporal_address, task_queue)

    def env(self, **extra: str) -> dict[str, str]:
        """This host's process environment (no TEMPORAL_/NAVIGATOR_/model keys of the caller's)."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("TEMPORAL_", "NAVIGATOR_", "GEMINI_", "GOOGLE_", "OPENAI_", "OPENROUTER_",
                                    "AWS_", "XDG_"))}
        env.update(HOME=str(self.root / "home"), XDG_CONFIG_HOME=str(self.root / "config"),
                   XDG_CACHE_HOME=str(self.root / "cache"), XDG_STATE_HOME=str(self.root / "state"),
                   XDG_DATA_HOME=str(self.root / "data"), NAVIGATOR_CONFIG=str(self.root / "navigator.yaml"),
                   TEMPORAL_ADDRESS=self.temporal_address, NAVIGATOR_TASK_QUEUE=self.task_queue, COLUMNS="200",
                   **KEY_ENV)
        env.update(extra)
        return env

    def run(self, *args: str, timeout: float = 240, **extra: str) -> subprocess.CompletedProcess[str]:
        """``navigator ARGS`` on this host, to completion."""
        return subprocess.run([str(NAVIGATOR), *args], cwd=self.root / "cwd", env=self.env(**extra),
                              capture_output=True, text=True, timeout=timeout)

    def files(self) -> list[Path]:
        """Every file under this host's tree but its config and logs (what its processes wrote)."""
        return sorted(p for p in self.root.rglob("*") if p.is_file() and p.name != "navigator.yaml"
                      and p.suffix != ".log")

    def worker(self, **extra: str) -> AbstractContextManager[subprocess.Popen[str]]:
        """``navigator worker`` on this host; SIGTERM (ours, by pid) at the end; log in ``root/worker.log``."""
        return navigator_worker(self.env(**extra), self.root / "cwd", self.root / "worker.log")

    def log(self) -> str:
        """The worker's log so far."""
        path = self.root / "worker.log"
        return path.read_text(errors="replace") if path.exists() else ""


@contextmanager
def navigator_worker(env: dict[str, str], cwd: Path, log_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A ``navigator worker`` process with ``env`` in ``cwd``, its output in ``log_path``; SIGTERM (ours,
    by pid) at the end, SIGKILL after a minute."""
    with log_path.open("w") as log:
        proc = subprocess.Popen([str(NAVIGATOR), "worker"], cwd=cwd, env=env, stdout=log,
                                stderr=subprocess.STDOUT, text=True)
        try:
            yield proc
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def host_pair(tmp_path: Path, s3: SeaweedS3, temporal_address: str, task_queue: str, label: str,
              second: str = "cli-host") -> tuple[str, Host, Host]:
    """A fresh bucket prefix (``label-<hex>``), a worker host and a second host (a CLI, an agent)
    sharing only Temporal and that prefix of the bucket."""
    prefix = f"{label}-{uuid.uuid4().hex[:8]}"
    return (prefix, Host.create(tmp_path / "worker-host", s3, temporal_address, task_queue, prefix),
            Host.create(tmp_path / second, s3, temporal_address, task_queue, prefix))
