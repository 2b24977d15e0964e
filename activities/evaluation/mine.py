"""Mining a repository's own history into evaluation tasks (the git reads behind ``navcore.evaluation.rules``).

:class:`GitHistory` reads one git dir (``git --git-dir=…``: a user's ``.git``, a bare mirror or clone);
:func:`finish` reads a candidate's diff into its gold lines; :func:`mine` applies the whole rule set
and spreads the tasks over the history. ``navigator eval`` and the benchmarks' task sets
(``bench/taskset.py``, ``bench/corpus.py``) mine through these, so the rules exist once.
"""

from __future__ import annotations

import re
import subprocess
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from durable_navigator.navcore.evaluation.models import EvalTask
from durable_navigator.navcore.evaluation.rules import (LANGUAGES, LOG_FORMAT, Candidate, GitCommit, SelectionConfig,
                                                         candidate, language_of, parse_hunks, parse_log, spread_pick)
from durable_navigator.navtypes.errors import RepoError

__all__ = ["GitHistory", "git_dir_of", "finish", "mine", "MineCounts", "repo_languages"]


class GitHistory:
    """Read access to one git dir (never writes to it)."""

    def __init__(self, git_dir: Path) -> None:
        self.git_dir = Path(git_dir)

    def run(self, *args: str) -> str:
        """``git --git-dir=<dir> ARGS``'s stdout (decoded leniently: histories hold any bytes)."""
        out = subprocess.run(["git", f"--git-dir={self.git_dir}", *args], capture_output=True, check=True)
        return out.stdout.decode("utf-8", errors="replace")

    def commits(self, rev: str = "HEAD", since: str | None = None) -> list[GitCommit]:
        """Non-merge commits reachable from ``rev`` (newest first), optionally only those after ``since``."""
        extra = [f"--since={since}"] if since else []
        return parse_log(self.run("log", *LOG_FORMAT, *extra, rev))

    def gold_lines(self, parent: str, sha: str, path: str) -> tuple[list[int], int]:
        """The pre-change lines of ``path`` that ``sha`` changed, and how many are insertion anchors."""
        return parse_hunks(self.run("diff", "-U0", "--no-renames", parent, sha, "--", path))

    def head(self, rev: str = "HEAD") -> str:
        """The commit ``rev`` names."""
        return self.run("rev-parse", "--verify", f"{rev}^{{commit}}").strip()


def git_dir_of(repo: Path) -> Path:
    """The git dir of the work tree ``repo``; :class:`RepoError` (one line, what to do) when it has none."""
    if not repo.is_dir():
        raise RepoError(f"{repo} is not a folder; pass the path of a git repository")
    proc = subprocess.run(["git", "-C", str(repo), "rev-parse", "--absolute-git-dir"], capture_output=True,
                          check=False)
    if proc.returncode != 0:
        raise RepoError(f"{repo} is not a git repository; `navigator eval` mines its history (run it on a clone)")
    return Path(proc.stdout.decode().strip())


@dataclass
class MineCounts:
    """What a mining pass saw: commits read, candidates after the cheap rules, tasks picked."""

    commits: int
    candidates: int
    tasks: int


def finish(history: GitHistory, cand: Candidate, languages: Sequence[str], cfg: SelectionConfig,
           task_id: str) -> EvalTask | None:
    """Read the candidate's diff: the gold lines, and the changed-lines rule."""
    c = cand.commit
    gold: dict[str, list[int]] = {}
    anchors: dict[str, int] = {}
    for path in cand.sources:
        gold[path], anchors[path] = history.gold_lines(c.parents[0], c.sha, path)
    total = sum(len(v) for v in gold.values())
    if total == 0 or total > cfg.max_changed_lines:
        return None
    langs = [language_of(p, languages) or "" for p in gold]
    return EvalTask(id=task_id, commit=c.sha, parent=c.parents[0], date=c.date, goal=cand.goal,
                    gold_files=sorted(gold), gold_lines=gold, gold_anchor_lines=anchors,
                    language=max(sorted(set(langs)), key=langs.count))


def repo_languages(history: GitHistory, rev: str = "HEAD") -> tuple[str, ...]:
    """The languages of the files at ``rev``, most files first (``.h`` goes to whichever of c/cpp leads)."""
    counts: Counter[str] = Counter()
    for path in history.run("ls-tree", "-r", "--name-only", rev).splitlines():
        for lang, suffixes in LANGUAGES.items():
            if path.lower().endswith(suffixes) and not path.lower().endswith(".h"):
                counts[lang] += 1
    return tuple(sorted(counts, key=lambda lang: (-counts[lang], lang)))


def mine(history: GitHistory, languages: Sequence[str], cfg: SelectionConfig, n: int, rev: str = "HEAD",
         since: str | None = None, prefix: str = "task") -> tuple[list[EvalTask], MineCounts]:
    """Up to ``n`` tasks of the history at ``rev``, one per slice of its candidates (oldest to newest)."""
    boring = re.compile(cfg.boring_subject)
    commits = history.commits(rev, since)
    cands = [c for commit in commits if (c := candidate(commit, languages, cfg, boring))]
    cands.reverse()  # oldest first
    tasks = spread_pick(cands, n, lambda cand: finish(history, cand, languages, cfg,
                                                      f"{prefix}-{cand.commit.sha[:10]}"))
    return tasks, MineCounts(len(commits), len(cands), len(tasks))
