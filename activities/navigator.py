"""The navigator's non-model activities: scan, render, write the result.

Built once per worker as :class:`NavigatorActivities` with its dependencies
(artifact store, pricing, model registry, repo-map opener) injected. Its
opened engines live in an :class:`~activities.engines.EngineCache` *on the
instance* (never at class level: the sandbox re-imports modules and tests build
many instances); scans and renders refresh them, so every exploration sees the
repository as it is now. Names are stable public API: ``navigator.scan``,
``navigator.render_map``, ``navigator.write_result``. Model calls are the
``model.prepare`` / ``model.request`` activities (:mod:`activities.model_calls`).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from temporalio import activity
from temporalio.exceptions import ApplicationError

from durable_navigator.activities.artifacts import ArtifactStore, atomic_write_bytes
from durable_navigator.activities.engines import INDEX_PROGRESS, EngineCache, EngineFactory, open_repomap
from durable_navigator.activities.models.base import Model
from durable_navigator.activities.models.registry import ModelRegistry
from durable_navigator.activities.preflight import refuse_unless_served
from durable_navigator.activities.pricing_loader import TablePricer
from durable_navigator.activities.result_pack import compose
from durable_navigator.activities.sources import SourceResolver
from durable_navigator.navcore.navigator.activity_io import (
    IndexProgress,
    MapView,
    RenderMapInput,
    RenderOutput,
    ScanInput,
    ScanOutput,
    WriteResultInput,
    WriteResultOutput,
)
from durable_navigator.navcore.run.artifacts import ArtifactRef
from durable_navigator.navcore.model.endpoints import Endpoint
from durable_navigator.navcore.run.sources import is_reference
from durable_navigator.navtypes.errors import NavigatorError
from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.navtypes.mapmeta import MapMetadata

__all__ = ["NavigatorActivities", "ActivityLimits", "EngineFactory", "to_application_error"]

T = TypeVar("T")

MEDIA_MARKDOWN = "text/markdown; charset=utf-8"
MEDIA_JSON = "application/json"
MEDIA_TEXT = "text/plain; charset=utf-8"


class ActivityLimits(BaseModel):
    """Size limits that keep activity results (and so history) small."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: top files kept in the MapMetadata returned to the workflow
    history_top_files: int = Field(3, ge=0, le=50)
    #: seconds between liveness heartbeats of scan / render / prompt / result
    #: activities (the workflow sets a heartbeat timeout a few times larger, so a
    #: killed worker is noticed in seconds, not after the start-to-close timeout)
    heartbeat_every_s: float = Field(5.0, gt=0)


def to_application_error(exc: NavigatorError, details: list[Any] | None = None) -> ApplicationError:
    """A domain error as a non-retryable ``ApplicationError`` (it cannot succeed on retry)."""
    return ApplicationError(str(exc), *(details or []), type=exc.kind, non_retryable=True)


async def _heartbeat_while_running(every_s: float) -> None:
    """Heartbeat until cancelled; the blocking engine work runs in a thread meanwhile."""
    while True:
        activity.heartbeat()
        await asyncio.sleep(every_s)


class _IndexMeter:
    """Indexing progress from the engine's thread, heartbeated as :class:`IndexProgress` details.

    The worker's heartbeat throttle (1 s) bounds what reaches the server; the follower
    of the run (``explore``, ``status --watch``) reads the details of the pending scan.
    """

    #: how often a changed progress is heartbeated
    EVERY_S = 0.2

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._latest: IndexProgress | None = None
        self._started: float | None = None
        self._sent: IndexProgress | None = None

    def update(self, done: int, total: int) -> None:
        """The engine's ``progress(done, total)`` callback (any thread)."""
        now = time.monotonic()
        with self._lock:
            if self._started is None:
                self._started = now
            elapsed = now - self._started
            rate = done / elapsed if done and elapsed > 0 else None
            self._latest = IndexProgress(done=done, total=total, files_per_s=rate)

    async def beat(self, every_s: float) -> None:
        """Heartbeat the latest progress when it changes, and at least every ``every_s``."""
        last = float("-inf")
        while True:
            with self._lock:
                latest = self._latest
            if latest != self._sent or time.monotonic() - last >= every_s:
                activity.heartbeat(latest) if latest is not None else activity.heartbeat()
                self._sent, last = latest, time.monotonic()
            await asyncio.sleep(self.EVERY_S)

    def flush(self) -> None:
        """Heartbeat the last progress if the beat loop never sent it (an index faster than one beat)."""
        with self._lock:
            latest = self._latest
        if latest is not None and latest != self._sent:
            activity.heartbeat(latest)
            self._sent = latest


