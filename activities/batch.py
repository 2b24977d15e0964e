"""Batch side effects: the jobs-file loader and the ``batch.*`` activities.

* :func:`load_jobs_file` reads a YAML jobs file and validates it up front:
  every problem is reported with the job index, the field, its line in the
  file and what to do (:class:`JobsFileError`, a ``ConfigError``).
* :class:`BatchActivities` — ``batch.write_results`` stores one JSONL line per
  job (cost, tokens, iterations, stop reason, context-pack path and ref) plus a
  summary JSON in the artifact store (and writes them, atomically, with a local
  store); ``batch.recover_child`` fetches the result of a
  child workflow an earlier run of the same batch id already completed.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError
from temporalio import activity
from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError
from temporalio.service import RPCError, RPCStatusCode

from durable_navigator.activities.artifacts import ArtifactStore, atomic_write_bytes
from durable_navigator.activities.gitsource import is_git_url
from durable_navigator.navcore.batch.batch import (
    BatchJob,
    JobDefaults,
    JobsFile,
    JobSpec,
    RecoverChildInput,
    RecoverChildOutput,
    WriteBatchResultsInput,
    WriteBatchResultsOutput,
    resolve_jobs,
)
from durable_navigator.navcore.run.budget import micros_to_usd
from durable_navigator.navtypes.errors import ConfigError, RepoError
from durable_navigator.repomap.discover import check_utf8_root
from durable_navigator.navtypes.flightplan import MIN_TOKEN_BUDGET
from durable_navigator.navcore.navigator.requests import ExplorationResult
from durable_navigator.navcore.investigation.investigation import InvestigationResult
from durable_navigator.navcore.research.research import ResearchResult

__all__ = ["JobsFileError", "JobCheck", "load_jobs_file", "parse_jobs_text", "BatchActivities", "MAX_JOBS_FILE_BYTES"]

#: a jobs file larger than this is almost certainly the wrong file
MAX_JOBS_FILE_BYTES = 20_000_000


class JobsFileError(ConfigError):
    """A jobs file failed validation; ``problems`` has one line per problem."""

    kind = "ConfigError"

    def __init__(self, origin: str, problems: list[str]) -> None:
        self.problems = [f"{origin}: {p}" for p in problems]
        head = "; ".join(problems[:3]) + (f"; … and {len(problems) - 3} more" if len(problems) > 3 else "")
        super().__init__(f"{origin}: {len(problems)} problem(s): {head}")


def _line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """1-based line of the deepest node of ``loc`` present in the composed YAML tree."""
    def _line(n: yaml.Node | None) -> int | None:
        mark = getattr(n, "start_mark", None)  # synthetic nodes (a bare list wrapped as jobs) have none
        return mark.line + 1 if mark is not None else None

    line = _line(node)
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if getattr(k, "value", None) == key), None)
            if match is None:
                break
            node = match
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
        else:
            break
        line = _line(node) or line
    return line


_HINTS = {
    "missing": "add it",
    "extra_forbidden": "remove it (allowed: repo, ref, goal, name, kind, model, max_budget_usd, token_budget, "
    "max_iterations, max_output_tokens, mode)",
    "literal_error": "batches are unattended; use mode: autonomous or leave it out",
    "model_type": "write it as a mapping, e.g. {repo: ./path, goal: \"what the context is for\"}",
}


#: hints for one field's error type, where the generic one would not say what to do
_FIELD_HINTS = {
    ("goal", "string_too_short"): "say what the job is for, e.g. goal: \"how is the budget enforced?\"",
    ("token_budget", "greater_than_equal"): (
        f"use at least {MIN_TOKEN_BUDGET}: the repo map's header alone needs that many tokens"
    ),
}

#: per-job checks the schema cannot make (model known, repository present, ...): a job with every
#: option resolved -> ``(jobs-file field, problem)`` pairs
JobCheck = Callable[[BatchJob], list[tuple[str, str]]]


def _describe(err: dict[str, Any], line: int | None) -> str:
    loc = tuple(err["loc"])
    where = f" (line {line})" if line else ""
    if len(loc) >= 2 and loc[0] == "jobs" and isinstance(loc[1], int):
        field = ".".join(str(p) for p in loc[2:]) or "(the job)"
        subject = f"job {loc[1]}{where} field '{field}'"
    else:
        subject = f"'{'.'.join(str(p) for p in loc) or '(top level)'}'{where}"
    hint = _FIELD_HINTS.get((str(loc[-1]) if loc else "", err["type"])) or _HINTS.get(err["type"], "fix the value")
    return f"{subject}: {err['msg']}; {hint}"


def _sort_key(loc: tuple[Any, ...], line: int | None) -> tuple[int, int, int]:
    """Top-level problems first, then by job, then by line."""
    job = loc[1] if len(loc) >= 2 and loc[0] == "jobs" and isinstance(loc[1], int) else -1
    return (job, line or 0, 0)


def _compose(text: str, origin: str) -> tuple[yaml.Node, Any]:
    """The YAML node tree (for line numbers) and the data; a bare list means ``{jobs: [...]}``."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise JobsFileError(origin, [f"{where}{problem}; fix the YAML syntax"]) from None
    if isinstance(data, list):
        data = {"jobs": data}
        node = yaml.MappingNode("tag:yaml.org,2002:map", [(yaml.ScalarNode("tag:yaml.org,2002:str", "jobs"), node)])
    if not isinstance(data, dict):
        shown = "the file is empty" if data is None else f"got a {type(data).__name__}"
        raise JobsFileError(origin, [f"expected a mapping with 'jobs' (a list of jobs, each with 'repo' and 'goal'; "
                                     f"optional 'defaults'), {shown}; e.g. "
                                     "'jobs: [{repo: ./repo, goal: \"how is the budget enforced?\"}]' "
                                     "(README.md, section Batch)"])
    return node, data


