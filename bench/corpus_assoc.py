"""Build the chunk ranker's goal-to-code term associations from the training split's commits.

A commit message says what changed in the words of a person ("comparing", "string", "deprecated");
the lines it changed say it in the words of the code ("__lt__", "str", "warn"). Over the training
split's tasks (``--tasks``, split ``train``) this counts, for each goal term ``g`` and each code term
``t`` the goal does not say, the tasks whose goal holds ``g`` and whose changed lines (with
``--context`` lines around each, read from the parent revision in the repository's mirror) hold
``t``. A pair is kept when it is seen in at least ``--min-tasks`` tasks of at least ``--min-repos``
repositories and ``t`` is more likely after ``g`` than in the changed lines of any task (lift over
``--min-lift``). Its weight is the log of the lift, shrunk toward 1 by ``--prior`` tasks' worth of
the background rate. ``chunkrank/assoc.py`` reads the table: a goal's terms vote for the code
terms they are associated with, and the best of those score chunks and files by BM25 (the
``assoc`` feature group).

    python bench/corpus_assoc.py --tasks bench/tasks/corpus_tasks.jsonl \
        --out repomap/chunkrank/goal-assoc-v1.tsv.gz

Dev and test repositories are never read. No checkout is made: blobs come from the mirrors
(``taskset.git_dir_for``), so the same mirrors give the same bytes.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from taskset import Task, git_dir_for, load_tasks  # noqa: E402

from durable_navigator.repomap.chunkrank.assoc import GoalAssoc, write_assoc  # noqa: E402
from durable_navigator.repomap.chunkrank.chunks import tokenize  # noqa: E402


def changed_text(git_dir: Path, task: Task, context: int) -> str | None:
    """The parent's lines the task changed, each with ``context`` lines around it (None: a blob
    the mirror lacks)."""
    out = []
    for path, lines in sorted(task.gold_lines.items()):
        got = subprocess.run(["git", "--git-dir", str(git_dir), "cat-file", "blob", f"{task.parent}:{path}"],
                             capture_output=True, env={"GIT_NO_LAZY_FETCH": "1", "PATH": "/usr/bin:/bin"})
        if got.returncode != 0:
            return None
        src = got.stdout.decode("utf-8", "replace").split("\n")
        keep: set[int] = set()
        for n in lines:
            keep.update(range(max(1, n - context), min(len(src), n + context) + 1))
        out.extend(src[i - 1] for i in sorted(keep))
    return "\n".join(out)


@dataclass
class Counts:
    """Task counts: tasks, per goal term, per code term, per pair, and per pair its repositories."""

    n: int = 0
    goal: Counter[str] = field(default_factory=Counter)
    code: Counter[str] = field(default_factory=Counter)
    pair: Counter[tuple[str, str]] = field(default_factory=Counter)
    repos: Counter[tuple[str, str]] = field(default_factory=Counter)

    def without(self, other: "Counts") -> "Counts":
        """These counts less ``other``'s (one repository's own: a table its tasks did not shape)."""
        return Counts(self.n - other.n, self.goal - other.goal, self.code - other.code, self.pair - other.pair,
                      self.repos - Counter(dict.fromkeys(other.pair, 1)))


def count(tasks: list[Task], context: int) -> tuple[Counts, dict[str, Counts], int]:
    """All tasks' counts, each repository's own, and the tasks skipped for a blob their mirror lacks."""
    per: dict[str, Counts] = defaultdict(Counts)
    skipped = 0
    dirs: dict[str, Path] = {}
    for t in tasks:
        git_dir = dirs.get(t.repo) or dirs.setdefault(t.repo, git_dir_for(t.repo, clone=False))
        text = changed_text(git_dir, t, context)
        if text is None:
            skipped += 1
            continue
        goal, code = set(tokenize(t.goal)), set(tokenize(text))
        c = per[t.repo]
        c.n += 1
        c.goal.update(goal)
        c.code.update(code)
        c.pair.update((g, x) for g in goal for x in code - goal)
    total = Counts()
    for c in per.values():
        total.n += c.n
        total.goal.update(c.goal)
        total.code.update(c.code)
        total.pair.update(c.pair)
        total.repos.update(dict.fromkeys(c.pair, 1))
    return total, dict(per), skipped


def associations(c: Counts, min_tasks: int = 3, min_repos: int = 2, min_lift: float = 2.0, prior: float = 5.0,
                 per_term: int = 30) -> dict[str, list[tuple[str, float]]]:
    """Goal term -> its ``per_term`` best code terms with their weights (log of the shrunk lift)."""
    out: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for (g, x), k in c.pair.items():
        if k < min_tasks or c.repos[g, x] < min_repos:
            continue
        base = c.code[x] / c.n
        lift = (k + prior * base) / (c.goal[g] + prior) / base
        if lift >= min_lift:
            out[g].append((x, math.log(lift)))
    return {g: sorted(v, key=lambda x: (-x[1], x[0]))[:per_term] for g, v in sorted(out.items())}


def leave_one_out(tasks: list[Task], context: int = 3, **knobs: Any) -> Callable[[str], GoalAssoc]:
    """Repository -> the table built without that repository's tasks (the training rows' table: a
    row's association features must not come from its own commit, nor from its repository's)."""
    total, per, _ = count(tasks, context)
    # leaving a repository out only lowers a pair's counts: pairs under the thresholds with every
    # repository in stay under them
    floor_tasks, floor_repos = knobs.get("min_tasks", 3), knobs.get("min_repos", 2)
    eligible = Counts(total.n, total.goal, total.code,
                      Counter({p: k for p, k in total.pair.items() if k >= floor_tasks and total.repos[p] >= floor_repos}))
    eligible.repos = Counter({p: total.repos[p] for p in eligible.pair})
    memo: dict[str, GoalAssoc] = {}

    def table(repo: str) -> GoalAssoc:
        if repo not in memo:
            own = per.get(repo, Counts())
            c = Counts(eligible.n - own.n, eligible.goal - own.goal, eligible.code - own.code,
                       Counter({p: k - own.pair.get(p, 0) for p, k in eligible.pair.items()}),
                       Counter({p: r - (p in own.pair) for p, r in eligible.repos.items()}))
            memo[repo] = GoalAssoc({g: tuple(v) for g, v in associations(c, **knobs).items()}, {"without": repo})
        return memo[repo]

    return table


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=Path, default=HERE / "tasks" / "corpus_tasks.jsonl")
    ap.add_argument("--split", default="train")
    ap.add_argument("--context", type=int, default=3)
    ap.add_argument("--min-tasks", type=int, default=3)
    ap.add_argument("--min-repos", type=int, default=2)
    ap.add_argument("--min-lift", type=float, default=2.0)
    ap.add_argument("--prior", type=float, default=5.0)
    ap.add_argument("--per-term", type=int, default=30)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    tasks = [t for t in load_tasks(a.tasks) if t.split == a.split]
    if a.split != "train":
        sys.exit("corpus_assoc.py: only the train split may be read (dev chooses, test reports)")
    t0 = time.perf_counter()
    total, _, skipped = count(tasks, a.context)
    table = associations(total, a.min_tasks, a.min_repos, a.min_lift, a.prior, a.per_term)
    meta = {"tasks": total.n, "skipped": skipped, "repos": len({t.repo for t in tasks}), "context": a.context,
            "min_tasks": a.min_tasks, "min_repos": a.min_repos, "min_lift": a.min_lift, "prior": a.prior}
    write_assoc(a.out, table, meta)
    pairs = sum(len(v) for v in table.values())
    print(f"{total.n} tasks ({skipped} skipped: blobs the mirrors lack), {len(table)} goal terms, {pairs} pairs, "
          f"{time.perf_counter() - t0:.0f} s -> {a.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
