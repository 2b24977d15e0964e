"""The fleet soak's per-run checks: finished, decisions intact, ledger equal to usage, pack identity.

Each run is read back from Temporal by the soak's own client (its histories over every
continue-as-new run, its result, its decision log) — never from what the CLI printed.
"""

from __future__ import annotations

import re
from typing import Any

from soak import MODEL_ACTIONS, _histories, _model_requests

__all__ = ["check_run", "masked"]

#: what differs between two runs of the same request by nature (bench/pack_identity.py's, plus ask ids)
_VOLATILE = (
    (re.compile(r"\b(?:nav|ask|inv)-[0-9A-Za-z._-]+"), "<run-id>"),
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s)\b"), "<duration>"),
)


def masked(text: str) -> str:
    """``text`` with run ids, clock times and durations masked."""
    for pattern, mask in _VOLATILE:
        text = pattern.sub(mask, text)
    return text


async def _log(client: Any, workflow_id: str) -> Any:
    from durable_navigator.navcore.navigator.report import DecisionLogView

    handle = client.get_workflow_handle(workflow_id)
    return await handle.query("get_decision_log", result_type=DecisionLogView)


async def check_run(client: Any, workflow_id: str, command: str) -> dict[str, Any]:
    """One run's checks (an ``ask`` also checks each exploration it started as a child)."""
    from durable_navigator.navcore.run_kinds import EXPLORE, RESEARCH

    kind = EXPLORE if command == "explore" else RESEARCH
    result = await client.get_workflow_handle(workflow_id, result_type=kind.result_type).result()
    histories = await _histories(client, workflow_id)
    view = await _log(client, workflow_id)
    entries = [e for e in view.entries if e.action != "budget_refused"]
    steps = [e.step for e in entries]
    children = list(getattr(result, "children", []))
    requests = _model_requests(histories)
    model_entries = sum(1 for e in entries if e.action in MODEL_ACTIONS)
    row: dict[str, Any] = {
        "workflow_id": workflow_id,
        "command": command,
        "complete": result.stop_reason.value != "failed",
        "stop_reason": result.stop_reason.value,
        # a step may log several entries (plan, decision, verdict); never out of order
        "steps_ok": steps == sorted(steps),
        "decisions": len(entries),
        "decisions_match_result": len(entries) == result.decisions,
        # explore: every completed decide attempt has its entry, and no entry is there without one
        "lost": max(requests["completed"] - model_entries, 0) if command == "explore" else 0,
        # an entry written twice (a replayed or retried turn) repeats its step, action, reasoning and cost
        "duplicated": (max(model_entries - requests["completed"], 0) if command == "explore" else 0)
        + len(entries) - len({(e.step, e.action, e.reasoning, e.cost_micros, e.input_tokens) for e in entries}),
        "ledger_ok": result.cost_micros == sum(e.cost_micros for e in entries) + sum(c.cost_micros for c in children),
        "tokens_ok": bool(children) or result.usage.input_tokens == sum(e.input_tokens for e in entries),
        "decide_attempts": requests,
        "runs": len(histories),
        "children": len(children),
    }
    for child in children:
        sub = await check_run(client, child.workflow_id, "explore" if child.kind == "navigate" else "ask")
        for name in ("complete", "steps_ok", "ledger_ok", "tokens_ok", "decisions_match_result"):
            row[name] = row[name] and sub[name]
        row["lost"] += sub["lost"]
        row["duplicated"] += sub["duplicated"]
    return row