#: stand-ins for a job's broken or missing required fields, so its other fields still get checked
_STAND_INS = {"repo": ".", "goal": "(stand-in)"}


def _partial_spec(entry: Any) -> tuple[JobSpec | None, frozenset[str]]:
    """The job of ``entry`` with its invalid fields left out (required ones stood in for), and the
    fields left out; ``(None, …)`` when nothing of it can be read as a job."""
    try:
        return JobSpec.model_validate(entry), frozenset()
    except ValidationError as exc:
        if not isinstance(entry, dict):
            return None, frozenset()
        bad = frozenset(str(err["loc"][0]) for err in exc.errors() if err["loc"])
    kept = {k: v for k, v in entry.items() if k not in bad}
    stood_in = frozenset(k for k in _STAND_INS if k not in kept)
    try:
        return JobSpec.model_validate({**{k: _STAND_INS[k] for k in stood_in}, **kept}), bad | stood_in
    except ValidationError:
        return None, frozenset()


def _valid_jobs(
    data: dict[str, Any], spec: JobsFile | None, base: Path | None, unusable: list[tuple[int, str]]
) -> list[tuple[BatchJob, frozenset[str]]]:
    """Every job resolved, with the fields its per-job checks must skip (even when others fail).

    A job with a schema error is still resolved from its valid fields, so its per-job checks
    (the model, the repository) come in the same round as the schema errors — a file with
    ``goal: ""`` and ``model: nonsense`` hears of both; the fields the schema refused (or that
    were missing and stood in for) are not checked again. Broken ``defaults`` fall back to the
    built-in ones (their own errors are already reported).

    A repository path that resolves to a name that is not UTF-8 cannot be a job's (text) path at
    all: that job goes to ``unusable`` with the problem, whatever ``--no-check-repos`` says.
    """
    if spec is None:
        try:
            defaults = JobDefaults.model_validate(data.get("defaults") or {})
        except ValidationError:
            defaults = JobDefaults()
        entries = data.get("jobs") if isinstance(data.get("jobs"), list) else []
        specs = [_partial_spec(entry) for entry in entries]
    else:
        defaults, specs = spec.defaults, [(job, frozenset()) for job in spec.jobs]
    jobs = []
    for index, (job, skip) in enumerate(specs):
        if job is None:
            continue
        if base is not None and "repo" not in skip and not is_git_url(job.repo):
            # a git URL stays as written (the starting command resolves its ref); a path is absolute from here on
            # realpath, not Path.resolve: the latter raises RuntimeError on a symlink loop (Python < 3.13)
            job = job.model_copy(update={"repo": os.path.realpath(base / Path(job.repo).expanduser())})
            try:
                check_utf8_root(Path(job.repo))
            except RepoError as exc:
                unusable.append((index, str(exc)))
                continue
        one = JobsFile(defaults=defaults, jobs=[job])
        jobs.append((resolve_jobs(one)[0].model_copy(update={"index": index}), skip))
    return jobs


