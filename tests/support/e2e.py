"""Running the real ``navigator`` console script as a subprocess, on its own embedded server."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from durable_navigator.workers.devserver import free_port

NAVIGATOR = Path(sys.executable).parent / "navigator"


@dataclass
class Sandbox:
    """A private cwd, config (free embedded ports, tmp db) and XDG dirs for one CLI process."""

    root: Path
    port: int
    ui_port: int

    @classmethod
    def create(cls, root: Path) -> Sandbox:
        box = cls(root, free_port(), free_port())
        (root / "navigator.yaml").write_text(
            f"embedded:\n  port: {box.port}\n  ui_port: {box.ui_port}\n"
            f"  db_filename: {root / 'state' / 'temporal.db'}\n"
        )
        return box

    def env(self, idle_timeout_s: float = 0) -> dict[str, str]:
        """The process environment: no TEMPORAL_ADDRESS, no keys, everything under ``root``.

        ``idle_timeout_s`` 0 (the default here) makes the embedded server live only as long as the
        command that started it; the tests of the background server (``tests/cli/test_servers.py``)
        pass a timeout and stop the server themselves.
        """
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("TEMPORAL_", "NAVIGATOR_", "GEMINI_", "GOOGLE_"))}
        env.update(
            NAVIGATOR_CONFIG=str(self.root / "navigator.yaml"),
            NAVIGATOR_IDLE_TIMEOUT_S=str(idle_timeout_s),
            XDG_STATE_HOME=str(self.root / "xdg-state"),
            XDG_CACHE_HOME=str(self.root / "xdg-cache"),
            COLUMNS="200",
        )
        return env

    @property
    def ui_prefix(self) -> str:
        """What the printed Web UI links start with."""
        return f"http://127.0.0.1:{self.ui_port}/namespaces/default/workflows/nav-"


async def wait_until_polling(client: Client, task_queue: str, proc: subprocess.Popen[str],
                             timeout_s: float = 180.0) -> None:
    """Return once ``task_queue`` lists a workflow and an activity poller (``proc``, a worker, has started).

    A ``navigator worker`` process takes seconds to import and connect (tens under load); a command
    run before it polls meets no worker at all, which is another scenario than "a running worker".
    """
    kinds = (TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while loop.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the worker exited with {proc.returncode} before it polled {task_queue!r}")
        described = [await client.workflow_service.describe_task_queue(DescribeTaskQueueRequest(
            namespace=client.namespace, task_queue=TaskQueue(name=task_queue), task_queue_type=kind)) for kind in kinds]
        if all(d.pollers for d in described):
            return
        await asyncio.sleep(0.2)
    raise AssertionError(f"no worker polled {task_queue!r} within {timeout_s:.0f}s")
