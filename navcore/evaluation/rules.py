"""Which commits of a history become evaluation tasks, and their gold lines (pure: no git, no I/O).

A task is one non-merge commit that *modifies* 1-``max_source_files`` existing non-test source
files with a modest diff, whose subject is not release/format/dependency noise and whose goal (the
message with every changed path removed, :func:`~navcore.evaluation.goal.redact_goal`) keeps at
least ``min_goal_words`` words. Its gold is, per changed source file, the *pre-change* line numbers
in the parent revision (what the map is built from); a hunk that only inserts lines stands in by its
anchor line. One copy of these rules serves ``navigator eval`` and the benchmarks' task sets
(``bench/taskset.py``, ``bench/corpus.py``); the git reads that feed them live in
``activities/evaluation/mine.py``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel, ConfigDict

from durable_navigator.navcore.evaluation.goal import redact_goal

__all__ = [
    "LANGUAGES", "SelectionConfig", "EVAL_SELECTION", "GitCommit", "Candidate", "language_of", "is_source",
    "parse_log", "parse_hunks", "candidate", "spread_pick", "LOG_FORMAT",
]

T = TypeVar("T")

#: language -> source file suffixes (what the engine indexes for that language); ``.h`` belongs to
#: whichever of c/cpp a repository's language list names first
LANGUAGES: dict[str, tuple[str, ...]] = {
    "python": (".py",),
    "go": (".go",),
    "rust": (".rs",),
    "javascript": (".js", ".mjs", ".cjs", ".jsx"),
    "typescript": (".ts", ".mts", ".cts", ".tsx"),
    "ruby": (".rb",),
    "java": (".java",),
    "c": (".c", ".h"),
    "cpp": (".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".h"),
}


class SelectionConfig(BaseModel):
    """Which commits become tasks."""

    model_config = ConfigDict(frozen=True)

    max_source_files: int = 4
    min_goal_words: int = 6
    #: refactors that rewrite hundreds of lines are not "find the place" tasks
    max_changed_lines: int = 150
    per_repo: int = 12
    #: redact module names given as ``a::b`` / ``a/b`` import paths and ``scope:`` subject
    #: prefixes; off for the offline set, whose goals were mined before these rules existed
    extended_redaction: bool = False
    #: longer goals are cut at a sentence or line end (squash-merged PR descriptions); 0 = keep all
    max_goal_chars: int = 0
    #: a regex of further bookkeeping removed from goals (the corpus' Gerrit/node trailers);
    #: empty for the offline and quality sets, which rebuild byte-identically without it
    extra_trailers: str = ""
    non_source_dirs: tuple[str, ...] = (
        "tests", "test", "testing", "docs", "doc", "examples", "docs_src",
        "benchmarks", "bench", "typing_tests", "scripts", "tools", ".github",
    )
    #: extra directories that never hold product source in the non-Python repositories
    extra_non_source_dirs: tuple[str, ...] = ()
    boring_subject: str = (
        r"^(bump|release|prepare|merge|revert|pre-commit|\[pre-commit|update changelog|"
        r"black|reformat|run black|apply black|lint|ruff|isort|typo|fix typo|version|changelog)"
    )


#: the rules of the benchmarks' quality set (``bench/QUALITY.md``), which ``navigator eval`` applies to
#: a user's repository: the offline rules plus other languages' conventions
EVAL_SELECTION = SelectionConfig(
    per_repo=18,
    extended_redaction=True,
    max_goal_chars=1200,
    extra_non_source_dirs=(
        "spec", "specs", "benches", "example", "fixtures", "fixture", "vendor", "third_party",
        "node_modules", "dist", "build", "coverage", "testdata", "__tests__", "test-d", "ci", "testsuite",
    ),
    boring_subject=(
        SelectionConfig().boring_subject[:-1]
        + r"|chore|build\(deps|deps|docs?[:(]|style[:(]|ci[:(]|tests?[:(]|bench[:(]|v?\d+\.\d+(\.\d+)?\b"
        r"|rustfmt|cargo fmt|clippy|gofmt|go fmt|prettier|eslint|xo\b|rubocop|formatting"
        r"|update (the )?dependencies|upgrade|meta\b|cleanup|clean up|minor"
        # spelling fixes are not "find the place" tasks, wherever the word sits in the subject
        r"|.*\btypos?\b|.*misspel|.*\bspelling\b|.*\bgrammar\b)"
    ),
)


def language_of(path: str, languages: Sequence[str]) -> str | None:
    """The first of ``languages`` whose suffixes ``path`` ends with."""
    lower = path.lower()
    for lang in languages:
        if lower.endswith(LANGUAGES[lang]):
            return lang
    return None


def is_source(path: str, languages: Sequence[str], cfg: SelectionConfig) -> bool:
    """``path`` is product source of one of ``languages`` (not a test, doc, example, vendored file)."""
    lang = language_of(path, languages)
    if lang is None:
        return False
    parts = path.split("/")
    name = parts[-1]
    dirs = set(cfg.non_source_dirs) | set(cfg.extra_non_source_dirs)
    if any(p in dirs for p in parts[:-1]):
        return False
    if lang == "python":
        return not (name.startswith("test_") or name.endswith("_test.py") or name in {
            "tests.py", "test.py", "conftest.py", "setup.py", "noxfile.py", "conf.py",
        })
    stem = name.rsplit(".", 1)[0]
    if stem.endswith(("_test", "_spec", ".test", ".spec", "-test", "-spec", ".bench", ".test-d")) or stem in {"test", "tests"}:
        return False
    if name.endswith((".min.js", ".d.ts")) or name in {"Rakefile", "Gemfile", "build.rs"}:
        return False
    if lang == "java" and stem.endswith(("Test", "Tests", "IT", "TestCase", "Benchmark")):
        return False
    if lang in ("c", "cpp") and (stem.startswith("test_") or stem.endswith(("_unittest", "_tests", "_bench"))):
        return False
    return True


@dataclass
class GitCommit:
    """One commit of ``git log``: its parents, committer date, message and (status, path) changes."""

    sha: str
    parents: list[str]
    date: str
    message: str
    changes: list[tuple[str, str]]


#: the ``git log`` arguments :func:`parse_log` reads (non-merge commits, no rename detection)
LOG_FORMAT = ("--no-merges", "--no-renames", "--name-status", "--format=%x1e%H %P%x1f%cI%x1f%B%x1f")


def parse_log(raw: str) -> list[GitCommit]:
    """Commits of ``git log`` run with :data:`LOG_FORMAT` (newest first, as git prints them)."""
    commits: list[GitCommit] = []
    for chunk in raw.split("\x1e")[1:]:
        head, date, message, files = chunk.split("\x1f")
        shas = head.split()
        changes = []
        for line in files.strip().splitlines():
            bits = line.split("\t")
            if len(bits) == 2:
                changes.append((bits[0][0], bits[1]))
        commits.append(GitCommit(shas[0], shas[1:], date, message, changes))
    return commits


def parse_hunks(diff: str) -> tuple[list[int], int]:
    """Gold lines of one file's ``git diff -U0``: changed parent lines plus insertion anchors, and
    how many of them are anchors."""
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


@dataclass(frozen=True)
class Candidate:
    """A commit that passed the cheap rules (files, subject, goal); its diff is not read yet."""

    commit: GitCommit
    sources: tuple[str, ...]
    goal: str


def candidate(c: GitCommit, languages: Sequence[str], cfg: SelectionConfig,
              boring: re.Pattern[str]) -> Candidate | None:
    """The rules that need no diff: one parent, 1-N modified source files, not noise, a long enough goal."""
    if len(c.parents) != 1:
        return None
    sources = [(s, p) for s, p in c.changes if is_source(p, languages, cfg)]
    if not 1 <= len(sources) <= cfg.max_source_files or any(s != "M" for s, _ in sources):
        return None
    subject = c.message.strip().splitlines()[0] if c.message.strip() else ""
    if boring.search(subject.lower()):
        return None
    goal = redact_goal(c.message, [p for _, p in c.changes], cfg.extended_redaction, cfg.max_goal_chars,
                       cfg.extra_trailers)
    if len(re.findall(r"[A-Za-z]{2,}", goal)) < cfg.min_goal_words:
        return None
    return Candidate(c, tuple(p for _, p in sources), goal)


def spread_pick(cands: list[Candidate], n: int, finish: Callable[[Candidate], T | None]) -> list[T]:
    """Up to ``n`` tasks spread over ``cands`` (oldest first): the candidates are cut into ``n`` equal
    slices and each slice gives its oldest candidate that ``finish`` accepts, so only the picked
    commits' diffs are read."""
    n = min(n, len(cands))
    step = len(cands) / n if n else 1.0
    picked: list[T] = []
    for k in range(n):
        for j in range(int(k * step), int((k + 1) * step)):
            if (task := finish(cands[j])) is not None:
                picked.append(task)
                break
    return picked
