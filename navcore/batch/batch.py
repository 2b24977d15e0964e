"""Batch explorations: the jobs file, the batch request/state/progress and the shared budget pool.

A jobs file lists ``{repo, goal, options}`` jobs plus ``defaults``; it is
validated up front (every problem reported per job). A job's ``repo`` is a path
or a git URL (``ref``: its branch, tag or commit); the command that starts the
batch turns each into the locator the child carries (``navcore.run.sources``:
the path, a snapshot it uploaded, or the resolved commit), as ``explore`` does. The batch runs each job
as a child ``NavigatorWorkflow`` under one batch-wide USD budget:
:class:`BudgetPool` gives each child a slice when it starts and takes back
what the child did not spend when it ends, so *spent + slices in flight*
never passes the total. Everything here is pure and deterministic (pydantic +
stdlib): it runs inside the workflow sandbox.
"""

from __future__ import annotations

from decimal import Decimal
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from durable_navigator.navcore.run.artifacts import ArtifactRef
from durable_navigator.navcore.run.budget import RunUsd, format_usd, micros_to_usd, usd_to_micros
from durable_navigator.navcore.run.decision import TokenUsage
from durable_navigator.navtypes.flightplan import MAX_TOKEN_BUDGET, MIN_TOKEN_BUDGET
from durable_navigator.navcore.navigator.report import markdown_text
from durable_navigator.navcore.navigator.requests import ExplorationResult, ModelCallConfig
from durable_navigator.navcore.investigation.investigation import InvestigationResult
from durable_navigator.navcore.research.research import ResearchResult

__all__ = [
    "JobKind",
    "JobDefaults",
    "JobSpec",
    "JobsFile",
    "BatchJob",
    "BatchLimits",
    "BatchRequest",
    "JobStatus",
    "JobOutcome",
    "BudgetPool",
    "BatchState",
    "BatchProgress",
    "BatchResult",
    "BatchStopInput",
    "child_workflow_id",
    "resolve_jobs",
    "progress_of",
    "progress_markdown",
    "WriteBatchResultsInput",
    "WriteBatchResultsOutput",
    "RecoverChildInput",
    "RecoverChildOutput",
]

Usd = RunUsd
#: what a job runs: an exploration (context pack) or a research question (cited answer)
JobKind = Literal["explore", "ask", "investigate"]
Text = Annotated[str, Field(min_length=1, max_length=8000)]
PathText = Annotated[str, Field(min_length=1, max_length=4096)]
GitRef = Annotated[str, Field(min_length=1, max_length=255)]
ModelName = Annotated[str, Field(min_length=1, max_length=200)]
TokenBudget = Annotated[int, Field(gt=0, le=MAX_TOKEN_BUDGET)]
#: what a jobs file may ask for: at least the smallest map the engine renders
JobTokenBudget = Annotated[int, Field(ge=MIN_TOKEN_BUDGET, le=MAX_TOKEN_BUDGET)]
Iterations = Annotated[int, Field(ge=1, le=10_000)]
OutputTokens = Annotated[int, Field(ge=64, le=65_536)]


