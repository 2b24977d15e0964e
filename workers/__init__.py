"""workers: the worker process wiring (registration, data converter, dev server)."""

from durable_navigator.workers.converter import DATA_CONVERTER, data_converter
from durable_navigator.workers.worker import (
    DEFAULT_TASK_QUEUE,
    WORKFLOW_FAILURE_EXCEPTION_TYPES,
    WORKFLOWS,
    build_activities,
    build_worker,
    default_artifact_dir,
)

__all__ = [
    "DATA_CONVERTER",
    "DEFAULT_TASK_QUEUE",
    "WORKFLOWS",
    "WORKFLOW_FAILURE_EXCEPTION_TYPES",
    "build_activities",
    "build_worker",
    "data_converter",
    "default_artifact_dir",
]