def _trimmed_metadata(meta: MapMetadata, top: int) -> MapMetadata:
    return meta.model_copy(
        update={
            "top_files": [f.model_copy(update={"why": []}) for f in meta.top_files[:top]],
            "timings_ms": {},
        }
    )


class NavigatorActivities:
    """The navigator's activities with their injected dependencies."""

    def __init__(
        self,
        store: ArtifactStore,
        *,
        pricer: TablePricer,
        models: ModelRegistry | None = None,
        model_overrides: Mapping[str, Model] | None = None,
        engine_factory: EngineFactory | None = None,
        token_counter: Callable[[str], int] | None = None,
        limits: ActivityLimits | None = None,
        endpoints: Mapping[str, Endpoint] | None = None,
        write_files: bool = True,
        source_cache: Path | None = None,
    ) -> None:
        """``model_overrides``: models served under a name of their own (tests, embedders);
        ``endpoints``: the configured OpenAI-compatible endpoints (``navigator.yaml``);
        ``write_files``: write result files under the request's ``out_dir`` here — off with an object
        store, where this host need not share a disk with the one that asked (it writes them);
        ``source_cache``: where snapshots and git checkouts are built (default: the user cache directory)."""
        self.store = store
        self.write_files = write_files
        self.pricer = pricer
        self.engine_factory = engine_factory or open_repomap
        self.engines = EngineCache(self.engine_factory, resolve=SourceResolver(store, source_cache))
        #: the exact token counter ``model.prepare`` counts prompts with (None: the engine's)
        self.count_tokens = token_counter
        self.limits = limits or ActivityLimits()
        #: the models this worker serves (the offline one reads this instance's engines)
        self.models = models or ModelRegistry(self.engine, overrides=model_overrides, endpoints=endpoints)
        #: the queue only this host polls, named in scan / render results ("" until a host worker serves it:
        #: ``workers.worker.build_host_worker`` sets it)
        self.host_queue = ""

    # -- helpers ---------------------------------------------------------

    async def engine(self, repo_root: str | Path) -> Any:
        """The current ``RepoMap`` of ``repo_root`` (see ``EngineCache.get``; scans and renders refresh it)."""
        return await self.engines.get(repo_root)

    def _put_text(self, text: str, media_type: str, summary: str) -> ArtifactRef:
        # an empty summary stays empty (the store's own default would quote the text)
        return self.store.put_bytes(text.encode("utf-8"), media_type, summary)

    def _get_text(self, ref: ArtifactRef) -> str:
        return self.store.get_bytes(ref).decode("utf-8")

    async def _guard(self, work: Awaitable[T], meter: _IndexMeter | None = None) -> T:
        """Run ``work`` while heartbeating (with ``meter``'s progress); domain errors become non-retryable."""
        every = self.limits.heartbeat_every_s
        beat = asyncio.create_task(meter.beat(every) if meter is not None else _heartbeat_while_running(every))
        try:
            result = await work
        except NavigatorError as exc:
            raise to_application_error(exc) from exc
        finally:
            beat.cancel()
        if meter is not None:
            meter.flush()
        return result

    async def _render(self, engine: Any, plan: FlightPlan) -> RenderOutput:
        result = await asyncio.to_thread(engine.render, plan)
        meta: MapMetadata = result.metadata
        # Internal refs carry no summary: they travel through history every iteration.
        map_ref = self._put_text(result.text, MEDIA_MARKDOWN, "")
        view_ref = self._put_text(MapView(metadata=meta, plan=plan).model_dump_json(), MEDIA_JSON, "")
        return RenderOutput(
            map_ref=map_ref,
            view_ref=view_ref,
            metadata=_trimmed_metadata(meta, self.limits.history_top_files),
            host_queue=self.host_queue,
        )

    # -- activities ------------------------------------------------------

    @activity.defn(name="navigator.scan")
    async def scan(self, inp: ScanInput) -> ScanOutput:
        """Check the model, index the repository (cached) and render the first map.

        While it indexes, its heartbeat details are :class:`IndexProgress` (files done / total, files/s).
        """
        meter = _IndexMeter()

        async def work() -> ScanOutput:
            models = list(dict.fromkeys([inp.model, *inp.other_models]))
            # unknown model, no credentials, no price on this worker: handed back for another worker
            refuse_unless_served(models, registry=self.models, pricer=self.pricer)
            by_model = {model: self.pricer.rates(model) for model in models}
            rates = by_model[inp.model]
            INDEX_PROGRESS.set(meter.update)  # this task's context: the opening thread inherits it
            engine = await self.engines.get(inp.repo_root, refresh=True)
            render = await self._render(engine, inp.flight_plan)
            goal_ref = self._put_text(inp.goal, MEDIA_TEXT, "goal") if inp.goal is not None else None
            return ScanOutput(
                goal_ref=goal_ref,
                # a snapshot or commit stays named by its locator: any host resolves it, a path only this one
                repo_root=inp.repo_root if is_reference(inp.repo_root) else str(engine.root),
                index_version=str(engine.index_version),
                files_total=len(engine.files),
                render=render,
                rates=rates,
                rates_by_model=by_model,
                host_queue=self.host_queue,
            )

        return await self._guard(work(), meter)

    @activity.defn(name="navigator.render_map")
    async def render_map(self, inp: RenderMapInput) -> RenderOutput:
        """Render the map under a flight plan (given, or stored plan + update) and store it."""

        async def work() -> RenderOutput:
            plan = inp.flight_plan
            if plan is None:
                assert inp.base_view_ref is not None and inp.update is not None  # RenderMapInput checks it
                base = MapView.model_validate_json(self._get_text(inp.base_view_ref)).plan
                plan = base.apply(inp.update)
            return await self._render(await self.engines.get(inp.repo_root, refresh=True), plan)

        return await self._guard(work())

    @activity.defn(name="navigator.write_result")
    async def write_result(self, inp: WriteResultInput) -> WriteResultOutput:
        """Write ``context.md`` (within ``inp.token_budget``) and ``report.json`` into ``<out_dir>/<workflow_id>/``.

        Both atomically; the pack is composed by :func:`activities.result_pack.compose`.
        """

        async def work() -> WriteResultOutput:
            out = Path(inp.out_dir).expanduser().resolve() / inp.workflow_id
            map_text = self._get_text(inp.map_ref) if inp.map_ref else "(no map was rendered)\n"
            plan = MapView.model_validate_json(self._get_text(inp.view_ref)).plan if inp.view_ref else None
            try:
                engine = await self.engines.get(inp.repo_root)
            except NavigatorError:
                engine = None  # the repository is gone: the map's own notes still go in
            # re-rendering the map smaller is engine work: off the event loop, like every render
            composed = await asyncio.to_thread(compose, inp, map_text, engine, plan)
            context = composed.pack.text
            context_ref = self._put_text(context, MEDIA_MARKDOWN, f"context pack for {inp.workflow_id}")
            report_text = json.dumps(composed.report, indent=2, sort_keys=True) + "\n"
            report_ref = self._put_text(report_text, MEDIA_JSON, f"report for {inp.workflow_id}")
            if self.write_files:
                await asyncio.to_thread(atomic_write_bytes, out / "context.md", context.encode("utf-8"))
                await asyncio.to_thread(atomic_write_bytes, out / "report.json", report_text.encode("utf-8"))
            return WriteResultOutput(
                context_path=str(out / "context.md"),
                report_path=str(out / "report.json"),
                context_ref=context_ref,
                report_ref=report_ref,
                pack=composed.figures,
            )

        return await self._guard(work())

    def all(self) -> list[Callable[..., Any]]:
        """Every activity of this instance, for worker registration."""
        return [self.scan, self.render_map, self.write_result]
