"""The corpus-wide idf table's builder (``bench/corpus_idf.py``): which checkouts, which shares."""

from __future__ import annotations

# pytest's default import mode puts bench/ (no __init__.py) on sys.path for this file
from corpus_idf import per_repo, shares
from taskset_spec import Task


def _task(repo: str, i: int, split: str = "train") -> Task:
    return Task(id=f"{repo.split('/')[1]}-{i}", mirror=repo.replace("/", "+"), commit=f"c{i}", parent=f"p{i}",
                goal="g", gold_files=["a.py"], gold_lines={"a.py": [1]}, split=split)


def test_each_train_repository_is_tried_from_its_middle_task_outwards_and_dev_test_are_never_read() -> None:
    tasks = [_task("o/b", i) for i in range(5)] + [_task("o/a", 9)] + [_task("o/c", 7, "dev"), _task("o/d", 8, "test")]
    got = per_repo(tasks)
    assert [[t.id for t in ts] for ts in got] == [["a-9"], ["b-2", "b-1", "b-3", "b-0", "b-4"]]


def test_a_terms_share_is_the_mean_over_repositories_and_rare_terms_are_left_out() -> None:
    big = ({"return": 0.5, "ledger": 0.01}, {"return": 0.9, "ledger": 0.1})
    small = ({"return": 1.0, "quux": 1.0}, {"return": 1.0, "quux": 1.0})
    chunk, file = shares([big, small], min_repos=2)
    assert chunk == {"return": 0.75} and file == {"return": 0.95}  # each repository weighs the same
    chunk, _ = shares([big, small], min_repos=1)
    assert chunk["ledger"] == 0.005 and chunk["quux"] == 0.5
