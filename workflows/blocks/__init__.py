"""Deterministic building blocks the workflows compose.

* :mod:`.options` — activity options (timeouts, retry policies, non-retryable errors) in one place;
* :mod:`.model_call` — every model call: prepare → per attempt (stop check, reserve, request,
  reconcile) → typed result; the budget is a hard cap and a stop cancels the call in flight;
* :mod:`.approval` — waits for a human verdict (a turn, a plan) or a budget raise;
* :mod:`.decision_log` — the one decision-log writer;
* :mod:`.tools` — runs a decision's code-tool calls;
* :mod:`.stages` — the planning phase and stage checks / reflection;
* :mod:`.compression` — keeps the decision log bounded;
* :mod:`.webui` — search attributes and the Web UI's current details.

Workflow code only: no I/O, clocks or randomness; project modules are imported
through ``workflow.unsafe.imports_passed_through()``.
"""
