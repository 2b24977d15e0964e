"""Steering from any terminal: ``approve``, ``reject``, ``stop``, ``mode``, ``budget``.

``approve`` and ``reject`` go through the ``submit_verdict`` update (``approve --edit FILE``
first sends an investigation's edited stage plan through ``edit_stage_plan``), so the command
hears whether the run took the verdict: a verdict for a turn that is not awaiting
one (``--turn 99``, an answered turn, a plan verdict on a map turn) is refused
with exit code 2 instead of being ignored in silence. ``stop``, ``mode`` and
``budget`` are signals (they always apply).
"""

from __future__ import annotations

import getpass
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError

from durable_navigator.cli.common import JsonOpt, WorkflowIdArg, config_of, print_json, run_async, stdout
from durable_navigator.cli.connect import open_session
from durable_navigator.cli.lazy import command_group
from durable_navigator.cli.errors import CliError, RunNotFoundError, handles_errors
from durable_navigator.cli.handles import describe_run, is_running, query_run, signal_run, update_run
from durable_navigator.cli.planfile import load_stage_plan, send_plan_edit
from durable_navigator.navcore.messages import (
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
from durable_navigator.navcore.report import TurnReport
from durable_navigator.navcore.state import ExecutionMode

__all__ = ["signals_app", "default_sender", "send_verdict"]

signals_app = command_group(help="Steer a running exploration.")

TurnOpt = Annotated[
    int | None,
    typer.Option("--turn", min=1, metavar="N", help="Turn the verdict answers; refused if it is not awaiting one.",
                 show_default="the turn awaiting a verdict"),
]
PlanOpt = Annotated[
    bool,
    typer.Option("--plan", help="With --turn N: answer round N of the stage plan, not map turn N.",
                 show_default="off"),
]
SenderOpt = Annotated[
    str | None, typer.Option("--sender", metavar="NAME", help="Who sends it.", envvar="NAVIGATOR_SENDER",
                             show_default="$USER@cli")
]


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


@signals_app.command()
@handles_errors
def approve(
    ctx: typer.Context,
    workflow_id: WorkflowIdArg,
    turn: TurnOpt = None,
    plan: PlanOpt = False,
    edit: Annotated[
        Path | None,
        typer.Option("--edit", metavar="FILE", help="Investigations: approve this edited stage plan (YAML; "
                     "implies --plan).", show_default="the plan as proposed"),
    ] = None,
    sender: SenderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Approve the turn (or stage plan) awaiting a verdict.

    Exit code 2 when the run refuses it (that turn is not awaiting a verdict, or
    was already answered); `navigator status ID` shows what is pending. With
    --edit FILE an investigation's stage plan is replaced by the file's stages
    (titles, tasks, criteria, max_loops, branches, profile) and then approved; a
    bad plan is refused with the field it names, and the run keeps waiting.
    """
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


@signals_app.command()
@handles_errors
def reject(
    ctx: typer.Context,
    workflow_id: WorkflowIdArg,
    feedback: Annotated[
        str, typer.Option("--feedback", "-f", metavar="TEXT", help="What to do instead; the model sees it next turn.",
                          show_default="none")
    ] = "",
    turn: TurnOpt = None,
    plan: PlanOpt = False,
    sender: SenderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Reject the turn (or stage plan), with feedback.

    The proposed change is undone; the model sees the feedback next turn. Exit code 2
    when the run refuses the verdict (see `approve`).
    """
    number, kind = run_async(_awaiting_turn(ctx, workflow_id, turn, plan))
    payload = _validated(lambda: VerdictInput(verdict="reject", turn=number, kind=kind, feedback=feedback,
                                              sender=default_sender(sender)))
    _verdict(ctx, workflow_id, payload, json_out)


@signals_app.command()
@handles_errors
def stop(
    ctx: typer.Context,
    workflow_id: WorkflowIdArg,
    reason: Annotated[str, typer.Option("--reason", metavar="TEXT", help="Recorded in the report.")] = "stopped by user",
    sender: SenderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Finalize a run now with the best map so far.

    Not a cancel: the run writes its context pack and report as usual (stop reason
    `stopped`); a model call in flight is cancelled.
    """
    payload = _validated(lambda: StopInput(reason=reason, sender=default_sender(sender)))
    _send(ctx, workflow_id, SIGNAL_STOP, payload, json_out)


@signals_app.command()
@handles_errors
def mode(
    ctx: typer.Context,
    workflow_id: WorkflowIdArg,
    new_mode: Annotated[ExecutionMode, typer.Argument(metavar="MODE", help="interactive or autonomous.")],
    sender: SenderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Switch a run between interactive and autonomous."""
    payload = SetModeInput(mode=new_mode, sender=default_sender(sender))
    _send(ctx, workflow_id, SIGNAL_SET_MODE, payload, json_out)


@signals_app.command()
@handles_errors
def budget(
    ctx: typer.Context,
    workflow_id: WorkflowIdArg,
    add_usd: Annotated[str, typer.Argument(metavar="ADD_USD", help="USD to add to the run's limit, e.g. 0.25.")],
    sender: SenderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Add USD to a run's budget.

    Also resumes an interactive run parked on budget exhaustion.
    """
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
