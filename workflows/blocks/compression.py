"""Keeps a decision log (and so state, history and prompts) bounded.

Past the profile's threshold the older entries are summarized by a priced
model call (``navigator.compress`` task) and replaced by one ``summary``
entry; the mechanical hard cap is the last resort when a summary cannot be
had (refused budget, failed call, activity cap) — noted in the worker log.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.run.artifacts import ArtifactRef
    from durable_navigator.navcore.run.compression import (
        CompressionConfig,
        build_summary_request,
        enforce_hard_cap,
        merge_summary,
        needs_compression,
        truncate_entries,
    )
    from durable_navigator.navcore.navigator.model_calls import CompressSpec, SummaryOut
    from durable_navigator.navcore.navigator.state import DecisionLog, DecisionLogEntry
    from durable_navigator.workflows.blocks.model_call import ModelCaller

__all__ = ["Compressor"]


class Compressor:
    """Summarizes the older part of a decision log through the run's model."""

    def __init__(self, caller: ModelCaller, config: CompressionConfig, room: Callable[[], bool]) -> None:
        self.caller, self.config, self._room = caller, config, room

    async def compress(self, log: DecisionLog, *, model_for: Callable[[str], str], repo_root: str,
                       goal_ref: ArtifactRef | None, step: int) -> None:
        """Trim, summarize when past the threshold, then enforce the hard cap.

        ``model_for(kind)`` names the model of the summary call, asked only when one is made
        (budget-aware routing may send it to another model than the run's).
        """
        cfg = self.config
        log.entries = truncate_entries(log.entries, cfg)
        if needs_compression(log.entries, cfg) and self._room() and goal_ref is not None:
            request = build_summary_request(log.entries, cfg)
            model = model_for("navigator.compress")
            spec = CompressSpec(model=model, repo_root=repo_root, goal_ref=goal_ref,
                                max_output_tokens=request.max_output_tokens, request=request, ordinal=log.compressions)
            outcome = await self.caller.call(
                model, spec, step=step, label=f"iter {step} · compress steps {request.first_step}–{request.last_step}")
            if outcome.status == "ok" and isinstance(outcome.result, SummaryOut):
                log.entries = merge_summary(log.entries, request, outcome.result.summary, _entry, cfg)
                log.compressions += 1
            else:
                workflow.logger.warning("decision-log compression skipped (%s): %s", outcome.status, outcome.error)
        log.entries = enforce_hard_cap(log.entries, cfg, _entry)


def _entry(fields: dict[str, Any]) -> DecisionLogEntry:
    return DecisionLogEntry(**fields, at=workflow.now())
