"""Scoring a context against a task's gold (the quality benchmark's import name for the package's scorer).

The rules live once, in ``navcore/evaluation/score.py`` (shared with ``navigator eval``); reading a
checkout's source in ``activities/evaluation/checkout.py``. See that module's docstring for the
visibility rule.
"""

from __future__ import annotations

from durable_navigator.activities.evaluation.checkout import read_source
from durable_navigator.navcore.evaluation.score import (MIN_TEXT_RULE_CHARS, Parsed, ShownFile, map_section,
                                                         parse_context, score_context)

__all__ = ["ShownFile", "Parsed", "parse_context", "map_section", "score_context", "read_source",
           "MIN_TEXT_RULE_CHARS"]
