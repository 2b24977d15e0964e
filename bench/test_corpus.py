"""Checks of the training corpus' miner (not collected by the project's ``pytest``; run with
``.venv/bin/pytest -p no:cacheprovider bench/test_corpus.py``): selection, spread, history
without leaks, checkouts with ``.git``, the repository lists. Real git repositories in a
temporary directory stand in for the ``fetch`` mirrors."""

from __future__ import annotations

import gzip
import subprocess
from pathlib import Path

import pytest

# pytest's default import mode puts bench/ (no __init__.py) on sys.path for this file
import corpus
import taskset
from taskset import LANGUAGES, QUALITY_REPOS, RepoSpec

GOAL = "make the parser accept trailing commas in argument lists"


def _git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@x", "GIT_AUTHOR_DATE": "2020-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z", "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


@pytest.fixture()
def mirror(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[RepoSpec, list[str]]:
    """A repository ``acme/widget`` under a private mirror root: 12 task-like commits among noise."""
    monkeypatch.setattr(taskset, "MIRROR_ROOT", tmp_path / "mirror")
    monkeypatch.setattr(corpus, "GIT_REPOS_ROOT", tmp_path / "repos-git")
    work = tmp_path / "mirror" / "acme+widget" / "repo"
    work.mkdir(parents=True)
    _git(work, "init", "-q", "-b", "main")
    (work / "src").mkdir()
    (work / "tests").mkdir()
    (work / "src" / "Parser.java").write_text("".join(f"line {i}\n" for i in range(1, 301)))
    (work / "src" / "ParserTest.java").write_text("x\n")
    _git(work, "add", ".")
    _git(work, "commit", "-q", "-m", "initial import of the widget parser sources")
    shas = []
    for i in range(12):
        text = (work / "src" / "Parser.java").read_text().splitlines()
        text[i * 10] = f"changed {i}"
        (work / "src" / "Parser.java").write_text("\n".join(text) + "\n")
        _git(work, "commit", "-q", "-am", f"{GOAL} number {i}")
        shas.append(_git(work, "rev-parse", "HEAD").strip())
        (work / "src" / "ParserTest.java").write_text(f"x{i}\n")  # a test-only commit: never a task
        _git(work, "commit", "-q", "-am", f"extend the parser test for case number {i} please")
    text = (work / "src" / "Parser.java").read_text().splitlines()
    (work / "src" / "Parser.java").write_text("\n".join(f"big {t}" for t in text) + "\n")
    _git(work, "commit", "-q", "-am", "rewrite every line of the parser in one large commit")
    return RepoSpec("acme/widget", ("java",), "train"), shas


def test_mine_repo_spreads_and_keeps_the_rules(mirror: tuple[RepoSpec, list[str]]) -> None:
    spec, shas = mirror
    cfg = corpus.CORPUS_SELECTION.model_copy(update={"per_repo": 4})
    tasks, counts = corpus.mine_repo(spec, cfg, "HEAD")
    # initial import (no parent) and the 300-line rewrite are candidates the rules drop later
    assert counts == {"commits": 26, "candidates": 13, "tasks": 4}
    assert [t.commit for t in tasks] == [shas[0], shas[3], shas[6], shas[9]]  # one per slice, oldest first
    first = tasks[0]
    assert first.gold_files == ["src/Parser.java"] and first.gold_lines == {"src/Parser.java": [1]}
    assert first.language == "java" and first.split == "train" and first.goal.startswith(GOAL)
    again, _ = corpus.mine_repo(spec, cfg, "HEAD")
    assert [t.model_dump() for t in again] == [t.model_dump() for t in tasks]


def test_history_starts_at_the_parent_and_never_shows_later_commits(mirror: tuple[RepoSpec, list[str]]) -> None:
    spec, shas = mirror
    entries = corpus.history(spec.repo, shas[5], n=3)
    assert [e["sha"] for e in entries][0] == shas[5]  # the parent itself comes first: the checkout shows it
    assert entries[1]["paths"] == ["src/ParserTest.java"]  # the test-only commit before it
    assert entries[2]["sha"] == shas[4] and entries[2]["message"].startswith(GOAL)
    assert entries[2]["paths"] == ["src/Parser.java"] and entries[2]["date"].startswith("2020-01-01")
    everything = {e["sha"] for e in corpus.history(spec.repo, shas[5], n=1000)}
    assert len(everything) == 12 and not everything & set(shas[6:])


def test_materialize_with_git_holds_no_object_after_the_parent(mirror: tuple[RepoSpec, list[str]]) -> None:
    spec, shas = mirror
    task = next(t for t in corpus.mine_repo(spec, corpus.CORPUS_SELECTION, "HEAD")[0] if t.commit == shas[6])
    dest = corpus.materialize_with_git(task)
    assert _git(dest, "rev-parse", "HEAD").strip() == task.parent
    assert (dest / "src" / "Parser.java").read_text().splitlines()[60] == "line 61"  # the parent's text
    leaked = subprocess.run(["git", "cat-file", "-e", task.commit], cwd=dest, capture_output=True)
    assert leaked.returncode != 0, "the task's own commit must not be in the checkout's object store"
    assert _git(dest, "for-each-ref", "--format=%(refname)").split() == ["refs/heads/main"]
    assert corpus.materialize_with_git(task) == dest  # second call reuses it


def test_a_mirror_missing_an_old_blob_still_gives_the_history_without_leaks(
        mirror: tuple[RepoSpec, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A fetched snapshot can lack an object (go-chi/chi's lacks an old ``.gitignore`` blob): ``git
    fetch`` then refuses the whole history, so the checkout copies every object the mirror has that
    the parent reaches and names the missing ones."""
    spec, shas = mirror
    work = tmp_path / "mirror" / "acme+widget" / "repo"
    lost = _git(work, "rev-parse", f"{shas[1]}:src/ParserTest.java").strip()  # "x0": an old test file
    (work / ".git" / "objects" / lost[:2] / lost[2:]).unlink()
    task = next(t for t in corpus.mine_repo(spec, corpus.CORPUS_SELECTION, "HEAD")[0] if t.commit == shas[6])
    dest = corpus.materialize_with_git(task)
    assert lost in capsys.readouterr().err
    assert (dest / ".git" / "MISSING_OBJECTS").read_text().split() == [lost]
    assert _git(dest, "rev-parse", "HEAD").strip() == task.parent
    assert (dest / "src" / "Parser.java").read_text().splitlines()[60] == "line 61"
    assert subprocess.run(["git", "cat-file", "-e", task.commit], cwd=dest, capture_output=True).returncode != 0
    log = _git(dest, "log", "--format=%H", "--name-status", "--no-renames")
    assert shas[5] in log and shas[6] not in log and "src/ParserTest.java" in log
    assert _git(dest, "status", "--porcelain") == ""


def test_a_mirror_missing_a_blob_of_the_parents_tree_gives_the_checkout_without_that_file(
        mirror: tuple[RepoSpec, list[str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """google/guice's mirror lacks a jar of the parent's own tree: ``git reset --hard`` refused the whole
    checkout (and the dev run). The checkout leaves that file out, lists it, and keeps every other one."""
    spec, shas = mirror
    work = tmp_path / "mirror" / "acme+widget" / "repo"
    task = next(t for t in corpus.mine_repo(spec, corpus.CORPUS_SELECTION, "HEAD")[0] if t.commit == shas[6])
    lost = _git(work, "rev-parse", f"{task.parent}:src/ParserTest.java").strip()
    (work / ".git" / "objects" / lost[:2] / lost[2:]).unlink()
    dest = corpus.materialize_with_git(task)
    assert "src/ParserTest.java" in capsys.readouterr().err
    assert (dest / ".git" / "MISSING_FILES").read_text().split() == ["src/ParserTest.java"]
    assert not (dest / "src" / "ParserTest.java").exists()
    assert (dest / "src" / "Parser.java").read_text().splitlines()[60] == "line 61"
    assert _git(dest, "rev-parse", "HEAD").strip() == task.parent
    assert _git(dest, "ls-files").split() == ["src/Parser.java"]  # the index agrees with the tree
    assert subprocess.run(["git", "cat-file", "-e", task.commit], cwd=dest, capture_output=True).returncode != 0


def test_a_symlink_out_of_the_tree_is_left_out_of_the_unpacked_checkout(
        mirror: tuple[RepoSpec, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """jekyll/jekyll has ``test/source/_includes/tmp`` -> ``/tmp``: tarfile's ``data`` filter refused the
    whole checkout; the link alone is left out, every file is there."""
    spec, _shas = mirror
    monkeypatch.setattr(taskset, "REPOS_ROOT", tmp_path / "repos")
    work = tmp_path / "mirror" / "acme+widget" / "repo"
    (work / "src" / "tmp").symlink_to("/tmp")
    (work / "src" / "up").symlink_to("../../..")
    (work / "src" / "here").symlink_to("Parser.java")
    _git(work, "add", ".")
    _git(work, "commit", "-q", "-m", "links for the fixture site")
    text = (work / "src" / "Parser.java").read_text().replace("line 200\n", "line two hundred\n")
    (work / "src" / "Parser.java").write_text(text)
    _git(work, "commit", "-q", "-am", f"{GOAL} once more after the links")
    task = corpus.mine_repo(spec, corpus.CORPUS_SELECTION, "HEAD")[0][-1]
    assert task.goal.startswith(GOAL + " once more")
    taskset.materialize([task])
    dest = taskset.repo_dir(task)
    assert (dest / "src" / "Parser.java").read_text().splitlines()[199] == "big line 200"  # the parent's text
    assert (dest / "src" / "here").is_symlink()  # a link inside the tree stays
    assert not (dest / "src" / "tmp").is_symlink() and not (dest / "src" / "up").is_symlink()
    assert [p.name for p in (tmp_path / "repos").iterdir()] == [dest.name]  # no half-unpacked tree beside it


def test_task_files_round_trip_through_gzip_byte_identically(mirror: tuple[RepoSpec, list[str]], tmp_path: Path) -> None:
    spec, _ = mirror
    tasks, _ = corpus.mine_repo(spec, corpus.CORPUS_SELECTION, "HEAD")
    one, two = tmp_path / "a.jsonl.gz", tmp_path / "b.jsonl.gz"
    corpus._write_tasks(tasks, one)
    corpus._write_tasks(tasks, two)
    assert one.read_bytes() == two.read_bytes()
    assert corpus.load_corpus(one) == tasks
    assert gzip.decompress(one.read_bytes()).count(b"\n") == len(tasks)


@pytest.mark.parametrize(("path", "lang", "source"), [
    ("src/main/java/com/x/Parser.java", "java", True),
    ("src/test/java/com/x/ParserTest.java", "java", False),
    ("core/src/com/x/ParserTests.java", "java", False),
    ("src/jv.c", "c", True),
    ("src/test_jv.c", "c", False),
    ("deps/jemalloc/src/arena.c", "c", False),
    ("include/fmt/core.h", "cpp", True),
    ("test/format-test.cc", "cpp", False),
    ("src/os_unittest.cc", "cpp", False),
])
def test_source_rules_of_the_new_languages(path: str, lang: str, source: bool) -> None:
    spec = RepoSpec("acme/x", (lang,), "train")
    assert taskset._is_source(path, spec, corpus.CORPUS_SELECTION) is source


def test_repository_lists_keep_the_splits_and_refusals() -> None:
    corpus._check_specs(corpus.ALL_SPECS)  # no duplicates, nothing held out
    quality = {s.repo: s.split for s in QUALITY_REPOS}
    assert all(s.split == quality[s.repo] for s in corpus.ALL_SPECS if s.repo in quality)
    own = [s for s in corpus.CORPUS_REPOS if s.repo not in quality]
    assert len(own) == len(corpus.CORPUS_REPOS) and {s.split for s in own} <= {"train", "dev"}
    assert len([s for s in own if s.split == "train"]) >= 60
    assert len({lang for s in corpus.ALL_SPECS for lang in s.languages}) >= 6
    assert all(lang in LANGUAGES for s in corpus.ALL_SPECS for lang in s.languages)
    with pytest.raises(SystemExit, match="held out"):
        corpus._check_specs((RepoSpec("pallets/flask", ("python",), "train"),))


def test_stats_counts_tasks_and_repositories_per_split_and_language(mirror: tuple[RepoSpec, list[str]]) -> None:
    spec, _ = mirror
    tasks, _ = corpus.mine_repo(spec, corpus.CORPUS_SELECTION.model_copy(update={"per_repo": 5}), "HEAD")
    dev = [t.model_copy(update={"split": "dev", "language": "c"}) for t in tasks[:2]]
    table = corpus.stats([*tasks[2:], *dev]).splitlines()
    assert "| java | 3 (1) | 0 (0) | 0 (0) | 3 (1) |" in table
    assert "| c | 0 (0) | 2 (1) | 0 (0) | 2 (1) |" in table
    assert "| **all** | 3 (1) | 2 (1) | 0 (0) | 5 (1) |" in table


def test_cli_refuses_a_missing_task_file_and_an_unknown_task_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"^no task file .*nope\.jsonl; build it"):
        corpus.main(["history", "x-123", "--tasks", str(tmp_path / "nope.jsonl")])
    empty = tmp_path / "one.jsonl"
    empty.write_text("")
    with pytest.raises(SystemExit, match=r"^no task 'x-123' in .*; list ids with"):
        corpus.main(["history", "x-123", "--tasks", str(empty)])


def test_corpus_goals_lose_gerrit_node_and_merge_bot_lines() -> None:
    message = (
        "fix setting dirent types on scandir\n\nAlso make the tests more strict.\n\n"
        "PR-URL: https://github.com/libuv/libuv/pull/1234\nReviewed-By: Someone <a@b>\n"
        "Change-Id: I1234abcd\nMerge pull request #5974 from a/b\n"
        "This reverts commit 0123456789abcdef0123456789abcdef01234567."
    )
    cfg = corpus.CORPUS_SELECTION
    goal = taskset.redact_goal(message, ["src/fs.c"], True, cfg.max_goal_chars, cfg.extra_trailers)
    assert goal == "fix setting dirent types on scandir Also make the tests more strict."
    # the quality set's rules are unchanged: it keeps rebuilding byte-identically
    assert "Change-Id" in taskset.redact_goal(message, ["src/fs.c"], True, 1200)


def test_checkouts_made_at_once_by_two_callers_end_as_one_tree(mirror: tuple[RepoSpec, list[str]],
                                                               monkeypatch: pytest.MonkeyPatch,
                                                               tmp_path: Path) -> None:
    """Four tuning runs started together unpacked the same checkout: each must get it (the slower
    ones used to fail renaming their shared ``.tmp`` over the faster one's tree)."""
    import threading

    monkeypatch.setattr(taskset, "REPOS_ROOT", tmp_path / "repos")
    spec, shas = mirror
    task = next(t for t in corpus.mine_repo(spec, corpus.CORPUS_SELECTION, "HEAD")[0] if t.commit == shas[6])
    start, errors = threading.Barrier(4), []

    def both() -> None:
        start.wait()
        try:
            taskset.materialize([task])
            corpus.materialize_with_git(task)
        except BaseException as exc:  # noqa: BLE001 -- reported below
            errors.append(exc)

    threads = [threading.Thread(target=both) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for root in (taskset.repo_dir(task), corpus.git_repo_dir(task)):
        assert (root / "src" / "Parser.java").is_file()
        assert [p.name for p in root.parent.iterdir() if ".tmp" in p.name] == []
