"""Code-tool calls of ``NavigatorWorkflow`` (deterministic workflow code).

A ``call_tools`` decision runs each call as its ``tools.<name>`` activity
(``tools.search_codebase``, ``tools.read_file``, …); results are capped by
the tool activities (long output goes to the artifact store) and shown in
the next prompt only. A failing call — a ``../`` escape, an unknown path, a
crashed activity — comes back as an error result, never as a failed run.
Every call counts toward the profile's activity cap.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.state import NavigatorState
    from durable_navigator.navcore.tools import ToolCall, ToolRequest, ToolResult

__all__ = ["ToolsMixin", "tool_result_lines"]

#: one tool call: an index lookup or a file read
_TOOL_TIMEOUT = timedelta(minutes=1)
_TOOL_RETRY = RetryPolicy(maximum_attempts=2, non_retryable_error_types=["NavigatorError"])
#: characters of one result quoted in the prompt (the tool activity caps it too)
TOOL_RESULT_CHARS = 2000


class ToolsMixin:
    """Runs a decision's tool calls; mixed into ``NavigatorWorkflow``."""

    state: NavigatorState
    profile: Any

    async def _run_tools(self, step: int, calls: list[ToolCall]) -> list[ToolResult]:
        """Run ``calls`` in order; remember their results for the next prompt."""
        s = self.state
        results: list[ToolResult] = []
        for call in calls:
            if s.activities_used >= self.profile.safety.max_activities:
                results.append(ToolResult(tool=call.name, ok=False, error="not run: the run's activity cap is reached",
                                          summary=call.summary()))
                continue
            s.activities_used += 1
            try:
                res: ToolResult = await workflow.execute_activity(
                    f"tools.{call.name}",
                    ToolRequest(repo_root=s.repo_root, call=call, step=step),
                    result_type=ToolResult,
                    start_to_close_timeout=_TOOL_TIMEOUT,
                    retry_policy=_TOOL_RETRY,
                    summary=call.summary(step),
                )
            except ActivityError as err:
                message = " ".join(str(err.cause or err).split())[:500]
                res = ToolResult(tool=call.name, ok=False, error=message, summary=call.summary())
            results.append(res)
        s.tool_results = results
        return results


def tool_result_lines(results: list[ToolResult]) -> list[str]:
    """The prompt's "Tool results" section (each result capped)."""
    lines: list[str] = []
    for r in results:
        head = r.summary or r.tool
        if not r.ok:
            lines.append(f"### {head}\nERROR: {r.error or 'failed'}")
            continue
        body = r.content if len(r.content) <= TOOL_RESULT_CHARS else r.content[: TOOL_RESULT_CHARS - 1] + "…"
        more = " (truncated; full output stored as an artifact)" if r.truncated else ""
        lines.append(f"### {head}{more}\n{body}")
    return lines
