"""The benchmark task sets' definitions (bench-only code): repositories, selection rules, the task model.

What ``taskset.py`` mines is decided here: which repositories (``OFFLINE_REPOS``, ``QUALITY_REPOS``; never
``HELD_OUT``), which files of them count as source (``LANGUAGES``, :func:`_is_source`), which commits
qualify (``SelectionConfig``), and the shape of a task (``Task``). Import these through ``taskset``,
which re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, model_validator

__all__ = [
    "Task", "RepoSpec", "SelectionConfig", "QUALITY_REPOS", "QUALITY_SELECTION", "OFFLINE_REPOS", "HELD_OUT",
    "LANGUAGES",
]

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


# ---------------------------------------------------------------- source files
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
