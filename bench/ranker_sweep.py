"""Choose the chunk ranker's hyperparameters on dev for a model trained on the corpus' train split.

    .venv/bin/python bench/ranker_sweep.py [--train-tasks bench/tasks/corpus_tasks.jsonl]
        [--tasks bench/tasks/quality_tasks.jsonl] [--trees 50,100,200] [--leaves 15,31]
        [--powers 0,0.25,0.5,0.75,1]

For every (trees, leaves): a lambdarank model on the cached rows of the train split
(``train_ranker.fit``; one fit per leaf count, read at each tree count), its calibration fitted on the train split's own
repository-grouped out-of-fold scores (dev is never fitted on), then the dev tasks
scored in process (``ranker_eval.evaluate``) at 4k and 8k: candidates in the model's
order, and the allocator at each cost power. The chosen configuration is the best
mean gold-line recall at 4k + 8k over (trees, leaves, power), ties to the smaller
model. Refuses the test split and any repository shared by train and dev. Writes
``bench/results/ranker-sweep-<split>.{md,json}`` after every configuration.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from ranker_eval import ABLATION_BUDGETS, _floats, _mean, evaluate  # noqa: E402
from taskset import load_tasks  # noqa: E402
from train_ranker import calibrate, fit, load_rows, repo_folds  # noqa: E402

from durable_navigator.repomap.chunkrank.features import FEATURES  # noqa: E402


def run_leaves(train: list[dict[str, Any]], dev: list[dict[str, Any]], tasks: dict[str, Any], trees: list[int],
               leaves: int, powers: tuple[float, ...], seed: int) -> dict[int, dict[str, dict[int, float]]]:
    """Per tree count: dev recall at 4k/8k per method (calibration out of fold on train). Boosting is
    sequential with a fixed learning rate and seed, so the first ``t`` trees of one ``max(trees)``-tree
    model are the ``t``-tree model: one fit (and one per fold) serves every tree count."""
    cols = list(range(len(FEATURES)))
    booster = fit(train, cols, seed, max(trees), leaves)
    folds = []
    for held in repo_folds(train):
        held_set = set(held)
        folds.append((held, fit([r for i, r in enumerate(train) if i not in held_set], cols, seed, max(trees), leaves)))
    out = {}
    for t in trees:
        oof: list[np.ndarray] = [np.zeros(0)] * len(train)
        for held, b in folds:
            for i in held:
                oof[i] = b.predict(train[i]["X"], num_iteration=t, num_threads=1)
        cal = calibrate(train, oof)
        res = evaluate(dev, [booster.predict(r["X"], num_iteration=t, num_threads=1) for r in dev], tasks, powers,
                       budgets=ABLATION_BUDGETS, calibration=cal)
        out[t] = {m: {b: _mean(v, "line_recall") for b, v in per.items()} for m, per in res.items()}
    return out


def best(results: list[dict[str, Any]], powers: tuple[float, ...]) -> dict[str, Any]:
    """The (trees, leaves, power) with the best 4k + 8k allocator recall; ties to fewer trees, leaves, power."""
    cands = [(sum(r["recall"][f"alloc p={p}"][b] for b in ABLATION_BUDGETS), -r["trees"], -r["leaves"], -p, r, p)
             for r in results for p in powers]
    top = max(cands, key=lambda c: c[:4])
    return {"trees": top[4]["trees"], "leaves": top[4]["leaves"], "cost_power": top[5]}


def write(out: Path, args: argparse.Namespace, meta: dict[str, Any], results: list[dict[str, Any]]) -> None:
    """``<out>.json`` and a markdown table of every configuration."""
    chosen = best(results, args.powers)
    out.with_suffix(".json").write_text(json.dumps({**meta, "chosen": chosen, "results": results}, indent=1) + "\n")
    methods = ["ranker"] + [f"alloc p={p}" for p in args.powers]
    lines = [f"# Ranker hyperparameters chosen on {args.split} (in process)", "",
             f"Trained on {meta['train_tasks']} cached {args.train_split} tasks of {args.train_tasks.name} "
             f"({meta['train_repos']} repositories); calibration out of fold on train; scored on "
             f"{meta['dev_tasks']} {args.split} tasks of {args.tasks.name}. Gold-line recall at 4096 / 8192. "
             f"Command: `.venv/bin/python bench/ranker_sweep.py --trees {','.join(map(str, args.trees))} "
             f"--leaves {','.join(map(str, args.leaves))} --powers {','.join(map(str, args.powers))}`.", "",
             "| trees | leaves | " + " | ".join(methods) + " | seconds (all tree counts of these leaves) |", "|---|---|" + "---|" * (len(methods) + 1)]
    for r in results:
        cells = [f"{r['recall'][m][4096]} / {r['recall'][m][8192]}" for m in methods]
        lines.append(f"| {r['trees']} | {r['leaves']} | " + " | ".join(cells) + f" | {r['seconds']} |")
    lines += ["", f"Chosen (best 4k + 8k with the allocator): {chosen['trees']} trees, {chosen['leaves']} leaves, "
              f"cost power {chosen['cost_power']}."]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> None:
    """CLI: the grid, one configuration at a time, results rewritten after each."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--train-tasks", type=Path, default=HERE / "tasks" / "corpus_tasks.jsonl")
    ap.add_argument("--train-split", default="train")
    ap.add_argument("--tasks", type=Path, default=HERE / "tasks" / "quality_tasks.jsonl")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--trees", default="50,100,200")
    ap.add_argument("--leaves", default="15,31")
    ap.add_argument("--powers", default="0,0.25,0.5,0.75,1")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args(argv)
    if "test" in (args.split, args.train_split):
        raise SystemExit("the test split is never trained or chosen on; use --train-split train --split dev")
    args.trees = [int(x) for x in _floats(args.trees)]
    args.leaves = [int(x) for x in _floats(args.leaves)]
    args.powers = _floats(args.powers)
    if not (args.trees and args.leaves and args.powers):
        raise SystemExit("--trees, --leaves and --powers each need at least one value")
    train = load_rows(args.train_tasks, args.train_split, cached_only=True)
    dev = load_rows(args.tasks, args.split)
    if not train:
        raise SystemExit(f"no cached {args.train_split} rows of {args.train_tasks}; build them with ranker_build.py")
    shared = {r["repo"] for r in train} & {r["repo"] for r in dev}
    if shared:
        raise SystemExit(f"train and {args.split} share repositories {sorted(shared)}; split by repository")
    tasks = {t.id: t for t in load_tasks(args.tasks) if t.split == args.split}
    meta = {"train_tasks": len(train), "train_repos": len({r["repo"] for r in train}), "dev_tasks": len(dev),
            "seed": args.seed, "budgets": list(ABLATION_BUDGETS)}
    out = HERE / "results" / f"ranker-sweep-{args.split}"
    results: list[dict[str, Any]] = []
    for leaves in args.leaves:
        started = time.monotonic()
        per_trees = run_leaves(train, dev, tasks, args.trees, leaves, args.powers, args.seed)
        for trees, recall in per_trees.items():
            results.append({"trees": trees, "leaves": leaves, "recall": recall,
                            "seconds": round(time.monotonic() - started)})
            print(trees, leaves, {m: list(v.values()) for m, v in recall.items()}, file=sys.stderr, flush=True)
        write(out, args, meta, results)
    print(out.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
