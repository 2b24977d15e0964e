"""A quality case: a finished exploration kept as a scored example (``navigator export ID`` writes one,
``navigator eval --cases DIR`` re-scores it).

A case is the run's goal, the repository and the commit it ran at, and the files that are right for the
goal. Runs record verdicts on turns (a flight-plan change approved or rejected, with feedback), never a
mark on a file, so the right files are the ones the user names at export (``--gold PATH``), or else the
files the run's pack shows in full (every line visible): what the run settled on, not an independent
judgement; ``gold_source`` says which. Re-scoring explores the commit again and counts, per gold file,
the share of its lines the new pack shows (a case has no changed lines, so every line of a right file is
gold) and whether any right file is shown at all.
"""

from __future__ import annotations

import re
from typing import Literal
from urllib.parse import quote, unquote

from pydantic import BaseModel, ConfigDict, Field

from durable_navigator.navcore.evaluation.models import EvalTask

__all__ = ["CASE_FILE", "CASE_VERSION", "GOLD_NOTES", "CaseVerdict", "QualityCase", "case_task",
           "history_file_name", "workflow_id_of"]

#: the case's file inside its folder
CASE_FILE = "case.json"
CASE_VERSION = 1

#: what each ``gold_source`` means, written into every case so a reader never has to guess
GOLD_NOTES = {
    "user": "the files named with --gold when the run was exported",
    "pack-full": "runs record no per-file mark, so these are the files the run's pack shows in full (every "
                 "line visible): what the run settled on, not an independent judgement; pass --gold at export "
                 "to name the right files yourself",
}


class CaseVerdict(BaseModel):
    """A verdict the user gave on one turn of the run (interactive mode), as the run's report holds it."""

    model_config = ConfigDict(extra="forbid")

    step: int
    verdict: str
    feedback: str | None = None


class QualityCase(BaseModel):
    """``case.json``: one exported exploration as a quality case."""

    model_config = ConfigDict(extra="forbid")

    version: int = CASE_VERSION
    #: the exported run's workflow id
    id: str
    goal: str = Field(min_length=1)
    #: the repository path the run's request named (absolute, on the machine that ran it)
    repo: str
    #: HEAD of ``repo`` when the run indexed it (full hash); None when the repository was not a git checkout
    commit: str | None = None
    #: the committer date of ``commit`` (ISO 8601), for the report's commit range
    commit_date: str = ""
    gold_files: list[str] = Field(min_length=1)
    gold_source: Literal["user", "pack-full"]
    gold_note: str = ""
    model: str
    token_budget: int
    stop_reason: str
    cost_usd: str
    #: the pack the run wrote, beside this file
    pack: str = "context.md"
    #: the run's history files (every run of a continued chain, oldest first), beside this file
    histories: list[str] = []
    verdicts: list[CaseVerdict] = []


def case_task(case: QualityCase, case_key: str, line_counts: dict[str, int], subdir: str = "") -> EvalTask:
    """The eval task of ``case``: explored at its commit, every line of each right file gold.

    ``line_counts``: the number of lines of each gold file at the commit (a file missing there has none
    and can only be missed); ``subdir``: the case repository's folder inside its git work tree.
    """
    commit = case.commit or ""
    return EvalTask(id=case_key, commit=commit, parent=commit, date=case.commit_date, goal=case.goal,
                    gold_files=list(case.gold_files),
                    gold_lines={f: list(range(1, line_counts.get(f, 0) + 1)) for f in case.gold_files},
                    repo=case.repo, subdir=subdir)


_RUN_SUFFIX = re.compile(r"_run\d+$")


def history_file_name(workflow_id: str, run: int, runs: int) -> str:
    """The file of run ``run`` (1-based) of ``runs`` of ``workflow_id``'s chain: ``<id>[_run<n>].json``.

    The replay test reads the workflow id back from the name (:func:`workflow_id_of`): the id is
    percent-encoded (a ``/`` cannot be in a file name) and an id that itself ends in ``_run<n>`` has that
    ``_`` encoded, so the suffix is only ever the chain's.
    """
    name = quote(workflow_id, safe="")
    if _RUN_SUFFIX.search(name):
        at = name.rindex("_run")
        name = f"{name[:at]}%5F{name[at + 1:]}"
    return f"{name}{f'_run{run}' if runs > 1 else ''}.json"


def workflow_id_of(stem: str) -> str:
    """The workflow id a history file named by :func:`history_file_name` (or by the recording scripts) holds."""
    return unquote(_RUN_SUFFIX.sub("", stem))
