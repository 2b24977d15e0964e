"""The one decision-log writer: every logged step, model call or planning event goes through it."""

from __future__ import annotations

from collections.abc import Callable

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.run.artifacts import ArtifactRef
    from durable_navigator.navcore.run.decision import TokenUsage
    from durable_navigator.navtypes.mapmeta import MapMetadata
    from durable_navigator.navcore.navigator.report import shorten
    from durable_navigator.navcore.navigator.state import DecisionLog, DecisionLogEntry

__all__ = ["DecisionLogWriter", "LOG_REASONING_CHARS"]

#: reasoning kept per entry (the full text is in the decision artifact)
LOG_REASONING_CHARS = 1200


class DecisionLogWriter:
    """Appends entries to a :class:`DecisionLog` and publishes the change."""

    def __init__(self, log: Callable[[], DecisionLog], metadata: Callable[[], MapMetadata | None],
                 publish: Callable[[], None]) -> None:
        self._log, self._metadata, self._publish = log, metadata, publish

    def write(
        self,
        step: int,
        action: str,
        reasoning: str = "",
        *,
        cost_micros: int = 0,
        usage: TokenUsage | None = None,
        attempts: int = 0,
        diff: list[str] | None = None,
        error: str | None = None,
        decision_ref: ArtifactRef | None = None,
        step_taken: bool = True,
    ) -> DecisionLogEntry:
        """Log one entry; a taken step also becomes the turn report's reasoning and diff."""
        log, meta = self._log(), self._metadata()
        tokens = meta.tokens_used if meta else 0
        used = usage or TokenUsage()
        entry = DecisionLogEntry(
            step=step,
            action=action,
            reasoning=shorten(reasoning, LOG_REASONING_CHARS),
            diff_lines=diff or [],
            cost_micros=cost_micros,
            input_tokens=used.input_tokens,
            output_tokens=used.output_tokens,
            attempts=attempts,
            map_tokens_before=tokens,
            map_tokens_after=tokens,
            at=workflow.now(),
            error=error,
            decision_ref=decision_ref,
        )
        log.entries.append(entry)
        log.logged += 1
        if step_taken:
            log.last_reasoning, log.last_diff_lines = entry.reasoning, entry.diff_lines
            log.last_decision_ref = decision_ref
        self._publish()
        return entry
