"""Build the navigator worker: workflows + activities on one task queue.

``build_worker`` is wiring only: the activities instance (with its artifact
store, pricing and model providers) is built here or injected by tests and by
``navigator worker``. The client passed in must use :data:`DATA_CONVERTER`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.client import Client
from temporalio.worker import Worker

from durable_navigator.activities.artifacts import ArtifactStore, LocalArtifactStore, default_artifact_dir
from durable_navigator.activities.batch import BatchActivities
from durable_navigator.activities.model_calls import ModelCallActivities
from durable_navigator.activities.navigator import NavigatorActivities
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.activities.preflight import PreflightActivities
from durable_navigator.activities.investigation import InvestigationActivities
from durable_navigator.activities.research import ResearchActivities
from durable_navigator.activities.tools import CodeToolActivities
from durable_navigator.navcore.model.endpoints import Endpoint
from durable_navigator.navcore.model.preflight import worker_queue
from durable_navigator.navtypes.errors import NavigatorError
from durable_navigator.workflows.navigator import NavigatorWorkflow
from durable_navigator.workflows.batch import BatchWorkflow
from durable_navigator.workflows.preflight import PreflightWorkflow
from durable_navigator.workflows.branches import ExploreBranchesWorkflow
from durable_navigator.workflows.investigation import InvestigationWorkflow
from durable_navigator.workflows.research import ResearchWorkflow
from durable_navigator.workers.converter import DATA_CONVERTER
from durable_navigator.workers.failures import WORKFLOW_FAILURE_EXCEPTION_TYPES
from durable_navigator.workers.runlog import RunLogInterceptor

__all__ = [
    "DEFAULT_TASK_QUEUE",
    "WORKFLOWS",
    "WORKFLOW_FAILURE_EXCEPTION_TYPES",
    "default_artifact_dir",
    "build_activities",
    "build_worker",
    "build_check_worker",
    "build_host_worker",
    "host_queue",
    "HOST_ACTIVITIES",
]

DEFAULT_TASK_QUEUE = "navigator"
#: every workflow class this worker serves
WORKFLOWS: list[type] = [NavigatorWorkflow, BatchWorkflow, PreflightWorkflow, ResearchWorkflow, InvestigationWorkflow,
                         ExploreBranchesWorkflow]
#: the activities a host's own queue serves (:func:`build_host_worker`): they read the repository's index,
#: which the host that ran the run's last one has warm (``workflows/blocks/affinity.py``). ``model.request``
#: is not one: a lost host must never make a run pay a model call twice.
HOST_ACTIVITIES = frozenset({"navigator.scan", "navigator.render_map", "model.prepare", "investigate.check_evidence",
                             "research.aggregate", "navigator.write_result", "research.write_answer"})
#: every code tool (``tools.<name>``) is index-bound too
HOST_ACTIVITY_PREFIXES = ("tools.",)
#: the longest a heartbeat waits before it is sent (and a cancel request comes back)
HEARTBEAT_THROTTLE = timedelta(seconds=1)


def build_activities(
    artifact_dir: Path | None = None,
    *,
    endpoints: Mapping[str, Endpoint] | None = None,
    pricing_file: Path | None = None,
    store: ArtifactStore | None = None,
) -> NavigatorActivities:
    """The production activities: artifact store + prices + real providers.

    ``endpoints`` and ``pricing_file`` come from the worker's own configuration
    (``navigator.yaml`` / environment): the OpenAI-compatible endpoints it serves
    and their declared prices, and the user's price overrides. ``store``: the configured
    artifact store (``cli.stores.open_artifact_store``); default a local directory. Only with a
    local directory does the worker write result files itself: with an object store it may share
    no disk with the machine that asked, whose CLI writes them from the store.
    """
    store = store or LocalArtifactStore(artifact_dir or default_artifact_dir())
    return NavigatorActivities(store, pricer=TablePricer.load(pricing_file, endpoints=endpoints), endpoints=endpoints,
                               write_files=isinstance(store, LocalArtifactStore))


def build_worker(
    client: Client,
    task_queue: str = DEFAULT_TASK_QUEUE,
    *,
    activities: NavigatorActivities | None = None,
    extra_activities: Sequence[Callable[..., Any]] = (),
    extra_workflows: Sequence[type] = (),
    activity_executor: Executor | None = None,
    max_concurrent_activities: int | None = None,
    endpoints: Mapping[str, Endpoint] | None = None,
    pricing_file: Path | None = None,
    store: ArtifactStore | None = None,
) -> Worker:
    """A worker for ``task_queue`` serving the navigator workflow and its activities.

    ``extra_activities`` registered under a name already used replace the
    instance's activity of that name (how tests fake one activity).
    ``endpoints`` / ``pricing_file`` / ``store`` configure the default activities (ignored with ``activities``).
    """
    if client.data_converter.payload_converter_class is not DATA_CONVERTER.payload_converter_class:
        raise NavigatorError("the Temporal client must use workers.converter.DATA_CONVERTER; reconnect with it")
    acts = activities or build_activities(endpoints=endpoints, pricing_file=pricing_file, store=store)
    by_name = _served(acts)
    for fn in extra_activities:
        by_name[_activity_name(fn)] = fn
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[*WORKFLOWS, *extra_workflows],
        activities=list(by_name.values()),
        activity_executor=activity_executor,
        workflow_failure_exception_types=WORKFLOW_FAILURE_EXCEPTION_TYPES,
        # one log line per run started / finished / failed (silent on replay)
        interceptors=[RunLogInterceptor(WORKFLOW_FAILURE_EXCEPTION_TYPES)],
        # heartbeats reach the server at least once a second, so a stop cancels a model call in ~1 s
        max_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
        default_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
        # every activity goes through the task queue's matching: eagerly started activities stayed on
        # the worker that ran the workflow task, so a worker that cannot serve the run's model got
        # every hand-back (ModelNotServedHere) again instead of another worker (navcore/model/preflight.py)
        disable_eager_activity_execution=True,
        **({"max_concurrent_activities": max_concurrent_activities} if max_concurrent_activities else {}),
    )


def build_check_worker(client: Client, task_queue: str, activities: NavigatorActivities) -> Worker:
    """This worker's own model-check queue (:func:`navcore.model.preflight.worker_queue` of its identity).

    Serves ``NavigatorPreflight`` and ``navigator.check_model`` only, with the registry and prices of
    ``activities`` (the ones the worker of ``task_queue`` serves runs with), so the CLI can ask each
    worker the queue lists as polling, not just whichever takes a check first.
    """
    preflight = PreflightActivities(registry=activities.models, pricer=activities.pricer)
    return Worker(client, task_queue=worker_queue(task_queue, client.identity), workflows=[PreflightWorkflow],
                  activities=preflight.all(), max_concurrent_activities=2, max_concurrent_workflow_tasks=2)


def host_queue(task_queue: str, identity: str) -> str:
    """The queue only the worker named ``identity`` polls for a run's index-bound activities
    (:data:`HOST_ACTIVITIES`): the host whose index of the run's repository is warm (``workflows/blocks/affinity.py``)."""
    return f"{task_queue}/host/{identity}"


