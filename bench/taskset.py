"""Benchmark task sets mined from real projects' git history (bench-only code).

A task is one non-merge commit that modifies 1-4 existing non-test source files
of the repository's language(s) with a modest diff. The goal is the commit
message with trailers, PR references, URLs and every changed path, file name
and module/import name removed; the gold is the changed source files and, per
file, the *pre-change* line numbers (in the parent revision, which is what the
map is built from) of modified/deleted lines. A hunk that only inserts lines has
no pre-change line of its own, so its anchor line (the parent line the insertion
follows) stands in for it; ``gold_anchor_lines`` counts those per file.

Two task sets are built from this one miner:

* ``offline`` -- the 72-task Python set of ``bench/offline_vs_bm25.py`` (6
  repositories x 12; unchanged selection rules, so it rebuilds byte-identically);
* ``quality`` -- the context-quality set of issue 11 (``bench/quality.py``):
  19 repositories in 5 languages x 18 tasks, each repository assigned once to
  the ``dev`` or the ``test`` split (``QUALITY_REPOS``).

Usage::

    .venv/bin/python bench/taskset.py build --set quality   # -> bench/tasks/quality_tasks.jsonl
    .venv/bin/python bench/taskset.py build --set offline   # -> bench/tasks/offline_tasks.jsonl
    .venv/bin/python bench/taskset.py materialize bench/tasks/quality_tasks.jsonl [--split dev]

Repository history comes from a ``fetch`` mirror (a bare git dir under
``/work/.mirror/<owner>+<name>``) when there is one, otherwise from a bare clone
of ``https://github.com/<owner>/<name>`` kept under ``<data>/clones`` -- so a
fresh machine with network rebuilds every checkout from the task file alone.
Checkouts (``git archive`` of the parent) go outside the repository, to
``<data>/repos/<name>@<parent12>``; ``<data>`` is ``$BENCH_DATA`` or
``/work/bench-data``.

This file mines and unpacks; the sets' repositories and ``Task`` are in ``taskset_spec.py``; the
selection rules, the goal redaction and the gold lines are the package's (``navcore/evaluation/``,
``activities/evaluation/mine.py``: the same code ``navigator eval`` mines a user's repository with).
"""

from __future__ import annotations

import argparse
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

# the sets' definitions live beside this file, the rules and the goal redaction in the package; every
# bench script imports them from here (``from taskset import Task, redact_goal, ...``), as before they moved
from taskset_spec import (
    HELD_OUT,
    LANGUAGES,
    OFFLINE_REPOS,
    QUALITY_REPOS,
    QUALITY_SELECTION,
    RepoSpec,
    SelectionConfig,
    Task,
    _is_source,  # noqa: F401 - taskset._is_source is read by bench/test_corpus.py
    _language_of,  # noqa: F401
)

from durable_navigator.activities.evaluation.mine import GitHistory, finish
from durable_navigator.navcore.evaluation.goal import redact_goal
from durable_navigator.navcore.evaluation.rules import Candidate, GitCommit, candidate as first_rules

__all__ = [
    "Task", "RepoSpec", "SelectionConfig", "QUALITY_REPOS", "QUALITY_SELECTION", "OFFLINE_REPOS", "HELD_OUT",
    "LANGUAGES", "build_tasks", "materialize", "repo_dir", "load_tasks", "redact_goal", "git_dir_for",
    "MIRROR_ROOT", "DATA_ROOT", "REPOS_ROOT", "CLONES_ROOT", "private_tmp", "publish", "building",
]

MIRROR_ROOT = Path("/work/.mirror")
DATA_ROOT = Path(os.environ.get("BENCH_DATA", "/work/bench-data"))
REPOS_ROOT = DATA_ROOT / "repos"
CLONES_ROOT = DATA_ROOT / "clones"


