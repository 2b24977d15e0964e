"""The documented exit codes of ``navigator`` (stdlib only: ``navigator --help`` shows them)."""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode", "EXIT_CODE_DOC"]


class ExitCode(IntEnum):
    """Documented exit codes of ``navigator`` (README, ``navigator --help``)."""

    OK = 0
    RUN_FAILED = 1  #: the run failed, was terminated, or stopped abnormally (approval timeout)
    BAD_INPUT = 2  #: bad arguments, configuration, repository, model or budget; a verdict the run refused
    TEMPORAL_UNREACHABLE = 3  #: no Temporal server (or no worker answering) at the address
    NOT_FOUND = 4  #: no such workflow, or it is closed and cannot take the signal
    INTERRUPTED = 130  #: Ctrl-C


EXIT_CODE_DOC = (
    "Exit codes: 0 ok · 1 run failed or stopped abnormally · 2 bad input/usage or a verdict the run "
    "refused · 3 cannot reach Temporal (or no worker) · 4 run not found / already closed · 130 interrupted."
)
