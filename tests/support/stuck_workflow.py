"""A workflow whose every workflow task fails the way a replay mismatch does (imports nothing of the
project: the sandbox re-imports this module)."""

from __future__ import annotations

from temporalio import workflow

#: what it raises on every task: a ``NondeterminismError`` stays a task failure (workers/failures.py)
STUCK_ERROR = "simulated: this history no longer replays"


@workflow.defn(name="NavigatorWorkflow", sandboxed=False)  # tests/support/__init__ resolves paths on import
class NavigatorThatNoLongerReplays:
    """A navigator whose new code does not replay its runs: never gets past a workflow task."""

    @workflow.run
    async def run(self) -> str:
        """Raise what new worker code raises on an old history."""
        raise workflow.NondeterminismError(STUCK_ERROR)
