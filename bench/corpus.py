"""The training corpus of issue 28: thousands of tasks mined from real history (bench-only code).

Same task rules as the quality set (``bench/taskset.py``, ``bench/QUALITY.md``), many
more repositories and tasks: the 19 quality repositories keep their split (``dev`` /
``test``), every other repository is ``train`` except a few in ``dev`` so dev covers
every language. Up to ``per_repo`` tasks per repository, one per equal slice of its
candidate commits (oldest to newest); within a slice the oldest candidate whose diff
passes the changed-lines rule is taken, so only the picked commits' diffs are read.

Each build records the mirror's HEAD per repository in ``corpus_manifest.json``; a
later build mines at those commits (``--refresh`` takes today's HEADs), so the file
rebuilds byte-identically from any clone that holds them.

Usage::

    .venv/bin/python bench/corpus.py build                       # -> bench/tasks/corpus_tasks.jsonl
    .venv/bin/python bench/corpus.py history TASK_ID [-n 50]     # the parent's own history, JSON lines
    .venv/bin/python bench/corpus.py stats                       # counts per split x language
    .venv/bin/python bench/corpus.py materialize [--split dev] [--with-git] [--limit N]

History: ``history(repo, parent)`` is ``git log`` of the mirror from the parent (the
parent included -- it is what the checkout shows) backwards, never anything after it.
``materialize --with-git`` makes a checkout whose ``.git`` holds exactly that history:
``git init -b main``, then ``git fetch --update-head-ok <mirror> <parent>:refs/heads/main``
(the pack holds only objects reachable from the parent, so the task's own commit and
everything after it are absent, not just unreferenced), then ``git reset --hard main``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import taskset  # noqa: E402
from taskset import (  # noqa: E402
    DATA_ROOT, QUALITY_REPOS, QUALITY_SELECTION, RepoSpec, SelectionConfig, Task, git_dir_for, materialize,
    building,
)

from durable_navigator.navcore.evaluation.rules import spread_pick  # noqa: E402

__all__ = [
    "CORPUS_REPOS", "CORPUS_SELECTION", "ALL_SPECS", "build_corpus", "history", "load_corpus",
    "materialize_with_git", "git_repo_dir", "stats",
]

TASKS_PATH = Path("bench/tasks/corpus_tasks.jsonl")  # ~5 MB; a ``.gz`` path writes gzip
MANIFEST_PATH = Path("bench/tasks/corpus_manifest.json")
GIT_REPOS_ROOT = DATA_ROOT / "repos-git"


def _specs(split: str, langs: tuple[str, ...], *repos: str) -> tuple[RepoSpec, ...]:
    return tuple(RepoSpec(r, langs, split) for r in repos)


#: the corpus' own repositories (none of the quality set, none held out)
CORPUS_REPOS: tuple[RepoSpec, ...] = (
    *_specs("train", ("python",),
            "psf/black", "pallets/werkzeug", "tornadoweb/tornado", "sqlalchemy/alembic", "pydantic/pydantic",
            "fastapi/fastapi", "scrapy/scrapy", "celery/kombu", "Textualize/rich", "benoitc/gunicorn",
            "tqdm/tqdm", "python-jsonschema/jsonschema", "pypa/packaging", "jazzband/pip-tools",
            "encode/django-rest-framework", "aio-libs/aiohttp", "PyCQA/flake8", "httpie/cli"),
    *_specs("train", ("go",),
            "urfave/cli", "gin-gonic/gin", "sirupsen/logrus", "labstack/echo", "junegunn/fzf", "redis/go-redis",
            "gofiber/fiber", "prometheus/client_golang", "caddyserver/caddy", "go-git/go-git",
            "charmbracelet/bubbletea"),
    *_specs("train", ("rust",),
            "clap-rs/clap", "serde-rs/json", "serde-rs/serde", "rust-random/rand", "tokio-rs/tracing",
            "hyperium/hyper", "seanmonstar/reqwest", "rayon-rs/rayon", "sharkdp/fd", "chronotope/chrono",
            "rust-lang/regex", "sharkdp/bat", "dtolnay/syn", "tokio-rs/axum", "alacritty/alacritty"),
    *_specs("train", ("javascript",),
            "lodash/lodash", "axios/axios", "tj/commander.js", "moment/moment", "jquery/jquery",
            "fastify/fastify", "Leaflet/Leaflet", "mochajs/mocha", "handlebars-lang/handlebars.js"),
    *_specs("train", ("javascript", "typescript"), "yargs/yargs"),
    *_specs("train", ("typescript",),
            "date-fns/date-fns", "colinhacks/zod", "reduxjs/redux", "sindresorhus/got", "ReactiveX/rxjs",
            "immerjs/immer", "honojs/hono", "vuejs/core", "trpc/trpc"),
    *_specs("train", ("ruby",),
            "rails/thor", "ruby/rake", "jekyll/jekyll", "Shopify/liquid", "sidekiq/sidekiq",
            "heartcombo/devise", "lostisland/faraday", "puma/puma", "teamcapybara/capybara"),
    *_specs("train", ("java",),
            "google/gson", "jhy/jsoup", "apache/commons-lang", "FasterXML/jackson-core", "mockito/mockito",
            "junit-team/junit4", "apache/commons-io", "square/retrofit"),
    *_specs("train", ("c",), "libuv/libuv", "tmux/tmux", "redis/redis"),
    *_specs("train", ("cpp",), "nlohmann/json", "gabime/spdlog"),
    # dev gets one repository of each language the quality set lacks
    *_specs("dev", ("java",), "google/guice"),
    *_specs("dev", ("c",), "jqlang/jq"),
    *_specs("dev", ("cpp",), "fmtlib/fmt"),
)

#: the quality set's repositories keep their split; then the corpus' own
ALL_SPECS: tuple[RepoSpec, ...] = (*QUALITY_REPOS, *CORPUS_REPOS)

#: the quality rules, more tasks per repository, and the directories C/C++/Java
#: projects keep vendored or sample code in
CORPUS_SELECTION = QUALITY_SELECTION.model_copy(update={
    "per_repo": 80,
    "extra_non_source_dirs": (
        *QUALITY_SELECTION.extra_non_source_dirs,
        "deps", "extern", "external", "3rdparty", "thirdparty", "third-party", "samples", "sample", "demo",
        "demos", "jmh", "benchmark", "testlib", "test-util", "test-utils", "testing-support",
    ),
    "boring_subject": QUALITY_SELECTION.boring_subject[:-1] + r"|\[maven-release-plugin\]|\[gradle-release)",
    # Gerrit (alembic, client_golang), node-style (libuv) and merge-bot lines; revert hashes
    "extra_trailers": (
        r"^\s*(change-id|pr-url|reviewed-by|reviewed-on|refs|pull-request|fixes|closes|acked-by|tested-by"
        r"|ref|bug|issue)\s*:.*$|merge (pull request|branch)\b.*$|this reverts commit [0-9a-f]{7,40}\.?"
    ),
})


def _check_specs(specs: tuple[RepoSpec, ...]) -> None:
    seen: set[str] = set()
    for spec in specs:
        taskset._check_not_held_out(spec.repo)
        if spec.repo.lower() in seen:
            raise SystemExit(f"{spec.repo} is listed twice in the corpus; keep one entry")
        seen.add(spec.repo.lower())


def mine_repo(spec: RepoSpec, cfg: SelectionConfig, rev: str) -> tuple[list[Task], dict[str, int]]:
    """Up to ``cfg.per_repo`` tasks of one repository at ``rev``, one per slice of its candidates."""
    boring = re.compile(cfg.boring_subject)
    commits = taskset._commits(spec.repo, rev)
    cands = [c for commit in commits if (c := taskset._candidate(spec, commit, cfg, boring))]
    cands.reverse()  # oldest first
    tasks = spread_pick(cands, cfg.per_repo, lambda cand: taskset._finish(spec, cand, cfg))
    return tasks, {"commits": len(commits), "candidates": len(cands), "tasks": len(tasks)}


def _head(spec: RepoSpec) -> str:
    return taskset._git(spec.repo, "rev-parse", "HEAD").strip()


def build_corpus(specs: tuple[RepoSpec, ...], cfg: SelectionConfig, pins: dict[str, str]) -> tuple[list[Task], dict]:
    """Mine every repository (at its pinned commit when ``pins`` has one); the tasks and the manifest."""
    _check_specs(specs)
    tasks: list[Task] = []
    repos = []
    for spec in specs:
        started = time.monotonic()
        rev = pins.get(spec.repo) or _head(spec)
        got, counts = mine_repo(spec, cfg, rev)
        tasks.extend(got)
        repos.append({"repo": spec.repo, "split": spec.split, "languages": list(spec.languages), "head": rev, **counts})
        print(f"{spec.repo} [{spec.split}]: {counts['commits']} commits, {counts['candidates']} candidates, "
              f"{counts['tasks']} tasks ({time.monotonic() - started:.0f} s)", file=sys.stderr)
    manifest = {"selection": cfg.model_dump(), "repos": repos}
    return tasks, manifest


def load_corpus(path: Path = TASKS_PATH) -> list[Task]:
    """Read the corpus task file (``.jsonl`` or ``.jsonl.gz``)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return [Task.model_validate_json(line) for line in fh if line.strip()]


