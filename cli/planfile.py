"""An investigation's stage plan as a YAML file the human edits, and its ``edit_stage_plan`` update.

The file is what ``navigator approve ID --edit FILE`` sends and what the interactive prompt's
``[e]dit`` writes for the user to change::

    stages:
      - title: the plugin
        task: read the budget plugin and how it records usage
        criteria: [after_call is cited]
        max_loops: 1          # optional: this stage's cap on implementation loops
        branches: 2           # optional: branch-and-compare
        profile: stage-worker # optional: the worker profile

Problems are one line naming the field (``stages.1.criteria: …``), here before anything is
sent, and again by the run's validator (which also knows its profiles and its ``max_stages``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from durable_navigator.cli.errors import CliError
from durable_navigator.cli.handles import update_run
from durable_navigator.navcore.investigation.investigation import PlannedStage, StageRecord
from durable_navigator.navcore.navigator.messages import UPDATE_EDIT_STAGE_PLAN, EditStagePlanInput, StagePlanEdited
from durable_navigator.navtypes.errors import validation_lines

__all__ = ["load_stage_plan", "parse_stage_plan", "dump_stage_plan", "send_plan_edit", "PLAN_FILE_HELP"]

PLAN_FILE_HELP = ("a YAML file `stages: [{title, task, criteria: [...], max_loops?, branches?, profile?}, ...]`; "
                  "the edited stages replace the plan awaiting its verdict")
#: a plan file is a few kilobytes; anything far larger is the wrong file
_MAX_BYTES = 256_000


def parse_stage_plan(text: str, origin: str) -> list[PlannedStage]:
    """The stages of a plan file's ``text``; ``CliError`` with one line naming the field otherwise."""
    try:
        data: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        raise CliError(f"{origin}{where}: not valid YAML; fix the syntax") from None
    if isinstance(data, list):
        data = {"stages": data}
    if not isinstance(data, dict) or not isinstance(data.get("stages"), list) or not data["stages"]:
        raise CliError(f"{origin}: stages: expected a non-empty list of stages under 'stages'")
    unknown = sorted(set(data) - {"stages"})
    if unknown:
        raise CliError(f"{origin}: {unknown[0]}: unknown key; the file holds only 'stages'")
    stages: list[PlannedStage] = []
    for i, raw in enumerate(data["stages"]):
        try:
            stages.append(PlannedStage.model_validate(raw))
        except ValidationError as exc:
            raise CliError(f"{origin}: stages.{i}.{validation_lines(exc)[0]}") from None
    return stages


def load_stage_plan(path: Path) -> list[PlannedStage]:
    """Read and validate a plan file (``CliError``, one line naming the file and the field)."""
    if not path.is_file():
        raise CliError(f"{path}: no such file; pass the YAML file of the edited stage plan")
    if path.stat().st_size > _MAX_BYTES:
        raise CliError(f"{path}: larger than {_MAX_BYTES} bytes; is it the plan file?")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CliError(f"{path}: cannot read it ({exc.__class__.__name__})") from None
    return parse_stage_plan(text, str(path))


def dump_stage_plan(stages: list[StageRecord] | list[PlannedStage]) -> str:
    """The plan as the YAML file a human edits (only the fields a plan has; unset options left out)."""
    rows = []
    for st in stages:
        row: dict[str, Any] = {"title": st.title, "task": st.task, "criteria": list(st.criteria)}
        if st.max_loops:
            row["max_loops"] = st.max_loops
        if st.branches > 1:
            row["branches"] = st.branches
        if st.profile:
            row["profile"] = st.profile
        rows.append(row)
    return yaml.safe_dump({"stages": rows}, sort_keys=False, allow_unicode=True, width=100)


async def send_plan_edit(client: Any, workflow_id: str, turn: int, stages: list[PlannedStage],
                         sender: str) -> StagePlanEdited:
    """Send the edit; a plan the run refuses raises ``CliError`` (exit 2) with its validator's line."""
    return await update_run(client, workflow_id, UPDATE_EDIT_STAGE_PLAN,
                            EditStagePlanInput(turn=turn, stages=stages, sender=sender), StagePlanEdited,
                            what="the plan edit")