# ---------------------------------------------------------------- git access
def git_dir_for(repo: str, clone: bool = True) -> Path:
    """The bare git dir of ``owner/name``: a fetch mirror, else (optionally) a fresh bare clone."""
    mirror = MIRROR_ROOT / repo.replace("/", "+") / "repo"
    for candidate in (mirror / ".git", mirror):
        if (candidate / "HEAD").is_file():
            return candidate
    local = CLONES_ROOT / (repo.replace("/", "+") + ".git")
    if (local / "HEAD").is_file():
        return local
    if not clone:
        raise SystemExit(f"no mirror or clone of {repo}; run `taskset.py materialize` with network")
    local.parent.mkdir(parents=True, exist_ok=True)
    print(f"cloning https://github.com/{repo} into {local}", file=sys.stderr)
    subprocess.run(["git", "clone", "--bare", "--quiet", f"https://github.com/{repo}.git", str(local)], check=True)
    return local


def _history(repo: str) -> GitHistory:
    return GitHistory(git_dir_for(repo))


def _git(repo: str, *args: str) -> str:
    return _history(repo).run(*args)


# the rules themselves are the package's (``navcore/evaluation/rules.py``, git reads in
# ``activities/evaluation/mine.py``), shared with ``navigator eval``; these adapt them to a RepoSpec
_Commit = GitCommit
_Candidate = Candidate


def _commits(repo: str, rev: str = "HEAD") -> list[GitCommit]:
    return _history(repo).commits(rev)


def _candidate(spec: RepoSpec, c: GitCommit, cfg: SelectionConfig, boring: re.Pattern[str]) -> Candidate | None:
    """The rules that need no diff: one parent, 1-N modified source files, not noise, a long enough goal."""
    return first_rules(c, spec.languages, cfg, boring)


def _finish(spec: RepoSpec, cand: Candidate, cfg: SelectionConfig) -> Task | None:
    """Read the diff: the gold lines, and the changed-lines rule; the task in the bench's format."""
    name = spec.repo.split("/", 1)[1]
    mined = finish(_history(spec.repo), cand, spec.languages, cfg, f"{name}-{cand.commit.sha[:10]}")
    if mined is None:
        return None
    return Task(
        id=mined.id, mirror=spec.mirror, commit=mined.commit, parent=mined.parent,
        goal=mined.goal, gold_files=mined.gold_files, gold_lines=mined.gold_lines,
        gold_anchor_lines=mined.gold_anchor_lines, repo=spec.repo,
        language=mined.language, split=spec.split,
    )


def _task_for(spec: RepoSpec, c: _Commit, cfg: SelectionConfig, boring: re.Pattern[str]) -> Task | None:
    cand = _candidate(spec, c, cfg, boring)
    return _finish(spec, cand, cfg) if cand else None


def _check_not_held_out(repo: str) -> None:
    if any(h in repo.lower().split("/")[1] for h in HELD_OUT):
        raise SystemExit(f"{repo} is held out for independent evaluation; do not benchmark on it")


def build_tasks(specs: tuple[RepoSpec, ...], cfg: SelectionConfig) -> list[Task]:
    """Select up to ``cfg.per_repo`` commits per repository, spread evenly over its history."""
    boring = re.compile(cfg.boring_subject)
    tasks: list[Task] = []
    for spec in specs:
        _check_not_held_out(spec.repo)
        candidates = [t for c in _commits(spec.repo) if (t := _task_for(spec, c, cfg, boring))]
        candidates.reverse()  # oldest first
        step = max(len(candidates) / cfg.per_repo, 1.0)
        picked = [candidates[int(i * step)] for i in range(min(cfg.per_repo, len(candidates)))]
        print(f"{spec.repo}: {len(candidates)} candidate commits, picked {len(picked)}", file=sys.stderr)
        tasks.extend(picked)
    return tasks


# ---------------------------------------------------------------- checkouts
def repo_dir(task: Task) -> Path:
    """Where the parent revision of ``task`` is unpacked."""
    return REPOS_ROOT / f"{task.repo.split('/', 1)[1]}@{task.parent[:12]}"


