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
"""

from __future__ import annotations

import argparse
import io
import os
import re
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, model_validator

__all__ = [
    "Task", "RepoSpec", "SelectionConfig", "QUALITY_REPOS", "OFFLINE_REPOS", "HELD_OUT", "LANGUAGES",
    "build_tasks", "materialize", "repo_dir", "load_tasks", "redact_goal", "git_dir_for",
]

MIRROR_ROOT = Path("/work/.mirror")
DATA_ROOT = Path(os.environ.get("BENCH_DATA", "/work/bench-data"))
REPOS_ROOT = DATA_ROOT / "repos"
CLONES_ROOT = DATA_ROOT / "clones"
#: projects kept for independent evaluation: never mined
HELD_OUT = ("requests", "flask", "click", "httpx", "pytest", "sympy")

#: language -> source file suffixes (what the engine indexes for that language)
LANGUAGES: dict[str, tuple[str, ...]] = {
    "python": (".py",),
    "go": (".go",),
    "rust": (".rs",),
    "javascript": (".js", ".mjs", ".cjs", ".jsx"),
    "typescript": (".ts", ".mts", ".cts", ".tsx"),
    "ruby": (".rb",),
    # the training corpus' extra languages (``bench/corpus.py``); the engine parses them with
    # tree-sitter. ``.h`` belongs to whichever of c/cpp a repository declares first.
    "java": (".java",),
    "c": (".c", ".h"),
    "cpp": (".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx", ".h"),
}


@dataclass(frozen=True)
class RepoSpec:
    """One mined repository: GitHub name, the language(s) whose files count as source, its split."""

    repo: str
    languages: tuple[str, ...]
    split: str = ""

    @property
    def mirror(self) -> str:
        """The ``fetch`` mirror folder name (``owner+name``)."""
        return self.repo.replace("/", "+")


#: the offline policy's original set (all of it is in the quality set's dev split too)
OFFLINE_REPOS: tuple[RepoSpec, ...] = tuple(
    RepoSpec(r, ("python",)) for r in (
        "pallets/itsdangerous", "encode/starlette", "hynek/structlog", "aio-libs/yarl",
        "python-attrs/attrs", "tiangolo/typer",
    )
)

#: the quality set. The split is fixed here once, by repository: the six
#: repositories the offline policy was written against are all in ``dev``; every
#: ``test`` repository is new to the project. Both splits hold non-Python code.
QUALITY_REPOS: tuple[RepoSpec, ...] = (
    *(RepoSpec(s.repo, s.languages, "dev") for s in OFFLINE_REPOS),
    RepoSpec("spf13/cobra", ("go",), "dev"),
    RepoSpec("BurntSushi/ripgrep", ("rust",), "dev"),
    RepoSpec("koajs/koa", ("javascript",), "dev"),
    RepoSpec("rack/rack", ("ruby",), "dev"),
    RepoSpec("marshmallow-code/marshmallow", ("python",), "test"),
    RepoSpec("arrow-py/arrow", ("python",), "test"),
    RepoSpec("pallets/jinja", ("python",), "test"),
    RepoSpec("encode/uvicorn", ("python",), "test"),
    RepoSpec("go-chi/chi", ("go",), "test"),
    RepoSpec("tokio-rs/bytes", ("rust",), "test"),
    RepoSpec("expressjs/express", ("javascript",), "test"),
    RepoSpec("sindresorhus/ky", ("typescript",), "test"),
    RepoSpec("sinatra/sinatra", ("ruby",), "test"),
)


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


#: the quality set's selection: the offline rules plus other languages' conventions
QUALITY_SELECTION = SelectionConfig(
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


class Task(BaseModel):
    """One benchmark task: a goal and where the answer lives."""

    model_config = ConfigDict(extra="forbid")

    id: str
    #: mirror folder name ``owner+name`` (kept for the offline set's readers)
    mirror: str
    commit: str
    parent: str
    goal: str
    gold_files: list[str]
    #: path -> sorted pre-change line numbers (1-based) in ``parent``
    gold_lines: dict[str, list[int]]
    #: path -> number of those lines that are insertion anchors, not changed lines
    gold_anchor_lines: dict[str, int] = {}
    #: GitHub ``owner/name`` (derived from ``mirror`` when absent)
    repo: str = ""
    #: language of the gold files (the majority one if they mix)
    language: str = "python"
    #: ``dev`` or ``test`` for the quality set, ``train`` too in the corpus (``corpus.py``); empty for the offline set
    split: str = ""

    @model_validator(mode="after")
    def _repo_from_mirror(self) -> Task:
        if not self.repo:
            self.repo = self.mirror.replace("+", "/", 1)
        return self


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


def _git(repo: str, *args: str) -> str:
    out = subprocess.run(["git", f"--git-dir={git_dir_for(repo)}", *args], capture_output=True, check=True)
    return out.stdout.decode("utf-8", errors="replace")


# ---------------------------------------------------------------- selection
def _language_of(path: str, spec: RepoSpec) -> str | None:
    lower = path.lower()
    for lang in spec.languages:
        if lower.endswith(LANGUAGES[lang]):
            return lang
    return None


def _is_source(path: str, spec: RepoSpec, cfg: SelectionConfig) -> bool:
    lang = _language_of(path, spec)
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
class _Commit:
    sha: str
    parents: list[str]
    date: str
    message: str
    changes: list[tuple[str, str]]  # (status, path)


def _commits(repo: str, rev: str = "HEAD") -> list[_Commit]:
    raw = _git(
        repo, "log", "--no-merges", "--no-renames", "--name-status",
        "--format=%x1e%H %P%x1f%cI%x1f%B%x1f", rev,
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


# ---------------------------------------------------------------- goal redaction
_TRAILER = re.compile(
    r"^((co-authored-by|signed-off-by|reviewed-by):.*|(closes|fixes|fix|refs?) #\d+.*|.*pre-commit\.ci.*|-{3,})$",
    re.I | re.M,
)
_PR_REF = re.compile(r"\(?(gh-|#)\d+\)?|https?://\S+")
#: bookkeeping some histories carry (rack's darcs import, jinja's hg/svn import, autosquash
#: leftovers); extended redaction only
_BOOKKEEPING = re.compile(
    r"darcs-hash:\S+|git-svn-id:\s*\S+(\s+[0-9a-f-]{36})?|--HG--\s*branch\s*:\s*\S+|^\[svn\]\s*|\bfixup!"
    # Google's export tooling (guice, gson): MOE revision stamps and Piper ids
    r"|Revision created by MOE tool \S+\.?|MOE_MIGRAT\w*=\S*|Created by MOE:?|PiperOrigin-RevId:\s*\d+",
    re.I | re.M,
)
_SOURCE_ROOTS = ("src/", "lib/", "source/", "crates/")


def _module_names(path: str, extended: bool) -> set[str]:
    """Every spelling of ``path`` that names the file or its module."""
    names = {path, path.rsplit("/", 1)[-1]}
    stem_path = path.rsplit(".", 1)[0] if "." in path.rsplit("/", 1)[-1] else path
    if path.endswith(".py"):
        module = path[:-3].replace("/", ".")
        names.add(module)
        for prefix in ("src.", "lib."):
            if module.startswith(prefix):
                names.add(module[len(prefix):])
    if extended:
        forms = {stem_path}
        for root in _SOURCE_ROOTS:
            if stem_path.startswith(root):
                forms.add(stem_path[len(root):])
        for form in list(forms):
            if form.endswith(("/index", "/mod", "/lib", "/__init__")):
                forms.add(form.rsplit("/", 1)[0])
        for form in forms:
            if "/" in form:  # an import path: rack/utils, middleware/compress, buf/buf_mut
                names.add(form)
                names.add(form.replace("/", "::"))
                if path.endswith(".py"):
                    names.add(form.replace("/", "."))
    return names


def _scope_words(paths: list[str]) -> set[str]:
    """Directory and file-stem names of the changed files (what a ``scope:`` prefix names)."""
    words: set[str] = set()
    for path in paths:
        parts = path.split("/")
        words.update(p.lower() for p in parts[:-1] if p)
        words.add(parts[-1].rsplit(".", 1)[0].lower())
    return words - {"src", "lib", "source", "crates", "internal"}


_CONVENTIONAL = re.compile(r"^(\w+)\(([^)]*)\)(!?):")
_SCOPE_PREFIX = re.compile(r"^([\w.\-]+(?:\s*[,/]\s*[\w.\-]+)*):\s+")


def _names_changed(scope: str, scopes: set[str]) -> bool:
    parts = [p.strip().lower() for p in re.split(r"[,/]", scope)]
    return all(p in scopes for p in parts)


def _strip_scope(text: str, scopes: set[str]) -> str:
    """``printer: fix x`` -> ``fix x``; ``fix(middleware): x`` -> ``fix: x`` when the scope names a changed file."""
    subject, sep, body = text.partition("\n")
    m = _CONVENTIONAL.match(subject)
    if m:
        if _names_changed(m.group(2), scopes):
            subject = f"{m.group(1)}{m.group(3)}:" + subject[m.end():]
    elif (m := _SCOPE_PREFIX.match(subject)) and _names_changed(m.group(1), scopes):
        subject = subject[m.end():]
    return subject + sep + body


def _cut(text: str, limit: int) -> str:
    if not limit or len(text) <= limit:
        return text
    cut = text[:limit]
    end = max(cut.rfind(". "), cut.rfind("\n"))
    return cut[: end + 1] if end > limit // 2 else cut


def redact_goal(message: str, changed: list[str], extended: bool = False, max_chars: int = 0,
                extra_trailers: str = "") -> str:
    """Commit message -> goal: trailers, PR refs, URLs and changed paths/names removed."""
    text = _TRAILER.sub("", message)
    if extra_trailers:
        text = re.sub(extra_trailers, "", text, flags=re.I | re.M)
    text = _PR_REF.sub("", text)
    if extended:
        text = _BOOKKEEPING.sub("", text)
        text = _strip_scope(text.strip(), _scope_words(changed))
    names: set[str] = set()
    for path in changed:
        names |= _module_names(path, extended)
    for name in sorted(names, key=len, reverse=True):
        pattern = r"`?" + re.escape(name) + r"`?"
        if extended:  # whole names only: `lib/response` must not eat `lib/responses`
            pattern = r"(?<![\w/.:])" + pattern + r"(?![\w/])"
        text = re.sub(pattern, " ", text)
    if extended:
        text = _cut(text, max_chars)
    return " ".join(text.split())


# ---------------------------------------------------------------- gold lines
def _hunk_lines(repo: str, parent: str, sha: str, path: str) -> tuple[list[int], int]:
    diff = _git(repo, "diff", "-U0", "--no-renames", parent, sha, "--", path)
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
class _Candidate:
    """A commit that passed the cheap rules (files, subject, goal); its diff is not read yet."""

    commit: _Commit
    sources: tuple[str, ...]
    goal: str


def _candidate(spec: RepoSpec, c: _Commit, cfg: SelectionConfig, boring: re.Pattern[str]) -> _Candidate | None:
    """The rules that need no diff: one parent, 1-N modified source files, not noise, a long enough goal."""
    if len(c.parents) != 1:
        return None
    sources = [(s, p) for s, p in c.changes if _is_source(p, spec, cfg)]
    if not 1 <= len(sources) <= cfg.max_source_files or any(s != "M" for s, _ in sources):
        return None
    subject = c.message.strip().splitlines()[0] if c.message.strip() else ""
    if boring.search(subject.lower()):
        return None
    goal = redact_goal(c.message, [p for _, p in c.changes], cfg.extended_redaction, cfg.max_goal_chars,
                       cfg.extra_trailers)
    if len(re.findall(r"[A-Za-z]{2,}", goal)) < cfg.min_goal_words:
        return None
    return _Candidate(c, tuple(p for _, p in sources), goal)


def _finish(spec: RepoSpec, cand: _Candidate, cfg: SelectionConfig) -> Task | None:
    """Read the diff: the gold lines, and the changed-lines rule."""
    c = cand.commit
    gold: dict[str, list[int]] = {}
    anchors: dict[str, int] = {}
    for path in cand.sources:
        lines, n_anchor = _hunk_lines(spec.repo, c.parents[0], c.sha, path)
        gold[path], anchors[path] = lines, n_anchor
    total = sum(len(v) for v in gold.values())
    if total == 0 or total > cfg.max_changed_lines:
        return None
    langs = [_language_of(p, spec) or "" for p in gold]
    name = spec.repo.split("/", 1)[1]
    return Task(
        id=f"{name}-{c.sha[:10]}", mirror=spec.mirror, commit=c.sha, parent=c.parents[0],
        goal=cand.goal, gold_files=sorted(gold), gold_lines=gold, gold_anchor_lines=anchors,
        repo=spec.repo,
        language=max(sorted(set(langs)), key=langs.count), split=spec.split,
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


def materialize(tasks: list[Task]) -> None:
    """Unpack each task's parent revision (``git archive``) outside the repo, once per (repo, parent)."""
    for task in tasks:
        dest = repo_dir(task)
        if not dest.exists():
            blob = subprocess.run(
                ["git", f"--git-dir={git_dir_for(task.repo)}", "archive", "--format=tar", task.parent],
                capture_output=True, check=True,
            ).stdout
            tmp = dest.with_name(dest.name + ".tmp")
            tmp.mkdir(parents=True, exist_ok=True)
            with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
                tar.extractall(tmp, filter="data")
            tmp.rename(dest)
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
