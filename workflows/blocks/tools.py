"""Runs a decision's code-tool calls (``tools.<name>`` activities), results for the next prompt.

Results are capped by the tool activities (long output goes to the artifact
store). A failing call — a ``../`` escape, an unknown path, a crashed
activity — comes back as an error result, never as a failed run. Every call
counts toward the run's activity cap.
"""

from __future__ import annotations

from collections.abc import Callable

from temporalio import workflow
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from durable_navigator.navcore.run.tools import ToolCall, ToolRequest, ToolResult
    from durable_navigator.workflows.blocks.model_call import one_line
    from durable_navigator.workflows.blocks.options import TOOL, Scheduler, run_activity

__all__ = ["ToolRunner", "tool_result_lines", "TOOL_RESULT_CHARS"]

#: characters of one result quoted in the prompt (the tool activity caps it too)
TOOL_RESULT_CHARS = 2000


class ToolRunner:
    """Runs tool calls in order within an activity cap."""

    def __init__(self, room: Callable[[], bool], count_activity: Callable[[], None],
                 schedule: Scheduler = run_activity) -> None:
        """``room()``: the run may still schedule an activity (its cap is not reached); ``schedule``: how a
        tool activity is run (a run passes its ``_on_host``: tools read the warm host's index)."""
        self._room, self._count, self._schedule = room, count_activity, schedule

    async def run(self, repo_root: str, step: int, calls: list[ToolCall]) -> list[ToolResult]:
        """Every call's result (errors as results)."""
        results: list[ToolResult] = []
        for call in calls:
            if not self._room():
                results.append(ToolResult(tool=call.name, ok=False, error="not run: the run's activity cap is reached",
                                          summary=call.summary()))
                continue
            self._count()
            try:
                res: ToolResult = await self._schedule(f"tools.{call.name}",
                                                       ToolRequest(repo_root=repo_root, call=call, step=step),
                                                       ToolResult, TOOL, call.summary(step))
            except ActivityError as err:
                res = ToolResult(tool=call.name, ok=False, error=one_line(err), summary=call.summary())
            results.append(res)
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
