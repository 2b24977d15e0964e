"""``NavigatorConfig``: ``navigator.yaml`` + environment, validated by pydantic.

Lookup order for the file: ``--config PATH`` (or ``NAVIGATOR_CONFIG``), then
``./navigator.yaml``, then ``<user config dir>/navigator.yaml``; no file is
fine (defaults). Environment variables override the file. Credentials
(``TEMPORAL_API_KEY``, ``GEMINI_API_KEY`` / ``GOOGLE_API_KEY``) come only from
the environment: the file may not hold them, and the config keeps the Temporal
key as a ``SecretStr`` and the model keys only as *presence* flags, so no code
path can echo them. An OpenAI-compatible endpoint names the variable its key is
in (``endpoints.<name>.api_key_env``); the config records only whether it is set.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import platformdirs
import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)

from durable_navigator.navcore.model.endpoints import Endpoint, check_endpoint_name, resolve_endpoints
from durable_navigator.navtypes.errors import ConfigError
from durable_navigator.workers.devserver import APP_NAME, default_db_path

__all__ = [
    "CONFIG_FILENAME",
    "DEFAULT_TASK_QUEUE",
    "ENV_VARS",
    "SECRET_ENV_VARS",
    "TemporalSettings",
    "EmbeddedSettings",
    "RunDefaults",
    "WorkerSettings",
    "LogSettings",
    "ArtifactSettings",
    "NavigatorConfig",
    "ConfigValidationError",
    "find_config_file",
    "load_config",
]

CONFIG_FILENAME = "navigator.yaml"
DEFAULT_TASK_QUEUE = "navigator"

#: environment variable -> dotted config field it overrides
ENV_VARS: dict[str, str] = {
    "TEMPORAL_ADDRESS": "temporal.address",
    "TEMPORAL_NAMESPACE": "temporal.namespace",
    "TEMPORAL_TLS_CERT": "temporal.tls_cert",
    "TEMPORAL_TLS_KEY": "temporal.tls_key",
    "TEMPORAL_UI_URL": "temporal.ui_url",
    "NAVIGATOR_TASK_QUEUE": "temporal.task_queue",
    "NAVIGATOR_MODEL": "model",
    "NAVIGATOR_PRICING_FILE": "pricing_file",
    "NAVIGATOR_OUT_DIR": "defaults.out_dir",
    "NAVIGATOR_LOG_JSON": "log.json_output",
    "NAVIGATOR_LOG_LEVEL": "log.level",
    "NAVIGATOR_FIRST_CHUNK_TIMEOUT_S": "stream.first_chunk_timeout_s",
    "NAVIGATOR_INTER_CHUNK_TIMEOUT_S": "stream.inter_chunk_timeout_s",
    "NAVIGATOR_IDLE_TIMEOUT_S": "embedded.idle_timeout_s",
    "NAVIGATOR_STARTUP_TIMEOUT_S": "embedded.startup_timeout_s",
    "NAVIGATOR_ARTIFACTS_URL": "artifacts.url",
    "NAVIGATOR_ARTIFACTS_ENDPOINT_URL": "artifacts.endpoint_url",
}
#: credentials: read from the environment only, never printed
SECRET_ENV_VARS: tuple[str, ...] = ("TEMPORAL_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENAI_API_KEY",
                                     "OPENROUTER_API_KEY")
#: points at the config file itself
CONFIG_ENV_VAR = "NAVIGATOR_CONFIG"
_HOST_PORT = re.compile(r"^[^\s:/]+:\d{1,5}$")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TemporalSettings(_Section):
    """Where the Temporal frontend is; ``address=None`` means the embedded dev server."""

    address: str | None = None
    namespace: str = Field("default", min_length=1)
    task_queue: str = Field(DEFAULT_TASK_QUEUE, min_length=1)
    tls_cert: Path | None = None
    tls_key: Path | None = None
    #: Web UI base for links when not on the embedded server (e.g. Temporal Cloud)
    ui_url: str | None = Field(None, pattern=r"^https?://")
    api_key: SecretStr | None = None

    @field_validator("address")
    @classmethod
    def _host_port(cls, value: str | None) -> str | None:
        if value is not None and not _HOST_PORT.match(value):
            raise ValueError("expected host:port, e.g. 127.0.0.1:7233 or my-ns.a1b2c.tmprl.cloud:7233")
        return value

    @field_validator("tls_cert", "tls_key")
    @classmethod
    def _file_exists(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError(f"TLS file {value} does not exist")
        return value

    @model_validator(mode="after")
    def _tls_pair(self) -> TemporalSettings:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("TLS needs both tls_cert and tls_key (TEMPORAL_TLS_CERT / TEMPORAL_TLS_KEY)")
        return self


class EmbeddedSettings(_Section):
    """The embedded dev server ``navigator server`` / ``explore`` start."""

    ip: str = "127.0.0.1"
    port: int = Field(7233, gt=0, lt=65536)
    ui_port: int = Field(8233, gt=0, lt=65536)
    db_filename: Path = Field(default_factory=default_db_path)
    #: the server ``explore`` starts keeps running in the background (so printed links keep
    #: working) until this long without a worker polling or a navigator command; 0: it stops
    #: with the command that started it
    idle_timeout_s: float = Field(1800.0, ge=0, le=7 * 24 * 3600)
    #: how long a command waits for the server it starts to answer (a cold start on a loaded
    #: machine is slow); past it the command fails with exit code 3 and says so
    startup_timeout_s: float = Field(60.0, gt=0, le=3600)


class RunDefaults(_Section):
    """Defaults of ``navigator explore`` options."""

    budget_usd: float = Field(1.0, gt=0, le=10_000)
    token_budget: int = Field(8192, gt=0, le=2_000_000)
    max_iterations: int = Field(12, gt=0, le=1000)
    out_dir: Path = Path("navigator-out")
    #: how long an interactive turn waits for a verdict before the workflow's default applies
    approval_timeout_s: float = Field(3600.0, gt=0)
    #: how long a run's repository-bound activity waits for the host whose index is warm to start it
    #: before it goes to any worker (``workflows.blocks.affinity``): raise it for hosts that restart
    #: slowly, lower it to fail over sooner
    host_start_timeout_s: float = Field(30.0, gt=0, le=3600)


class WorkerSettings(_Section):
    """Concurrency of ``navigator worker``."""

    max_concurrent_activities: int = Field(8, gt=0, le=1000)


class LogSettings(_Section):
    """structlog output."""

    json_output: bool = False
    level: Literal["debug", "info", "warning", "error"] = "info"


class StreamSettings(_Section):
    """The stream guard of streaming model answers (a run profile's ``stream`` wins over these)."""

    #: seconds from sending a request to its first chunk (the model may think first)
    first_chunk_timeout_s: float = Field(60.0, gt=0, le=3600)
    #: seconds between two chunks of an answer
    inter_chunk_timeout_s: float = Field(30.0, gt=0, le=3600)


_ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


class ArtifactSettings(_Section):
    """Where maps, prompts and results live by content hash (``artifacts:`` in navigator.yaml).

    No ``url``: a local directory (``dir``, default the user cache dir) — one machine. ``url:
    s3://BUCKET/PREFIX``: an S3-compatible object store every worker and CLI shares; keys are
    ``PREFIX/<namespace>/<aa>/<sha256>``. Credentials only by the *name* of the variable holding
    them (both names or neither: neither means boto3's own chain — AWS_* variables, ~/.aws, a role).
    """

    url: str | None = Field(None, min_length=1)
    dir: Path | None = None
    endpoint_url: str | None = Field(None, pattern=r"^https?://[^\s/]+")
    region: str | None = Field(None, min_length=1)
    access_key_env: str | None = Field(None, pattern=_ENV_NAME)
    secret_key_env: str | None = Field(None, pattern=_ENV_NAME)

    @model_validator(mode="after")
    def _consistent(self) -> ArtifactSettings:
        if (self.access_key_env is None) != (self.secret_key_env is None):
            raise ValueError("name both access_key_env and secret_key_env (or neither, for boto3's own chain)")
        if self.url is None and any(v is not None for v in (self.endpoint_url, self.region, self.access_key_env)):
            raise ValueError("endpoint_url, region and the key variables need url: s3://BUCKET/PREFIX")
        if self.url is not None and self.dir is not None:
            raise ValueError("give url (an object store) or dir (a local directory), not both")
        return self


class NavigatorConfig(_Section):
    """The whole CLI / worker configuration."""

    temporal: TemporalSettings = TemporalSettings()
    embedded: EmbeddedSettings = EmbeddedSettings()
    model: str = Field("offline", min_length=1)
    pricing_file: Path | None = None
    defaults: RunDefaults = RunDefaults()
    worker: WorkerSettings = WorkerSettings()
    log: LogSettings = LogSettings()
    stream: StreamSettings = StreamSettings()
    artifacts: ArtifactSettings = ArtifactSettings()
    #: the file this config was read from, if any (not settable in the file)
    source: Path | None = None
    #: GEMINI_API_KEY or GOOGLE_API_KEY is set (the value itself is never kept)
    gemini_key_present: bool = False
    #: OpenAI-compatible endpoints (``<name>:<model>``), added to the built-in openai / ollama / openrouter
    endpoints: dict[str, Endpoint] = {}
    #: endpoint name → its ``api_key_env`` variable is set (values are never kept)
    endpoint_keys_present: dict[str, bool] = {}

    @field_validator("endpoints")
    @classmethod
    def _endpoint_names(cls, value: dict[str, Endpoint]) -> dict[str, Endpoint]:
        for name in value:
            check_endpoint_name(name)
        return value

    def all_endpoints(self) -> dict[str, Endpoint]:
        """The built-in endpoints with the configured ones added (what the worker serves)."""
        return resolve_endpoints(self.endpoints)

    @field_validator("pricing_file")
    @classmethod
    def _pricing_exists(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError(f"file {value} does not exist")
        return value

    def public_dict(self) -> dict[str, Any]:
        """A JSON-safe view for ``navigator config``; secrets appear only as set/unset."""
        data = self.model_dump(mode="json", exclude={"temporal": {"api_key"}, "endpoint_keys_present": True})
        data["temporal"]["api_key_set"] = self.temporal.api_key is not None
        data["endpoints"] = {
            name: {**endpoint.model_dump(mode="json"), "builtin": name not in self.endpoints,
                   "api_key_set": None if endpoint.api_key_env is None else self.endpoint_keys_present.get(name, False)}
            for name, endpoint in sorted(self.all_endpoints().items())
        }
        return data


class ConfigValidationError(ConfigError):
    """Validation failed; ``problems`` holds one ``field: message`` line per error."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.problems = problems
        noun = "problem" if len(problems) == 1 else "problems"
        super().__init__(
            f"{source} is invalid ({len(problems)} {noun}): {'; '.join(problems)}; fix the "
            "listed fields"
        )


def find_config_file(explicit: Path | None, env: Mapping[str, str], cwd: Path) -> Path | None:
    """The config file to read, or ``None`` to use defaults."""
    if explicit is None and env.get(CONFIG_ENV_VAR):
        explicit = Path(env[CONFIG_ENV_VAR])
    if explicit is not None:
        if not explicit.is_file():
            raise ConfigError(f"config file {explicit} does not exist; pass an existing navigator.yaml")
        return explicit
    for candidate in (cwd / CONFIG_FILENAME, Path(platformdirs.user_config_dir(APP_NAME)) / CONFIG_FILENAME):
        if candidate.is_file():
            return candidate
    return None


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{path}{where}: not valid YAML; fix the syntax") from exc
    except OSError as exc:
        raise ConfigError(f"cannot read {path} ({exc.strerror}); check the path and permissions") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (bad byte at offset {exc.start}); pass a navigator.yaml "
                          "settings file") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of settings at the top level")
    for forbidden in ("source", "gemini_key_present", "endpoint_keys_present"):
        if forbidden in data:
            raise ConfigError(f"{path}: '{forbidden}' is computed, not a setting; remove it")
    if isinstance(data.get("temporal"), dict) and "api_key" in data["temporal"]:
        raise ConfigError(f"{path}: temporal.api_key must not be stored in a file; set TEMPORAL_API_KEY")
    artifacts = data.get("artifacts")
    for secret in ("access_key", "secret_key", "aws_access_key_id", "aws_secret_access_key"):
        if isinstance(artifacts, dict) and secret in artifacts:
            raise ConfigError(f"{path}: artifacts.{secret} must not be stored in a file; set artifacts.access_key_env "
                              "and artifacts.secret_key_env to the names of environment variables holding the keys")
    for name, endpoint in (data.get("endpoints") or {}).items() if isinstance(data.get("endpoints"), dict) else ():
        if isinstance(endpoint, dict) and "api_key" in endpoint:
            raise ConfigError(f"{path}: endpoints.{name}.api_key must not be stored in a file; set "
                              f"endpoints.{name}.api_key_env to the name of an environment variable holding it")
    return data


def _set_dotted(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    node = data
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
            node[part] = child
        node = child
    node[leaf] = value


def _format_error(err: Any, env_names: dict[str, str]) -> str:
    dotted = ".".join(str(p) for p in err["loc"])
    origin = f" (from {env_names[dotted]})" if dotted in env_names else ""
    message = str(err["msg"]).removeprefix("Value error, ")
    return f"{dotted or '<top>'}{origin}: {message}"


def load_config(
    path: Path | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> NavigatorConfig:
    """Read the file (if any), apply environment overrides, validate."""
    env = os.environ if env is None else env
    source = find_config_file(path, env, cwd or Path.cwd())
    data = _read_yaml(source) if source else {}
    used_env: dict[str, str] = {}
    for name, dotted in ENV_VARS.items():
        value = env.get(name)
        if value:
            _set_dotted(data, dotted, value)
            used_env[dotted] = name
    if env.get("TEMPORAL_API_KEY"):
        _set_dotted(data, "temporal.api_key", env["TEMPORAL_API_KEY"])
    data["source"] = source
    data["gemini_key_present"] = bool(env.get("GEMINI_API_KEY") or env.get("GOOGLE_API_KEY"))
    try:
        config = NavigatorConfig.model_validate(data)
    except ValidationError as exc:
        problems = [_format_error(e, used_env) for e in exc.errors(include_input=False)]
        raise ConfigValidationError(str(source or "the configuration"), problems) from None
    present = {name: bool((env.get(e.api_key_env) or "").strip())
               for name, e in config.all_endpoints().items() if e.api_key_env}
    return config.model_copy(update={"endpoint_keys_present": present})
