"""``ExploreBranchesWorkflow``: ``navigator explore --branches N`` — fork, score, keep the best.

N ``NavigatorWorkflow`` children explore the same goal with different strategies
(planning ``auto`` / ``off`` / ``direct``) in parallel, each on an equal slice of
the budget reserved in this run's hard-capped ledger (unspent money flows back);
each context pack is scored by the goal identifiers it covers per thousand tokens
(``investigate.score_branches``) and the best is kept. A stop is forwarded to the
running children (they finalize their best map) and the best of what they wrote
is still kept.
"""

from __future__ import annotations

from decimal import Decimal

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.batch.branches import (
        EXPLORE_STRATEGIES,
        BranchExploreRequest,
        BranchExploreResult,
        BranchExploreState,
    )
    from durable_navigator.navcore.run.budget import BudgetLedger, format_usd, micros_to_usd, usd_to_micros
    from durable_navigator.navcore.investigation.investigation import BranchScore, ScoreInput, ScoreOutput
    from durable_navigator.navcore.navigator.report import TurnReport, shorten
    from durable_navigator.navcore.run_kinds import BRANCHES
    from durable_navigator.navcore.navigator.state import Status, StopReason
    from durable_navigator.navcore.run.subagents import AgentProfile
    from durable_navigator.navcore.run.sources import display_root
    from durable_navigator.workflows.blocks.branches import best, fork
    from durable_navigator.workflows.blocks.options import SHORT, run_activity
    from durable_navigator.workflows.blocks.subagents import SubagentRunner, SubagentSettings
    from durable_navigator.workflows.blocks.steerable import ChildEvents, StoppableRun
    from durable_navigator.workflows.blocks.webui import Publisher

__all__ = ["ExploreBranchesWorkflow"]


@workflow.defn(name=BRANCHES.workflow_type)
class ExploreBranchesWorkflow(ChildEvents, StoppableRun):
    """Branch-and-compare of one exploration (``stop`` reaches every branch: each finalizes its best map, and the
    best of what they wrote is kept)."""

    @workflow.init
    def __init__(self, req: BranchExploreRequest) -> None:
        ex = req.exploration
        self.req = req
        self.state = BranchExploreState(ledger=BudgetLedger(max_micros=usd_to_micros(ex.budget_usd)))
        self._ui = Publisher()
        self.subagents = SubagentRunner(
            lambda: self.state.ledger, lambda: self.state.children,
            SubagentSettings(repo_root=ex.repo_path, model=ex.model, out_dir=ex.out_dir, model_call=ex.model_call,
                             approval=ex.approval, profiles={}, depth=0, max_depth=1, min_slice_micros=1000),
            stopped=lambda: self.state.steering.stop_requested, count=self._count_activity, publish=self._publish,
        )

    @workflow.run
    async def run(self, req: BranchExploreRequest) -> BranchExploreResult:
        """Fork the branches, score their packs, keep the best."""
        ex, s = req.exploration, self.state
        workflow.upsert_memo({"goal": shorten(ex.goal, 2000), "repo": ex.repo_path, "kind": BRANCHES.memo_kind})
        s.run.status = Status.THINKING
        self._publish()
        strategies = [EXPLORE_STRATEGIES[i % len(EXPLORE_STRATEGIES)] for i in range(req.branches)]

        def make(i: int, share: Decimal) -> tuple[AgentProfile, str]:
            return AgentProfile(name=f"branch-{strategies[i]}", kind="navigate", model=ex.model, planning=strategies[i],
                                token_budget=ex.token_budget, max_iterations=ex.max_iterations, budget_share=share,
                                timeout_s=86_400), ex.goal

        outcomes = await fork(self.subagents, s.ledger, Decimal(s.ledger.remaining_micros), req.branches, make, 0)
        self._count_activity()
        scored: ScoreOutput = await run_activity(
            "investigate.score_branches", ScoreInput(goal=ex.goal, packs=[o.result_ref for o in outcomes]),
            ScoreOutput, SHORT, f"score {req.branches} context packs")
        usable = [o.result_ref is not None for o in outcomes]
        scores = [round(c / max(t / 1000.0, 0.001), 4) if ok else 0.0
                  for c, t, ok in zip(scored.covered, scored.tokens, usable, strict=True)]
        kept = best(scores, usable)
        best_out = outcomes[kept] if kept is not None else None
        for i, out in enumerate(outcomes):
            s.scores.append(BranchScore(workflow_id=out.workflow_id, strategy=f"planning {strategies[i]}",
                                        covered=scored.covered[i], tokens=scored.tokens[i], cost_micros=out.cost_micros,
                                        score=scores[i], kept=i == kept))
        if s.steering.stop_requested is not None:
            s.run.stop(StopReason.STOPPED, f"{s.steering.stop_requested} (by {s.steering.stop_sender or 'user'})")
        elif best_out is None:
            s.run.stop(StopReason.FAILED, "no branch wrote a context pack")
        else:
            s.run.stop(StopReason.FINALIZED, f"kept {best_out.workflow_id} of {req.branches} branches")
        s.run.status = Status.COMPLETED if best_out is not None else Status.FAILED
        self._publish()
        await self._ui.flush()
        await workflow.wait_condition(workflow.all_handlers_finished)
        assert s.run.stop_reason is not None
        return BranchExploreResult(
            workflow_id=workflow.info().workflow_id, stop_reason=s.run.stop_reason, stop_detail=s.run.stop_detail,
            completed_normally=s.run.stop_reason is StopReason.FINALIZED,
            kept=best_out.workflow_id if best_out else None, context_path=best_out.result_path if best_out else None, scores=list(s.scores), children=list(s.children),
            cost_micros=s.ledger.spent_micros, cost_usd=micros_to_usd(s.ledger.spent_micros),
            max_usd=micros_to_usd(s.ledger.max_micros), usage=s.ledger.total_usage())

    def _turn_report(self) -> TurnReport:
        s = self.state
        return TurnReport(step=len(s.children), status=s.run.status.value, mode="autonomous",
                          stop_reason=s.run.stop_reason.value if s.run.stop_reason else None,
                          cost_this_turn_usd=format_usd(0), cost_total_usd=format_usd(s.ledger.spent_micros),
                          budget_usd=format_usd(s.ledger.max_micros), map_tokens=0, map_token_budget=0,
                          focus_areas=[], reasoning="", proposed_diff=[], decisions=0, workflow="branches",
                          model=self.req.exploration.model, children=list(s.children),
                          stage_plan="\n".join(f"{'kept ' if b.kept else ''}{b.workflow_id} ({b.strategy}): covered "
                                               f"{b.covered}, {b.tokens} tokens, score {b.score}" for b in s.scores)
                          or None)

    def _publish(self) -> None:
        s = self.state
        details = f"**explore branches** · {s.run.status.value} · {format_usd(s.ledger.spent_micros)}"
        self._ui.publish(display_root(self.req.exploration.repo_path), s.run.status.value, s.ledger.spent_micros,
                         len(s.children), details + ("\n\n" + (self._turn_report().stage_plan or "")))