def _served(acts: NavigatorActivities) -> dict[str, Callable[..., Any]]:
    """Every activity a worker serves with ``acts``, by name; each one that reads the index names this host's
    queue in its result once the host serves one (:func:`build_host_worker` sets ``acts.host_queue``)."""
    def own_queue() -> str:  # read at each call: set after the instances are built
        return acts.host_queue

    # every model call of every workflow goes through model.prepare / model.request
    models = ModelCallActivities(acts.store, pricer=acts.pricer, registry=acts.models, engines=acts.engine,
                                 token_counter=acts.count_tokens, host_queue=own_queue)
    tools = CodeToolActivities(engine_for=acts.engine, store=acts.store, host_queue=own_queue)
    # the CLI's model check answers with this worker's own registry and prices
    preflight = PreflightActivities(registry=acts.models, pricer=acts.pricer)
    research = ResearchActivities(acts.store, acts.engine, write_files=acts.write_files, host_queue=own_queue)
    investigation = InvestigationActivities(acts.store, acts.engine, write_files=acts.write_files,
                                            host_queue=own_queue)
    by_name: dict[str, Callable[..., Any]] = {}
    for fn in [*acts.all(), *models.all(), *tools.all(), *BatchActivities(acts.store, write_files=acts.write_files).all(),
               *preflight.all(), *research.all(), *investigation.all()]:
        by_name[_activity_name(fn)] = fn
    return by_name


def _host_bound(name: str) -> bool:
    return name in HOST_ACTIVITIES or name.startswith(HOST_ACTIVITY_PREFIXES)


def build_host_worker(client: Client, task_queue: str, activities: NavigatorActivities,
                      max_concurrent_activities: int | None = None, *,
                      extra_activities: Sequence[Callable[..., Any]] = ()) -> Worker:
    """This host's own queue (:func:`host_queue` of its identity) for the index-bound activities
    (:data:`HOST_ACTIVITIES`: scans, renders, code tools, model requests, evidence checks, merges of findings).

    Serves them with ``activities`` (the instance the worker of ``task_queue`` serves, so both read one
    engine cache) and makes their results name this queue, so a run sends its next one here.
    Run it beside that worker, for as long as it runs: a run waits ``host_start_timeout_s`` for a host
    that stopped before any worker takes the task instead. ``extra_activities`` replace the index-bound
    activity of their name, as in :func:`build_worker` (how tests fake one).
    """
    queue = host_queue(task_queue, client.identity)
    activities.host_queue = queue
    served = _served(activities)
    for fn in extra_activities:
        served[_activity_name(fn)] = fn
    return Worker(client, task_queue=queue, activities=[fn for name, fn in served.items() if _host_bound(name)],
                  max_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
                  default_heartbeat_throttle_interval=HEARTBEAT_THROTTLE,
                  **({"max_concurrent_activities": max_concurrent_activities} if max_concurrent_activities else {}))


def _activity_name(fn: Callable[..., Any]) -> str:
    from temporalio.activity import _Definition

    defn = _Definition.from_callable(fn)
    if defn is None or defn.name is None:
        raise NavigatorError(f"{fn!r} is not a named Temporal activity; decorate it with @activity.defn(name=...)")
    return defn.name
