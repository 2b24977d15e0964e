"""Quality cases on disk: the commit a run saw, the files its pack shows in full, a case folder written
whole or not at all, and the cases of a folder read back (``navigator export`` / ``navigator eval --cases``).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path

from pydantic import ValidationError

from durable_navigator.navcore.evaluation.cases import CASE_FILE, QualityCase
from durable_navigator.navcore.evaluation.score import map_section, parse_context
from durable_navigator.navtypes.errors import NavigatorError, RepoError

__all__ = ["run_commit", "commit_date", "source_at", "shown_in_full", "write_folder", "load_cases"]

_GIT_IN_INDEX = re.compile(r"^git:(?P<short>[0-9a-f]{4,40})\+")


def _git(repo: Path, *args: str) -> str | None:
    """``git -C repo ARGS``'s stdout, or None when git fails (no repository, unknown object)."""
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)
    return proc.stdout.decode("utf-8", "replace").strip() if proc.returncode == 0 else None


def run_commit(repo: Path, index_version: str) -> str | None:
    """The full hash of the commit a run indexed (its map's ``index_version`` is ``git:<short>+idx:…``).

    None when the repository was not a git checkout. :class:`RepoError` when it was but the commit
    cannot be found now (the repository moved, or the commit is gone): a case needs a commit to re-run.
    """
    m = _GIT_IN_INDEX.match(index_version)
    if m is None:
        return None
    full = _git(repo, "rev-parse", "--verify", "--quiet", f"{m['short']}^{{commit}}") if repo.is_dir() else None
    if not full:
        raise RepoError(f"the run indexed commit {m['short']} of {repo}, which is not readable there now; export "
                        "on the machine that ran it, with the repository in place")
    return full


def commit_date(repo: Path, commit: str) -> str:
    """The committer date of ``commit`` (ISO 8601), or "" when git cannot say."""
    return _git(repo, "show", "-s", "--format=%cI", commit) or ""


def source_at(repo: Path, commit: str | None) -> Callable[[str], list[str]]:
    """``path -> lines`` of ``repo`` at ``commit`` (the work tree when None), split as the engine splits."""
    cache: dict[str, list[str]] = {}

    def lines(path: str) -> list[str]:
        if path not in cache:
            if commit is None:
                try:
                    data = (repo / path).read_bytes()
                except OSError:
                    data = b""
            else:
                # ``./``: relative to ``repo``, which may be a folder inside the git work tree
                proc = subprocess.run(["git", "-C", str(repo), "show", f"{commit}:./{path}"], capture_output=True,
                                      check=False)
                data = proc.stdout if proc.returncode == 0 else b""
            cache[path] = data.decode("utf-8", "replace").splitlines()
        return cache[path]

    return lines


def shown_in_full(context_md: str, source: Callable[[str], list[str]]) -> list[str]:
    """The files of a pack's map whose every line is visible (sorted)."""
    parsed = parse_context(map_section(context_md), source)
    return sorted(path for path, shown in parsed.files.items()
                  if source(path) and set(range(1, len(source(path)) + 1)) <= shown.visible)


def write_folder(out: Path, files: dict[str, bytes]) -> None:
    """Write ``files`` (relative path -> bytes) as the new folder ``out``, whole or not at all.

    Everything goes to a hidden sibling first, renamed into place at the end: a failure (or a kill)
    leaves no half-written ``out``.
    """
    if out.exists():
        raise NavigatorError(f"{out} already exists; pass another --out or remove it")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".{out.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        for rel, data in files.items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_cases(folder: Path) -> list[tuple[Path, QualityCase]]:
    """Every ``case.json`` under ``folder`` (itself a case, or a folder of them), sorted by path.

    One-line errors, before any work: no such folder, no case in it, a file that is not a case.
    """
    if not folder.is_dir():
        raise NavigatorError(f"--cases {folder} is not a folder; pass the folder `navigator export` wrote "
                             "(or one holding several)")
    files = sorted(p for p in folder.rglob(CASE_FILE) if not any(part.startswith(".") for part in
                                                                 p.relative_to(folder).parts))
    if not files:
        raise NavigatorError(f"--cases {folder} holds no {CASE_FILE}; export runs into it with "
                             "`navigator export ID --out DIR`")
    cases = []
    for file in files:
        try:
            case = QualityCase.model_validate_json(file.read_text(encoding="utf-8", errors="replace"))
        except ValidationError as exc:
            raise NavigatorError(f"{file} is not a quality case ({exc.error_count()} problem(s), first: "
                                 f"{exc.errors()[0]['loc']}: {exc.errors()[0]['msg']}); re-export the run") from None
        if case.commit is None:
            raise NavigatorError(f"{file}: the run's repository was not a git checkout, so the case has no commit "
                                 "to explore again; move it out of --cases")
        cases.append((file.parent, case))
    return cases