def _write_tasks(tasks: list[Task], path: Path) -> None:
    data = "".join(t.model_dump_json() + "\n" for t in tasks).encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".gz":  # mtime 0 and no file name: the same tasks give the same bytes
        with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
            gz.write(data)
    else:
        path.write_bytes(data)


# ---------------------------------------------------------------- history
def history(repo: str, rev: str, n: int = 50, merges: bool = False) -> list[dict]:
    """The ``n`` newest commits of ``repo`` reachable from ``rev`` (``rev`` first): sha, date, message, paths."""
    args = ["log", f"-n{n}", "--no-renames", "--name-only", "--format=%x1e%H%x1f%cI%x1f%B%x1f", rev]
    if not merges:
        args.insert(1, "--no-merges")
    out = []
    for chunk in taskset._git(repo, *args).split("\x1e")[1:]:
        sha, date, message, files = chunk.split("\x1f")
        out.append({"sha": sha, "date": date, "message": message.strip(),
                     "paths": [p for p in files.strip().splitlines() if p]})
    return out


def git_repo_dir(task: Task) -> Path:
    """Where the parent revision of ``task`` is checked out with its history."""
    return GIT_REPOS_ROOT / f"{task.repo.split('/', 1)[1]}@{task.parent[:12]}"


def _run(*args: str, cwd: Path) -> str:
    proc = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"`{' '.join(args)}` failed in {cwd}: {proc.stderr.strip()}")
    return proc.stdout


