"""Train the chunk ranker (LightGBM lambdarank) and write it into the package.

    .venv/bin/python bench/train_ranker.py [--tasks bench/tasks/quality_tasks.jsonl] [--train-split dev]
        [--seed 7] [--trees 50] [--leaves 15] [--version ranker-v1] [--out repomap/chunkrank]

Rows come from ``ranker_data.task_rows`` (cached under ``/tmp/ranker/feat-<features>``):
one group per task, one row per candidate chunk, label = the chunk's gold lines
graded 0..4 (0, 1, 2-3, 4-7, 8+). With ``--train-split dev`` (no mined corpus yet)
the calibration is fitted on repository-grouped out-of-fold scores (``FOLDS``
folds, whole repositories held out) and the final model on every dev task; with a
corpus file, ``--train-split train`` trains and fits the calibration on held-out
``--calib-split`` repositories. Deterministic for the same rows and seed
(``deterministic=True``, one thread).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import lightgbm as lgb
import numpy as np

from durable_navigator.repomap.chunkrank.features import FEATURES, GROUPS
from durable_navigator.repomap.chunkrank.model import BAG_SEPARATOR, MODEL_VERSION, Calibration, anchored, chunk_lines

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from ranker_data import is_cached, task_rows  # noqa: E402
from taskset import load_tasks  # noqa: E402

FOLDS = 5
#: a chunk's score is calibrated relative to the mean of its goal's this many best scores
#: (``model.Calibration``; ranker-v5: 1, the best alone)
ANCHOR = 1
TRAIN_CANDIDATES = 100
PARAMS: dict[str, Any] = {"objective": "lambdarank", "learning_rate": 0.1, "num_leaves": 15,
                          "min_data_in_leaf": 20, "feature_fraction": 0.8, "bagging_fraction": 0.8,
                          "bagging_freq": 1, "max_bin": 63, "lambdarank_truncation_level": 20, "verbosity": -1,
                          "num_threads": 1, "deterministic": True, "force_row_wise": True}


def grade(label: np.ndarray) -> np.ndarray:
    """Gold lines in a chunk -> relevance grade 0..4."""
    return np.minimum(np.ceil(np.log2(1.0 + label)), 4).astype(np.int32)


def load_rows(tasks_file: Path, split: str, cached_only: bool = False,
              only: set[str] | None = None) -> list[dict[str, Any]]:
    """Rows of every task of ``split`` (computed on first use; ``cached_only``: the tasks already
    computed, e.g. the part of a large corpus a time budget allowed; ``only``: these task ids, so
    models compared while the row builder still runs train on the same tasks)."""
    tasks = [t for t in load_tasks(tasks_file) if t.split == split and (only is None or t.id in only)]
    if cached_only:
        tasks = [t for t in tasks if is_cached(t)]
    return [task_rows(t) for t in tasks]


def train_view(row: dict[str, Any], candidates: int = TRAIN_CANDIDATES) -> np.ndarray:
    """The candidates a task trains on: its ``TRAIN_CANDIDATES`` best by a cheap prior (chunk BM25
    relative to the best + the engine's file score). lambdarank's cost grows with group size times
    the truncation level; a 2,000-chunk group costs ten 200-chunk ones and teaches little more
    (the allocator never reaches its tail)."""
    X = row["X"]
    prior = X[:, FEATURES.index("chunk_bm25_rel")] + X[:, FEATURES.index("eng_score")]
    return np.sort(np.argsort(-prior, kind="stable")[:candidates])


class Bag:
    """Boosters trained alike on other seeds; predicts their mean (what ``ChunkRanker`` does with the file)."""

    def __init__(self, boosters: list[lgb.Booster]) -> None:
        self.boosters = boosters

    def predict(self, X: np.ndarray, num_threads: int = 1) -> np.ndarray:  # noqa: D102
        return np.mean([b.predict(X, num_threads=num_threads) for b in self.boosters], axis=0)

    def model_to_string(self) -> str:  # noqa: D102
        return BAG_SEPARATOR.join(b.model_to_string() for b in self.boosters)

    def num_trees(self) -> int:  # noqa: D102
        return self.boosters[0].num_trees()


def fit(rows: list[dict[str, Any]], cols: list[int], seed: int, trees: int, leaves: int = 15,
        candidates: int = TRAIN_CANDIDATES, bag: int = 1) -> Any:
    """A lambdarank booster on ``rows`` (tasks without a positive training candidate teach nothing:
    left out); ``leaves`` per tree, ``candidates`` per task (``train_view``). ``bag`` > 1: that many
    boosters on seeds ``seed``, ``seed + 1``, ... (a :class:`Bag`)."""
    if bag > 1:
        return Bag([fit(rows, cols, seed + k, trees, leaves, candidates) for k in range(bag)])
    views = [(r, train_view(r, candidates)) for r in rows]
    use = [(r, v) for r, v in views if r["label"][v].sum() > 0 and len(v) > 1]
    X = np.vstack([r["X"][v][:, cols] for r, v in use])
    y = np.concatenate([grade(r["label"][v]) for r, v in use])
    data = lgb.Dataset(X, y, group=[len(v) for _r, v in use], feature_name=[FEATURES[c] for c in cols],
                       free_raw_data=True)
    return lgb.train({**PARAMS, "seed": seed, "num_leaves": leaves}, data, num_boost_round=trees)


def without_history(row: dict[str, Any]) -> dict[str, Any]:
    """``row`` as a checkout without ``.git`` sees it: every ``history``/``history_line``/``history_recent``
    feature zero (same repository, so the out-of-fold folds keep both copies on one side)."""
    X = row["X"].copy()
    X[:, [FEATURES.index(f) for g in ("history", "history_line", "history_recent") for f in GROUPS[g]]] = 0.0
    return row | {"X": X}


def repo_folds(rows: list[dict[str, Any]], k: int = FOLDS) -> list[list[int]]:
    """Row indices per fold, whole repositories per fold (sorted repos dealt round-robin)."""
    repos = sorted({r["repo"] for r in rows})
    fold_of = {repo: i % k for i, repo in enumerate(repos)}
    return [[i for i, r in enumerate(rows) if fold_of[r["repo"]] == f] for f in range(k)]


def out_of_fold(rows: list[dict[str, Any]], cols: list[int], seed: int, trees: int,
                leaves: int = 15, candidates: int = TRAIN_CANDIDATES, bag: int = 1) -> list[np.ndarray]:
    """Scores of every task's candidates from a model that never saw its repository."""
    scores: list[np.ndarray] = [np.zeros(0)] * len(rows)
    for held in repo_folds(rows):
        held_set = set(held)
        booster = fit([r for i, r in enumerate(rows) if i not in held_set], cols, seed, trees, leaves, candidates, bag)
        for i in held:
            scores[i] = booster.predict(rows[i]["X"][:, cols], num_threads=1) if len(rows[i]["label"]) else np.zeros(0)
    return scores


def calibrate(rows: list[dict[str, Any]], scores: list[np.ndarray], min_points: int = 200,
              anchor: int = ANCHOR) -> Calibration:
    """Relative score (to the mean of the goal's ``anchor`` best) -> expected share of the task's
    gold lines (full / first line)."""
    rel, lines, full, sig = [], [], [], []
    for r, s in zip(rows, scores):
        if len(s):
            rel.append(anchored(s, anchor))
            lines.append(chunk_lines(r["X"]))
            full.append(r["label"] / max(r["n_gold"], 1))
            sig.append(r["first"] / max(r["n_gold"], 1))
    return Calibration.fit(np.concatenate(rel), np.concatenate(lines), np.concatenate(full), np.concatenate(sig),
                           min_points=min_points, anchor=anchor)


def save(booster: Any, cols: list[int], cal: Calibration, out: Path, info: dict[str, Any],
         cost_power: float, version: str = MODEL_VERSION) -> None:
    """Write ``<version>.txt`` (the booster) and ``<version>.json`` (features, calibration, provenance)."""
    (out / f"{version}.txt").write_text(booster.model_to_string(), encoding="utf-8")
    meta = {"version": version, "features": [FEATURES[c] for c in cols], "cost_power": cost_power,
            "calibration": {"rel": list(cal.rel), "full": list(cal.full), "sig": list(cal.sig), "anchor": cal.anchor},
            "trained": info}
    (out / f"{version}.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> None:
    """CLI: train on a split, calibrate on held-out repositories, write the model files."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=Path, default=HERE / "tasks" / "quality_tasks.jsonl")
    ap.add_argument("--train-split", default="dev")
    ap.add_argument("--calib-split", default="", help="held-out split for the calibration (default: out-of-fold)")
    ap.add_argument("--cached-only", action="store_true", help="train on the tasks whose rows are cached")
    ap.add_argument("--only", type=Path, default=None, metavar="FILE",
                    help="train on these task ids (one per line) of the split only")
    ap.add_argument("--candidates", type=int, default=TRAIN_CANDIDATES,
                    help="candidates per task the booster trains on (the best by a cheap prior)")
    ap.add_argument("--learning-rate", type=float, default=PARAMS["learning_rate"])
    ap.add_argument("--objective", default=PARAMS["objective"], choices=("lambdarank", "rank_xendcg"),
                    help="LightGBM's ranking objective")
    ap.add_argument("--truncation", type=int, default=PARAMS["lambdarank_truncation_level"],
                    help="lambdarank's truncation level (the top positions whose order it optimises)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--trees", type=int, default=50)
    ap.add_argument("--leaves", type=int, default=15, help="leaves per tree")
    ap.add_argument("--version", default=MODEL_VERSION,
                    help="the files' name (ranker-vN): a new version is written next to the shipped ones, which "
                         "stay the ones loaded until model.MODEL_VERSION or HISTORY_MODEL_VERSION names the new one")
    ap.add_argument("--cost-power", type=float, default=0.75,
                    help="the allocator's cost power (chosen on dev by ranker_eval.py)")
    ap.add_argument("--drop-groups", default="", metavar="G1,G2",
                    help="train without these feature groups (an ablation model: chunkrank.GROUPS)")
    ap.add_argument("--even-calibration-version", default="", metavar="ranker-vN",
                    help="also write the same booster under this version with ranker-v2's calibration (16 even "
                         "quantile bins, no finer top bins): the ablation of the calibration alone")
    ap.add_argument("--bag", type=int, default=1, help="average this many boosters trained on consecutive seeds")
    ap.add_argument("--no-history-copies", action="store_true",
                    help="train also on a copy of every task with the history groups zeroed (a tree without .git)")
    ap.add_argument("--anchor", type=int, default=ANCHOR,
                    help="calibrate scores relative to the mean of each goal's this many best (model.Calibration)")
    ap.add_argument("--out", type=Path, default=HERE.parent / "repomap" / "chunkrank")
    args = ap.parse_args(argv)
    if args.train_split == "test" or args.calib_split == "test":
        raise SystemExit("the test split is never trained or calibrated on; pick train/dev")
    if not re.fullmatch(r"ranker-v[0-9]+", args.version):
        raise SystemExit(f"--version {args.version!r}: use ranker-v<N> (the package ships ranker-v*.txt/.json)")
    started = time.monotonic()
    only = set(args.only.read_text().split()) if args.only else None
    rows = load_rows(args.tasks, args.train_split, args.cached_only, only)
    if args.no_history_copies:
        rows = rows + [without_history(r) for r in rows]
    PARAMS.update(learning_rate=args.learning_rate, objective=args.objective,
                  lambdarank_truncation_level=args.truncation)
    dropped = [g for g in args.drop_groups.split(",") if g]
    unknown = sorted(set(dropped) - set(GROUPS))
    if unknown:
        raise SystemExit(f"--drop-groups {','.join(unknown)}: no such group; pick from {', '.join(GROUPS)}")
    gone = {f for g in dropped for f in GROUPS[g]}
    cols = [i for i, f in enumerate(FEATURES) if f not in gone]
    if args.calib_split:
        held = load_rows(args.tasks, args.calib_split)
        booster = fit(rows, cols, args.seed, args.trees, args.leaves, args.candidates, args.bag)
        scores = [booster.predict(r["X"][:, cols], num_threads=1) for r in held]
        cal, even = calibrate(held, scores, anchor=args.anchor), calibrate(held, scores, min_points=0, anchor=args.anchor)
    else:
        oof = out_of_fold(rows, cols, args.seed, args.trees, args.leaves, args.candidates, args.bag)
        cal, even = calibrate(rows, oof, anchor=args.anchor), calibrate(rows, oof, min_points=0, anchor=args.anchor)
        booster = fit(rows, cols, args.seed, args.trees, args.leaves, args.candidates, args.bag)
    info = {"tasks": args.tasks.name, "train_split": args.train_split, "calib_split": args.calib_split or "out-of-fold",
            "tasks_n": len(rows), "cached_only": args.cached_only, "repos": sorted({r["repo"] for r in rows}), "seed": args.seed, "trees": args.trees,
            "leaves": args.leaves, "candidates": args.candidates, "learning_rate": args.learning_rate,
            "objective": args.objective, "truncation": args.truncation, "bag": args.bag,
            "dropped_groups": dropped, "anchor": args.anchor, "lightgbm": lgb.__version__, "seconds": round(time.monotonic() - started)}
    save(booster, cols, cal, args.out, info, args.cost_power, args.version)
    if args.even_calibration_version:
        save(booster, cols, even, args.out, info | {"calibration": "16 even quantile bins"}, args.cost_power,
             args.even_calibration_version)
    print(f"wrote {args.out}/{args.version}.{{txt,json}} from {len(rows)} tasks", file=sys.stderr)


if __name__ == "__main__":
    main()
