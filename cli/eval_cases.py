"""``navigator eval --cases DIR``: exported quality cases as the eval's tasks, and every eval's checkouts.

Each case (``navigator export``) becomes one task explored at the commit its run saw, in a detached
worktree of the case's own repository (cases of several repositories mix in one eval); its gold is
every line of the files the case marks right (:func:`navcore.evaluation.cases.case_task`). The batch,
the scoring and the report are the mined eval's.
"""

from __future__ import annotations

import subprocess
import uuid
from datetime import datetime, timezone
from pathlib import Path

from durable_navigator.activities.evaluation.cases import load_cases, source_at
from durable_navigator.activities.evaluation.checkout import checkout_root, ensure_checkout, remove_checkouts
from durable_navigator.activities.evaluation.mine import git_dir_of
from durable_navigator.navcore.evaluation.cases import case_task
from durable_navigator.navcore.evaluation.models import EvalRun, EvalTask
from durable_navigator.navtypes.errors import RepoError
from durable_navigator.repomap.cache import default_cache_dir

__all__ = ["cases_run", "ensure_run_checkouts", "remove_run_checkouts"]


def _case_subdir(repo: str, where: Path) -> str:
    """The case repository's folder inside its git work tree ("" at the top); RepoError when it is no git repository."""
    try:
        git_dir_of(Path(repo))
    except RepoError:
        raise RepoError(f"{where}: the case's repository {repo} is not a git repository here; run the eval where "
                        "it is (or clone it to that path)") from None
    proc = subprocess.run(["git", "-C", repo, "rev-parse", "--show-prefix"], capture_output=True, check=False)
    return proc.stdout.decode("utf-8", "replace").strip().rstrip("/")


def _task(folder: Path, repo: str, commit: str, gold: list[str]) -> dict[str, int]:
    """The number of lines of each gold file at ``commit`` (RepoError when the commit is gone)."""
    source = source_at(Path(repo), commit)
    counts = {f: len(source(f)) for f in gold}
    if not any(counts.values()):
        raise RepoError(f"{folder}: none of the case's right files is readable in {repo} at {commit[:12]} (was the "
                        "commit dropped by a rebase?); re-export the run or move the case out of --cases")
    return counts


def cases_run(cases_dir: Path, budgets: list[int], models: list[str], usd: str, concurrency: int) -> EvalRun:
    """The eval of every case under ``cases_dir``; one-line errors (what to do) before any work."""
    cases_dir = cases_dir.expanduser().resolve()
    tasks: list[EvalTask] = []
    seen: set[str] = set()
    for folder, case in load_cases(cases_dir):
        subdir = _case_subdir(case.repo, folder)
        key = case.id if case.id not in seen else f"{case.id}-{len(seen)}"
        seen.add(key)
        # load_cases refused every case without a commit
        tasks.append(case_task(case, key, _task(folder, case.repo, case.commit or "", case.gold_files), subdir))
    slug = "cases"
    return EvalRun(repo=str(cases_dir), git_dir="", head="", models=models, budgets=budgets, budget_usd=usd,
                   concurrency=concurrency, batch_id=f"eval-{slug}-{uuid.uuid4().hex[:8]}", commits=len(tasks),
                   candidates=len(tasks), started=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                   checkouts=str(checkout_root(default_cache_dir().parent, cases_dir, slug)), tasks=tasks, cases=True)


def _git_dir_of_task(run: EvalRun, task: EvalTask) -> Path:
    return git_dir_of(Path(task.repo)) if task.repo else Path(run.git_dir)


def ensure_run_checkouts(run: EvalRun) -> None:
    """A detached worktree of every task's parent (once per repository and commit; a resume re-uses them)."""
    root = Path(run.checkouts)
    done: set[str] = set()
    for task in run.tasks:
        rel = run.checkout_of(task)
        if rel not in done:
            done.add(rel)
            ensure_checkout(_git_dir_of_task(run, task), (root / rel).parent, task.parent)


def remove_run_checkouts(run: EvalRun) -> None:
    """Remove every checkout of the eval, and each repository's record of it."""
    root = Path(run.checkouts)
    by_root = {(root / run.checkout_of(t)).parent: t for t in run.tasks}
    for folder, task in sorted(by_root.items()):
        remove_checkouts(_git_dir_of_task(run, task), folder)
    if root.is_dir() and not any(root.iterdir()):
        root.rmdir()
