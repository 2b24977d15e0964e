"""``navigator.check_model``: can this worker serve a model? (credentials, price, provider).

:func:`model_problem` is the one place that decides it, for the activity and
for the CLI when its in-process worker will serve the run (same code, same
environment). It asks the worker's model registry (the one model-name parser,
the provider's construction and its script file), the pricer, and the
provider's credential source (``gemini-*``; the key variable an OpenAI-compatible
endpoint names). Nothing it returns holds a
credential: problems are one line, with known secret values masked.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from durable_navigator.activities.models.registry import ModelRegistry
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.navcore.model.modelspec import parse_model_spec
from durable_navigator.navtypes.errors import ModelError, NavigatorError
from durable_navigator.navcore.model.preflight import (
    ACTIVITY_CHECK_MODEL,
    NOT_SERVED_HERE_TYPE,
    ModelCheckInput,
    ModelCheckResult,
    ModelVerdict,
)

__all__ = ["PreflightActivities", "model_problem", "needs_worker_check", "check_models", "refuse_unless_served"]

#: environment variables whose values must never leave the worker
_SECRET_ENV = ("GEMINI_API_KEY", "GOOGLE_API_KEY", "TEMPORAL_API_KEY")
_MASK = "***"
_MAX_PROBLEM_CHARS = 400


def needs_worker_check(model: str) -> bool:
    """False for models that need nothing from a worker (``offline`` is built in and free)."""
    return model.strip() != "offline"


def _masked(text: str, env: Mapping[str, str], registry: ModelRegistry) -> str:
    names = {*_SECRET_ENV, *(e.api_key_env for e in registry.endpoints.values() if e.api_key_env)}
    for name in sorted(names):
        value = env.get(name) or ""
        if len(value) >= 4:
            text = text.replace(value, _MASK)
    line = " ".join(text.split())
    return line[:_MAX_PROBLEM_CHARS]


def _credentials_problem(model: str, registry: ModelRegistry, env: Mapping[str, str]) -> None:
    """Raise the provider's own ``ModelError`` when it would find no credentials here."""
    spec = registry.spec(model)
    if spec.provider == "gemini":
        # imported here: a worker without google-genai still serves the other models
        from durable_navigator.activities.models.gemini import GeminiCredentials

        GeminiCredentials.from_env(env)
    elif spec.provider == "openai" and spec.endpoint is not None:
        from durable_navigator.activities.models.openai import OpenAICredentials

        OpenAICredentials.from_env(spec.endpoint, registry.endpoints[spec.endpoint], env)


def model_problem(
    model: str,
    *,
    registry: ModelRegistry,
    pricer: TablePricer,
    env: Mapping[str, str] | None = None,
) -> str | None:
    """Why this worker cannot serve ``model`` (one line), or ``None`` when it can."""
    environ = os.environ if env is None else env
    name = model.strip()
    try:
        registry.model(name)  # unknown model, missing script file, provider not installed
        pricer.rates(name)  # a model without a price is refused before any spend
        _credentials_problem(name, registry, environ)
    except NavigatorError as exc:
        return _masked(str(exc), environ, registry)
    except Exception as exc:  # noqa: BLE001 - a check reports what went wrong; it never fails the caller
        return _masked(f"{type(exc).__name__}: {exc}", environ, registry)
    return None


def check_models(
    models: list[str], *, registry: ModelRegistry, pricer: TablePricer, env: Mapping[str, str] | None = None,
) -> list[ModelVerdict]:
    """A verdict per model (duplicates answered once, order kept)."""
    verdicts: list[ModelVerdict] = []
    for model in dict.fromkeys(models):
        problem = model_problem(model, registry=registry, pricer=pricer, env=env)
        verdicts.append(ModelVerdict(model=model, ok=problem is None, problem=problem))
    return verdicts


class _EveryEndpoint(frozenset):  # type: ignore[type-arg]
    """An endpoint set that names every endpoint: parses a model name as the best-configured worker would."""

    def __contains__(self, item: object) -> bool:
        return True


def _malformed(model: str) -> bool:
    """True when ``model`` is not a model name under any configuration (e.g. ``gpt-4``: no endpoint prefix)."""
    try:
        parse_model_spec(model, _EveryEndpoint())
    except ModelError:
        return True
    return False


def refuse_unless_served(models: list[str], *, registry: ModelRegistry, pricer: TablePricer) -> None:
    """Inside an activity: hand the task back when this worker cannot serve one of ``models``.

    Raises an ``ApplicationError`` of type :data:`NOT_SERVED_HERE_TYPE` naming this worker and the
    reason, final for this scheduling: the workflow schedules the task again and another worker of the queue takes it
    (``navcore.model.preflight``). A worker with an older configuration must not fail a run that the
    others can serve; when none can, the run fails with this message once the window is over.
    """
    for model in dict.fromkeys(models):
        try:
            registry.check(model)  # the name under this worker's endpoints, its provider, its credentials
            pricer.rates(model)  # a price in this worker's table
        except NavigatorError as exc:
            if _malformed(model):
                raise  # no worker's configuration can serve a malformed name: the run fails now
            queue = activity.info().task_queue if activity.in_activity() else "?"
            problem = _masked(str(exc), os.environ, registry)
            # a host's own queue (``<queue>/host/<identity>``, affinity) has one poller: the run sends the
            # task to the shared queue instead, where another worker can take it
            shared = queue.split("/host/", 1)[0]
            where = (f"the run sends it on to the shared task queue {shared!r}" if shared != queue
                     else f"the task goes back to task queue {queue!r}")
            message = (f"worker {_identity()} cannot serve model {model!r}: {problem} ({where} for a worker "
                       "that can)")[:800]
            # one line for the operator of this worker; BENIGN: the SDK logs no traceback for a hand-back
            activity.logger.warning(message)
            # non-retryable for this scheduling: the activity's own retries (8 over a minute, to ride out a
            # store outage) would keep the task here; the workflow schedules it again at once instead
            raise ApplicationError(message, type=NOT_SERVED_HERE_TYPE, non_retryable=True,
                                   category=ApplicationErrorCategory.BENIGN) from None


class PreflightActivities:
    """The preflight activity, sharing the worker's model registry and pricer."""

    def __init__(self, *, registry: ModelRegistry, pricer: TablePricer) -> None:
        self.registry = registry
        self.pricer = pricer

    @activity.defn(name=ACTIVITY_CHECK_MODEL)
    async def check_model(self, inp: ModelCheckInput) -> ModelCheckResult:
        """Can this worker serve each of ``inp.models``? (no network call, no spend)."""
        # off the worker's event loop: a first check imports the provider's SDK (seconds under load),
        # which would stall the worker's pollers and the heartbeats of its other activities
        verdicts = await asyncio.to_thread(check_models, list(inp.models), registry=self.registry,
                                           pricer=self.pricer)
        return ModelCheckResult(verdicts=verdicts, worker=_identity())

    def all(self) -> list[Callable[..., Any]]:
        """Every activity of this class, for worker registration."""
        return [self.check_model]


def _identity() -> str:
    """The answering worker, as Temporal names it: its client's identity (``pid@host`` by default).

    That is the name ``DescribeTaskQueue`` lists it under and its own check queue is named after
    (``navcore.model.preflight.worker_queue``), not always this process's pid (two workers in one process).
    """
    if activity.in_activity():
        try:
            return activity.client().identity
        except RuntimeError:
            pass  # a sync activity or a test environment without a client: the SDK's default name
    return f"{os.getpid()}@{os.uname().nodename}"