def private_tmp(dest: Path) -> Path:
    """A new empty directory beside ``dest`` that only this caller writes (two benchmark processes
    unpacking the same checkout at once each build their own; a shared ``.tmp`` made the slower one
    fail renaming over the faster one's tree)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f"{dest.name}.tmp", dir=dest.parent))


def publish(tmp: Path, dest: Path) -> None:
    """Move the finished ``tmp`` to ``dest`` in one rename; when another process published the same
    checkout first, its copy stays and this one is dropped (both are the same revision)."""
    try:
        tmp.rename(dest)
    except OSError:
        if not dest.is_dir():
            raise
        shutil.rmtree(tmp, ignore_errors=True)


@contextmanager
def building(dest: Path) -> Iterator[Path]:
    """A private directory to build ``dest`` in (``private_tmp``): published as ``dest`` when the block
    ends (``publish``), removed when it fails, so no half-made tree is left beside the real ones."""
    tmp = private_tmp(dest)
    try:
        yield tmp
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    publish(tmp, dest)


def _links_inside(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """``tarfile``'s ``data`` filter, except that a symbolic link to an absolute path or out of the
    tree (jekyll/jekyll's ``test/source/_includes/tmp`` -> ``/tmp``) is left out instead of failing
    the whole checkout: git would make it, but it could only point outside the checkout."""
    try:
        return tarfile.data_filter(member, dest)
    except (tarfile.AbsoluteLinkError, tarfile.LinkOutsideDestinationError):
        if member.issym():
            return None
        raise


def materialize(tasks: list[Task]) -> None:
    """Unpack each task's parent revision (``git archive``) outside the repo, once per (repo, parent)."""
    for task in tasks:
        dest = repo_dir(task)
        if not dest.exists():
            blob = subprocess.run(
                ["git", f"--git-dir={git_dir_for(task.repo)}", "archive", "--format=tar", task.parent],
                capture_output=True, check=True,
            ).stdout
            with building(dest) as tmp, tarfile.open(fileobj=io.BytesIO(blob)) as tar:
                tar.extractall(tmp, filter=_links_inside)
        missing = [f for f in task.gold_files if not (dest / f).is_file()]
        if missing:  # e.g. export-ignore in .gitattributes: the task could never be answered
            raise SystemExit(f"{task.id}: gold files {missing} are not in the checkout {dest}")


def load_tasks(path: Path) -> list[Task]:
    """Read a JSONL task file."""
    return [Task.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> None:
    """CLI: ``build`` a task file or ``materialize`` its repositories."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--set", choices=("quality", "offline"), default="quality")
    b.add_argument("--out", type=Path, default=None)
    b.add_argument("--per-repo", type=int, default=0, help="override the set's tasks per repository")
    m = sub.add_parser("materialize")
    m.add_argument("tasks", type=Path)
    m.add_argument("--split", default="", help="only this split (dev/test)")
    args = ap.parse_args(argv)
    if args.cmd == "build":
        specs, cfg = (QUALITY_REPOS, QUALITY_SELECTION) if args.set == "quality" else (OFFLINE_REPOS, SelectionConfig())
        if args.per_repo:
            cfg = cfg.model_copy(update={"per_repo": args.per_repo})
        out = args.out or Path(f"bench/tasks/{args.set}_tasks.jsonl")
        tasks = build_tasks(specs, cfg)
        out.parent.mkdir(parents=True, exist_ok=True)
        # the offline set keeps its original fields, so it rebuilds byte-identically
        drop = {"repo", "language", "split"} if args.set == "offline" else None
        out.write_text("".join(t.model_dump_json(exclude=drop) + "\n" for t in tasks))
        print(f"wrote {len(tasks)} tasks to {out}", file=sys.stderr)
    else:
        tasks = [t for t in load_tasks(args.tasks) if not args.split or t.split == args.split]
        materialize(tasks)
        print(f"{len({repo_dir(t) for t in tasks})} checkouts under {REPOS_ROOT}", file=sys.stderr)


if __name__ == "__main__":
    main()
