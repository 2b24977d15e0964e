"""Steering from any terminal: ``approve``, ``reject``, ``stop``, ``mode``, ``budget``.

``approve`` and ``reject`` go through the ``submit_verdict`` update (``approve --edit FILE``
first sends an investigation's edited stage plan through ``edit_stage_plan``), so the command
hears whether the run took the verdict: a verdict for a turn that is not awaiting
one (``--turn 99``, an answered turn, a plan verdict on a map turn) is refused
with exit code 2 instead of being ignored in silence. ``stop``, ``mode`` and
``budget`` are signals (they always apply); a run that cannot process signals because its
workflow task fails on every attempt is terminated by ``stop`` instead, which says so (exit 1).
"""

from __future__ import annotations

import getpass
from decimal import Decimal, InvalidOperation
from pathlib import Path

import typer
from pydantic import ValidationError

from durable_navigator.cli.common import config_of, print_json, run_async, stdout
from durable_navigator.cli.connect import open_session
from durable_navigator.cli.errors import CliError, RunFailedError, RunNotFoundError, handles_errors
from durable_navigator.cli.handles import describe_run, is_running, query_run, signal_run, update_run
from durable_navigator.cli.planfile import load_stage_plan, send_plan_edit
from durable_navigator.cli.stuck import terminate_stuck
from durable_navigator.navcore.batch.batch import BatchStopInput
from durable_navigator.navcore.navigator.messages import (
    BATCH_WORKFLOW,
    QUERY_STATUS,
    SIGNAL_RAISE_BUDGET,
    SIGNAL_SET_MODE,
    SIGNAL_STOP,
    UPDATE_VERDICT,
    RaiseBudgetInput,
    SetModeInput,
    StopInput,
    VerdictInput,
    VerdictOutcome,
)
from durable_navigator.navcore.navigator.report import TurnReport
from durable_navigator.navcore.navigator.state import ExecutionMode

__all__ = ["default_sender", "send_verdict"]

# signals_app and its commands' signatures and help: cli/signatures.py



def default_sender(explicit: str | None = None) -> str:
    """``alice@cli`` unless given; every message carries who sent it."""
    if explicit:
        return explicit
    try:
        return f"{getpass.getuser()}@cli"
    except (KeyError, OSError):
        return "cli"


async def _awaiting_turn(
    ctx: typer.Context, workflow_id: str, turn: int | None, plan: bool = False
) -> tuple[int, str]:
    """The (turn, kind) to answer: ``--turn N`` names map turn N (plan round N with ``--plan``);
    else what the run awaits."""
    if turn is not None:
        return turn, "plan" if plan else "turn"
    async with open_session(config_of(ctx)) as session:
        handle, desc = await describe_run(session.client, workflow_id)
        if not is_running(desc):
            raise RunNotFoundError(f"run {workflow_id} is closed; nothing to approve or reject "
                                   f"(see `navigator result {workflow_id}`)")
        report = await query_run(handle, QUERY_STATUS, TurnReport)
    if report.awaiting_turn is None:
        raise CliError(
            f"run {workflow_id} is not waiting for a verdict (status {report.status}); "
            "pass --turn N to answer a specific turn"
        )
    kind = report.awaiting_kind or "turn"
    if plan and kind != "plan":
        raise CliError(f"run {workflow_id} is waiting for map turn {report.awaiting_turn}, not for the stage plan; "
                       "drop --plan to answer it")
    return report.awaiting_turn, kind


def _send(ctx: typer.Context, workflow_id: str, name: str, payload: object, as_json: bool) -> None:
    async def go() -> None:
        async with open_session(config_of(ctx)) as session:
            _, desc = await describe_run(session.client, workflow_id)
            if desc.workflow_type == BATCH_WORKFLOW:
                # a batch has no handler for it: the signal would wait in its history, unread, for ever
                raise CliError(f"{workflow_id} is a batch; it takes no {name}: send it to a job's run (ids in "
                               f"`navigator batch results {workflow_id}`), or `navigator batch stop {workflow_id}`")
            await signal_run(session.client, workflow_id, name, payload)  # type: ignore[arg-type]

    run_async(go())
    data = {"workflow_id": workflow_id, "signal": name, "payload": payload}
    if as_json:
        print_json(data)
    else:
        stdout.print(f"sent {name} to {workflow_id}")


async def send_verdict(client: object, workflow_id: str, verdict: VerdictInput) -> VerdictOutcome:
    """Submit ``verdict``; a verdict the run would ignore raises ``CliError`` (exit 2) saying why."""
    return await update_run(client, workflow_id, UPDATE_VERDICT, verdict, VerdictOutcome,  # type: ignore[arg-type]
                            what=verdict.verdict)


