"""structlog, configured once per process (CLI, worker).

Readable console lines by default, one JSON object per line with ``json_output``
(what log shippers want in a container). Standard-library records — the
Temporal SDK, ``workflow.logger`` and ``activity.logger`` — go through the
same renderer, and the workflow / activity ids Temporal attaches to them
become top-level ``workflow_id`` / ``activity_id`` keys. Inside an activity the
ids are bound automatically for structlog loggers too. Known credential values
from the environment are masked in every line as a last line of defence.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable, MutableMapping
from typing import IO, Any

import structlog

__all__ = [
    "configure_logging",
    "route_core_logs",
    "get_logger",
    "bind_ids",
    "clear_ids",
    "is_configured",
    "SECRET_MASK",
]

SECRET_MASK = "***"
#: environment variables whose values must never appear in a log line
_SECRET_ENV = ("TEMPORAL_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")
#: shorter values are too likely to collide with ordinary words to mask safely
_MIN_SECRET_LEN = 8

_state: dict[str, Any] = {"configured": None}

EventDict = MutableMapping[str, Any]


def _temporal_ids(_: Any, __: str, event: EventDict) -> EventDict:
    """Lift Temporal's ``extra`` dicts / the current activity into flat id keys."""
    record = event.get("_record")
    wf = getattr(record, "temporal_workflow", None) if record is not None else None
    act = getattr(record, "temporal_activity", None) if record is not None else None
    if isinstance(wf, dict):
        event.setdefault("workflow_id", wf.get("workflow_id"))
        event.setdefault("run_id", wf.get("run_id"))
    if isinstance(act, dict):
        event.setdefault("workflow_id", act.get("workflow_id"))
        event.setdefault("activity_id", act.get("activity_id"))
        event.setdefault("activity_type", act.get("activity_type"))
    if "activity_id" not in event:
        try:
            from temporalio import activity

            if activity.in_activity():
                info = activity.info()
                event.setdefault("workflow_id", info.workflow_id)
                event.setdefault("activity_id", info.activity_id)
                event.setdefault("activity_type", info.activity_type)
        except Exception:  # noqa: BLE001 - logging must never raise; ids are best effort here
            pass
    return event


def _mask_secrets(secrets: tuple[str, ...]):  # type: ignore[no-untyped-def]
    def processor(_: Any, __: str, event: EventDict) -> EventDict:
        for key, value in list(event.items()):
            if isinstance(value, str):
                for secret in secrets:
                    if secret in value:
                        value = value.replace(secret, SECRET_MASK)
                event[key] = value
        return event

    return processor


def _secret_values(extra: Iterable[str]) -> tuple[str, ...]:
    values = [os.environ.get(name, "") for name in _SECRET_ENV] + list(extra)
    return tuple(sorted({v for v in values if len(v) >= _MIN_SECRET_LEN}, key=len, reverse=True))


def configure_logging(
    json_output: bool = False,
    level: str = "info",
    stream: IO[str] | None = None,
    extra_secrets: Iterable[str] = (),
    force: bool = False,
) -> None:
    """Configure structlog and stdlib logging; later calls are no-ops unless ``force``."""
    key = (json_output, level, id(stream))
    if _state["configured"] is not None and not force:
        return
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(f"unknown log level {level!r}; use debug, info, warning or error")
    shared: list[Any] = [
        # Temporal's own ids first: they are exact for the record being logged
        _temporal_ids,
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        _mask_secrets(_secret_values(extra_secrets)),
    ]
    renderer: Any = (
        structlog.processors.JSONRenderer()
        if json_output
        else structlog.dev.ConsoleRenderer(
            colors=stream is None and sys.stderr.isatty(),
            # rich tracebacks print locals: too long, and locals may hold request payloads
            exception_formatter=structlog.dev.plain_traceback,
        )
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=shared,
        processors=[
            structlog.stdlib.ProcessorFormatter.remove_processors_meta,
            structlog.processors.format_exc_info if json_output else _identity,
            renderer,
        ],
    )
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers = [handler]
    root.setLevel(numeric)
    structlog.configure(
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=False,
    )
    _state["configured"] = key


def route_core_logs(core_level: str = "WARN") -> None:
    """Send Temporal Core's (Rust) log lines to the ``temporalio.core`` Python logger, once per process.

    Why: the SDK's default runtime writes Core's lines with its own console logger, and that
    logger writes to **stdout** — so a Core warning at the end of a command (e.g. the in-process
    worker told ``NotFound`` for a task of a run that just completed) landed after the result of
    ``explore --json`` and made it unparseable. Forwarded, they go through the handler
    :func:`configure_logging` installed (stderr), at the level it allows. It sets the process's
    default Temporal runtime, so it must run before the first client connects.
    """
    if _state.get("core_routed"):
        return
    # imported here, not at the top: it loads the SDK's native bridge, which `navigator --help`
    # and the other commands that never reach Temporal must not pay for at start-up
    from temporalio.runtime import LogForwardingConfig, LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter

    logging_config = LoggingConfig(
        filter=TelemetryFilter(core_level=core_level, other_level="ERROR"),
        forwarding=LogForwardingConfig(logger=logging.getLogger("temporalio.core")),
    )
    Runtime.set_default(Runtime(telemetry=TelemetryConfig(logging=logging_config)), error_if_already_set=False)
    _state["core_routed"] = True


def _identity(_: Any, __: str, event: EventDict) -> EventDict:
    return event


def is_configured() -> bool:
    """True once :func:`configure_logging` ran in this process."""
    return _state["configured"] is not None


def get_logger(name: str | None = None) -> structlog.stdlib.BoundLogger:
    """A structlog logger (configure first; unconfigured loggers use structlog defaults)."""
    return structlog.get_logger(name)  # type: ignore[no-any-return]


def bind_ids(**ids: str | None) -> None:
    """Bind ids (``workflow_id=…``, ``run_id=…``) to every log line of this context."""
    structlog.contextvars.bind_contextvars(**{k: v for k, v in ids.items() if v is not None})


def clear_ids() -> None:
    """Drop everything :func:`bind_ids` bound in this context."""
    structlog.contextvars.clear_contextvars()
