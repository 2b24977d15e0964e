"""Before a run starts: can the worker that will serve it serve its model(s)?

Two ways, one check (:func:`activities.preflight.model_problem`):

* the run will be served by this command's in-process worker (no
  ``TEMPORAL_ADDRESS``, no ``--detach``): the worker is this process, so the
  check runs here, against the same environment, before any server starts;
* otherwise the workers live elsewhere: the ``NavigatorPreflight`` workflow runs
  ``navigator.check_model`` on the run's task queue and the worker that picks it
  up answers. One answer speaks for one worker only: when that worker cannot serve a model,
  every other worker the queue lists as polling (``DescribeTaskQueue``) is asked by name, on the
  queue only it polls (``navcore.model.preflight.worker_queue``; ``navigator worker`` serves it). A model
  refused by every worker that answered is refused (exit 2); one that some worker serves starts, and
  the workers that cannot serve it are named (their tasks are handed back to the queue at run time:
  ``navcore.model.preflight``). When no worker *takes* the first check within :data:`PREFLIGHT_TIMEOUT` (no
  worker yet), or the one that takes it cannot run it (it predates the preflight), the run starts
  anyway — it waits for a worker — and the user is told.

The deadline bounds the wait for a worker to take the check (its first workflow task starting,
seen in the check's history), not the check itself: a worker's first check builds the provider
and imports its SDK (seconds on a loaded machine), and a worker that has taken the check will
answer; that wait is bounded by the check's own timeouts (``navcore.model.preflight.CHECK_TIMEOUT``).
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

from temporalio.api.enums.v1 import EventType, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.service import RPCError

from durable_navigator.activities.models.registry import ModelRegistry
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.activities.preflight import check_models, needs_worker_check
from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.connect import TemporalSession
from durable_navigator.cli.errors import TemporalUnreachableError, stderr
from durable_navigator.navcore.model.preflight import (
    CHECK_TIMEOUT,
    PREFLIGHT_WORKFLOW,
    ModelCheckInput,
    ModelCheckResult,
    worker_queue,
)
from durable_navigator.navtypes.errors import ModelError

__all__ = ["PREFLIGHT_TIMEOUT", "IN_PROCESS", "problems_here", "problems_on_workers", "refuse_unservable",
           "refuse_unservable_on_workers"]

#: how long a check may wait for a worker to take it (a polling worker takes it in milliseconds)
PREFLIGHT_TIMEOUT = timedelta(seconds=5)
#: once taken, the answer comes within the check activity's timeout; the slack covers its workflow tasks
ANSWER_TIMEOUT = CHECK_TIMEOUT + timedelta(seconds=10)
#: a taken check that ends with one of these never answers (e.g. a worker without the preflight workflow)
_NO_ANSWER_EVENTS = frozenset({EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED})
#: how the in-process worker is named in refusals
IN_PROCESS = "the in-process worker"


def problems_here(models: list[str], config: NavigatorConfig | None = None) -> dict[str, str]:
    """``model -> problem`` as the in-process worker would see it (its providers, endpoints, prices, env)."""
    wanted = [m for m in dict.fromkeys(models) if needs_worker_check(m)]
    if not wanted:
        return {}
    endpoints = config.endpoints if config is not None else None
    pricing_file = config.pricing_file if config is not None else None
    # offline is never checked (needs_worker_check), so this registry needs no repository engines
    verdicts = check_models(wanted, registry=ModelRegistry(endpoints=endpoints),
                            pricer=TablePricer.load(pricing_file, endpoints=endpoints))
    return {v.model: v.problem or "refused" for v in verdicts if not v.ok}


async def _pollers(session: TemporalSession) -> set[str]:
    """Identities of the workers that recently polled the session's task queue for activities."""
    request = DescribeTaskQueueRequest(namespace=session.namespace, task_queue=TaskQueue(name=session.task_queue),
                                       task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY)
    try:
        described = await session.client.workflow_service.describe_task_queue(request, timeout=PREFLIGHT_TIMEOUT)
    except RPCError:
        return set()  # unknown: one answer is all the preflight can go on
    return {poller.identity for poller in described.pollers}


class _NoAnswer(Exception):
    """The check was not answered: no worker took it in time, or the one that took it failed it."""


async def _taken(handle: WorkflowHandle[object, ModelCheckResult]) -> None:
    """Return once a worker has started the check's first workflow task (it has taken the check)."""
    async for event in handle.fetch_history_events(wait_new_event=True):
        if event.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED:
            return


async def _answered(handle: WorkflowHandle[object, ModelCheckResult]) -> None:
    """Return when the check's run closes; ``_NoAnswer`` when a worker fails its workflow task."""
    async for event in handle.fetch_history_events(wait_new_event=True):
        if event.event_type in _NO_ANSWER_EVENTS:
            raise _NoAnswer("the worker that took it could not run it (does it predate the preflight?)")


