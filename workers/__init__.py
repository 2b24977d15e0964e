"""workers: the worker process wiring (registration, data converter, dev server).

The names below are loaded on first use (PEP 562): importing a submodule such as
``workers.devserver`` (the CLI does, to reach the embedded server) must not import
every workflow and activity through ``workers.worker``.
"""

from __future__ import annotations

from durable_navigator.navtypes.lazy import lazy_names

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


__getattr__ = lazy_names(__name__, globals(), {name: f".{module}" for name, module in _HOME.items()})
