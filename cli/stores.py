"""The artifact store a worker or a CLI command uses, from ``navigator.yaml``'s ``artifacts:`` section.

One place turns the settings into a store, so the worker that writes a run's artifacts and the
command that reads its result back open the same one: a local directory (the embedded default,
one machine) or an S3-compatible bucket (a team's cluster, hosts sharing no disk). A bad setting
— an unknown scheme, a key variable not set, a bucket that does not answer — is one
:class:`ConfigError` line raised here, before any run starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from durable_navigator.activities.artifacts import ArtifactStore, LocalArtifactStore, default_artifact_dir
from durable_navigator.cli.config import ArtifactSettings, NavigatorConfig
from durable_navigator.navtypes.errors import ConfigError

__all__ = ["open_artifact_store", "is_shared_store", "store_description"]


def _key(settings: ArtifactSettings, env: Mapping[str, str], which: str) -> str | None:
    name = getattr(settings, f"{which}_env")
    if name is None:
        return None
    value = (env.get(name) or "").strip()
    if not value:
        # the variable's name only: its value (when set) is a credential and never printed
        raise ConfigError(f"artifacts.{which}_env names {name}, which is not set; export {name} with the "
                          f"object store's {which.replace('_', ' ')} (or remove artifacts.*_env to use boto3's "
                          "own credential chain)")
    return value


def open_artifact_store(config: NavigatorConfig, env: Mapping[str, str] | None = None,
                        *, check: bool = True) -> ArtifactStore:
    """The configured store; ``check``: the bucket must answer now (:class:`ConfigError` if not)."""
    settings = config.artifacts
    if settings.url is None:
        return LocalArtifactStore(settings.dir or default_artifact_dir())
    # imported only when configured: boto3 costs every other command ~0.3 s of start-up
    from durable_navigator.activities.s3store import S3ArtifactStore, parse_s3_url

    env = os.environ if env is None else env
    location = parse_s3_url(settings.url, config.temporal.namespace)
    store = S3ArtifactStore(location, endpoint_url=settings.endpoint_url, region=settings.region,
                            access_key=_key(settings, env, "access_key"), secret_key=_key(settings, env, "secret_key"))
    if check:
        store.check()
    return store


def is_shared_store(config: NavigatorConfig) -> bool:
    """True with an object store: workers write no files, the command that asked writes them."""
    return config.artifacts.url is not None


def store_description(config: NavigatorConfig) -> str:
    """Where artifacts live, for ``navigator worker``'s start line (never a credential)."""
    settings = config.artifacts
    if settings.url is None:
        return str(settings.dir or default_artifact_dir())
    endpoint = f" at {settings.endpoint_url}" if settings.endpoint_url else ""
    return f"{settings.url.rstrip('/')}/{config.temporal.namespace}{endpoint}"