def _job_problems(
    data: dict[str, Any], node: yaml.Node, jobs: list[tuple[BatchJob, frozenset[str]]], check: JobCheck
) -> list[tuple[tuple[int, int, int], str]]:
    """Run ``check`` on every job; a value inherited from ``defaults`` is reported once, there."""
    found: dict[str, tuple[tuple[int, int, int], str]] = {}
    entries = data.get("jobs") or []
    for job, skip in jobs:
        own = entries[job.index] if isinstance(entries[job.index], dict) else {}
        for field, problem in check(job):
            if field in skip:
                continue
            if field in own or field in ("repo", "goal"):
                line = _line_of(node, ("jobs", job.index, field))
                text = f"job {job.index}{f' (line {line})' if line else ''} field '{field}': {problem}"
                found.setdefault(text, (_sort_key(("jobs", job.index), line), text))
            else:
                line = _line_of(node, ("defaults", field))
                text = f"'defaults.{field}'{f' (line {line})' if line else ''}: {problem}"
                found.setdefault(text, ((-1, line or 0, 1), text))
    return list(found.values())


def parse_jobs_text(
    text: str, origin: str = "jobs file", *, check_job: JobCheck | None = None, base: Path | None = None
) -> JobsFile:
    """Validate jobs-file text; raise :class:`JobsFileError` listing every problem at once.

    Schema problems and ``check_job``'s per-job problems (run on every job that
    is valid on its own) come in one error, each with its job index and line.
    Relative repository paths resolve against ``base`` when given; a git URL stays as written.
    """
    node, data = _compose(text, origin)
    problems: list[tuple[tuple[int, int, int], str]] = []
    spec: JobsFile | None = None
    try:
        spec = JobsFile.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            loc = tuple(err["loc"])
            line = _line_of(node, loc)
            problems.append((_sort_key(loc, line), _describe(err, line)))  # type: ignore[arg-type]
    unusable: list[tuple[int, str]] = []
    jobs = _valid_jobs(data, spec, base, unusable)
    for index, problem in unusable:
        line = _line_of(node, ("jobs", index, "repo"))
        problems.append((_sort_key(("jobs", index), line),
                         f"job {index}{f' (line {line})' if line else ''} field 'repo': {problem}"))
    if check_job is not None:
        problems += _job_problems(data, node, jobs, check_job)
    if problems:
        raise JobsFileError(origin, [text for _, text in sorted(problems, key=lambda p: p[0])])
    assert spec is not None
    return spec.model_copy(update={"jobs": [spec.jobs[j.index].model_copy(update={"repo": j.repo_path})
                                            for j, _ in jobs]})


def load_jobs_file(path: Path | str, *, check_job: JobCheck | None = None) -> JobsFile:
    """Read and validate a jobs file (every problem at once); relative repo paths resolve
    against the file's folder."""
    file = Path(path).expanduser()
    origin = str(file)
    if not file.is_file():
        raise JobsFileError(origin, ["no such file; pass the path of a jobs YAML file"])
    if file.stat().st_size > MAX_JOBS_FILE_BYTES:
        raise JobsFileError(origin, [f"larger than {MAX_JOBS_FILE_BYTES} bytes; is it the right file?"])
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise JobsFileError(origin, [f"cannot read it ({type(exc).__name__}); pass a UTF-8 text file"]) from None
    return parse_jobs_text(text, origin, check_job=check_job, base=file.resolve().parent)


