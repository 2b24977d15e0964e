"""Per-task training/evaluation rows of the chunk ranker, cached under ``/tmp/ranker/feat-<features>``.

For one task: open the engine on the parent checkout, cut its chunks, compute the
candidate features (``repomap.chunkrank``) with the repository's history up to the
task's parent (the ``fetch`` mirror at ``parent``: nothing after it), and record per
candidate its gold lines (label), gold lines on its first line (what a signature
shows), and the exact token cost of its block in full and as a signature. The
chunk-BM25 baseline's scores at every budget come from the same run
(``quality_baselines`` + ``quality_score``), so both are measured on one engine.

The cache directory is named by a digest of ``FEATURES`` (names and order): rows of another
feature set are never read as these, and adding a feature rebuilds the rows.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from durable_navigator.repomap import RepoMap
from durable_navigator.repomap.chunkrank import chunk_features
from durable_navigator.repomap.chunkrank.features import FEATURES
from durable_navigator.repomap.chunkrank.fromengine import engine_view, repo_chunks
from durable_navigator.repomap.chunkrank.history import RECENT_COMMITS, load_history

from _project import count_tokens
from quality_baselines import Retriever, chunk_docs, pack
from quality_score import parse_context, read_source, score_context
from taskset import Task, git_dir_for, repo_dir

__all__ = ["CACHE", "BUDGETS", "task_rows", "is_cached", "sig_block", "full_block", "save_rows"]

CACHE = Path("/tmp/ranker")
#: this feature set's rows (and the recent-activity window they were computed with)
FEAT = CACHE / f"feat-{hashlib.sha256((','.join(FEATURES) + f';recent={RECENT_COMMITS}').encode()).hexdigest()[:10]}"
BUDGETS = (4096, 8192, 16384, 32768)


def full_block(path: str, a: int, b: int, src: list[str]) -> str:
    """The baseline's block for lines a..b."""
    return f"### {path}:{a}-{b}\n```\n" + "\n".join(src[a - 1:b]) + "\n```\n"


def sig_block(path: str, a: int, src: list[str]) -> str:
    """A chunk shown as its first line only."""
    return full_block(path, a, a, src)


def _engine(root: Path, _memo: dict[str, Any] = {}) -> Any:  # noqa: B006 (one engine per checkout)
    key = str(root)
    if key not in _memo:
        _memo.clear()
        _memo[key] = RepoMap.open(root, cache_dir=CACHE / "engine")
    return _memo[key]


def is_cached(task: Task, history: bool = True) -> bool:
    """True when the task's rows are computed already."""
    return (FEAT / f"{task.id}.{'h' if history else 'n'}.npz").exists()


def task_rows(task: Task, history: bool = True, baseline: bool = True) -> dict[str, Any]:
    """The task's cached rows (computed on first use). ``baseline=False`` skips the chunk-BM25 baseline's
    scores (``base`` left empty): training never reads them, and on a train task they cost a third of
    the row's time (tokenizing every chunk of the checkout once more)."""
    tag = "h" if history else "n"
    out = FEAT / f"{task.id}.{tag}.npz"
    if out.exists():
        z = np.load(out, allow_pickle=False)
        return {k: z[k] for k in z.files} | json.loads(str(z["meta"]))
    root = repo_dir(task)
    engine = _engine(root)
    source = read_source(root)
    rc = repo_chunks(engine)
    hist = load_history(git_dir_for(task.repo), task.parent) if history else None
    cf = chunk_features(rc, task.goal, engine_view(engine, task.goal), hist, semantic=True, line_history=True,
                        corpus=True, feedback=True, assoc=True, assoc_table=assoc_table(task), recent=True)
    gold = {p: set(v) for p, v in task.gold_lines.items()}
    label = np.array([len([n for n in gold.get(s.path, ()) if s.start <= n <= s.end]) for s in cf.spans])
    first = np.array([float(s.start in gold.get(s.path, ())) for s in cf.spans])
    fcost = np.array([count_tokens(full_block(s.path, s.start, s.end, source(s.path))) for s in cf.spans])
    scost = np.array([count_tokens(sig_block(s.path, s.start, source(s.path))) for s in cf.spans])
    base = _baseline(engine, source, task) if baseline else {}
    meta = {"task": task.id, "repo": task.repo, "n_gold": sum(len(v) for v in task.gold_lines.values()),
            "spans": [[s.path, s.start, s.end] for s in cf.spans], "base": base}
    save_rows(out, X=cf.X, label=label, first=first, fcost=fcost, scost=scost, meta=json.dumps(meta))
    return {"X": cf.X, "label": label, "first": first, "fcost": fcost, "scost": scost} | meta


def assoc_table(task: Task, _memo: dict[str, Any] = {}) -> Any:  # noqa: B006 (the corpus counted once)
    """The goal associations a task's rows read: for a train task, the table built without its
    repository's commits (``corpus_assoc.leave_one_out``; the shipped one counted them), else
    None (the shipped table: dev and test repositories were never counted)."""
    if task.split != "train":
        return None
    if "loo" not in _memo:
        from corpus_assoc import leave_one_out
        from taskset import load_tasks

        tasks = [t for t in load_tasks(Path(__file__).resolve().parent / "tasks" / "corpus_tasks.jsonl")
                 if t.split == "train"]
        _memo["loo"] = leave_one_out(tasks)
    return _memo["loo"](task.repo)


def save_rows(out: Path, **arrays: Any) -> None:
    """``np.savez`` written whole or not at all: a builder stopped mid-write (``--until``, a kill)
    must not leave a file that ``is_cached`` takes for finished rows."""
    out.parent.mkdir(parents=True, exist_ok=True)
    part = out.with_name(f"{out.name}.{os.getpid()}.part")
    try:
        with part.open("wb") as fh:
            np.savez(fh, **arrays)
        os.replace(part, out)
    finally:
        part.unlink(missing_ok=True)


def _baseline(engine: Any, source: Any, task: Task) -> dict[str, dict[str, float]]:
    chunks = chunk_docs(engine.files, source, lambda p: [(s.start_line, s.end_line) for s in engine.symbols(p)])
    key = id(engine)
    memo = _baseline.__dict__.setdefault("memo", {})
    if key not in memo:
        memo.clear()
        memo[key] = Retriever(chunks, source)
    ranked = memo[key].rank(task.goal)
    costs: dict = {}
    out = {}
    for b in BUDGETS:
        ctx = pack(ranked, b, source, count_tokens, costs)
        s = score_context(parse_context(ctx, source), task.gold_lines, source)
        out[str(b)] = {"line_recall": s["line_recall"], "file_hit": s["file_hit"]}
    return out


