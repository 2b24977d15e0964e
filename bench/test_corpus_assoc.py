"""The goal-to-code association miner (``bench/corpus_assoc.py``): what it reads and what it keeps."""

from __future__ import annotations

import subprocess
from pathlib import Path

import corpus_assoc
import pytest
from corpus_assoc import associations, count
from taskset_spec import Task


def _git_repo(root: Path, files: dict[str, str]) -> tuple[Path, str]:
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    run = lambda *a: subprocess.run(["git", "-C", str(root), *a], check=True, capture_output=True, text=True)  # noqa: E731
    run("init", "-q")
    run("add", ".")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "parent")
    return root / ".git", run("rev-parse", "HEAD").stdout.strip()


def _task(repo: str, parent: str, goal: str, lines: dict[str, list[int]], i: int) -> Task:
    return Task(id=f"t{i}", mirror=repo.replace("/", "+"), commit=f"c{i}", parent=parent, goal=goal,
                gold_files=sorted(lines), gold_lines=lines, split="train")


def test_pairs_come_from_the_changed_lines_and_need_several_tasks_of_several_repositories(tmp_path, monkeypatch) -> None:
    net = "\n".join(["import socket", "", "def wait(sock, deadline):", "    return sock.recv(deadline)", "", "", "",
                     "", "", "def render_page(html):", "    return html"])
    a_dir, a_head = _git_repo(tmp_path / "a", {"net.py": net})
    b_dir, b_head = _git_repo(tmp_path / "b", {"io.py": "def read(deadline):\n    return deadline\n"})
    monkeypatch.setattr(corpus_assoc, "git_dir_for", lambda repo, clone=True: {"o/a": a_dir, "o/b": b_dir}[repo])
    tasks = [_task("o/a", a_head, "requests hang without a timeout", {"net.py": [4]}, 0),
             _task("o/a", a_head, "a timeout that never fires", {"net.py": [3]}, 1),
             _task("o/b", b_head, "timeout is ignored", {"io.py": [1]}, 2),
             _task("o/b", "0" * 40, "timeout again", {"io.py": [1]}, 3),  # a parent the mirror lacks
             _task("o/a", a_head, "render the page", {"net.py": [11]}, 4)]
    total, per, skipped = count(tasks, context=1)
    assert (total.n, skipped) == (4, 1) and (per["o/a"].n, per["o/b"].n) == (3, 1)
    assert total.pair["timeout", "deadline"] == 3 and total.repos["timeout", "deadline"] == 2
    assert total.code["render_page"] == 1  # task 4's; seven lines below the others' changes, outside their context
    kept = associations(total, min_tasks=3, min_repos=2, min_lift=1.2, prior=0.0, per_term=5)
    # ``sock`` is only in o/a's two tasks; ``def`` and ``return`` are in every change (lift 1)
    assert kept["timeout"] == [("deadline", pytest.approx(0.2877, abs=1e-3))]  # log(1 / 0.75)
    assert "hang" not in kept  # one task: under ``min_tasks``
    assert associations(total, 3, 3, 1.2, 0.0, 5) == {}
    # without o/b's task, ``timeout`` -> ``deadline`` rests on one repository's two tasks: gone
    rest = total.without(per["o/b"])
    assert (rest.n, rest.pair["timeout", "deadline"], rest.repos["timeout", "deadline"]) == (3, 2, 1)
    assert associations(rest, 2, 1, 1.2, 0.0, 5)["timeout"][0][0] == "deadline"
    assert associations(rest, 3, 2, 1.2, 0.0, 5) == {}


def test_a_train_rows_table_is_built_without_its_own_repository(tmp_path, monkeypatch) -> None:
    a_dir, a_head = _git_repo(tmp_path / "a", {"x.py": "deadline = 1\n"})
    b_dir, b_head = _git_repo(tmp_path / "b", {"y.py": "deadline = 2\n"})
    c_dir, c_head = _git_repo(tmp_path / "c", {"z.py": "unrelated = 3\n"})
    dirs = {"o/a": a_dir, "o/b": b_dir, "o/c": c_dir}
    monkeypatch.setattr(corpus_assoc, "git_dir_for", lambda repo, clone=True: dirs[repo])
    tasks = [_task("o/a", a_head, "timeout", {"x.py": [1]}, 0), _task("o/a", a_head, "timeout", {"x.py": [1]}, 1),
             _task("o/b", b_head, "timeout", {"y.py": [1]}, 2), _task("o/c", c_head, "other", {"z.py": [1]}, 3)]
    table = corpus_assoc.leave_one_out(tasks, context=0, min_tasks=1, min_repos=1, min_lift=1.0, prior=0.0)
    assert "deadline" in table("o/c").expansion(["timeout"])
    assert table("o/a").expansion(["timeout"]).keys() == {"deadline"}  # o/b's task alone still says it
    assert table("o/a") is table("o/a")  # built once per repository
    total, per, _ = corpus_assoc.count(tasks, 0)
    for repo in dirs:  # the pruned pass equals the definition: every count less the repository's own
        want = corpus_assoc.associations(total.without(per[repo]), 1, 1, 1.0, 0.0)
        assert table(repo).pairs == {g: tuple(v) for g, v in want.items()}
    solo = corpus_assoc.leave_one_out(tasks[:2] + tasks[3:], context=0, min_tasks=1, min_repos=1, min_lift=1.0,
                                      prior=0.0)
    assert solo("o/a").expansion(["timeout"]) == {}  # only o/a said it: its own rows never see it


def test_only_the_train_split_is_read(tmp_path) -> None:
    with pytest.raises(SystemExit, match="only the train split"):
        corpus_assoc.main(["--split", "dev", "--out", str(tmp_path / "x.tsv.gz")])
