"""Quality cases, pure parts: the history file names the replay test reads ids back from, a case as an eval task."""

from __future__ import annotations

import pytest

from durable_navigator.navcore.evaluation.cases import QualityCase, case_task, history_file_name, workflow_id_of
from durable_navigator.navcore.evaluation.models import EvalRun


@pytest.mark.parametrize("wid", ["nav-shop-1a2b3c4d", "nav/with slash", "batch-x-job-00001", "nav-odd_run3",
                                 "nav-odd_run3_run", "ünï-côdé", "100%"])
@pytest.mark.parametrize(("run", "runs"), [(1, 1), (1, 3), (3, 3)])
def test_the_id_is_read_back_from_every_history_file_name(wid: str, run: int, runs: int) -> None:
    name = history_file_name(wid, run, runs)
    assert "/" not in name and name.endswith(".json")
    assert workflow_id_of(name[:-5]) == wid
    assert name.endswith(f"_run{run}.json") == (runs > 1)


def test_the_recording_scripts_names_keep_their_ids() -> None:
    assert workflow_id_of("navigator_continue_as_new_run2") == "navigator_continue_as_new"
    assert workflow_id_of("batch_basic") == "batch_basic"


def _case(**kw: object) -> QualityCase:
    base: dict[str, object] = dict(id="nav-1", goal="why", repo="/src/mono/pkg", commit="a" * 40,
                                   commit_date="2026-11-28T12:00:00+00:00", gold_files=["b.py", "a.py"],
                                   gold_source="user", model="offline", token_budget=4096, stop_reason="finalized",
                                   cost_usd="0")
    base.update(kw)
    return QualityCase.model_validate(base)


def test_a_case_is_a_task_at_its_commit_with_every_line_of_its_right_files_gold() -> None:
    task = case_task(_case(), "nav-1", {"a.py": 3, "b.py": 0}, subdir="pkg")
    assert (task.commit, task.parent, task.goal, task.repo, task.subdir) == ("a" * 40, "a" * 40, "why",
                                                                          "/src/mono/pkg", "pkg")
    assert task.gold_lines == {"b.py": [], "a.py": [1, 2, 3]} and task.gold_files == ["b.py", "a.py"]
    run = EvalRun(repo="/cases", git_dir="", head="", models=["offline"], budgets=[4096], budget_usd="1",
                  concurrency=1, batch_id="b", commits=1, candidates=1, started="", checkouts="/c", tasks=[task],
                  cases=True)
    # one folder per repository (its name and a hash of its path), the case's package folder inside the checkout
    rel = run.checkout_of(task)
    assert rel.startswith("pkg-") and rel.endswith("/" + "a" * 12)
    assert run.explore_dir(task) == rel + "/pkg"


def test_a_case_needs_a_right_file() -> None:
    with pytest.raises(ValueError, match="gold_files"):
        _case(gold_files=[])
