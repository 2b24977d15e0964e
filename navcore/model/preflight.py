"""The model preflight: can the worker(s) on a task queue serve these models?

The CLI asks before it starts a run (``navigator explore`` / ``batch run``): a
tiny ``NavigatorPreflight`` workflow runs the ``navigator.check_model`` activity
on the run's task queue, so the answer comes from a worker that will serve the
run — its credentials, its pricing table, its files — not from the CLI's own
environment. Verdicts carry a one-line problem, never a credential.

The preflight is advice, not the guarantee: workers come and go, and any of them may take any of
a run's tasks. The guarantee is at the tasks themselves: an activity that needs the run's model on
a worker that cannot serve it (an older ``navigator.yaml`` without the endpoint, no key, no price, no
script file) fails at once with :data:`NOT_SERVED_HERE_TYPE` (not retried in place), and the workflow
schedules it again — Temporal hands it to whichever worker polls next — for up to :data:`SERVE_ELSEWHERE_WINDOW`
before it gives up with that worker's reason.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "NOT_SERVED_HERE_TYPE",
    "SERVE_ELSEWHERE_WINDOW",
    "REDISPATCH_DELAY",
    "CHECK_TIMEOUT",
    "PREFLIGHT_WORKFLOW",
    "ACTIVITY_CHECK_MODEL",
    "worker_queue",
    "ModelCheckInput",
    "ModelVerdict",
    "ModelCheckResult",
]

#: registered workflow type and activity name (public API: never renamed)
PREFLIGHT_WORKFLOW = "NavigatorPreflight"
ACTIVITY_CHECK_MODEL = "navigator.check_model"
#: the ApplicationError type of "this worker cannot serve the run's model; another may" (the workflow reschedules it)
NOT_SERVED_HERE_TYPE = "ModelNotServedHere"
#: how long a run keeps handing a refused task back to the queue before it fails with the refusal
SERVE_ELSEWHERE_WINDOW = timedelta(minutes=2)
#: the pause between two such hand-backs (the refusing worker answers in milliseconds)
REDISPATCH_DELAY = timedelta(seconds=1)
#: how long one ``navigator.check_model`` may run: a worker's first check builds the provider, which
#: imports its SDK (google-genai took 7 s on a loaded 2-core machine); later checks take milliseconds
CHECK_TIMEOUT = timedelta(seconds=60)


def worker_queue(task_queue: str, identity: str) -> str:
    """The task queue only the worker named ``identity`` polls beside ``task_queue``.

    A check started on ``task_queue`` goes to whichever worker polls next; one started here is
    answered by that worker alone (each ``navigator worker`` serves ``NavigatorPreflight`` on it).
    """
    return f"{task_queue}/worker/{identity}"


ModelName = Annotated[str, Field(min_length=1, max_length=200)]


class ModelCheckInput(BaseModel):
    """The models a run (or every job of a batch) will use."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    models: list[ModelName] = Field(min_length=1, max_length=1000)


class ModelVerdict(BaseModel):
    """Whether the answering worker can serve one model, and if not, why (one line)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str
    ok: bool
    problem: str | None = None


class ModelCheckResult(BaseModel):
    """One verdict per requested model, in the requested order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    verdicts: list[ModelVerdict]
    #: who answered (the worker's identity), shown when a model is refused
    worker: str = ""

    def problems(self) -> dict[str, str]:
        """``model -> problem`` of every model the worker cannot serve."""
        return {v.model: v.problem or "refused" for v in self.verdicts if not v.ok}
