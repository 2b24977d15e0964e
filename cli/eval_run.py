"""What ``navigator eval`` runs (its options and help: :mod:`cli.evalcmd`).

1. Every input is checked before any work: REPO is a git repository with commits, each ``--tokens``
   a map budget, each ``--model`` known and priced, ``--budget-usd`` a USD amount, ``--out`` free
   (or, with ``--resume``, holding an eval).
2. Tasks are mined from REPO's history (``activities/evaluation/mine.py``); each task's parent is
   checked out as a detached worktree in the eval's cache dir; ``eval-run.json`` records all of it
   before the batch starts, so a killed command resumes with ``--resume`` (same batch id: the
   batch workflow joins its running self or recovers finished children; nothing is paid twice).
3. The explorations run as one ``BatchWorkflow`` (one child ``NavigatorWorkflow`` per task x model x
   budget, one USD cap) on the configured Temporal or the embedded one, as ``navigator batch`` does.
4. Every method is scored on the checkouts (:mod:`cli.eval_report`) and the report written.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timezone
from pathlib import Path

import typer

from durable_navigator.activities.evaluation.checkout import checkout_root
from durable_navigator.activities.evaluation.mine import GitHistory, git_dir_of, mine, repo_languages
from durable_navigator.cli.common import config_of, run_async
from durable_navigator.cli.config import NavigatorConfig
from durable_navigator.cli.errors import CliError, handles_errors, stderr
from durable_navigator.cli.eval_cases import cases_run, ensure_run_checkouts
from durable_navigator.cli.eval_report import EvalOutcome, run_batch, write_report
from durable_navigator.cli.runrequest import check_token_budget, stream_guard, validate_model
from durable_navigator.cli.runinput import parse_usd, validated
from durable_navigator.cli.stores import open_artifact_store
from durable_navigator.navcore.batch.batch import BatchJob, BatchRequest, JobDefaults
from durable_navigator.navcore.evaluation.models import EvalRun
from durable_navigator.navcore.evaluation.rules import EVAL_SELECTION
from durable_navigator.navcore.navigator.requests import ModelCallConfig
from durable_navigator.navtypes.errors import RepoError
from durable_navigator.repomap.cache import default_cache_dir

__all__ = ["run_eval", "prepare_run", "eval_source", "RUN_FILE", "DEFAULT_TASKS"]

#: the file that makes an eval resumable
RUN_FILE = "eval-run.json"
#: tasks mined when --tasks is not given
DEFAULT_TASKS = 20
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


def _slug(text: str) -> str:
    return _SLUG.sub("-", text).strip("-")[:40] or "repo"


def _checked_options(config: NavigatorConfig, tokens: list[int], models: list[str], budget_usd: str,
                     local_worker: bool) -> tuple[list[int], list[str], str]:
    """The budgets, models and USD cap, each refused with a one-line error before any work."""
    budgets = sorted(dict.fromkeys(tokens or [config.defaults.token_budget]))
    for b in budgets:
        check_token_budget(b, f"--tokens {b}")
    names = list(dict.fromkeys(models or ["offline"]))
    for name in names:
        validate_model(name, config, local_worker)
    return budgets, names, str(parse_usd(budget_usd, "--budget-usd"))


def _mine_run(repo: Path, n: int, since: str | None, budgets: list[int], models: list[str], usd: str,
              concurrency: int) -> EvalRun:
    """Mine the tasks of ``repo`` (RepoError with what to do when there are none)."""
    git_dir = git_dir_of(repo)
    history = GitHistory(git_dir)
    try:
        head = history.head()
    except Exception:  # noqa: BLE001 - git's own message is about a ref; say what it means here
        raise RepoError(f"{repo} has no commits yet; `navigator eval` mines the history of a repository") from None
    languages = repo_languages(history, head)
    if not languages:
        raise RepoError(f"{repo} has no source files of a language the task rules know (python, go, rust, "
                        "javascript, typescript, ruby, java, c, cpp); nothing to evaluate")
    tasks, counts = mine(history, languages, EVAL_SELECTION, n, head, since, prefix=_slug(repo.name))
    if not tasks:
        where = f" since {since}" if since else ""
        raise RepoError(
            f"no commit of {repo}{where} qualifies as a task ({counts.commits} commits read, {counts.candidates} "
            "modify 1-4 source files with a 6-word message); widen --since or use a repository with more history")
    return EvalRun(repo=str(repo), git_dir=str(git_dir), head=head, since=since, models=models, budgets=budgets,
                   budget_usd=usd, concurrency=concurrency, batch_id=f"eval-{_slug(repo.name)}-{uuid.uuid4().hex[:8]}",
                   commits=counts.commits, candidates=counts.candidates,
                   started=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                   checkouts=str(checkout_root(default_cache_dir().parent, git_dir, _slug(repo.name))), tasks=tasks)


def prepare_run(config: NavigatorConfig, repo: Path | None, *, tasks: int | None, since: str | None,
                tokens: list[int], models: list[str], budget_usd: str, out_dir: Path, resume: bool, concurrency: int,
                local_worker: bool, cases: Path | None = None) -> EvalRun:
    """Check every input and mine (or, with ``resume``, reload; with ``cases``, read the cases of) the eval;
    nothing is started."""
    run_file = out_dir / RUN_FILE
    if resume:
        if not run_file.is_file():
            raise CliError(f"{out_dir} holds no eval to resume ({RUN_FILE} is missing); run without --resume")
        run = EvalRun.model_validate_json(run_file.read_text(encoding="utf-8"))
        for name in run.models:
            validate_model(name, config, local_worker)
        if (tokens and sorted(set(tokens)) != run.budgets) or (models and list(dict.fromkeys(models)) != run.models):
            raise CliError(f"the eval in {out_dir} runs --tokens {run.budgets} and --model {run.models}; resume it "
                           "without --tokens/--model, or start a new eval with another --out")
        return run
    if run_file.exists():
        raise CliError(f"{out_dir} already holds an eval; pass --resume to continue it, or --out another folder")
    budgets, names, usd = _checked_options(config, tokens, models, budget_usd, local_worker)
    if cases is not None:
        return cases_run(cases, budgets, names, usd, concurrency)
    assert repo is not None  # eval_source() asked for one of REPO / --cases
    return _mine_run(repo.expanduser().resolve(), tasks or DEFAULT_TASKS, since, budgets, names, usd, concurrency)


def eval_source(repo: Path | None, cases: Path | None, tasks: int | None, since: str | None,
                resume: bool) -> None:
    """Exactly one of REPO and --cases (--tasks / --since mine a history: not with --cases)."""
    if resume:
        return  # the eval in --out says what it runs
    if (repo is None) == (cases is None):
        raise CliError("give a REPO to mine (`navigator eval REPO`) or a folder of exported cases "
                       "(`navigator eval --cases DIR`), not " + ("both" if repo else "neither"))
    if cases is not None and (tasks is not None or since is not None):
        raise CliError("--tasks and --since choose commits of a REPO's history; --cases runs every case in DIR")


def batch_request(config: NavigatorConfig, run: EvalRun, out_dir: Path) -> BatchRequest:
    """The batch of every exploration: task x model x budget, each at its task's parent checkout."""
    d = JobDefaults()
    root = Path(run.checkouts)
    jobs = [BatchJob(index=k, name=f"{run.tasks[i].id}·{model}·{budget}",
                     repo_path=str(root / run.explore_dir(run.tasks[i])),
                     goal=run.tasks[i].goal, model=model, token_budget=budget, max_iterations=d.max_iterations,
                     max_output_tokens=d.max_output_tokens)
            for k, (i, model, budget) in enumerate(run.jobs())]
    return validated(BatchRequest, batch_id=run.batch_id, jobs=jobs, total_budget_usd=run.budget_usd,
                     max_concurrency=run.concurrency, out_dir=str(out_dir / "runs"),
                     task_queue=config.temporal.task_queue,
                     model_call=ModelCallConfig(stream=stream_guard(config, None)))


