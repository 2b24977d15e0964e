"""Which exceptions raised by workflow code fail the run instead of its workflow task.

By default the SDK fails only the *workflow task* on an exception that is not a Temporal
failure: Temporal retries the task, the code raises again, and the run neither progresses
nor ends — ``status`` shows "Workflow Task in failed state", a ``stop`` signal is never
processed, the CLI waits forever. In this project workflow code does no I/O, so an exception
it raises (a pydantic ``ValidationError`` building a model, a ``KeyError``, a
``NavigatorError``) is deterministic: the retry raises it again. Such errors are listed in the
worker's ``workflow_failure_exception_types`` so the run *fails* with the error, where
``status``, ``result`` and ``explore`` report it (exit code 1).

Not listed: the SDK's own errors (``temporalio.exceptions.TemporalError``), above all
``NondeterminismError`` (and the sandbox's ``RestrictedWorkflowAccessError``, one of them).
A history that no longer replays under new worker code is the case Temporal's task retry
exists for — deploy the fixed (or previous) code and the run resumes — and a run caught in
it is reported as stuck by ``status`` / ``result`` / ``explore`` and ended by ``stop``
(``cli/stuck.py``). The SDK reads "nondeterminism fails the run" from
``issubclass(NondeterminismError, listed type)``, which :class:`WorkflowCodeError` answers no to.
"""

from __future__ import annotations

import abc

from temporalio.exceptions import TemporalError

__all__ = ["WorkflowCodeError", "WORKFLOW_FAILURE_EXCEPTION_TYPES"]


class WorkflowCodeError(Exception, metaclass=abc.ABCMeta):
    """Virtual base of every ``Exception`` that is not one of the Temporal SDK's own errors.

    Nothing inherits from it (it derives from ``Exception`` only because the SDK's sandbox
    insists on a ``BaseException``): ``isinstance`` / ``issubclass`` answer through
    :meth:`__subclasshook__`, so ``isinstance(ValidationError(...), WorkflowCodeError)`` is true
    and ``issubclass(NondeterminismError, WorkflowCodeError)`` is false.
    """

    @classmethod
    def __subclasshook__(cls, sub: type) -> bool:
        return issubclass(sub, Exception) and not issubclass(sub, TemporalError)


#: raised from workflow code, these can never succeed on a task retry: fail the run
WORKFLOW_FAILURE_EXCEPTION_TYPES: list[type[BaseException]] = [WorkflowCodeError]
