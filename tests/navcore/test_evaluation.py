"""The eval's pure rules: gold lines from a diff, the spread pick, totals that count a failure as a zero."""

from __future__ import annotations

import re

from durable_navigator.navcore.evaluation.models import EvalTask, MethodScore, TaskResult
from durable_navigator.navcore.evaluation.rules import (EVAL_SELECTION, Candidate, GitCommit, candidate, is_source,
                                                         parse_hunks, spread_pick)
from durable_navigator.navcore.evaluation.summary import CHUNK_BM25, totals


def test_gold_lines_are_changed_parent_lines_plus_insertion_anchors() -> None:
    diff = "@@ -3,2 +3,2 @@\n-a\n-b\n+c\n+d\n@@ -10,0 +11,3 @@\n+x\n@@ -0,0 +1 @@\n+top\n"
    assert parse_hunks(diff) == ([1, 3, 4, 10], 2)


def test_candidate_rules() -> None:
    boring = re.compile(EVAL_SELECTION.boring_subject)
    ok = GitCommit("a" * 40, ["b" * 40], "2024-01-01", "Retry the upload when the server answers too slowly\n",
                   [("M", "src/up/client.py"), ("M", "tests/test_client.py")])
    got = candidate(ok, ("python",), EVAL_SELECTION, boring)
    assert got is not None and got.sources == ("src/up/client.py",)
    added = GitCommit("c" * 40, ["b" * 40], "", ok.message, [("A", "src/up/new.py")])
    bump = GitCommit("d" * 40, ["b" * 40], "", "bump version to 1.2.3 for the next release please", ok.changes)
    merge = GitCommit("e" * 40, ["b" * 40, "f" * 40], "", ok.message, ok.changes)
    short = GitCommit("g" * 40, ["b" * 40], "", "fix it\n", ok.changes)
    assert [candidate(c, ("python",), EVAL_SELECTION, boring) for c in (added, bump, merge, short)] == [None] * 4
    assert not is_source("docs/conf.py", ("python",), EVAL_SELECTION)


def test_spread_pick_takes_the_first_acceptable_candidate_of_each_slice() -> None:
    cands = [Candidate(GitCommit(str(i), ["p"], "", "", []), (), f"goal {i}") for i in range(10)]
    got = spread_pick(cands, 3, lambda c: None if c.commit.sha in {"0", "3"} else int(c.commit.sha))
    assert got == [1, 4, 6]
    assert spread_pick(cands[:2], 5, lambda c: c.commit.sha) == ["0", "1"]


def _result(i: int, nav: MethodScore, bm25: float) -> TaskResult:
    task = EvalTask(id=f"t{i}", commit="c", parent="p", goal="g", gold_files=["a.py"], gold_lines={"a.py": [1]})
    return TaskResult(task=task, scores=[nav, MethodScore(method=CHUNK_BM25, tokens_budget=100, line_recall=bm25)])


def test_totals_count_a_failed_run_as_zero_and_a_loss() -> None:
    results = [
        _result(0, MethodScore(method="nav", tokens_budget=100, line_recall=1.0, file_hit=1.0), 0.5),
        _result(1, MethodScore(method="nav", tokens_budget=100, line_recall=0.5, file_hit=1.0), 0.5),
        _result(2, MethodScore(method="nav", tokens_budget=100, status="failed", error="boom"), 0.25),
    ]
    nav, bm25 = totals(results, ["nav", CHUNK_BM25], [100])
    assert (nav.tasks, nav.failed, nav.wins, nav.ties, nav.losses) == (3, 1, 1, 1, 1)
    assert nav.line_recall == 0.5 and nav.file_hit == 2 / 3
    assert bm25.wins is None and bm25.line_recall == 1.25 / 3