@handles_errors
def run_eval(ctx: typer.Context, repo: Path | None, tasks: int | None, since: str | None, tokens: list[int],
             models: list[str], budget_usd: str, out: Path | None, resume: bool, concurrency: int,
             cases: Path | None = None) -> None:
    """The ``navigator eval`` command (``--cases DIR``: the exported cases under DIR instead of REPO's history)."""
    eval_source(repo, cases, tasks, since, resume)
    config = config_of(ctx)
    local_worker = config.temporal.address is None
    name = "cases" if cases is not None else _slug((repo or Path(".")).expanduser().resolve().name)
    out_dir = (out or config.defaults.out_dir / f"eval-{name}").expanduser().resolve()
    run = prepare_run(config, repo, tasks=tasks, since=since, tokens=tokens, models=models, budget_usd=budget_usd,
                      out_dir=out_dir, resume=resume, concurrency=concurrency, local_worker=local_worker, cases=cases)
    # the packs are scored from the store: it answers before any work (a bad artifacts: section is one line)
    store = open_artifact_store(config)
    ensure_run_checkouts(run)
    out_dir.mkdir(parents=True, exist_ok=True)
    if not resume:
        tmp = out_dir / (RUN_FILE + ".tmp")
        tmp.write_text(run.model_dump_json(indent=1), encoding="utf-8")
        tmp.replace(out_dir / RUN_FILE)
    what = f"{len(run.tasks)} case(s)" if run.cases else f"{len(run.tasks)} tasks (of {run.candidates} candidates)"
    stderr.print(f"eval of {run.repo}: {what} × {len(run.models)} model(s) × {len(run.budgets)} budget(s) · "
                 f"cap ${run.budget_usd} · batch {run.batch_id}", markup=False, soft_wrap=True)
    outcome: EvalOutcome = run_async(run_batch(config, batch_request(config, run, out_dir), store))
    code = write_report(config, run, outcome, out_dir, store)
    raise typer.Exit(int(code))