async def _ask_one(session: TemporalSession, wanted: list[str], pickup_s: float,
                   task_queue: str | None = None) -> ModelCheckResult:
    """One ``NavigatorPreflight`` run: the verdicts of whichever worker takes it within ``pickup_s``.

    On ``task_queue`` (a worker's own queue) only that worker can take it; by default it goes to
    the session's task queue, where whichever worker polls next takes it.
    """
    pickup = timedelta(seconds=pickup_s)
    handle: WorkflowHandle[object, ModelCheckResult] = await session.client.start_workflow(
        PREFLIGHT_WORKFLOW,
        ModelCheckInput(models=wanted),
        id=f"preflight-{uuid.uuid4().hex[:12]}",
        task_queue=task_queue or session.task_queue,
        result_type=ModelCheckResult,
        # a backstop if this process dies before it ends an untaken check: the server ends it then
        execution_timeout=pickup + ANSWER_TIMEOUT,
    )
    try:
        try:
            await asyncio.wait_for(_taken(handle), pickup.total_seconds())
        except TimeoutError:
            raise _NoAnswer(f"no worker took it within {pickup.total_seconds():.0f}s") from None
        # taken: the worker's answer or the check's own timeouts end this wait, whatever the machine's load
        await asyncio.wait_for(_answered(handle), ANSWER_TIMEOUT.total_seconds() + 5)
    except (_NoAnswer, TimeoutError):
        await _end_unanswered(handle)
        raise
    return await handle.result()


async def _end_unanswered(handle: WorkflowHandle[object, ModelCheckResult]) -> None:
    """End a check that got no answer, so no later worker runs it (it may have closed meanwhile)."""
    try:
        await handle.terminate("the model check got no answer in time; the run starts without it")
    except RPCError:
        pass  # already closed: a worker answered it just now; nothing is left behind


def _unserved(wanted: list[str], answers: dict[str, dict[str, str]]) -> dict[str, str]:
    """``model -> every answering worker's problem`` for the models no answering worker serves."""
    return {m: "; ".join(f"{p} (worker {w})" if len(answers) > 1 else p for w, p in sorted(
                (w, problems[m]) for w, problems in answers.items()))
            for m in wanted if all(m in problems for problems in answers.values())}


async def problems_on_workers(session: TemporalSession, models: list[str]) -> dict[str, str] | None:
    """``model -> problem`` for the models no worker on the session's task queue can serve.

    ``None`` when none answered. The check goes to the task queue first (whichever worker takes
    it answers); when that worker cannot serve a model, every other worker the queue lists as
    polling is asked by name, on its own queue (:func:`navcore.model.preflight.worker_queue`), all at
    once. A worker that does not take its check in time (it stopped, or it serves no own queue)
    has no say. Asking again on the shared queue would reach whichever worker polls next, maybe the
    same one every time: a model that another worker serves was refused that way.
    """
    wanted = [m for m in dict.fromkeys(models) if needs_worker_check(m)]
    if not wanted:
        return {}
    pollers = await _pollers(session)
    try:
        first = await _ask_one(session, wanted, PREFLIGHT_TIMEOUT.total_seconds())
    except (_NoAnswer, WorkflowFailureError, TimeoutError) as exc:
        cause = getattr(getattr(exc, "cause", None), "message", None) or str(exc) or "no answer"
        stderr.print(
            f"no worker on task queue {session.task_queue!r} answered the model check ({cause}); "
            "starting anyway: the run waits for a worker", markup=False,
        )
        return None
    except RPCError as exc:
        raise TemporalUnreachableError(
            f"Temporal refused the model check on {session.address}: {exc.message[:200]}"
        ) from None
    answers: dict[str, dict[str, str]] = {first.worker: first.problems()}
    others = sorted(pollers - answers.keys())
    if _unserved(wanted, answers) and others:
        replies = await asyncio.gather(*(
            _ask_one(session, wanted, PREFLIGHT_TIMEOUT.total_seconds(), worker_queue(session.task_queue, w))
            for w in others), return_exceptions=True)
        for reply in replies:
            if isinstance(reply, RPCError):
                raise TemporalUnreachableError(
                    f"Temporal refused the model check on {session.address}: {reply.message[:200]}") from None
            if isinstance(reply, ModelCheckResult):
                answers[reply.worker] = reply.problems()
            elif not isinstance(reply, (_NoAnswer, WorkflowFailureError, TimeoutError)):
                raise reply
    _note_partial(session, wanted, answers)
    return _unserved(wanted, answers)


def _note_partial(session: TemporalSession, wanted: list[str], answers: dict[str, dict[str, str]]) -> None:
    """Name the workers that cannot serve a model another worker serves (their tasks go elsewhere)."""
    unserved = _unserved(wanted, answers)
    for worker, problems in sorted(answers.items()):
        for model, problem in problems.items():
            if model not in unserved:
                stderr.print(f"note: worker {worker} on task queue {session.task_queue!r} cannot serve {model!r} "
                             f"({problem}); its tasks of this run go to the workers that can", markup=False)


def refuse_unservable(model: str, problems: dict[str, str] | None, where: str) -> None:
    """``ModelError`` (exit 2) when the worker reported a problem with ``model``."""
    if problems and model in problems:
        raise ModelError(f"model {model!r} cannot be served by {where}: {problems[model]}")


async def refuse_unservable_on_workers(session: TemporalSession, models: list[str]) -> None:
    """Ask the task queue's workers about ``models`` (not needed for the in-process worker: asked before)."""
    if session.in_process_worker:
        return
    problems = await problems_on_workers(session, models)
    for name in models:
        refuse_unservable(name, problems, f"the worker(s) on task queue {session.task_queue!r}")