def _copy_present_history(mirror: Path, parent: str, repo: Path) -> list[str]:
    """When a mirror lacks an object of the parent's history (a snapshot can miss a blob, e.g. an
    old ``.gitignore`` of go-chi/chi) ``git fetch`` refuses the whole history. Copy instead every object
    reachable from ``parent`` that the mirror has (``rev-list --missing=print``: nothing after the
    parent, as with fetch) and point ``main`` at it; return the missing ids. The history features read
    commits and trees (``git log --name-status --no-renames``), never old blobs."""
    listed = subprocess.run(["git", f"--git-dir={mirror}", "rev-list", "--objects", "--missing=print", parent],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    missing = [line[1:] for line in listed if line.startswith("?")]
    present = "".join(line.split(" ", 1)[0] + "\n" for line in listed if not line.startswith("?"))
    pack = subprocess.run(["git", f"--git-dir={mirror}", "pack-objects", "--stdout", "-q"], input=present.encode(),
                          capture_output=True, check=True).stdout
    subprocess.run(["git", "index-pack", "--stdin"], input=pack, cwd=repo, capture_output=True, check=True)
    _run("git", "update-ref", "refs/heads/main", parent, cwd=repo)
    (repo / ".git" / "MISSING_OBJECTS").write_text("".join(m + "\n" for m in missing))
    return missing


def _fill_tree(task: Task, repo: Path) -> None:
    """Check out ``main`` (the parent). When a blob of the parent's own tree is missing (google/guice's
    mirror lacks ``struts2/lib/struts-2.0.5-lib.zip``), ``git reset --hard`` refuses the whole tree: the
    checkout then leaves those files out of the index and the tree, lists them in
    ``.git/MISSING_FILES`` and says so (a gold file among them fails the task after)."""
    reset = subprocess.run(["git", "reset", "-q", "--hard", "main"], cwd=repo, capture_output=True, text=True)
    if reset.returncode == 0:
        return
    entries = [line.split("\t", 1) for line in _run("git", "ls-tree", "-r", "-z", "main", cwd=repo).split("\0") if line]
    blobs = [(meta.split()[2], path) for meta, path in entries if meta.split()[1] == "blob"]
    checked = subprocess.run(["git", "cat-file", "--batch-check=%(objectname)"], cwd=repo, text=True, check=True,
                             input="".join(sha + "\n" for sha, _ in blobs), capture_output=True).stdout.splitlines()
    lost = sorted(path for (_sha, path), line in zip(blobs, checked) if line.endswith(" missing"))
    if not lost:
        raise SystemExit(f"{task.id}: `git reset --hard` failed in {repo}: {reset.stderr.strip()}")
    _run("git", "read-tree", "main", cwd=repo)
    subprocess.run(["git", "rm", "-q", "--cached", "--", *lost], cwd=repo, capture_output=True, check=True)
    _run("git", "checkout-index", "-a", "-f", cwd=repo)
    (repo / ".git" / "MISSING_FILES").write_text("".join(p + "\n" for p in lost))
    print(f"{task.id}: the mirror lacks the blobs of {len(lost)} file(s) of the parent's tree ({', '.join(lost[:3])}); "
          "the checkout leaves them out (listed in .git/MISSING_FILES)", file=sys.stderr)


def materialize_with_git(task: Task) -> Path:
    """A checkout of the parent whose ``.git`` holds the parent's history and no object after it."""
    dest = git_repo_dir(task)
    if not dest.exists():
        with building(dest) as tmp:
            _run("git", "init", "-q", "-b", "main", cwd=tmp)
            mirror = git_dir_for(task.repo)
            # straight into the unborn branch HEAD names (--update-head-ok), then fill the tree from it
            fetched = subprocess.run(["git", "fetch", "-q", "--no-tags", "--update-head-ok", str(mirror),
                                      f"{task.parent}:refs/heads/main"], cwd=tmp, capture_output=True, text=True)
            if fetched.returncode:
                missing = _copy_present_history(mirror, task.parent, tmp)
                why = (fetched.stderr.strip().splitlines() or ["no message"])[-1]
                print(f"{task.id}: git fetch from {mirror} failed ({why}); "
                      f"the mirror lacks {len(missing)} object(s) of the parent's history "
                      f"({', '.join(missing[:3])}), the checkout's .git holds every other object reachable "
                      f"from the parent (missing ones listed in .git/MISSING_OBJECTS)", file=sys.stderr)
            _fill_tree(task, tmp)
            (tmp / ".git" / "FETCH_HEAD").unlink(missing_ok=True)
    missing = [f for f in task.gold_files if not (dest / f).is_file()]
    if missing:
        raise SystemExit(f"{task.id}: gold files {missing} are not in the checkout {dest}")
    return dest


def stats(tasks: list[Task]) -> str:
    """Markdown tables: tasks and repositories per split x language, and per split."""
    splits = ("train", "dev", "test")
    langs = sorted({t.language for t in tasks})
    rows = ["| language | " + " | ".join(splits) + " | all |", "|---|" + "---|" * (len(splits) + 1)]
    for lang in [*langs, None]:
        cells = []
        for split in (*splits, None):
            sel = [t for t in tasks if (lang is None or t.language == lang) and (split is None or t.split == split)]
            cells.append(f"{len(sel):,} ({len({t.repo for t in sel})})")
        rows.append(f"| {lang or '**all**'} | " + " | ".join(cells) + " |")
    return "tasks (repositories) by the gold files' language\n\n" + "\n".join(rows)


# ---------------------------------------------------------------- CLI
def _find_task(tasks_path: Path, task_id: str) -> Task:
    for task in load_corpus(tasks_path):
        if task.id == task_id:
            return task
    raise SystemExit(f"no task {task_id!r} in {tasks_path}; list ids with: jq -r .id {tasks_path}")


def _cmd_build(args: argparse.Namespace) -> None:
    cfg = CORPUS_SELECTION.model_copy(update={"per_repo": args.per_repo}) if args.per_repo else CORPUS_SELECTION
    pins: dict[str, str] = {}
    if MANIFEST_PATH.is_file() and not args.refresh:
        pins = {r["repo"]: r["head"] for r in json.loads(MANIFEST_PATH.read_text())["repos"]}
    specs = tuple(s for s in ALL_SPECS if not args.repo or s.repo in args.repo)
    if args.repo and len(specs) != len(set(args.repo)):
        raise SystemExit(f"unknown repositories {sorted(set(args.repo) - {s.repo for s in specs})}; "
                         "add them to corpus.CORPUS_REPOS first")
    started = time.monotonic()
    tasks, manifest = build_corpus(specs, cfg, pins)
    _write_tasks(tasks, args.out)
    if not args.repo:
        MANIFEST_PATH.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"wrote {len(tasks)} tasks to {args.out} in {time.monotonic() - started:.0f} s", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    """CLI: ``build`` the corpus, print a task's ``history``, ``materialize`` checkouts."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--out", type=Path, default=TASKS_PATH)
    b.add_argument("--per-repo", type=int, default=0, help="override the tasks per repository")
    b.add_argument("--refresh", action="store_true", help="mine at the mirrors' HEAD, not the manifest's commits")
    b.add_argument("--repo", action="append", default=[], help="only this repository (trial runs; no manifest)")
    h = sub.add_parser("history")
    h.add_argument("task_id")
    h.add_argument("-n", type=int, default=50)
    h.add_argument("--merges", action="store_true")
    h.add_argument("--tasks", type=Path, default=TASKS_PATH)
    st = sub.add_parser("stats")
    st.add_argument("--tasks", type=Path, default=TASKS_PATH)
    m = sub.add_parser("materialize")
    m.add_argument("--tasks", type=Path, default=TASKS_PATH)
    m.add_argument("--split", default="", help="only this split (train/dev/test)")
    m.add_argument("--limit", type=int, default=0, help="only the first N tasks")
    m.add_argument("--with-git", action="store_true", help="checkouts with the parent's history in .git")
    args = ap.parse_args(argv)
    if args.cmd != "build" and not args.tasks.is_file():
        raise SystemExit(f"no task file {args.tasks}; build it with `bench/corpus.py build` or pass --tasks PATH")
    if args.cmd == "build":
        _cmd_build(args)
    elif args.cmd == "stats":
        print(stats(load_corpus(args.tasks)))
    elif args.cmd == "history":
        task = _find_task(args.tasks, args.task_id)
        for entry in history(task.repo, task.parent, args.n, args.merges):
            print(json.dumps(entry))
    else:
        tasks = [t for t in load_corpus(args.tasks) if not args.split or t.split == args.split]
        tasks = tasks[: args.limit] if args.limit else tasks
        if args.with_git:
            print(f"{len({materialize_with_git(t) for t in tasks})} checkouts under {GIT_REPOS_ROOT}", file=sys.stderr)
        else:
            materialize(tasks)
            print(f"{len({taskset.repo_dir(t) for t in tasks})} checkouts under {taskset.REPOS_ROOT}", file=sys.stderr)


if __name__ == "__main__":
    main()
