"""docker-compose.yml agrees with the code: services, env vars, ports, commands, search attributes."""

from __future__ import annotations

import re
import shlex
from typing import Any

import pytest
from tests.support.deploy import (
    KNOWN_ENV,
    ROOT,
    check_navigator_argv,
    load_yaml_docs,
    workflow_search_attributes,
)

from durable_navigator.cli.config import EmbeddedSettings
from durable_navigator.cli.health import HEALTH_PATHS
from durable_navigator.workers.devserver import SEARCH_ATTRIBUTES


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    (doc,) = load_yaml_docs(ROOT / "docker-compose.yml")
    return doc


def test_topology(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(services) == {"postgresql", "temporal", "temporal-ui", "register-search-attributes", "navigator-worker"}
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
