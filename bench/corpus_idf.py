"""Build the chunk ranker's corpus-wide idf table from the training split's repositories.

For every repository of the train split (``--tasks``, split ``train``): unpack one task's parent
revision (the middle one of that repository's tasks in file order: the miner writes them oldest
first, and the oldest trees are a project's first files), cut it into the ranker's chunks (the
engine and its content-keyed cache, as the rows do), and count the share of its chunks and of its
files that contain each term. A term's corpus share is the mean of those shares over the
repositories (a repository without the term adds 0), so each repository weighs the same. Terms
found in fewer than ``--min-repos`` repositories are left out (they read as never seen).

    python bench/corpus_idf.py --tasks bench/tasks/corpus_tasks.jsonl \
        --out repomap/chunkrank/corpus-idf-v1.tsv.gz

Dev and test repositories are never read. Same checkouts, same bytes.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from ranker_data import _engine  # noqa: E402
from taskset import Task, load_tasks, materialize, repo_dir  # noqa: E402

from durable_navigator.repomap.chunkrank.corpusidf import write_table  # noqa: E402
from durable_navigator.repomap.chunkrank.fromengine import repo_chunks  # noqa: E402

#: additive smoothing of a share: half a chunk of a 5,000-chunk repository
SMOOTH = 1e-4


def per_repo(tasks: list[Task], split: str = "train") -> list[list[Task]]:
    """Per repository of ``split`` (sorted by name): its tasks from the middle one (file order)
    outwards, the order in which their checkouts are tried."""
    of: dict[str, list[Task]] = defaultdict(list)
    for t in tasks:
        if t.split == split:
            of[t.repo].append(t)
    out = []
    for r in sorted(of):
        ts, mid = of[r], len(of[r]) // 2
        out.append(sorted(ts, key=lambda t: (abs(ts.index(t) - mid), ts.index(t))))
    return out


def repo_shares(task: Task) -> tuple[dict[str, float], dict[str, float], int, int]:
    """Per term: share of the checkout's chunks and of its files containing it; chunk and file counts."""
    dest = repo_dir(task)
    made = not dest.exists()
    try:
        materialize([task])
        rc = repo_chunks(_engine(dest))
    finally:
        if made:
            shutil.rmtree(dest, ignore_errors=True)
    n, nf = max(len(rc.spans), 1), max(len(rc.files), 1)
    terms = [""] * len(rc.vocab)
    for t, c in rc.vocab.items():
        terms[c] = t
    chunk = {terms[c]: float(df) / n for c, df in enumerate(rc.chunk_df.tolist()) if df}
    file = {terms[c]: float(df) / nf for c, df in enumerate(rc.file_df.tolist()) if df}
    return chunk, file, len(rc.spans), len(rc.files)


def shares(per_repo: list[tuple[dict[str, float], dict[str, float]]], min_repos: int
           ) -> tuple[dict[str, float], dict[str, float]]:
    """Mean share over repositories of the terms found in at least ``min_repos`` of them."""
    r = len(per_repo)
    seen: dict[str, int] = defaultdict(int)
    csum: dict[str, float] = defaultdict(float)
    fsum: dict[str, float] = defaultdict(float)
    for chunk, file in per_repo:
        for t, p in chunk.items():
            seen[t] += 1
            csum[t] += p
        for t, p in file.items():
            fsum[t] += p
    keep = sorted(t for t, k in seen.items() if k >= min_repos)
    return {t: csum[t] / r for t in keep}, {t: fsum[t] / r for t in keep}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tasks", type=Path, default=HERE / "tasks" / "corpus_tasks.jsonl")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--min-repos", type=int, default=3)
    args = ap.parse_args(argv)
    picked = per_repo(load_tasks(args.tasks))
    if not picked:
        raise SystemExit(f"{args.tasks}: no train task; pass the mined corpus (bench/tasks/corpus_tasks.jsonl)")
    found: list[tuple[dict[str, float], dict[str, float]]] = []
    chunks = 0
    for i, tasks in enumerate(picked, 1):
        for task in tasks:
            started = time.monotonic()
            try:
                c, f, n, nf = repo_shares(task)
            except subprocess.CalledProcessError as exc:  # a mirror missing an object of this revision
                print(f"[{i}/{len(picked)}] {task.repo}@{task.parent[:12]}: no checkout ({exc.stderr!r:.120}); "
                      "the next task", file=sys.stderr, flush=True)
                continue
            found.append((c, f))
            chunks += n
            print(f"[{i}/{len(picked)}] {task.repo}@{task.parent[:12]}: {n} chunks, {nf} files, {len(c)} terms, "
                  f"{time.monotonic() - started:.1f}s", file=sys.stderr, flush=True)
            break
        else:
            raise SystemExit(f"{tasks[0].repo}: no task's checkout could be unpacked from its mirror")
    chunk, file = shares(found, args.min_repos)
    meta = {"repos": len(picked), "chunks": chunks, "min_repos": args.min_repos, "terms": len(chunk),
            "tasks_file": args.tasks.name}
    write_table(args.out, chunk, file, SMOOTH, meta)
    print(f"{args.out}: {len(chunk)} terms from {len(picked)} repositories ({chunks} chunks); "
          f"default idf {float(np.log1p((1 + SMOOTH) / SMOOTH)):.2f}", file=sys.stderr)


if __name__ == "__main__":
    main()
