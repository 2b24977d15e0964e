"""Build the chunk ranker's feature rows for a diverse sample of the corpus' TRAIN tasks (bench-only).

    .venv/bin/python bench/ranker_build.py sample [--tasks bench/tasks/corpus_tasks.jsonl]
        [--out bench/tasks/ranker_train_sample.txt]
    nice -n 19 .venv/bin/python bench/ranker_build.py build [--until 03:30] [--limit N] [--shard K/N]

``sample`` orders the corpus' train tasks round-robin over their repositories (the
1st task of every repository, then the 2nd of every repository, ...; repositories
and tasks in the corpus file's order), so whatever prefix a time budget allows is
spread over as many repositories as it can be. It refuses a task that is not
``train`` or whose repository is one of the quality set's dev/test repositories.

``build`` walks that list and caches each task's rows (``ranker_data.task_rows``,
history on: the mirror at the task's parent, nothing after it), skipping the tasks
cached already, so it resumes after a stop. Train rows skip the chunk-BM25
baseline's scores (only evaluation reads them; a third of a row's time). A checkout
it unpacked is deleted once the task's rows are cached (the engine's content-keyed
index cache stays: the next task of the repository re-parses only the files that
changed). A task that fails is logged with its reason and skipped; the counts are
printed at the end.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
import traceback
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from ranker_data import is_cached, task_rows  # noqa: E402
from taskset import QUALITY_REPOS, Task, load_tasks, materialize, repo_dir  # noqa: E402

CORPUS = HERE / "tasks" / "corpus_tasks.jsonl"
SAMPLE = HERE / "tasks" / "ranker_train_sample.txt"


def round_robin(tasks: list[Task]) -> list[Task]:
    """Train tasks dealt across repositories: every repository's k-th task before any (k+1)-th."""
    held = {s.repo for s in QUALITY_REPOS if s.split in ("dev", "test")}
    per_repo: dict[str, list[Task]] = {}
    for t in tasks:
        if t.split != "train":
            continue
        if t.repo in held:
            raise SystemExit(f"{t.id}: train task of the quality {t.repo}, a dev/test repository; fix the corpus split")
        per_repo.setdefault(t.repo, []).append(t)
    out: list[Task] = []
    for k in range(max((len(v) for v in per_repo.values()), default=0)):
        out += [v[k] for v in per_repo.values() if k < len(v)]
    return out


def read_sample(tasks_file: Path, sample_file: Path) -> list[Task]:
    """The sample's tasks in its order; an id the corpus lacks, or not in train, is an error."""
    by_id = {t.id: t for t in load_tasks(tasks_file)}
    ids = [line.strip() for line in sample_file.read_text().splitlines() if line.strip()]
    bad = [i for i in ids if i not in by_id or by_id[i].split != "train"]
    if bad:
        raise SystemExit(f"{sample_file}: {len(bad)} ids are not train tasks of {tasks_file} (first {bad[0]}); "
                         "rebuild the list with `ranker_build.py sample`")
    return [by_id[i] for i in ids]


def build_one(task: Task) -> float:
    """Cache one task's rows; the seconds it took. Deletes the checkout it had to unpack."""
    started = time.monotonic()
    dest = repo_dir(task)
    made = not dest.exists()
    try:
        materialize([task])
        task_rows(task, history=True, baseline=False)  # train rows: the baseline's scores are never read
    finally:
        if made:
            shutil.rmtree(dest, ignore_errors=True)
    return time.monotonic() - started


def _deadline(hhmm: str) -> float | None:
    """Epoch seconds of today's ``HH:MM`` UTC (None when not given)."""
    if not hhmm:
        return None
    h, m = (int(x) for x in hhmm.split(":"))
    now = datetime.now(timezone.utc)
    return now.replace(hour=h, minute=m, second=0, microsecond=0).timestamp()


def _reason(exc: BaseException) -> str:
    """One line saying why a task failed (a git command's own error line, not just its exit status)."""
    err = getattr(exc, "stderr", None)
    err = err.decode(errors="replace") if isinstance(err, bytes) else (err or "")
    first = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {first}" + (f" -- {err.strip().splitlines()[0]}" if err.strip() else "")


def build(tasks: list[Task], until: float | None) -> dict[str, int]:
    """Rows for every task not cached yet, in order, until the deadline; counts per outcome."""
    counts = {"cached_before": 0, "built": 0, "failed": 0}
    for n, task in enumerate(tasks, 1):
        if is_cached(task):
            counts["cached_before"] += 1
            continue
        if until is not None and time.time() >= until:
            print(f"deadline reached before task {n}/{len(tasks)}", flush=True)
            break
        try:
            secs = build_one(task)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 -- one bad task must not stop the run
            counts["failed"] += 1
            reason = _reason(exc)
            print(f"FAIL {n} {task.id} ({task.repo}): {reason}", flush=True)
            traceback.print_exc(file=sys.stderr)
            continue
        counts["built"] += 1
        print(f"ok {n} {task.id} ({task.repo}) {secs:.0f} s", flush=True)
    return counts


def main(argv: list[str] | None = None) -> None:
    """CLI: write the round-robin sample, or build its rows."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("sample")
    b = sub.add_parser("build")
    for p in (s, b):
        p.add_argument("--tasks", type=Path, default=CORPUS)
        p.add_argument("--sample", type=Path, default=SAMPLE)
    b.add_argument("--until", default="", help="stop starting tasks at this UTC time (HH:MM)")
    b.add_argument("--limit", type=int, default=0, help="only the first N tasks of the sample")
    b.add_argument("--shard", default="", metavar="K/N",
                   help="only every N-th task from the K-th (0-based): N builders share the cores and the cache")
    args = ap.parse_args(argv)
    if not args.tasks.is_file():
        raise SystemExit(f"no task file {args.tasks}; build it with `bench/corpus.py build`")
    if args.cmd == "sample":
        order = round_robin(load_tasks(args.tasks))
        args.sample.write_text("".join(t.id + "\n" for t in order))
        print(f"wrote {len(order)} train tasks of {len({t.repo for t in order})} repositories to {args.sample}")
        return
    if not args.sample.is_file():
        raise SystemExit(f"no sample list {args.sample}; write it with `ranker_build.py sample`")
    tasks = read_sample(args.tasks, args.sample)
    tasks = tasks[: args.limit] if args.limit else tasks
    if args.shard:
        k, n = (int(x) for x in args.shard.split("/"))
        if not 0 <= k < n:
            raise SystemExit(f"--shard {args.shard}: K must be in 0..N-1")
        tasks = tasks[k::n]
    started = time.monotonic()
    counts = build(tasks, _deadline(args.until))
    print(f"done in {time.monotonic() - started:.0f} s: {counts}", flush=True)


if __name__ == "__main__":
    main()
