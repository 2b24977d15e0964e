"""Before a run starts: can the worker that will serve it serve its model(s)?

Two ways, one check (:func:`activities.preflight.model_problem`):

* the run will be served by this command's in-process worker (no
  ``TEMPORAL_ADDRESS``, no ``--detach``): the worker is this process, so the
  check runs here, against the same environment, before any server starts;
* otherwise the workers live elsewhere: the ``NavigatorPreflight`` workflow runs
  ``navigator.check_model`` on the run's task queue and the worker that picks it
  up answers. One answer speaks for one worker only, and each check goes to whichever
  worker polls: the check is repeated until every model has a worker that can serve it,
  or every worker the queue lists as polling (``DescribeTaskQueue``) has answered, within
  :data:`PREFLIGHT_TIMEOUT`. A model refused by every worker that answered is refused (exit 2);
  one that some worker serves starts, and the workers that cannot serve it are named (their
  tasks are handed back to the queue at run time: ``navcore.preflight``). When none answers
  (no worker yet, or one that predates the preflight), the run starts anyway — it waits for
  a worker — and the user is told.
"""

from __future__ import annotations

import asyncio
import uuid
from datetime import timedelta

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

from temporalio.client import WorkflowFailureError
from temporalio.service import RPCError

from durable_navigator.activities.models.registry import ModelRegistry
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.activities.preflight import check_models, needs_worker_check
from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.connect import TemporalSession
from durable_navigator.cli.errors import TemporalUnreachableError, stderr
from durable_navigator.navcore.preflight import PREFLIGHT_WORKFLOW, ModelCheckInput, ModelCheckResult
from durable_navigator.navtypes.errors import ModelError

__all__ = ["PREFLIGHT_TIMEOUT", "IN_PROCESS", "problems_here", "problems_on_workers", "refuse_unservable",
           "refuse_unservable_on_workers"]

#: a polling worker answers in well under a second; this bounds the wait when none polls
PREFLIGHT_TIMEOUT = timedelta(seconds=5)
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


async def _ask_one(session: TemporalSession, wanted: list[str], timeout: float) -> ModelCheckResult:
    """One ``NavigatorPreflight`` run: the verdicts of whichever worker takes it."""
    bound = timedelta(seconds=max(timeout, 1.0))
    return await asyncio.wait_for(
        session.client.execute_workflow(
            PREFLIGHT_WORKFLOW,
            ModelCheckInput(models=wanted),
            id=f"preflight-{uuid.uuid4().hex[:12]}",
            task_queue=session.task_queue,
            result_type=ModelCheckResult,
            # the server ends it if no worker takes it: nothing is left for a later worker
            execution_timeout=bound,
        ),
        # the result long poll returns at the execution timeout; this is only a backstop
        bound.total_seconds() + 5,
    )


def _unserved(wanted: list[str], answers: dict[str, dict[str, str]]) -> dict[str, str]:
    """``model -> every answering worker's problem`` for the models no answering worker serves."""
    return {m: "; ".join(f"{p} (worker {w})" if len(answers) > 1 else p for w, p in sorted(
                (w, problems[m]) for w, problems in answers.items()))
            for m in wanted if all(m in problems for problems in answers.values())}


async def problems_on_workers(session: TemporalSession, models: list[str]) -> dict[str, str] | None:
    """``model -> problem`` for the models no worker on the session's task queue can serve.

    ``None`` when none answered. Asks again (each check goes to whichever worker polls) until
    every model has a worker that serves it or every listed poller has answered.
    """
    wanted = [m for m in dict.fromkeys(models) if needs_worker_check(m)]
    if not wanted:
        return {}
    timeout = PREFLIGHT_TIMEOUT.total_seconds()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    pollers = await _pollers(session)
    answers: dict[str, dict[str, str]] = {}
    for _ in range(max(1, 4 * len(pollers))):
        try:
            result = await _ask_one(session, wanted, deadline - loop.time() if answers else timeout)
        except (WorkflowFailureError, TimeoutError) as exc:
            if answers:
                break  # what the answers so far say stands
            cause = getattr(getattr(exc, "cause", None), "message", None) or "no answer"
            stderr.print(
                f"no worker on task queue {session.task_queue!r} answered the model check within {timeout:.0f}s "
                f"({cause}); starting anyway: the run waits for a worker", markup=False,
            )
            return None
        except RPCError as exc:
            raise TemporalUnreachableError(
                f"Temporal refused the model check on {session.address}: {exc.message[:200]}"
            ) from None
        answers[result.worker] = result.problems()
        if not _unserved(wanted, answers) or pollers <= answers.keys() or loop.time() >= deadline:
            break
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
