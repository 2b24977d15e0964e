"""workers: the worker process wiring (registration, data converter, dev server).

The names below are loaded on first use (PEP 562): importing a submodule such as
``workers.devserver`` (the CLI does, to reach the embedded server) must not import
every workflow and activity through ``workers.worker``.
"""

from __future__ import annotations

import importlib
from typing import Any

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

_HOME = {
    "DATA_CONVERTER": "converter",
    "data_converter": "converter",
    "DEFAULT_TASK_QUEUE": "worker",
    "WORKFLOWS": "worker",
    "WORKFLOW_FAILURE_EXCEPTION_TYPES": "worker",
    "build_activities": "worker",
    "build_worker": "worker",
    "default_artifact_dir": "worker",
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)
