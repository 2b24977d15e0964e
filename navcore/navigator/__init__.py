"""The navigator run and the steering runtime research and investigation reuse: state,
guardrails, signals, request/result, activity and model-activity I/O, turn reports,
prompt, turns, map criteria. Imports ``model``, ``run`` and ``planning``.
"""
