"""Signals from any terminal: ``approve``, ``reject``, ``stop``, ``mode``, ``budget``."""

from __future__ import annotations

import getpass
from decimal import Decimal, InvalidOperation
from typing import Annotated

import typer
from pydantic import ValidationError

from durable_navigator.cli.common import JsonOpt, WorkflowIdArg, config_of, print_json, run_async, stdout
from durable_navigator.cli.connect import open_session
from durable_navigator.cli.errors import CliError, handles_errors
from durable_navigator.cli.handles import describe_run, is_running, query_run, signal_run
from durable_navigator.navcore.messages import (
    QUERY_STATUS,
    SIGNAL_APPROVE,
    SIGNAL_RAISE_BUDGET,
    SIGNAL_REJECT,
    SIGNAL_SET_MODE,
    SIGNAL_STOP,
    ApproveInput,
    RaiseBudgetInput,
    RejectInput,
    SetModeInput,
    StopInput,
)
from durable_navigator.navcore.report import TurnReport
from durable_navigator.navcore.state import ExecutionMode

__all__ = ["signals_app", "default_sender"]

signals_app = typer.Typer(help="Steer a running exploration.")

TurnOpt = Annotated[
    int | None,
    typer.Option("--turn", min=1, help="Turn the verdict answers (default: the turn awaiting a verdict)."),
]
PlanOpt = Annotated[
    bool,
    typer.Option("--plan", help="With --turn N: answer round N of the stage plan, not map turn N."),
]
SenderOpt = Annotated[
    str | None, typer.Option("--sender", help="Who sends it (default: $USER@cli).", envvar="NAVIGATOR_SENDER")
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
            raise CliError(f"run {workflow_id} is not running; nothing to approve or reject")
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


@signals_app.command()
@handles_errors
def approve(
    ctx: typer.Context,
    workflow_id: WorkflowIdArg,
    turn: TurnOpt = None,
    plan: PlanOpt = False,
    sender: SenderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Approve the proposed turn (or stage plan) of an interactive run."""
    number, kind = run_async(_awaiting_turn(ctx, workflow_id, turn, plan))
    _send(ctx, workflow_id, SIGNAL_APPROVE, ApproveInput(turn=number, kind=kind, sender=default_sender(sender)),
          json_out)


@signals_app.command()
@handles_errors
def reject(
    ctx: typer.Context,
    workflow_id: WorkflowIdArg,
    feedback: Annotated[
        str, typer.Option("--feedback", "-f", help="What to do instead; the model sees it next turn.")
    ] = "",
    turn: TurnOpt = None,
    plan: PlanOpt = False,
    sender: SenderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Reject the proposed turn (or stage plan), with feedback for the model."""
    number, kind = run_async(_awaiting_turn(ctx, workflow_id, turn, plan))
    payload = _validated(lambda: RejectInput(turn=number, kind=kind, feedback=feedback,
                                             sender=default_sender(sender)))
    _send(ctx, workflow_id, SIGNAL_REJECT, payload, json_out)


@signals_app.command()
@handles_errors
def stop(
    ctx: typer.Context,
    workflow_id: WorkflowIdArg,
    reason: Annotated[str, typer.Option("--reason", help="Recorded in the report.")] = "stopped by user",
    sender: SenderOpt = None,
    json_out: JsonOpt = False,
) -> None:
    """Finalize now with the best map so far (not a cancel)."""
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
    """Raise a run's USD budget (also resumes a run parked on budget exhaustion)."""
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