class JobDefaults(BaseModel):
    """Options every job inherits unless it sets its own."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: ModelName = "offline"
    #: ``explore`` (a context pack), ``ask`` (the goal is a question: a cited answer) or ``investigate``
    #: (a staged investigation: report.md)
    kind: JobKind = "explore"
    #: per-job cap in USD; ``None`` = only the share of the batch budget limits a job
    max_budget_usd: Usd | None = None
    token_budget: JobTokenBudget = 4096
    max_iterations: Iterations = 12
    max_output_tokens: OutputTokens = 2048


class JobSpec(BaseModel):
    """One job as written in the jobs file (unset options come from ``defaults``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: a repository path (relative to the jobs file) or a git URL (``https://``, ``ssh://``, ``git@host:``, ``file://``)
    repo: PathText
    goal: Text
    #: a git URL's branch, tag or full commit (default ``HEAD``); refused with a path
    ref: GitRef | None = None
    #: a short label shown in progress and results (default: the job index)
    name: Annotated[str, Field(min_length=1, max_length=120)] | None = None
    kind: JobKind | None = None
    model: ModelName | None = None
    max_budget_usd: Usd | None = None
    token_budget: JobTokenBudget | None = None
    max_iterations: Iterations | None = None
    max_output_tokens: OutputTokens | None = None
    #: batches are unattended: nobody is there to approve turns
    mode: Literal["autonomous"] = "autonomous"


class JobsFile(BaseModel):
    """A whole jobs file: ``defaults`` + ``jobs`` (+ optional batch-wide settings)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    defaults: JobDefaults = JobDefaults()
    jobs: list[JobSpec] = Field(min_length=1, max_length=100_000)
    total_budget_usd: Usd | None = None
    max_concurrency: Annotated[int, Field(ge=1, le=256)] | None = None


class BatchJob(BaseModel):
    """A job with every option resolved; what the batch workflow runs."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    index: int = Field(ge=0)
    name: str
    #: the repository as the child's locator (``navcore.run.sources``): a path as the jobs file gave it,
    #: or — once the starting command settled it — a snapshot it uploaded or a git commit
    repo_path: PathText
    goal: Text
    #: the ref a git URL job named (for the record: the locator names the commit it resolved to)
    ref: GitRef | None = None
    model: ModelName
    kind: JobKind = "explore"
    max_budget_usd: Usd | None = None
    token_budget: TokenBudget
    max_iterations: Iterations
    max_output_tokens: OutputTokens

    @model_serializer(mode="wrap")
    def _no_ref_of_a_path(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # a path job's input stays byte for byte what it was before jobs could name a git ref
        data: dict[str, Any] = handler(self)
        if self.ref is None:
            data.pop("ref", None)
        return data


def resolve_jobs(spec: JobsFile) -> list[BatchJob]:
    """Apply ``defaults`` to every job; indexes are positions in the file (0-based)."""
    d = spec.defaults
    jobs: list[BatchJob] = []
    for i, job in enumerate(spec.jobs):
        jobs.append(
            BatchJob(
                index=i,
                name=job.name or f"job-{i}",
                repo_path=job.repo,
                ref=job.ref,
                goal=job.goal,
                model=job.model or d.model,
                kind=job.kind or d.kind,
                max_budget_usd=job.max_budget_usd if job.max_budget_usd is not None else d.max_budget_usd,
                token_budget=job.token_budget or d.token_budget,
                max_iterations=job.max_iterations or d.max_iterations,
                max_output_tokens=job.max_output_tokens or d.max_output_tokens,
            )
        )
    return jobs


def child_workflow_id(batch_id: str, index: int) -> str:
    """The deterministic workflow id of job ``index``: a re-run batch finds its children again."""
    return f"{batch_id}-job-{index:05d}"


class BatchLimits(BaseModel):
    """Timing and sizing knobs of the batch workflow (named, not inline)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    #: a child running longer than this is reported as timed out
    job_timeout_s: float = Field(3600.0, gt=0)
    #: a slice below this is not worth starting: the job is skipped as budget_exhausted
    min_slice_usd: Annotated[Decimal, Field(gt=0)] = Decimal("0.000001")
    #: continue-as-new after this many jobs finished in one run (or when the server suggests it)
    continue_as_new_after_jobs: int = Field(100, ge=1, le=100_000)
    #: jobs listed in the progress query (the rest are counted)
    progress_jobs_shown: int = Field(50, ge=0, le=10_000)


class JobStatus(str, Enum):
    """Where one job of a batch is."""

    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"  #: the child returned an ExplorationResult (any stop reason)
    FAILED = "failed"  #: the child failed, timed out or was terminated
    SKIPPED = "skipped"  #: never started: batch stopped or budget exhausted


class JobOutcome(BaseModel):
    """What became of one job (also one line of the results JSONL)."""

    model_config = ConfigDict(extra="forbid")

    index: int
    name: str
    workflow_id: str
    #: the repository as the user reads it (``display_root`` of the job's locator: the snapshot's path, url@commit)
    repo_path: str
    goal: str
    model: str
    kind: JobKind = "explore"
    status: JobStatus
    #: the child's stop reason (finalized, budget_exhausted, …) or why it never ran
    stop_reason: str | None = None
    error: str | None = None
    allotted_micros: int = 0
    spent_micros: int = 0
    usage: TokenUsage = TokenUsage()
    iterations: int = 0
    decisions: int = 0
    #: context.md of an exploration, answer.md of a research job
    context_path: str | None = None
    report_path: str | None = None
    #: the two files in the artifact store: with an object store the command that asked writes them from these
    context_ref: ArtifactRef | None = None
    report_ref: ArtifactRef | None = None
    #: a research job finished on its own terms (None for explorations)
    completed_normally: bool | None = None
    #: True when the child had already completed in an earlier run of this batch id
    recovered: bool = False


class BudgetPool(BaseModel):
    """The batch-wide budget: spent + in-flight slices never pass ``total_micros``."""

    model_config = ConfigDict(extra="forbid")

    total_micros: int = Field(gt=0)
    spent_micros: int = 0
    #: job index → slice handed to its running child
    in_flight: dict[int, int] = {}

    @property
    def reserved_micros(self) -> int:
        """Sum of the slices of running children."""
        return sum(self.in_flight.values())

    @property
    def available_micros(self) -> int:
        """What may still be handed out."""
        return self.total_micros - self.spent_micros - self.reserved_micros

    def slice_for(self, job: BatchJob, pending_jobs: int) -> int:
        """The slice job ``job`` would get: min(job cap, available / jobs not yet started)."""
        share = max(self.available_micros, 0) // max(pending_jobs, 1)
        if job.max_budget_usd is not None:
            share = min(share, usd_to_micros(job.max_budget_usd))
        return share

    def take(self, index: int, micros: int) -> None:
        """Hand ``micros`` to the child of job ``index``."""
        if micros > self.available_micros:
            raise ValueError(f"slice {format_usd(micros)} exceeds the {format_usd(self.available_micros)} available")
        self.in_flight[index] = micros

    def settle(self, index: int, spent_micros: int) -> int:
        """The child of ``index`` ended having spent ``spent_micros``; return what went back to the pool."""
        allotted = self.in_flight.pop(index, 0)
        self.spent_micros += spent_micros
        return max(allotted - spent_micros, 0)


class BatchState(BaseModel):
    """Everything the batch workflow knows; carried through continue-as-new."""

    model_config = ConfigDict(extra="forbid")

    pool: BudgetPool
    #: job indexes not started yet, in start order
    pending: list[int]
    #: finished (or skipped) jobs by index
    outcomes: dict[int, JobOutcome] = {}
    stop_requested: str | None = None
    stop_sender: str | None = None
    continued_runs: int = 0
    #: slices returned to the pool by children that spent less than they got
    returned_micros: int = 0


class BatchRequest(BaseModel):
    """Input of ``BatchWorkflow`` (also its continue-as-new input)."""

    model_config = ConfigDict(extra="forbid")

    batch_id: Annotated[str, Field(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9._:-]+$")]
    jobs: list[BatchJob] = Field(min_length=1)
    total_budget_usd: Usd
    max_concurrency: int = Field(4, ge=1, le=256)
    out_dir: PathText = "navigator-out"
    #: task queue of the children (default: the batch's own)
    task_queue: str | None = None
    limits: BatchLimits = BatchLimits()
    #: timeouts/retries of every child's ``navigator.decide`` (default: the navigator's own)
    model_call: ModelCallConfig | None = None
    #: set only by the workflow itself when it continues as new
    carried_state: BatchState | None = None

    def initial_state(self) -> BatchState:
        """The state of a fresh batch: every job pending, nothing spent."""
        return BatchState(
            pool=BudgetPool(total_micros=usd_to_micros(self.total_budget_usd)),
            pending=[job.index for job in self.jobs],
        )


class BatchStopInput(BaseModel):
    """Signal ``stop``: start no more jobs; running children finalize their best map."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    reason: Annotated[str, Field(min_length=1, max_length=500)] = "stopped by user"
    sender: Annotated[str, Field(min_length=1, max_length=200)] = "cli"


class BatchProgress(BaseModel):
    """Answer of the ``get_progress`` query."""

    model_config = ConfigDict(extra="forbid")

    batch_id: str
    jobs_total: int
    pending: int
    running: int
    completed: int
    failed: int
    skipped: int
    total_usd: Decimal
    spent_usd: Decimal
    in_flight_usd: Decimal
    returned_usd: Decimal
    stop_requested: str | None = None
    continued_runs: int = 0
    running_jobs: list[int] = []
    #: finished jobs (the most recent ``progress_jobs_shown``)
    finished: list[JobOutcome] = []
    done: bool = False


class BatchResult(BaseModel):
    """Output of ``BatchWorkflow``."""

    model_config = ConfigDict(extra="forbid")

    batch_id: str
    outcomes: list[JobOutcome]
    total_usd: Decimal
    spent_usd: Decimal
    results_path: str | None = None
    summary_path: str | None = None
    #: results.jsonl and summary.json in the artifact store (the command that asked writes them)
    results_ref: ArtifactRef | None = None
    summary_ref: ArtifactRef | None = None
    stopped: str | None = None
    continued_runs: int = 0

    def count(self, status: JobStatus) -> int:
        """How many jobs ended in ``status``."""
        return sum(1 for o in self.outcomes if o.status is status)


def progress_of(req: BatchRequest, state: BatchState, done: bool) -> BatchProgress:
    """The progress report of a batch state (pure, for the query and the Web UI)."""
    outcomes = sorted(state.outcomes.values(), key=lambda o: o.index)
    by = {s: sum(1 for o in outcomes if o.status is s) for s in JobStatus}
    shown = req.limits.progress_jobs_shown
    return BatchProgress(
        batch_id=req.batch_id,
        jobs_total=len(req.jobs),
        pending=len(state.pending),
        running=len(state.pool.in_flight),
        completed=by[JobStatus.COMPLETED],
        failed=by[JobStatus.FAILED],
        skipped=by[JobStatus.SKIPPED],
        total_usd=micros_to_usd(state.pool.total_micros),
        spent_usd=micros_to_usd(state.pool.spent_micros),
        in_flight_usd=micros_to_usd(state.pool.reserved_micros),
        returned_usd=micros_to_usd(state.returned_micros),
        stop_requested=state.stop_requested,
        continued_runs=state.continued_runs,
        running_jobs=sorted(state.pool.in_flight),
        finished=outcomes[-shown:] if shown else [],
        done=done,
    )


def progress_markdown(p: BatchProgress) -> str:
    """Web UI details of a batch (``workflow.set_current_details``; every value escaped)."""
    md = markdown_text
    lines = [
        f"### Batch `{p.batch_id}`" + (" — done" if p.done else ""),
        "",
        f"**jobs** {p.jobs_total} · pending {p.pending} · running {p.running} · "
        f"completed {p.completed} · failed {p.failed} · skipped {p.skipped}",
        "",
        f"**budget** spent {md(f'${p.spent_usd:.4f}')} + in flight {md(f'${p.in_flight_usd:.4f}')} of "
        f"{md(f'${p.total_usd:.4f}')} (returned by children: {md(f'${p.returned_usd:.4f}')})",
    ]
    if p.stop_requested:
        lines += ["", f"**stop requested:** {md(p.stop_requested)}"]
    if p.finished:
        lines += ["", "| job | status | stop | cost | iters |", "|---|---|---|---|---|"]
        for o in p.finished[-10:]:
            lines.append(
                f"| {md(o.name)} | {o.status.value} | {md(o.stop_reason or '')} | "
                f"{md(format_usd(o.spent_micros))} | {o.iterations} |"
            )
    return "\n".join(lines)


class WriteBatchResultsInput(BaseModel):
    """Input of ``batch.write_results``: every outcome, written as JSONL + a summary."""

    model_config = ConfigDict(extra="forbid")

    batch_id: str
    out_dir: str
    outcomes: list[JobOutcome]
    total_micros: int
    spent_micros: int
    stopped: str | None = None


class WriteBatchResultsOutput(BaseModel):
    """Where ``batch.write_results`` put the files."""

    model_config = ConfigDict(extra="forbid")

    results_path: str
    summary_path: str
    results_ref: ArtifactRef | None = None
    summary_ref: ArtifactRef | None = None


class RecoverChildInput(BaseModel):
    """Input of ``batch.recover_child``: fetch the result of a child an earlier run started."""

    model_config = ConfigDict(extra="forbid")

    workflow_id: str
    #: poll interval while the existing child is still running
    poll_s: float = Field(2.0, gt=0)
    kind: JobKind = "explore"


class RecoverChildOutput(BaseModel):
    """The existing child's result, or why there is none."""

    model_config = ConfigDict(extra="forbid")

    status: str
    result: ExplorationResult | None = None
    #: the result of a research (``ask``) child
    research: ResearchResult | None = None
    #: the result of an ``investigate`` child
    investigation: InvestigationResult | None = None
    error: str | None = None
