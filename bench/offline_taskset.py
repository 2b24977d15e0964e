"""Build the offline-vs-BM25 task set from real projects' git history (bench-only code).

A task is one non-merge commit that modifies 1-4 existing non-test Python source
files. The goal is the commit message with every changed path, file name and
dotted module name removed; the gold is the changed source files and, per file,
the *pre-change* line numbers (in the parent revision, which is what the map is
built from) of modified/deleted lines. A hunk that only inserts lines has no
pre-change line of its own, so its anchor line (the parent line the insertion
follows) stands in for it; ``gold_kinds`` records which is which.

Usage::

    .venv/bin/python bench/offline_taskset.py build --out bench/tasks/offline_tasks.jsonl
    .venv/bin/python bench/offline_taskset.py materialize bench/tasks/offline_tasks.jsonl

Repositories come from ``fetch`` mirrors (bare git dirs under /work/.mirror) and
are unpacked outside the repo under /work/bench-data/repos/<name>@<sha12>.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tarfile
import io
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

__all__ = ["Task", "SelectionConfig", "build_tasks", "materialize", "repo_dir", "load_tasks"]

MIRROR_ROOT = Path("/work/.mirror")
REPOS_ROOT = Path("/work/bench-data/repos")
#: the mirrors used; held-out projects (requests, flask, click, httpx, pytest, sympy) never appear
DEFAULT_MIRRORS = (
    "pallets+itsdangerous",
    "encode+starlette",
    "hynek+structlog",
    "aio-libs+yarl",
    "python-attrs+attrs",
    "tiangolo+typer",
)
HELD_OUT = ("requests", "flask", "click", "httpx", "pytest", "sympy")


class SelectionConfig(BaseModel):
    """Which commits become tasks."""

    model_config = ConfigDict(frozen=True)

    max_source_files: int = 4
    min_goal_words: int = 6
    #: refactors that rewrite hundreds of lines are not "find the place" tasks
    max_changed_lines: int = 150
    per_repo: int = 12
    non_source_dirs: tuple[str, ...] = (
        "tests", "test", "testing", "docs", "doc", "examples", "docs_src",
        "benchmarks", "bench", "typing_tests", "scripts", "tools", ".github",
    )
    boring_subject: str = (
        r"^(bump|release|prepare|merge|revert|pre-commit|\[pre-commit|update changelog|"
        r"black|reformat|run black|apply black|lint|ruff|isort|typo|fix typo|version|changelog)"
    )


class Task(BaseModel):
    """One benchmark task: a goal and where the answer lives."""

    model_config = ConfigDict(extra="forbid")

    id: str
    mirror: str
    commit: str
    parent: str
    goal: str
    gold_files: list[str]
    #: path -> sorted pre-change line numbers (1-based) in ``parent``
    gold_lines: dict[str, list[int]]
    #: path -> number of those lines that are insertion anchors, not changed lines
    gold_anchor_lines: dict[str, int] = {}


def _git(mirror: str, *args: str) -> str:
    git_dir = MIRROR_ROOT / mirror / "repo"
    out = subprocess.run(
        ["git", f"--git-dir={git_dir}", *args], capture_output=True, check=True
    )
    return out.stdout.decode("utf-8", errors="replace")


def _is_source(path: str, cfg: SelectionConfig) -> bool:
    if not path.endswith(".py"):
        return False
    parts = path.split("/")
    name = parts[-1]
    if any(p in cfg.non_source_dirs for p in parts[:-1]):
        return False
    if name.startswith("test_") or name.endswith("_test.py") or name in {
        "tests.py", "test.py", "conftest.py", "setup.py", "noxfile.py", "conf.py",
    }:
        return False
    return True


@dataclass
class _Commit:
    sha: str
    parents: list[str]
    date: str
    message: str
    changes: list[tuple[str, str]]  # (status, path)


def _commits(mirror: str) -> list[_Commit]:
    raw = _git(
        mirror, "log", "--no-merges", "--no-renames", "--name-status",
        "--format=%x1e%H %P%x1f%cI%x1f%B%x1f", "HEAD",
    )
    commits: list[_Commit] = []
    for chunk in raw.split("\x1e")[1:]:
        head, date, message, files = chunk.split("\x1f")
        shas = head.split()
        changes = []
        for line in files.strip().splitlines():
            bits = line.split("\t")
            if len(bits) == 2:
                changes.append((bits[0][0], bits[1]))
        commits.append(_Commit(shas[0], shas[1:], date, message, changes))
    return commits


_TRAILER = re.compile(
    r"^((co-authored-by|signed-off-by|reviewed-by):.*|(closes|fixes|fix|refs?) #\d+.*|.*pre-commit\.ci.*|-{3,})$",
    re.I | re.M,
)
_PR_REF = re.compile(r"\(?(gh-|#)\d+\)?|https?://\S+")


def redact_goal(message: str, changed: list[str]) -> str:
    """Commit message -> goal: trailers, PR refs, URLs and changed paths/names removed."""
    text = _TRAILER.sub("", message)
    text = _PR_REF.sub("", text)
    names: set[str] = set()
    for path in changed:
        names.add(path)
        names.add(path.rsplit("/", 1)[-1])
        if path.endswith(".py"):
            module = path[:-3].replace("/", ".")
            names.add(module)
            for prefix in ("src.", "lib."):
                if module.startswith(prefix):
                    names.add(module[len(prefix):])
    for name in sorted(names, key=len, reverse=True):
        text = re.sub(r"`?" + re.escape(name) + r"`?", " ", text)
    return " ".join(text.split())


def _hunk_lines(mirror: str, parent: str, sha: str, path: str) -> tuple[list[int], int]:
    diff = _git(mirror, "diff", "-U0", "--no-renames", parent, sha, "--", path)
    changed: set[int] = set()
    anchors: set[int] = set()
    for m in re.finditer(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", diff, re.M):
        start, count = int(m.group(1)), int(m.group(2) if m.group(2) is not None else 1)
        if count:
            changed.update(range(start, start + count))
        else:
            # pure insertion after parent line `start` (0 = top of file)
            anchors.add(max(start, 1))
    anchors -= changed
    return sorted(changed | anchors), len(anchors)


def _task_for(mirror: str, c: _Commit, cfg: SelectionConfig, boring: re.Pattern[str]) -> Task | None:
    if len(c.parents) != 1:
        return None
    sources = [(s, p) for s, p in c.changes if _is_source(p, cfg)]
    if not 1 <= len(sources) <= cfg.max_source_files or any(s != "M" for s, _ in sources):
        return None
    subject = c.message.strip().splitlines()[0] if c.message.strip() else ""
    if boring.search(subject.lower()):
        return None
    goal = redact_goal(c.message, [p for _, p in c.changes])
    if len(re.findall(r"[A-Za-z]{2,}", goal)) < cfg.min_goal_words:
        return None
    gold: dict[str, list[int]] = {}
    anchors: dict[str, int] = {}
    for _, path in sources:
        lines, n_anchor = _hunk_lines(mirror, c.parents[0], c.sha, path)
        gold[path], anchors[path] = lines, n_anchor
    total = sum(len(v) for v in gold.values())
    if total == 0 or total > cfg.max_changed_lines:
        return None
    name = mirror.split("+", 1)[1]
    return Task(
        id=f"{name}-{c.sha[:10]}", mirror=mirror, commit=c.sha, parent=c.parents[0],
        goal=goal, gold_files=sorted(gold), gold_lines=gold, gold_anchor_lines=anchors,
    )


def build_tasks(mirrors: tuple[str, ...], cfg: SelectionConfig) -> list[Task]:
    """Select up to ``cfg.per_repo`` commits per mirror, spread evenly over its history."""
    boring = re.compile(cfg.boring_subject)
    tasks: list[Task] = []
    for mirror in mirrors:
        if any(h in mirror.lower() for h in HELD_OUT):
            raise SystemExit(f"{mirror} is held out for independent evaluation; do not benchmark on it")
        candidates = [t for c in _commits(mirror) if (t := _task_for(mirror, c, cfg, boring))]
        candidates.reverse()  # oldest first
        step = max(len(candidates) / cfg.per_repo, 1.0)
        picked = [candidates[int(i * step)] for i in range(min(cfg.per_repo, len(candidates)))]
        print(f"{mirror}: {len(candidates)} candidate commits, picked {len(picked)}", file=sys.stderr)
        tasks.extend(picked)
    return tasks


def repo_dir(task: Task) -> Path:
    """Where the parent revision of ``task`` is unpacked."""
    return REPOS_ROOT / f"{task.mirror.split('+', 1)[1]}@{task.parent[:12]}"


def materialize(tasks: list[Task]) -> None:
    """Unpack each task's parent revision (``git archive``) outside the repo."""
    for task in tasks:
        dest = repo_dir(task)
        if dest.exists():
            continue
        git_dir = MIRROR_ROOT / task.mirror / "repo"
        blob = subprocess.run(
            ["git", f"--git-dir={git_dir}", "archive", "--format=tar", task.parent],
            capture_output=True, check=True,
        ).stdout
        tmp = dest.with_name(dest.name + ".tmp")
        tmp.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
            tar.extractall(tmp, filter="data")
        tmp.rename(dest)


def load_tasks(path: Path) -> list[Task]:
    """Read a JSONL task file."""
    return [Task.model_validate_json(line) for line in path.read_text().splitlines() if line.strip()]


def main(argv: list[str] | None = None) -> None:
    """CLI: ``build`` a task file or ``materialize`` its repositories."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--out", type=Path, default=Path("bench/tasks/offline_tasks.jsonl"))
    b.add_argument("--per-repo", type=int, default=SelectionConfig().per_repo)
    m = sub.add_parser("materialize")
    m.add_argument("tasks", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "build":
        tasks = build_tasks(DEFAULT_MIRRORS, SelectionConfig(per_repo=args.per_repo))
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("".join(t.model_dump_json() + "\n" for t in tasks))
        print(f"wrote {len(tasks)} tasks to {args.out}", file=sys.stderr)
    else:
        materialize(load_tasks(args.tasks))


if __name__ == "__main__":
    main()
