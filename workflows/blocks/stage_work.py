"""One stage of an investigation: its implementation loops, the criteria check and the reflection.

:class:`StageWork` runs the next pending stage of an :class:`InvestigationWorkflow`: per loop a
worker child (a research subagent on a slice of the budget, or N branch children compared), the
merge of its findings (citations checked by ``research.aggregate``) and a reviewer + confirmation
deciding to loop again; then the stage's record (compression: a priced ``investigate.compress``
model call, its whole text in the artifact store; the deterministic record when the call cannot be
had or the run is already ending), the criteria check
(evidence checked against the repository) and the reflection on the remaining stages. The
workflow owns the state and hands in its model call, decision log, stop and bookkeeping as
:class:`InvestigationHooks`; nothing here is nondeterministic.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from decimal import Decimal

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.run.budget import format_usd
    from durable_navigator.navcore.planning.criteria import verdict_word
    from durable_navigator.navcore.investigation.investigation import (
        BranchScore,
        CriterionStatus,
        EvidenceInput,
        EvidenceOutput,
        InvestigationRequest,
        InvestigationState,
        PlannedStage,
        ScoreInput,
        ScoreOutput,
        StageRecord,
        stage_share,
    )
    from durable_navigator.navcore.navigator.model_calls import InvestigateOut
    from durable_navigator.navcore.navigator.report import shorten
    from durable_navigator.navcore.research.research import AggregateInput, AggregateOutput
    from durable_navigator.navcore.navigator.state import StopReason
    from durable_navigator.navcore.run.subagents import AgentProfile, SubagentOutcome
    from durable_navigator.workflows.blocks.branches import best, fork
    from durable_navigator.workflows.blocks.options import SHORT, Scheduler, run_activity
    from durable_navigator.workflows.blocks.subagents import SubagentRunner

__all__ = ["StageWork", "InvestigationHooks", "BRANCH_STRATEGIES", "as_planned", "loop_cap"]

#: how alternative branches of a stage differ (deterministic; the i-th branch takes the i-th)
BRANCH_STRATEGIES = (
    "start from the entry points and follow the calls inward",
    "start from the definitions and data types, then find their users",
    "start from the tests and the configuration, then the code they exercise",
    "start from the error handling and edge cases",
)
#: stages a reflection may grow the plan to, as a multiple of ``max_stages`` (a safety cap)
_GROWTH = 2


@dataclass(frozen=True)
class InvestigationHooks:
    """What planning and stages need from their workflow: the model call, the decision log, stop and bookkeeping."""

    #: one investigation call (kind, label, owning stage, spec fields); None when failed / refused / stopped
    call: Callable[..., Awaitable[InvestigateOut | None]]
    #: a decision-log entry (action, reasoning, diff lines)
    log: Callable[..., None]
    stop: Callable[[StopReason, str], None]
    #: "<reason> (by <sender>)" of a stop (optionally given the pending turn whose verdict stopped the run)
    stop_detail: Callable[..., str]
    count: Callable[[], None]
    publish: Callable[[], None]
    #: the ledger refused (message): True when the run got a budget raise and may try again (interactive);
    #: False when it ends (the stop is already recorded)
    out_of_budget: Callable[[str], Awaitable[bool]]
    #: how an index-bound activity (the evidence check, a merge of findings) is run: the run's ``_on_host``,
    #: on the host whose index is warm (:mod:`workflows.blocks.affinity`)
    on_host: Scheduler = run_activity


class StageWork:
    """Runs an investigation's stages one at a time, on the workflow's state (read through ``state``)."""

    def __init__(self, state: Callable[[], InvestigationState], req: InvestigationRequest, subagents: SubagentRunner,
                 hooks: InvestigationHooks) -> None:
        self._state, self.req, self.subagents, self.hooks = state, req, subagents, hooks

    @property
    def state(self) -> InvestigationState:
        return self._state()

    async def next_stage(self) -> None:
        """Run the next pending stage: its loops, the criteria check, the reflection (or finalize when none is left)."""
        s, req = self.state, self.req
        stage = next((st for st in s.stages if st.status in ("pending", "running")), None)
        if stage is None:
            self.hooks.stop(StopReason.FINALIZED, f"{sum(st.status == 'done' for st in s.stages)} stages done")
            return
        s.current, stage.status = stage.index, "running"
        self.hooks.publish()
        stages_left = sum(1 for st in s.stages if st.status in ("pending", "running"))
        cap = loop_cap(stage, req)
        while stage.loops < cap and s.run.stop_reason is None:
            before = stage.findings_ref
            await self._work(stage, stages_left)
            stage.loops += 1
            if s.steering.stop_requested is not None:
                self.hooks.stop(StopReason.STOPPED, self.hooks.stop_detail())
                break
            if stage.loops > 1 and stage.findings_ref == before:
                s.warnings.append(f"stage {stage.index}: loop {stage.loops} added no new findings; moving on "
                                  "(loop detected)")
                break
            if not await self._review_stage(stage):
                break
            if stage.loops == cap:
                s.warnings.append(f"stage {stage.index}: the review asked for more after {stage.loops} loops; "
                                  "the per-stage cap moves on")
        if stage.findings == 0 and s.run.stop_reason is None:
            s.warnings.append(f"stage {stage.index} stalled: no cited findings after {stage.loops} loop(s)")
        await self._compress(stage)
        if s.run.stop_reason is None:
            await self._check_criteria(stage)
        if s.run.stop_reason is None and any(st.status == "pending" for st in s.stages):
            await self._reflect(stage)
        stage.status = "stopped" if s.run.stop_reason is StopReason.STOPPED else (
            "done" if stage.findings or stage.child_problem is None else "failed")
        self.hooks.publish()

    def _profile(self, stage: StageRecord) -> AgentProfile:
        return self.req.profiles.get(stage.profile or "", self.req.worker)

    def _task(self, stage: StageRecord, strategy: str | None) -> str:
        """The worker's question: the stage itself (the investigation's context goes in its instructions)."""
        lines = [stage.task, "Success criteria (cite the lines that show each):", *(f"- {c}" for c in stage.criteria)]
        if strategy:
            lines.append(f"Strategy: {strategy}")
        if stage.reviews:
            lines.append(f"The reviewer of the previous attempt said: {stage.reviews[-1]}")
        return "\n".join(lines)[:8000]

    def _worker(self, stage: StageRecord, profile: AgentProfile, share: Decimal) -> AgentProfile:
        """The profile of one worker child: its slice's share, and the investigation as its context."""
        s = self.state
        done = [st.record for st in s.stages if st.record and st.index != stage.index][-3:]
        context = "\n".join([f"You carry out stage {stage.index} ({stage.title}) of an investigation of a repository "
                              f"whose overall goal is: {shorten(s.goal, 1000)}", *(["Earlier stages found:", *done]
                                                                                  if done else [])])
        instructions = "\n\n".join(p for p in (profile.system_prompt, context) if p)
        return profile.model_copy(update={"budget_share": share, "system_prompt": instructions[:4000]})

    async def _work(self, stage: StageRecord, stages_left: int) -> None:
        """One implementation loop's worker: one child, or ``branches`` children compared."""
        req = self.req
        loops_left = loop_cap(stage, req) - stage.loops
        if stage.branches > 1:
            outcome = await self._branches(stage, stages_left, loops_left)
        else:
            share = stage_share(req.worker_share, stages_left, loops_left, 1)
            while True:
                outcome = await self.subagents.run(self._worker(stage, self._profile(stage), share),
                                                   self._task(stage, None), stage.index)
                if not self._refused(outcome) or not await self.hooks.out_of_budget(outcome.detail or "no budget"):
                    break
                # raised (interactive): the worker starts on a slice of the larger remainder
            self._book_child(stage, outcome)
        if outcome is not None and outcome.findings_ref is not None:
            await self._merge(stage, outcome)

    def _refused(self, outcome: SubagentOutcome) -> bool:
        """The ledger had no slice for the child: it never started (it is not among the run's children)."""
        return outcome.stop_reason == "budget_exhausted" and not any(
            c.workflow_id == outcome.workflow_id for c in self.state.children)

    def _book_child(self, stage: StageRecord, outcome: SubagentOutcome) -> None:
        stage.children.append(outcome.workflow_id)
        stage.cost_micros += outcome.cost_micros
        self.hooks.log("worker_done", outcome.summary or (outcome.detail or ""), [
            f"{outcome.workflow_id} ({outcome.profile}): {outcome.stop_reason}, completed normally: "
            f"{'yes' if outcome.completed_normally else 'no'}, cost {format_usd(outcome.cost_micros)}"])
        if not outcome.completed_normally:
            stage.child_problem = shorten(f"{outcome.workflow_id} ended {outcome.stop_reason}: "
                                          f"{outcome.detail or 'no detail'}", 1000)
            self.state.warnings.append(f"stage {stage.index}: {stage.child_problem}")
        if outcome.summary:
            stage.summary = shorten(outcome.summary, 4000)
        if outcome.result_path:
            stage.answer_path = outcome.result_path

    async def _branches(self, stage: StageRecord, stages_left: int, loops_left: int) -> SubagentOutcome | None:
        """Branch-and-compare: N workers in parallel on equal parts of the loop's slice; the best is kept."""
        req, ledger, n = self.req, self.state.ledger, stage.branches
        total = Decimal(max(ledger.remaining_micros, 0)) * stage_share(req.worker_share, stages_left, loops_left, 1)
        base = self._profile(stage)
        names = [p for p in sorted(req.profiles) if p.startswith(f"{base.name}-branch")] or [base.name]
        strategies = [BRANCH_STRATEGIES[i % len(BRANCH_STRATEGIES)] for i in range(n)]

        def make(i: int, share: Decimal) -> tuple[AgentProfile, str]:
            profile = req.profiles.get(names[i % len(names)], base)
            return self._worker(stage, profile, share), self._task(stage, strategies[i])

        outcomes = await fork(self.subagents, ledger, total, n, make, stage.index)
        self.hooks.count()
        scored: ScoreOutput = await run_activity(
            "investigate.score_branches", ScoreInput(goal=self.state.goal, findings=[o.findings_ref for o in outcomes]),
            ScoreOutput, SHORT, f"stage {stage.index} · score {n} branches")
        tokens = [o.usage.input_tokens + o.usage.output_tokens for o in outcomes]
        scores = [float(c) / (1.0 + t / 1000.0) for c, t in zip(scored.covered, tokens, strict=True)]
        kept = best(scores, [o.findings_ref is not None for o in outcomes])
        for i, out in enumerate(outcomes):
            self._book_child(stage, out)
            stage.branch_scores.append(BranchScore(workflow_id=out.workflow_id, strategy=strategies[i],
                                                   covered=scored.covered[i], tokens=tokens[i],
                                                   cost_micros=out.cost_micros, score=scores[i], kept=i == kept))
        self.hooks.log("branches", f"stage {stage.index}: kept {outcomes[kept].workflow_id if kept is not None else 'none'} "
                  f"of {n} branches", [f"{b.workflow_id}: covered {b.covered}, {b.tokens} tokens, score {b.score:.4f}"
                                       for b in stage.branch_scores[-n:]])
        return outcomes[kept] if kept is not None else None

    async def _merge(self, stage: StageRecord, outcome: SubagentOutcome) -> None:
        """Merge the child's findings into the stage's (citations checked against the repository)."""
        s = self.state
        self.hooks.count()
        out: AggregateOutput = await self.hooks.on_host(
            "research.aggregate",
            AggregateInput(repo_root=s.repo_root, step_index=stage.index, current_ref=stage.findings_ref,
                           step_ref=outcome.findings_ref, source=f"subagent:{outcome.workflow_id}"),
            AggregateOutput, SHORT, f"stage {stage.index} · merge findings of {outcome.workflow_id}")
        if out.added:
            stage.findings_ref, stage.findings = out.findings.ref, out.findings.count
        self.hooks.log("stage_findings", f"stage {stage.index}: {out.added} new findings, {out.findings.count} in all",
                  [*out.lines, *(f"dropped: {d}" for d in out.dropped)])

    async def _review_stage(self, stage: StageRecord) -> bool:
        """Reviewer + confirmation: True to loop again."""
        planned = as_planned(stage)
        common = dict(subject="stage", stage=planned, stage_index=stage.index, findings_ref=stage.findings_ref,
                      loop=stage.loops - 1, max_loops=loop_cap(stage, self.req))
        review = await self.hooks.call("investigate.review", f"stage {stage.index} · loop {stage.loops} · reviewer",
                                  stage, **common)
        if review is None:
            return False
        confirm = await self.hooks.call("investigate.confirm", f"stage {stage.index} · loop {stage.loops} · confirmation",
                                   stage, critique=review.critique, **common)
        if confirm is None:
            return False
        stage.reviews.append(shorten(f"loop {stage.loops}: {review.critique}", 1000))
        self.hooks.log("stage_review", f"stage {stage.index} loop {stage.loops}: "
                  f"{'move on' if confirm.exit else 'loop again'}: {confirm.reason}",
                  [f"critique: {shorten(review.critique, 400)}"])
        return not confirm.exit

    async def _compress(self, stage: StageRecord) -> None:
        """The stage's record for later prompts, workers and the report: a priced model call (the model's
        whole record stored, a trimmed one in the state); the deterministic record of a few lines when
        the run is ending (stop, exhausted budget) or the call failed."""
        s = self.state
        if s.run.stop_reason is None:
            out = await self.hooks.call("investigate.compress", f"stage {stage.index} · compress the record", stage,
                                        subject="stage", stage=as_planned(stage), stage_index=stage.index,
                                        findings_ref=stage.findings_ref, loop=stage.loops,
                                        max_loops=loop_cap(stage, self.req), summary=stage.summary)
            if out is not None and out.record:
                stage.record, stage.record_ref = shorten(out.record, 4000), out.record_ref
                self.hooks.log("stage_record", f"stage {stage.index}: record compressed by the model",
                               [shorten(line, 300) for line in stage.record.splitlines()[:8]])
                return
            if s.run.stop_reason is None:
                s.warnings.append(f"stage {stage.index}: the record could not be compressed by the model; "
                                  "the deterministic record is kept")
        stage.record = shorten(f"[{stage.index}] {stage.title}: {stage.findings} findings in {stage.loops} loop(s); "
                               f"{stage.summary or 'no answer'}", 1200)

    async def _check_criteria(self, stage: StageRecord) -> None:
        s = self.state
        out = await self.hooks.call("investigate.criteria", f"stage {stage.index} · criteria check", stage,
                               subject="stage", stage=as_planned(stage), stage_index=stage.index,
                               findings_ref=stage.findings_ref)
        if out is None:
            if s.run.stop_reason is not None:
                return
            # nobody checked them: saying "not met" would claim a check that did not happen
            statuses = [CriterionStatus(criterion=c, status="unchecked", note="the criteria check failed")
                        for c in stage.criteria]
        else:
            statuses = out.criteria
        self.hooks.count()
        checked: EvidenceOutput = await self.hooks.on_host(
            "investigate.check_evidence", EvidenceInput(repo_root=s.repo_root, criteria=statuses), EvidenceOutput,
            SHORT, f"stage {stage.index} · check {sum(len(c.evidence) for c in statuses)} evidence citations")
        stage.criteria_status = checked.criteria
        unchecked = sum(c.unchecked for c in checked.criteria)
        self.hooks.log("criteria", f"stage {stage.index}: {sum(c.met for c in checked.criteria)}/{len(stage.criteria)} met"
                       + (f", {unchecked} unchecked" if unchecked else ""),
                       [f"{verdict_word(c.status)} {c.criterion}: {', '.join(c.evidence) or 'no evidence'}"
                        for c in checked.criteria] + [f"dropped: {d}" for c in checked.criteria for d in c.dropped])

    async def _reflect(self, stage: StageRecord) -> None:
        s, cap = self.state, self.req.max_stages * _GROWTH
        status = [f"stage {st.index} {verdict_word(c.status)}: {c.criterion}"
                  for st in s.stages for c in st.criteria_status]
        out = await self.hooks.call("investigate.reflect", f"stage {stage.index} · reflection", stage,
                               subject="stage", stages=[as_planned(st) for st in s.stages], stage=as_planned(stage),
                               stage_index=stage.index, findings_ref=stage.findings_ref, status=status)
        if out is None:
            return
        changes: list[str] = []
        for i in sorted(set(out.drop)):
            if i < len(s.stages) and s.stages[i].status == "pending":
                s.stages[i].status, s.stages[i].reflection = "dropped", shorten(f"after stage {stage.index}: {out.reason}", 1000)
                changes.append(f"dropped [{i}] {s.stages[i].title}")
        for ch in out.change:
            if ch.index < len(s.stages) and s.stages[ch.index].status == "pending":
                st = s.stages[ch.index]
                st.title, st.task, st.criteria = ch.stage.title, ch.stage.task, list(ch.stage.criteria)
                st.max_loops = ch.stage.max_loops or st.max_loops
                changes.append(f"changed [{ch.index}] → {st.title}")
        for p in out.add:
            if len(s.stages) >= cap:
                s.warnings.append(f"reflection after stage {stage.index}: the plan is at its cap of {cap} stages; "
                                  f"'{p.title}' not added")
                break
            s.stages.append(StageRecord(index=len(s.stages), title=p.title, task=p.task, criteria=list(p.criteria),
                                        profile=p.profile, branches=max(p.branches, self.req.branches),
                                        max_loops=p.max_loops))
            changes.append(f"added [{len(s.stages) - 1}] {p.title}")
        stage.reflection = shorten(f"{out.reason}" + (f" ({'; '.join(changes)})" if changes else " (no change)"), 1000)
        self.hooks.log("reflection", out.reason, changes or ["no change to the remaining stages"])


def as_planned(stage: StageRecord) -> PlannedStage:
    """A stage record as the plan's words (what the reviewer, criteria checker and reflector see)."""
    return PlannedStage(title=stage.title[:200], task=stage.task[:2000] or stage.title, criteria=stage.criteria[:8] or ["-"],
                        profile=stage.profile, branches=stage.branches, max_loops=stage.max_loops)


def loop_cap(stage: StageRecord, req: InvestigationRequest) -> int:
    """The stage's cap on implementation loops: its own (a plan edit or the plan maker), else the run's."""
    return stage.max_loops or req.max_stage_loops
