"""Staged investigations (``InvestigationWorkflow``): request, state, result, prompts, report.
Imports ``navigator`` and below; never ``research``.
"""