class BatchActivities:
    """The ``batch.*`` activities (the client comes from the activity context).

    ``store``: the worker's artifact store, which keeps both files of a batch; ``write_files``: also
    write them under ``out_dir`` (a local store only: with an object store the worker may share no
    disk with the machine that asked, whose command writes them from the store).
    """

    def __init__(self, store: ArtifactStore, *, write_files: bool = True) -> None:
        self.store = store
        self.write_files = write_files

    @activity.defn(name="batch.write_results")
    async def write_results(self, inp: WriteBatchResultsInput) -> WriteBatchResultsOutput:
        """Store ``results.jsonl`` (one line per job) and ``summary.json`` (and with a local store write
        them atomically into ``<out>/<batch>/``)."""
        folder = Path(inp.out_dir).expanduser().resolve() / inp.batch_id
        lines = []
        for o in inp.outcomes:
            row = o.model_dump(mode="json")
            row["cost_usd"] = str(micros_to_usd(o.spent_micros))
            row["allotted_usd"] = str(micros_to_usd(o.allotted_micros))
            lines.append(json.dumps(row, sort_keys=True))
        jsonl = ("\n".join(lines) + "\n").encode("utf-8")
        counts: dict[str, int] = {}
        for o in inp.outcomes:
            counts[o.status.value] = counts.get(o.status.value, 0) + 1
        summary = {
            "batch_id": inp.batch_id,
            "jobs": len(inp.outcomes),
            "status_counts": counts,
            "total_usd": str(micros_to_usd(inp.total_micros)),
            "spent_usd": str(micros_to_usd(inp.spent_micros)),
            "stopped": inp.stopped,
            "context_packs": [o.context_path for o in inp.outcomes if o.context_path],
        }
        summary_bytes = (json.dumps(summary, indent=2, sort_keys=True) + "\n").encode("utf-8")
        results_ref = await asyncio.to_thread(self.store.put_bytes, jsonl, "application/x-ndjson",
                                              f"results of batch {inp.batch_id}")
        summary_ref = await asyncio.to_thread(self.store.put_bytes, summary_bytes, "application/json",
                                              f"summary of batch {inp.batch_id}")
        if self.write_files:
            await asyncio.to_thread(atomic_write_bytes, folder / "results.jsonl", jsonl)
            await asyncio.to_thread(atomic_write_bytes, folder / "summary.json", summary_bytes)
        return WriteBatchResultsOutput(
            results_path=str(folder / "results.jsonl"), summary_path=str(folder / "summary.json"),
            results_ref=results_ref, summary_ref=summary_ref,
        )

    @activity.defn(name="batch.recover_child")
    async def recover_child(self, inp: RecoverChildInput) -> RecoverChildOutput:
        """Wait for (if still running) and return the result of an existing child workflow."""
        result_type = {"ask": ResearchResult, "investigate": InvestigationResult}.get(inp.kind, ExplorationResult)
        handle = activity.client().get_workflow_handle(inp.workflow_id, result_type=result_type)
        while True:
            try:
                desc = await handle.describe()
            except RPCError as exc:
                if exc.status == RPCStatusCode.NOT_FOUND:
                    return RecoverChildOutput(status="not_found", error=f"{inp.workflow_id} no longer exists")
                raise
            if desc.status != WorkflowExecutionStatus.RUNNING:
                break
            activity.heartbeat(f"{inp.workflow_id} still running")
            await asyncio.sleep(inp.poll_s)
        status = desc.status.name.lower() if desc.status else "unknown"
        if desc.status != WorkflowExecutionStatus.COMPLETED:
            return RecoverChildOutput(status=status, error=f"{inp.workflow_id} ended {status}")
        try:
            result = await handle.result(follow_runs=True)
        except WorkflowFailureError as exc:
            return RecoverChildOutput(status="failed", error=" ".join(str(exc.cause or exc).split())[:500])
        if isinstance(result, ResearchResult):
            return RecoverChildOutput(status=status, research=result)
        if isinstance(result, InvestigationResult):
            return RecoverChildOutput(status=status, investigation=result)
        return RecoverChildOutput(status=status, result=result)

    def all(self) -> list[Any]:
        """Every batch activity, for worker registration."""
        return [self.write_results, self.recover_child]
