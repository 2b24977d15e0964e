"""``BatchWorkflow``: many explorations (child ``NavigatorWorkflow``s) and research questions
(``kind: ask`` → child ``ResearchWorkflow``s) under one USD budget.

* At most ``max_concurrency`` children run at once, started in job order.
* Each child gets a slice of the batch budget when it starts
  (:meth:`navcore.batch.batch.BudgetPool.slice_for`: min(job cap, available / jobs
  not yet started)) and the pool takes back what it did not spend (from its
  ``ExplorationResult``). Spent + slices in flight never pass the total. A
  child whose spend is unknown (failed, timed out) is charged its whole slice,
  except a scan failure, which happens before any model call.
* Each child carries its job's repository locator (a path, a snapshot or a git
  commit, settled by the command that started the batch): any worker host can
  serve it. Outcomes name the repository as the user does (``display_root``).
* A failed child is reported; the batch goes on.
* Child ids are ``<batch id>-job-<index>``: a batch re-run with the same id
  meets its completed children again (``WorkflowAlreadyStartedError`` under
  ``ALLOW_DUPLICATE_FAILED_ONLY``) and recovers their results through the
  ``batch.recover_child`` activity instead of exploring twice; failed or
  terminated children are re-run.
* ``stop`` skips pending jobs and forwards ``stop`` to running children, which
  finalize their best map so far.
* Continue-as-new after ``continue_as_new_after_jobs`` finished jobs (or when
  the server suggests it): no new job starts, running children finish, then
  the state (pending, outcomes, pool) is carried over once handlers are done.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError, WorkflowAlreadyStartedError

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.batch.batch import (
        BatchJob,
        BatchProgress,
        BatchRequest,
        BatchResult,
        BatchState,
        BatchStopInput,
        JobOutcome,
        JobStatus,
        RecoverChildInput,
        RecoverChildOutput,
        WriteBatchResultsInput,
        WriteBatchResultsOutput,
        child_workflow_id,
        progress_markdown,
        progress_of,
    )
    from durable_navigator.navcore.run.budget import micros_to_usd, usd_to_micros
    from durable_navigator.navcore.navigator.messages import QUERY_BATCH_PROGRESS, StopInput
    from durable_navigator.navcore.navigator.report import markdown_text, run_details_markdown
    from durable_navigator.navcore.navigator.requests import ExplorationRequest, ExplorationResult
    from durable_navigator.navcore.investigation.investigation import InvestigationRequest, InvestigationResult
    from durable_navigator.navcore.research.research import ResearchRequest, ResearchResult
    from durable_navigator.navcore.run.sources import display_root
    from durable_navigator.navcore.run_kinds import EXPLORE, INVESTIGATION, RESEARCH, RunKind
    from durable_navigator.workflows.blocks.webui import SA_COST_USD, SA_ITERATION, SA_REPO, SA_STATUS

__all__ = ["BatchWorkflow", "BATCH_REPO_TAG"]

#: value of ``NavigatorRepo`` on batch runs, so ``navigator ls --repo batch`` finds them
BATCH_REPO_TAG = "batch"
_WRITE_TIMEOUT = timedelta(minutes=5)
_WRITE_RETRY = RetryPolicy(maximum_attempts=5, non_retryable_error_types=["NavigatorError", "ConfigError"])
_RECOVER_RETRY = RetryPolicy(maximum_attempts=5)
#: the child's failure type when the repository could not be scanned (nothing was spent)
_SCAN_FAILED = "ScanFailed"
#: a job's kind → its child's kind of run (workflow type and result type)
_CHILD_KINDS: dict[str, RunKind] = {"explore": EXPLORE, "ask": RESEARCH, "investigate": INVESTIGATION}


@workflow.defn(name="BatchWorkflow")
class BatchWorkflow:
    """Unattended explorations of many repositories × goals under one budget."""

    @workflow.init
    def __init__(self, req: BatchRequest) -> None:
        self.req = req
        self.state: BatchState = req.carried_state or req.initial_state()
        self.jobs: dict[int, BatchJob] = {job.index: job for job in req.jobs}
        self._children: dict[int, Any] = {}
        #: job tasks, referenced so none is collected while it waits
        self._tasks: set[asyncio.Task[None]] = set()
        self._stopped_children: set[int] = set()
        self._finished_this_run = 0
        self._wakeups = 0
        self._done = False
        self._published: tuple[Any, ...] = ()

    @workflow.run
    async def run(self, req: BatchRequest) -> BatchResult:
        """Run every job (bounded concurrency), then write the results."""
        s = self.state
        self._publish()
        while True:
            if s.stop_requested is not None:
                self._skip_pending("stopped", f"batch stopped before this job started: {s.stop_requested}")
                await self._forward_stop()
            draining = self._should_continue_as_new()
            while s.pending and not draining and len(s.pool.in_flight) < req.max_concurrency:
                self._start_next()
            if not s.pool.in_flight and (not s.pending or draining):
                break
            seen = self._wakeups
            await workflow.wait_condition(lambda: self._wakeups != seen)
        if s.pending:
            await workflow.wait_condition(workflow.all_handlers_finished)
            s.continued_runs += 1
            workflow.logger.info("batch %s continuing as new with %d jobs pending", req.batch_id, len(s.pending))
            workflow.continue_as_new(req.model_copy(update={"carried_state": s}))
        return await self._finish()

    # -- jobs --------------------------------------------------------------

    def _start_next(self) -> None:
        s, limits = self.state, self.req.limits
        index = s.pending.pop(0)
        job = self.jobs[index]
        slice_micros = s.pool.slice_for(job, len(s.pending) + 1)
        if slice_micros < usd_to_micros(limits.min_slice_usd):
            self._record(self._outcome(job, JobStatus.SKIPPED, "budget_exhausted",
                                       error="the batch budget left no slice for this job; raise --budget-usd"))
            return
        s.pool.take(index, slice_micros)
        # the task is created in job order and reacts only to Temporal events: deterministic
        task = asyncio.create_task(self._run_job(job, slice_micros))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run_job(self, job: BatchJob, slice_micros: int) -> None:
        wid = child_workflow_id(self.req.batch_id, job.index)
        try:
            try:
                outcome = await self._run_child(job, wid, slice_micros)
            except WorkflowAlreadyStartedError:
                outcome = await self._recover(job, wid, slice_micros)
        except (ActivityError, ApplicationError) as err:
            # e.g. recovering an earlier run's child failed for good: report it, keep the batch going
            outcome = self._outcome(job, JobStatus.FAILED, "failed", error=" ".join(str(err.cause or err).split())[:500])
            outcome.allotted_micros = outcome.spent_micros = slice_micros
        returned = self.state.pool.settle(job.index, outcome.spent_micros)
        if self.state.pool.spent_micros + self.state.pool.reserved_micros > self.state.pool.total_micros:
            # only possible if a child spent more than its slice (its own ledger allows an actual
            # cost above the reserved estimate, e.g. unexpected thinking tokens)
            workflow.logger.warning("batch %s passed its total after job %d", self.req.batch_id, job.index)
        self.state.returned_micros += returned
        self._record(outcome)
        self._finished_this_run += 1

    async def _run_child(self, job: BatchJob, wid: str, slice_micros: int) -> JobOutcome:
        req = self.req
        child = _CHILD_KINDS[job.kind]
        child_type, result_type = child.workflow_type, child.result_type
        handle = await workflow.start_child_workflow(
            child_type,
            self._child_request(job, slice_micros),
            id=wid,
            task_queue=req.task_queue or workflow.info().task_queue,
            result_type=result_type,
            execution_timeout=timedelta(seconds=req.limits.job_timeout_s),
            id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
            memo={"goal": job.goal, "batch_id": req.batch_id},
            static_summary=markdown_text(f"batch {req.batch_id} · job {job.index} ({job.name})"),
            static_details=run_details_markdown(job.goal, job.repo_path, {
                "Batch": req.batch_id, "Job": f"{job.index} ({job.name})", "Model": job.model,
                "Budget": f"${micros_to_usd(slice_micros):.4f} (a slice of the batch budget)",
                "Map budget": f"{job.token_budget} tokens", "Max iterations": str(job.max_iterations),
            }),
        )
        self._children[job.index] = handle
        try:
            if self.state.stop_requested is not None:
                await self._stop_child(job.index)
            result: ExplorationResult | ResearchResult | InvestigationResult = await handle
        except ChildWorkflowError as err:
            return self._failed(job, slice_micros, err)
        finally:
            self._children.pop(job.index, None)
        return self._completed(job, result, slice_micros, recovered=False)

    async def _recover(self, job: BatchJob, wid: str, slice_micros: int) -> JobOutcome:
        """The child id already completed in an earlier run of this batch: take its result."""
        out: RecoverChildOutput = await workflow.execute_activity(
            "batch.recover_child",
            RecoverChildInput(workflow_id=wid, kind=job.kind),
            result_type=RecoverChildOutput,
            start_to_close_timeout=timedelta(seconds=self.req.limits.job_timeout_s),
            heartbeat_timeout=timedelta(seconds=60),
            retry_policy=_RECOVER_RETRY,
            summary=f"recover job {job.index} · {wid}",
        )
        found = {"ask": out.research, "investigate": out.investigation}.get(job.kind, out.result)
        if found is None:
            outcome = self._outcome(job, JobStatus.FAILED, "failed", error=out.error or out.status)
            outcome.allotted_micros = outcome.spent_micros = slice_micros
            return outcome
        return self._completed(job, found, slice_micros, recovered=True)

    def _child_request(self, job: BatchJob, slice_micros: int) -> ExplorationRequest | ResearchRequest | InvestigationRequest:
        if job.kind == "investigate":
            # a staged investigation: its stage workers are research children on slices of this job's slice
            return InvestigationRequest(
                repo_path=job.repo_path,
                goal=job.goal,
                budget_usd=micros_to_usd(slice_micros),
                model=job.model,
                max_output_tokens=job.max_output_tokens,
                out_dir=f"{self.req.out_dir.rstrip('/')}/{self.req.batch_id}",
                **({"model_call": self.req.model_call} if self.req.model_call else {}),
            )
        if job.kind == "ask":
            # a research job: the goal is the question; the run's own researcher profile, no subagents
            return ResearchRequest(
                repo_path=job.repo_path,
                question=job.goal,
                budget_usd=micros_to_usd(slice_micros),
                model=job.model,
                max_output_tokens=job.max_output_tokens,
                out_dir=f"{self.req.out_dir.rstrip('/')}/{self.req.batch_id}",
                **({"model_call": self.req.model_call} if self.req.model_call else {}),
            )
        return ExplorationRequest(
            repo_path=job.repo_path,
            goal=job.goal,
            budget_usd=micros_to_usd(slice_micros),
            token_budget=job.token_budget,
            model=job.model,
            max_iterations=job.max_iterations,
            max_output_tokens=job.max_output_tokens,
            out_dir=f"{self.req.out_dir.rstrip('/')}/{self.req.batch_id}",
            # batch jobs keep the open-ended loop (their input did before the default became "auto")
            planning="off",
            **({"model_call": self.req.model_call} if self.req.model_call else {}),
        )

    # -- outcomes ------------------------------------------------------------

    def _outcome(self, job: BatchJob, status: JobStatus, stop_reason: str | None, error: str | None = None) -> JobOutcome:
        return JobOutcome(
            index=job.index,
            name=job.name,
            workflow_id=child_workflow_id(self.req.batch_id, job.index),
            # the user's path (or url@commit), not the snapshot locator the child carries
            repo_path=display_root(job.repo_path),
            goal=job.goal,
            model=job.model,
            kind=job.kind,
            status=status,
            stop_reason=stop_reason,
            error=error,
        )

    def _completed(self, job: BatchJob, result: ExplorationResult | ResearchResult | InvestigationResult, slice_micros: int,
                   recovered: bool) -> JobOutcome:
        outcome = self._outcome(job, JobStatus.COMPLETED, result.stop_reason.value, error=result.stop_detail
                                if result.stop_reason.value == "failed" else None)
        outcome.allotted_micros, outcome.spent_micros = slice_micros, result.cost_micros
        outcome.usage, outcome.iterations, outcome.decisions = result.usage, result.iterations, result.decisions
        outcome.context_path, outcome.report_path, outcome.recovered = result.context_path, result.report_path, recovered
        if isinstance(result, ResearchResult | InvestigationResult):
            outcome.completed_normally = result.completed_normally
        # the stored files, so the command that asked writes them (a worker with an object store writes none)
        if isinstance(result, ExplorationResult):
            outcome.context_ref, outcome.report_ref = result.context_ref, result.report_ref
        elif isinstance(result, ResearchResult):
            outcome.context_ref, outcome.report_ref = result.answer_ref, result.report_ref
        else:
            outcome.report_path = result.report_json_path
            outcome.context_ref, outcome.report_ref = result.report_ref, result.report_json_ref
        return outcome

    def _failed(self, job: BatchJob, slice_micros: int, err: ChildWorkflowError) -> JobOutcome:
        cause = err.cause
        message = " ".join(str(cause if cause is not None else err).split())[:500]
        scan_failed = isinstance(cause, ApplicationError) and cause.type == _SCAN_FAILED
        outcome = self._outcome(job, JobStatus.FAILED, "failed", error=message)
        outcome.allotted_micros = slice_micros
        # unknown spend counts as the whole slice, so the batch total is never passed
        outcome.spent_micros = 0 if scan_failed else slice_micros
        workflow.logger.warning("batch job %d failed: %s", job.index, message)
        return outcome

    def _record(self, outcome: JobOutcome) -> None:
        self.state.outcomes[outcome.index] = outcome
        self._wakeups += 1
        self._publish()

    def _skip_pending(self, reason: str, detail: str) -> None:
        s = self.state
        while s.pending:
            job = self.jobs[s.pending.pop(0)]
            s.outcomes[job.index] = self._outcome(job, JobStatus.SKIPPED, reason, error=detail)
        self._publish()

    def _should_continue_as_new(self) -> bool:
        info = workflow.info()
        return info.is_continue_as_new_suggested() or (
            self._finished_this_run >= self.req.limits.continue_as_new_after_jobs
        )

    # -- stop ----------------------------------------------------------------

    async def _forward_stop(self) -> None:
        for index in sorted(self._children):
            await self._stop_child(index)

    async def _stop_child(self, index: int) -> None:
        handle = self._children.get(index)
        if handle is None or index in self._stopped_children:
            return
        self._stopped_children.add(index)
        s = self.state
        reason = f"batch {self.req.batch_id} stopped: {s.stop_requested}"
        try:
            await handle.signal("stop", StopInput(reason=reason[:500], sender=f"batch:{s.stop_sender}"[:200]))
        except ApplicationError as err:
            # the job finished in the same workflow task the stop arrived in (signals are handled first):
            # nothing is left to stop, and its completion is recorded as usual
            if err.type != "ExternalWorkflowExecutionNotFound":
                raise

    # -- finish --------------------------------------------------------------

    async def _finish(self) -> BatchResult:
        s, req = self.state, self.req
        outcomes = [s.outcomes[i] for i in sorted(s.outcomes)]
        written: WriteBatchResultsOutput = await workflow.execute_activity(
            "batch.write_results",
            WriteBatchResultsInput(
                batch_id=req.batch_id,
                out_dir=req.out_dir,
                outcomes=outcomes,
                total_micros=s.pool.total_micros,
                spent_micros=s.pool.spent_micros,
                stopped=s.stop_requested,
            ),
            result_type=WriteBatchResultsOutput,
            start_to_close_timeout=_WRITE_TIMEOUT,
            retry_policy=_WRITE_RETRY,
            summary=f"write results · {len(outcomes)} jobs · ${micros_to_usd(s.pool.spent_micros):.4f}",
        )
        self._done = True
        self._publish()
        await workflow.wait_condition(workflow.all_handlers_finished)
        return BatchResult(
            batch_id=req.batch_id,
            outcomes=outcomes,
            total_usd=micros_to_usd(s.pool.total_micros),
            spent_usd=micros_to_usd(s.pool.spent_micros),
            results_path=written.results_path,
            summary_path=written.summary_path,
            results_ref=written.results_ref,
            summary_ref=written.summary_ref,
            stopped=s.stop_requested,
            continued_runs=s.continued_runs,
        )

    def _publish(self) -> None:
        """Search attributes and Web UI details."""
        s = self.state
        status = "completed" if self._done else ("stopping" if s.stop_requested else "running")
        values = (status, s.pool.spent_micros, len(s.outcomes))
        if values != self._published:
            # only on change: every upsert is a history event
            self._published = values
            workflow.upsert_search_attributes(
                [
                    SA_REPO.value_set(BATCH_REPO_TAG),
                    SA_STATUS.value_set(status),
                    SA_COST_USD.value_set(float(micros_to_usd(s.pool.spent_micros))),
                    SA_ITERATION.value_set(len(s.outcomes)),
                ]
            )
        workflow.set_current_details(progress_markdown(progress_of(self.req, s, self._done)))

    # -- messages --------------------------------------------------------------

    @workflow.signal(name="stop")
    def stop(self, inp: BatchStopInput | None = None) -> None:
        """Start no more jobs; running children finalize their best map so far."""
        # a JSON null payload decodes to None: treat it as a plain stop, never crash the task
        inp = inp if isinstance(inp, BatchStopInput) else BatchStopInput()
        s = self.state
        if s.stop_requested is None:
            s.stop_requested, s.stop_sender = inp.reason, inp.sender
            self._wakeups += 1
            workflow.logger.info("batch %s stop requested by %s", self.req.batch_id, inp.sender)

    @workflow.query(name=QUERY_BATCH_PROGRESS)
    def get_progress(self) -> BatchProgress:
        """Counts, budget and the latest finished jobs."""
        return progress_of(self.req, self.state, self._done)

