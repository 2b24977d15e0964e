"""Code research (``ResearchWorkflow``): request, state, result, prompts, parsers, report.
Imports ``navigator`` and below; never ``investigation``.
"""
