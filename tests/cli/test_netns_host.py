"""Issue #31: a worker host in a network namespace of its own serves a run asked from the root namespace.

The worker (``navigator worker`` under ``ip netns exec``) shares no loopback with Temporal or the
S3 server: it reaches them only through its veth address (checked — a connection to the servers'
127.0.0.1 ports from inside the namespace is refused), and it has its own HOME/XDG/cache
(:class:`tests.support.hosts.Host`). The CLI on the root namespace explores a path (sent as a
snapshot) and gets the pack; the history shows the namespaced worker ran the scan. Needs root and
iproute2; skipped otherwise, with the reason.
"""

from __future__ import annotations

import json
import os
import random
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client

from durable_navigator.workers.converter import DATA_CONVERTER
from durable_navigator.workers.devserver import DevServer, DevServerConfig, free_port
from tests.support.cli import FIXTURE_REPO
from tests.support.e2e import NAVIGATOR
from tests.support.hosts import Host
from tests.support.netns import Netns, netns_usable
from tests.support.seaweed import SeaweedS3

GOAL = "how is the token budget enforced?"
POLLING_WITHIN_S = 90.0
_WHY_NOT = "not root" if os.geteuid() != 0 else netns_usable()
pytestmark = pytest.mark.skipif(_WHY_NOT is not None, reason=f"network namespaces unusable here: {_WHY_NOT}")


def _connects_inside(ns: Netns, port: int) -> bool:
    probe = (f"import socket; s=socket.socket(); s.settimeout(3); "
             f"print(s.connect_ex(('127.0.0.1', {port})) == 0)")
    done = subprocess.run(["ip", "netns", "exec", ns.name, sys.executable, "-c", probe], capture_output=True,
                          text=True, timeout=30, check=True)
    return done.stdout.strip() == "True"


async def test_a_worker_in_its_own_network_namespace_serves_the_run(tmp_path: Path) -> None:
    (tmp_path / "seaweed").mkdir()
    s3 = SeaweedS3(tmp_path / "seaweed", bind="0.0.0.0").start()
    server = DevServer(DevServerConfig(ip="0.0.0.0", port=free_port(), ui_port=free_port(), headless=True),
                       log_path=tmp_path / "server.log").start()
    # an index no other test or soak uses at once (the soak takes 229..231)
    ns = Netns(f"navtest-{uuid.uuid4().hex[:6]}", random.randrange(100, 200))
    worker = None
    try:
        await server.wait_ready()
        ns.create()
        port, s3_port = server.config.port, int(s3.endpoint_url.rsplit(":", 1)[1])
        prefix, queue = f"netns-{uuid.uuid4().hex[:8]}", f"netns-{uuid.uuid4().hex[:8]}"
        store = type("Store", (), {"endpoint_url": f"http://{ns.host_ip}:{s3_port}"})()
        host = Host.create(tmp_path / "host", store, f"{ns.host_ip}:{port}", queue, prefix)  # type: ignore[arg-type]
        laptop = Host.create(tmp_path / "laptop", s3, f"127.0.0.1:{port}", queue, prefix)
        assert not _connects_inside(ns, port) and not _connects_inside(ns, s3_port)  # no shared loopback
        with (host.root / "worker.log").open("w") as log:
            worker = subprocess.Popen(["ip", "netns", "exec", ns.name, str(NAVIGATOR), "worker"], cwd=host.root / "cwd",
                                      env=host.env(), stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + POLLING_WITHIN_S
        while "worker polling" not in host.log():
            assert worker.poll() is None and time.monotonic() < deadline, host.log()[-3000:]
            time.sleep(0.3)
        ran = laptop.run("explore", str(FIXTURE_REPO), GOAL, "--json", "--max-iterations", "3",
                         "--out", str(laptop.root / "out"), timeout=300)
        assert ran.returncode == 0, ran.stderr[-3000:]
        assert "source: snapshot" in ran.stderr
        result = json.loads(ran.stdout)
        assert "## " in Path(result["context_path"]).read_text()
        client = await Client.connect(f"127.0.0.1:{port}", data_converter=DATA_CONVERTER)
        identities = [e.activity_task_started_event_attributes.identity
                      async for e in client.get_workflow_handle(result["workflow_id"]).fetch_history_events()
                      if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED]
        assert identities and set(identities) == {f"{worker.pid}@{socket.gethostname()}"}, identities
    finally:
        if worker is not None and worker.poll() is None:
            worker.terminate()
            worker.wait(timeout=60)
        ns.delete()
        server.stop()
        s3.stop()
