"""What ``navigator gc`` runs (its signature and help: :mod:`cli.gc_cmd`).

Blobs are content-addressed and shared by runs, so none can be deleted because one run ended; a blob
goes when **no run Temporal still shows references it** and it was **last stored before the age guard**:

1. list the store's blobs (the local directory, or the bucket's ``<prefix>/<namespace>/``) with the
   time each was last put — first, so a blob stored while gc runs is never among them;
2. read the event history of every run of the namespace the server still shows (running, or closed
   within retention) and take every SHA-256 named anywhere in it (inputs, results, heartbeats, memos);
   then, transitively, every SHA-256 named inside a referenced blob (a stored request names the one
   before it);
3. delete the listed blobs that are neither referenced nor newer than ``--older-than``. The guard covers
   what a run in flight has stored but not yet reported to Temporal (an activity still running); a
   re-put refreshes a blob's time (:data:`activities.artifacts.REFRESH_AFTER_S`), so a blob a run
   uses again is young again.

If Temporal or the store does not answer, nothing is deleted: an unreadable history could be the one
that references a blob.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import typer
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from durable_navigator.activities.artifacts import ArtifactStore, BlobInfo
from durable_navigator.cli.common import config_of, print_json, run_async, stdout
from durable_navigator.cli.connect import open_session
from durable_navigator.cli.errors import CliError, TemporalUnreachableError, handles_errors, stderr
from durable_navigator.cli.stores import open_artifact_store, store_description
from durable_navigator.navcore.run.artifacts import ArtifactRef
from durable_navigator.navtypes.errors import ArtifactError

__all__ = ["run_gc", "run_cache_gc", "parse_age", "GcPlan", "plan_gc", "history_references"]

_HEX = re.compile(rb"[0-9a-f]{64}")
_AGE = re.compile(r"^(\d+(?:\.\d+)?)([smhd])$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
#: histories read at once
_PARALLEL = 8
#: blobs up to this size are read for the references they hold (stored requests, findings, views are
#: small JSON); larger ones are maps and file contents, which name no blob -- except a snapshot's
#: manifest (over 8 MiB from about 80,000 files), which is always read: it names every file of its tree
SCAN_LIMIT = 8 * 1024 * 1024
#: how a snapshot's manifest is named: its locator (``navcore.run.sources.locator``) or a source's JSON
_MANIFEST_NAMED = re.compile(rb'snapshot:([0-9a-f]{64})\+|"manifest_sha256"\s*:\s*"([0-9a-f]{64})"')


def parse_age(text: str) -> timedelta:
    """``7d`` / ``12h`` / ``30m`` / ``0s`` → a duration; anything else is one line saying what to write."""
    match = _AGE.match(text.strip())
    if match is None:
        raise CliError(f"--older-than {text!r} is not an age; write a number and a unit: 7d, 12h, 30m or 0s")
    return timedelta(seconds=float(match.group(1)) * _UNIT_S[match.group(2)])


@dataclass
class GcPlan:
    """What the store holds, what is referenced, and what goes."""

    blobs: list[BlobInfo]
    runs: int
    referenced: set[str]
    doomed: list[BlobInfo] = field(default_factory=list)
    #: unreferenced, but stored within the age guard
    recent: int = 0


def _hashes(data: bytes) -> set[str]:
    return {m.decode("ascii") for m in _HEX.findall(data)}


def _manifests(data: bytes) -> set[str]:
    """The snapshot manifests ``data`` names."""
    return {(a or b).decode("ascii") for a, b in _MANIFEST_NAMED.findall(data)}


async def history_references(client: Client) -> tuple[int, set[str], set[str]]:
    """How many runs the namespace shows, every SHA-256 their histories name, and which of those are
    snapshot manifests."""
    runs = [(entry.id, entry.run_id) async for entry in client.list_workflows()]
    gate = asyncio.Semaphore(_PARALLEL)

    async def one(workflow_id: str, run_id: str | None) -> tuple[set[str], set[str]]:
        async with gate:
            try:
                history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
            except RPCError as exc:
                if exc.status == RPCStatusCode.NOT_FOUND:
                    return set(), set()  # removed by retention since it was listed: it references nothing now
                raise
        # the raw events: payloads are JSON bytes there, so every ref's sha256 is found as written
        raw = [event.SerializeToString() for event in history.events]
        return set().union(*map(_hashes, raw)), set().union(*map(_manifests, raw))

    found: set[str] = set()
    manifests: set[str] = set()
    for names, named_manifests in await asyncio.gather(*(one(wid, rid) for wid, rid in runs)):
        found |= names
        manifests |= named_manifests
    return len(runs), found, manifests


def _closure(store: ArtifactStore, roots: Iterable[str], present: dict[str, BlobInfo],
             manifests: Iterable[str] = ()) -> set[str]:
    """``roots`` and every blob a referenced blob names, transitively (only blobs the store holds).

    A snapshot manifest (named as one in the histories or in a blob read here) is read whatever its
    size: it names every file of its tree.
    """
    manifests = set(manifests)
    seen: set[str] = set()
    too_big: set[str] = set()  # kept, not read: read after all if it turns out to be a manifest
    todo = [sha for sha in roots if sha in present]
    while todo:
        sha = todo.pop()
        if sha in seen:
            continue
        seen.add(sha)
        blob = present[sha]
        if blob.size > SCAN_LIMIT and sha not in manifests:
            too_big.add(sha)
            continue
        try:
            data = store.get_bytes(ArtifactRef(sha256=sha, size=blob.size))
        except ArtifactError:
            continue  # corrupt or gone meanwhile: kept (it is referenced), nothing to read in it
        new = _manifests(data) - manifests
        manifests |= new
        for late in new & too_big:  # skipped for its size before it was known as a manifest
            seen.discard(late)
            too_big.discard(late)
            todo.append(late)
        todo.extend(name for name in _hashes(data) if name in present and name not in seen)
    return seen


async def plan_gc(client: Client, store: Any, older_than: timedelta, now: datetime | None = None) -> GcPlan:
    """List, collect references, and choose the blobs to delete (nothing is deleted here)."""
    blobs = await asyncio.to_thread(lambda: list(store.blobs()))
    runs, named, manifests = await history_references(client)
    present = {blob.sha256: blob for blob in blobs}
    referenced = await asyncio.to_thread(_closure, store, named, present, manifests)
    cutoff = (now or datetime.now(timezone.utc)) - older_than
    plan = GcPlan(blobs=blobs, runs=runs, referenced=referenced)
    for blob in blobs:
        if blob.sha256 in referenced:
            continue
        if blob.modified < cutoff:
            plan.doomed.append(blob)
        else:
            plan.recent += 1
    return plan


def _mb(size: int) -> str:
    return f"{size / 1e6:.1f} MB"


@handles_errors
def run_gc(ctx: typer.Context, older_than: str, dry_run: bool, json_out: bool) -> None:
    """The ``navigator gc`` command."""
    age = parse_age(older_than)
    config = config_of(ctx)
    store = open_artifact_store(config)
    if not hasattr(store, "blobs"):
        raise CliError("this artifact store cannot list its blobs; gc works on the local directory and S3 stores")

    async def go() -> tuple[GcPlan, int]:
        async with open_session(config, allow_embedded=True, own_embedded=True) as session:
            try:
                plan = await plan_gc(session.client, store, age)
            except RPCError as exc:  # an unread history may be the one naming a blob: delete nothing
                raise TemporalUnreachableError(f"reading the runs' histories failed ({exc.message}); nothing was "
                                               "deleted: run `navigator gc` again once Temporal answers") from None
        deleted = 0 if dry_run else await asyncio.to_thread(store.delete, [b.sha256 for b in plan.doomed])
        return plan, deleted

    try:
        plan, deleted = run_async(go())
    except OSError as exc:  # the object store stopped answering: nothing more is deleted
        raise CliError(f"{exc}; run `navigator gc` again once the store answers") from None
    where = store_description(config)
    gone = sum(b.size for b in plan.doomed)
    if json_out:
        print_json({"store": where, "namespace": config.temporal.namespace, "runs": plan.runs,
                    "blobs": len(plan.blobs), "bytes": sum(b.size for b in plan.blobs),
                    "referenced": len(plan.referenced), "recent": plan.recent, "older_than": older_than,
                    "dry_run": dry_run, "deleted": deleted, "deleted_bytes": 0 if dry_run else gone,
                    "unreferenced": sorted(b.sha256 for b in plan.doomed)})
        return
    if dry_run:
        for blob in sorted(plan.doomed, key=lambda b: b.modified):
            stdout.print(f"would delete {blob.sha256} · {blob.size} B · stored "
                         f"{blob.modified.isoformat(timespec='seconds')}", markup=False)
    verb = "would delete" if dry_run else "deleted"
    stderr.print(f"{where}: {len(plan.blobs)} blobs ({_mb(sum(b.size for b in plan.blobs))}); "
                 f"{len(plan.referenced)} referenced by {plan.runs} runs of namespace "
                 f"{config.temporal.namespace!r}; {plan.recent} unreferenced but newer than {older_than} kept; "
                 f"{verb} {len(plan.doomed)} ({_mb(gone)})", markup=False, soft_wrap=True)


@handles_errors
def run_cache_gc(older_than: str, dry_run: bool, json_out: bool) -> None:
    """``navigator gc --caches``: this host's source cache (no Temporal, no store: nothing there is shared)."""
    from durable_navigator.activities.source_cache import prune
    from durable_navigator.activities.sources import default_source_cache

    age = parse_age(older_than)
    cache = default_source_cache()
    got = prune(cache, age.total_seconds(), dry_run=dry_run)
    if json_out:
        print_json({"cache": str(cache), "older_than": older_than, "dry_run": dry_run, "trees": got.trees,
                    "blobs": got.blobs, "mirrors": got.mirrors, "bytes": got.bytes})
        return
    for path in [*got.trees, *got.mirrors] if dry_run else []:
        stdout.print(f"would delete {path}", markup=False)
    verb = "would delete" if dry_run else "deleted"
    stderr.print(f"{cache}: {verb} {len(got.trees)} trees, {got.blobs} blobs and {len(got.mirrors)} mirrors "
                 f"unused for {older_than} ({_mb(got.bytes)})", markup=False, soft_wrap=True)
