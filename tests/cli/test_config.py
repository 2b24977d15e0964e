"""NavigatorConfig: file lookup, environment overrides, field-by-field errors, secrets."""

from __future__ import annotations

from pathlib import Path

import pytest

from durable_navigator.cli.config import ENV_VARS, SECRET_ENV_VARS, ConfigValidationError, load_config
from durable_navigator.navtypes.errors import ConfigError


def test_defaults_without_file_or_env(tmp_path: Path) -> None:
    config = load_config(env={}, cwd=tmp_path)
    assert config.source is None
    assert config.temporal.address is None
    assert config.temporal.task_queue == "navigator"
    assert config.model == "offline"
    assert config.embedded.port == 7233 and config.embedded.ui_port == 8233
    assert config.gemini_key_present is False


def test_file_in_cwd_then_env_overrides(tmp_path: Path) -> None:
    (tmp_path / "navigator.yaml").write_text(
        "temporal:\n  namespace: team\n  task_queue: nav-a\nmodel: gemini-2.5-flash\n"
        "defaults:\n  budget_usd: 2.5\n"
    )
    env = {"TEMPORAL_ADDRESS": "temporal.example:7233", "NAVIGATOR_TASK_QUEUE": "nav-b"}
    config = load_config(env=env, cwd=tmp_path)
    assert config.source == tmp_path / "navigator.yaml"
    assert config.temporal.namespace == "team"
    assert config.temporal.task_queue == "nav-b"  # env wins over the file
    assert config.temporal.address == "temporal.example:7233"
    assert config.model == "gemini-2.5-flash"
    assert config.defaults.budget_usd == 2.5


def test_explicit_path_and_navigator_config_env(tmp_path: Path) -> None:
    other = tmp_path / "other.yaml"
    other.write_text("model: scripted\n")
    assert load_config(env={"NAVIGATOR_CONFIG": str(other)}, cwd=tmp_path).model == "scripted"
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "missing.yaml", env={}, cwd=tmp_path)


def test_errors_are_reported_field_by_field(tmp_path: Path) -> None:
    (tmp_path / "navigator.yaml").write_text("defaults:\n  budget_usd: 0\n  max_iterations: -1\nbogus: 1\n")
    env = {"TEMPORAL_ADDRESS": "no port here", "NAVIGATOR_PRICING_FILE": str(tmp_path / "nope.yaml")}
    with pytest.raises(ConfigValidationError) as info:
        load_config(env=env, cwd=tmp_path)
    problems = info.value.problems
    fields = sorted(p.split(":")[0] for p in problems)
    assert fields == [
        "bogus",
        "defaults.budget_usd",
        "defaults.max_iterations",
        "pricing_file (from NAVIGATOR_PRICING_FILE)",
        "temporal.address (from TEMPORAL_ADDRESS)",
    ]
    assert any("expected host:port" in p for p in problems)
    assert "\n" not in str(info.value)


def test_tls_needs_both_files(tmp_path: Path) -> None:
    cert = tmp_path / "c.pem"
    cert.write_text("x")
    with pytest.raises(ConfigValidationError, match="both tls_cert and tls_key"):
        load_config(env={"TEMPORAL_TLS_CERT": str(cert)}, cwd=tmp_path)


def test_bad_yaml_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "navigator.yaml").write_text("model: offline\ntemporal: [unclosed\n")
    with pytest.raises(ConfigError, match=r"navigator.yaml line \d+: not valid YAML"):
        load_config(env={}, cwd=tmp_path)


def test_credentials_only_from_env_and_never_shown(tmp_path: Path) -> None:
    (tmp_path / "navigator.yaml").write_text("temporal:\n  api_key: abc\n")
    with pytest.raises(ConfigError, match="TEMPORAL_API_KEY"):
        load_config(env={}, cwd=tmp_path)
    (tmp_path / "navigator.yaml").unlink()
    secret = "tmprl-secret-value-123456"
    config = load_config(env={"TEMPORAL_API_KEY": secret, "GEMINI_API_KEY": "g-secret-987654"}, cwd=tmp_path)
    assert config.temporal.api_key is not None
    assert config.temporal.api_key.get_secret_value() == secret
    assert config.gemini_key_present is True
    public = repr(config.public_dict()) + repr(config)
    assert secret not in public and "g-secret-987654" not in public
    assert config.public_dict()["temporal"]["api_key_set"] is True


def test_env_var_tables_are_disjoint_and_uppercase() -> None:
    assert not set(ENV_VARS) & set(SECRET_ENV_VARS)
    assert all(name.isupper() for name in [*ENV_VARS, *SECRET_ENV_VARS])


def test_the_warm_host_start_timeout_comes_from_the_config_into_every_run_kind(tmp_path: Path) -> None:
    from durable_navigator.cli.runrequest import build_investigation_request, build_request, build_research_request
    from tests.support.cli import FIXTURE_REPO

    (tmp_path / "navigator.yaml").write_text("defaults:\n  host_start_timeout_s: 5\n")
    config = load_config(env={}, cwd=tmp_path)
    common = {"config": config, "interactive": False, "budget_usd": None, "model": None, "out": tmp_path}
    explore = build_request(FIXTURE_REPO, "how is the budget enforced?", tokens=None, max_iterations=None, **common)
    ask = build_research_request(FIXTURE_REPO, "where is the budget enforced?", **common)
    investigate = build_investigation_request(FIXTURE_REPO, "why is the budget exceeded?", **common)
    assert explore.host_start_timeout_s == ask.host_start_timeout_s == investigate.host_start_timeout_s == 5.0
    plain = tmp_path / "plain"
    plain.mkdir()
    assert load_config(env={}, cwd=plain).defaults.host_start_timeout_s == 30.0  # the request's own default
    (tmp_path / "navigator.yaml").write_text("defaults:\n  host_start_timeout_s: 0\n")
    with pytest.raises(ConfigValidationError) as info:
        load_config(env={}, cwd=tmp_path)
    assert [p.split(":")[0] for p in info.value.problems] == ["defaults.host_start_timeout_s"]
    assert "\n" not in str(info.value)
