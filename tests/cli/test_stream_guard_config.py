"""The stream guard is configurable: navigator.yaml, the environment, and a run profile (which wins)."""

from __future__ import annotations

from pathlib import Path

import pytest

from durable_navigator.cli.config import ConfigValidationError, load_config
from durable_navigator.cli.runrequest import build_request
from tests.support import FIXTURE_REPO


def _request(config, profile: Path | None = None):  # noqa: ANN001, ANN202
    return build_request(FIXTURE_REPO, "where is the ledger?", config=config, interactive=False, budget_usd=None,
                         tokens=None, model=None, max_iterations=None, out=None, profile=profile)


def test_defaults_file_env_and_profile(tmp_path: Path) -> None:
    assert _request(load_config(env={}, cwd=tmp_path)).model_call.stream.first_chunk_timeout_s == 60
    cfg = tmp_path / "navigator.yaml"
    cfg.write_text("stream: {first_chunk_timeout_s: 90, inter_chunk_timeout_s: 12}\n")
    from_file = _request(load_config(cfg, env={}, cwd=tmp_path)).model_call.stream
    assert (from_file.first_chunk_timeout_s, from_file.inter_chunk_timeout_s) == (90, 12)
    env = {"NAVIGATOR_INTER_CHUNK_TIMEOUT_S": "7.5"}
    from_env = _request(load_config(cfg, env=env, cwd=tmp_path)).model_call.stream
    assert (from_env.first_chunk_timeout_s, from_env.inter_chunk_timeout_s) == (90, 7.5)
    profile = tmp_path / "profile.yaml"
    profile.write_text("stream: {first_chunk_timeout_s: 5, inter_chunk_timeout_s: 2}\n")
    from_profile = _request(load_config(cfg, env=env, cwd=tmp_path), profile).model_call.stream
    assert (from_profile.first_chunk_timeout_s, from_profile.inter_chunk_timeout_s) == (5, 2)


def test_bad_values_are_refused_naming_the_setting(tmp_path: Path) -> None:
    with pytest.raises(ConfigValidationError, match="NAVIGATOR_FIRST_CHUNK_TIMEOUT_S"):
        load_config(env={"NAVIGATOR_FIRST_CHUNK_TIMEOUT_S": "-1"}, cwd=tmp_path)