def _verdict(ctx: typer.Context, workflow_id: str, verdict: VerdictInput, as_json: bool) -> None:
    async def go() -> VerdictOutcome:
        async with open_session(config_of(ctx)) as session:
            return await send_verdict(session.client, workflow_id, verdict)

    outcome = run_async(go())
    if as_json:
        print_json({"workflow_id": workflow_id, **outcome.model_dump(mode="json")})
    else:
        stdout.print(f"{workflow_id}: {outcome.detail}", markup=False)


@handles_errors
def run_approve(
    ctx: typer.Context,
    workflow_id: str,
    turn: int | None,
    plan: bool,
    edit: Path | None,
    sender: str | None,
    json_out: bool,
) -> None:
    """The ``navigator approve`` command (its options and help: :mod:`cli.signatures`)."""
    stages = load_stage_plan(edit) if edit is not None else None
    number, kind = run_async(_awaiting_turn(ctx, workflow_id, turn, plan or edit is not None))
    who = default_sender(sender)
    if stages is not None:
        async def go() -> None:
            async with open_session(config_of(ctx)) as session:
                edited = await send_plan_edit(session.client, workflow_id, number, stages, who)
            if not json_out:
                stdout.print(f"{workflow_id}: {edited.detail}", markup=False)

        run_async(go())
    _verdict(ctx, workflow_id, VerdictInput(verdict="approve", turn=number, kind=kind,  # type: ignore[arg-type]
                                            sender=who), json_out)


@handles_errors
def run_reject(
    ctx: typer.Context,
    workflow_id: str,
    feedback: str,
    turn: int | None,
    plan: bool,
    sender: str | None,
    json_out: bool,
) -> None:
    """The ``navigator reject`` command (its options and help: :mod:`cli.signatures`)."""
    number, kind = run_async(_awaiting_turn(ctx, workflow_id, turn, plan))
    payload = _validated(lambda: VerdictInput(verdict="reject", turn=number, kind=kind, feedback=feedback,
                                              sender=default_sender(sender)))
    _verdict(ctx, workflow_id, payload, json_out)


@handles_errors
def run_stop(
    ctx: typer.Context,
    workflow_id: str,
    reason: str,
    sender: str | None,
    json_out: bool,
) -> None:
    """The ``navigator stop`` command (its options and help: :mod:`cli.signatures`)."""
    payload = _validated(lambda: StopInput(reason=reason, sender=default_sender(sender)))

    async def go() -> str | None:
        async with open_session(config_of(ctx)) as session:
            _, desc = await describe_run(session.client, workflow_id)
            # a batch's stop takes a BatchStopInput: the exploration's StopInput (its `turn` field) failed to
            # decode in the batch's worker, which logged a traceback and dropped the signal: no stop at all
            batch = desc.workflow_type == BATCH_WORKFLOW
            message = _validated(lambda: BatchStopInput(reason=payload.reason, sender=payload.sender)) if batch \
                else payload
            await signal_run(session.client, workflow_id, SIGNAL_STOP, message)
            # a run whose workflow task fails on every attempt never processes the signal: end it here
            return await terminate_stuck(session.client, workflow_id, payload.reason, payload.sender)

    stuck = run_async(go())
    if stuck is not None:
        message = (f"{workflow_id} could not take the stop ({stuck}); it was terminated instead, without a "
                   "context pack")
        if json_out:
            print_json({"workflow_id": workflow_id, "signal": SIGNAL_STOP, "payload": payload, "terminated": True,
                        "stuck": stuck})
        raise RunFailedError(message)
    if json_out:
        print_json({"workflow_id": workflow_id, "signal": SIGNAL_STOP, "payload": payload, "terminated": False})
    else:
        stdout.print(f"sent {SIGNAL_STOP} to {workflow_id}")


@handles_errors
def run_mode(
    ctx: typer.Context,
    workflow_id: str,
    new_mode: ExecutionMode,
    sender: str | None,
    json_out: bool,
) -> None:
    """The ``navigator mode`` command (its options and help: :mod:`cli.signatures`)."""
    payload = SetModeInput(mode=new_mode, sender=default_sender(sender))
    _send(ctx, workflow_id, SIGNAL_SET_MODE, payload, json_out)


@handles_errors
def run_budget(
    ctx: typer.Context,
    workflow_id: str,
    add_usd: str,
    sender: str | None,
    json_out: bool,
) -> None:
    """The ``navigator budget`` command (its options and help: :mod:`cli.signatures`)."""
    try:
        amount = Decimal(add_usd)
    except InvalidOperation:
        raise CliError(f"ADD_USD must be a number of dollars such as 0.25, got {add_usd!r}") from None
    payload = _validated(lambda: RaiseBudgetInput(add_usd=amount, sender=default_sender(sender)))
    _send(ctx, workflow_id, SIGNAL_RAISE_BUDGET, payload, json_out)


def _validated(build):  # type: ignore[no-untyped-def]
    try:
        return build()
    except ValidationError as exc:
        first = exc.errors(include_input=False)[0]
        field = ".".join(str(p) for p in first["loc"])
        raise CliError(f"{field}: {first['msg']}") from None
