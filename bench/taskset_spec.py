"""The benchmark task sets' definitions (bench-only code): repositories, selection rules, the task model.

What ``taskset.py`` mines is decided here: which repositories (``OFFLINE_REPOS``, ``QUALITY_REPOS``; never
``HELD_OUT``) and the shape of a task (``Task``). Which files count as source (``LANGUAGES``,
:func:`_is_source`) and which commits qualify (``SelectionConfig``) are the package's rules
(``navcore/evaluation/rules.py``, shared with ``navigator eval``), re-exported here. Import these through ``taskset``,
which re-exports them.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, model_validator

from durable_navigator.navcore.evaluation.rules import (EVAL_SELECTION, LANGUAGES, SelectionConfig, is_source,
                                                         language_of)

__all__ = [
    "Task", "RepoSpec", "SelectionConfig", "QUALITY_REPOS", "QUALITY_SELECTION", "OFFLINE_REPOS", "HELD_OUT",
    "LANGUAGES",
]

#: projects kept for independent evaluation: never mined
HELD_OUT = ("requests", "flask", "click", "httpx", "pytest", "sympy")


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


#: the quality set's selection: the offline rules plus other languages' conventions -- the rules
#: ``navigator eval`` applies to a user's repository (one copy, in the package)
QUALITY_SELECTION = EVAL_SELECTION


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
    return language_of(path, spec.languages)


def _is_source(path: str, spec: RepoSpec, cfg: SelectionConfig) -> bool:
    return is_source(path, spec.languages, cfg)
