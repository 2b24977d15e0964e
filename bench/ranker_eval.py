"""Dev evaluation of the learned chunk ranker + budget allocator vs chunk BM25 (in process, labelled so).

    .venv/bin/python bench/ranker_eval.py [--tasks bench/tasks/quality_tasks.jsonl] [--split dev]
        [--seed 7] [--trees 200] [--no-ablation]

**In-process figures, not the product's default path**: every method packs the
chunk-BM25 baseline's blocks (``### path:a-b`` + fenced lines) into the budget,
counted with the project's exact counter, and is scored by ``quality_score``
(gold-line recall, gold-file hit) -- the same rules as ``quality.py``. Scores of
the learned ranker are *out of fold*: repository-grouped cross-validation
(``train_ranker.repo_folds``), so no task is scored by a model that saw its
repository, and the allocator's calibration for a fold is fitted on the other
folds' out-of-fold scores. Methods:

* **bm25-chunk** -- the baseline (``quality_baselines``), same engine, same run;
* **ranker** -- candidate chunks in the learned order, in full while they fit;
* **alloc p=X** -- the allocator (``repomap.chunkrank.allocate``): full /
  signature (first line) / out by expected gold-line share per token**X; the
  power with the best 4k+8k mean is the one reported as ``ranker+alloc``.

The ablation retrains the cross-validation with each feature group alone and with
it removed. Refuses the test split. Writes ``bench/results/ranker-<split>.{md,json}``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from durable_navigator.repomap.chunkrank import FULL, GROUPS, OUT, allocate
from durable_navigator.repomap.chunkrank.features import FEATURES
from durable_navigator.repomap.chunkrank.model import Calibration, chunk_lines, load_ranker

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from _project import count_tokens  # noqa: E402
from quality_score import parse_context, read_source, score_context  # noqa: E402
from ranker_data import BUDGETS, full_block, sig_block  # noqa: E402
from taskset import load_tasks, repo_dir  # noqa: E402
from train_ranker import calibrate, fit, load_rows, out_of_fold, repo_folds  # noqa: E402


def pack_levels(row: dict[str, Any], levels: np.ndarray, order: np.ndarray, budget: int, source: Any) -> str:
    """Blocks of the chosen chunks (file order), dropping the last-chosen while the exact count is over."""
    chosen = [i for i in order if levels[i] != OUT]
    spans = row["spans"]

    def text(items: list[int]) -> str:
        blocks = []
        for i in sorted(items, key=lambda i: (spans[i][0], spans[i][1])):
            p, a, b = spans[i]
            blocks.append(full_block(p, a, b, source(p)) if levels[i] == FULL else sig_block(p, a, source(p)))
        return "".join(blocks)

    out = text(chosen)
    while chosen and count_tokens(out) > budget:
        chosen.pop()
        out = text(chosen)
    return out


def rank_fill(row: dict[str, Any], scores: np.ndarray, budget: int) -> tuple[np.ndarray, np.ndarray]:
    """Full blocks in score order while they fit (the baseline's packing with the learned order)."""
    order = np.argsort(-scores, kind="stable")
    levels = np.zeros(len(scores), dtype=np.int8)
    left = budget
    for i in order:
        if row["fcost"][i] <= left:
            levels[i] = FULL
            left -= row["fcost"][i]
    return levels, order


def alloc_fill(row: dict[str, Any], full: np.ndarray, sig: np.ndarray, budget: int,
               power: float) -> tuple[np.ndarray, np.ndarray]:
    """The allocator's levels; order = its priority (what is dropped first if the count is over)."""
    levels = allocate(full, row["fcost"], sig, row["scost"], budget, cost_power=power)
    cost = np.where(levels == FULL, row["fcost"], row["scost"]).astype(np.float64)
    dens = np.where(levels == FULL, full, sig) / np.maximum(cost, 1.0) ** power
    return levels, np.argsort(-dens, kind="stable")


def evaluate(rows: list[dict[str, Any]], scores: list[np.ndarray], tasks: dict[str, Any],
             powers: tuple[float, ...], with_rank: bool = True, budgets: tuple[int, ...] = BUDGETS,
             calibration: Calibration | None = None) -> dict[str, dict[int, list[dict[str, float]]]]:
    """Per method, per budget: each task's scores (``calibration``: one for every task, else each
    fold's from the other folds' out-of-fold scores)."""
    folds = repo_folds(rows) if calibration is None else []
    cal_for = {i: calibration for i in range(len(rows))}
    for held in folds:
        held_set = set(held)
        others = [i for i in range(len(rows)) if i not in held_set]
        cal = calibrate([rows[i] for i in others], [scores[i] for i in others])
        for i in held:
            cal_for[i] = cal
    names = [f"alloc p={p}" for p in powers] + (["ranker"] if with_rank else [])
    out: dict[str, dict[int, list[dict[str, float]]]] = {m: {b: [] for b in budgets} for m in names}
    for i, row in enumerate(rows):
        task = tasks[row["task"]]
        source = read_source(repo_dir(task))
        full, sig = cal_for[i].values(scores[i], chunk_lines(row["X"]))
        for b in budgets:
            runs = {f"alloc p={p}": alloc_fill(row, full, sig, b, p) for p in powers}
            if with_rank:
                runs["ranker"] = rank_fill(row, scores[i], b)
            for name, (levels, order) in runs.items():
                ctx = pack_levels(row, levels, order, b, source)
                s = score_context(parse_context(ctx, source), task.gold_lines, source)
                out[name][b].append({"line_recall": s["line_recall"], "file_hit": s["file_hit"],
                                     "task": row["task"], "repo": row["repo"]})
    return out


def _mean(xs: list[dict[str, Any]], k: str) -> float:
    return round(statistics.fmean(x[k] for x in xs), 3) if xs else 0.0


POWERS = (0.0, 0.5, 1.0)


def _floats(text: str) -> tuple[float, ...]:
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise SystemExit(f"expected comma-separated numbers, got {text!r}") from None
#: the ablation retrains 10 cross-validations: measured at the issue's headline budgets only
ABLATION_BUDGETS = (4096, 8192)


def main(argv: list[str] | None = None) -> None:
    """CLI: cross-validated dev figures, the allocator's cost power chosen, ablation, results files."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=Path, default=HERE / "tasks" / "quality_tasks.jsonl")
    ap.add_argument("--split", default="dev")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--trees", type=int, default=50)
    ap.add_argument("--no-ablation", action="store_true")
    ap.add_argument("--ablation-only", action="store_true",
                    help="only the ablation (its own results file), with --ablation-trees trees")
    ap.add_argument("--ablation-trees", type=int, default=30)
    ap.add_argument("--power", type=float, default=0.5, help="the allocator's power for --ablation-only")
    ap.add_argument("--train-tasks", type=Path, default=None,
                    help="train on this task file's --train-split (cached rows) instead of cross-validating")
    ap.add_argument("--train-split", default="train")
    ap.add_argument("--leaves", type=int, default=15, help="leaves per tree of the models trained here")
    ap.add_argument("--powers", default=",".join(str(p) for p in POWERS), help="allocator cost powers to compare")
    ap.add_argument("--model", default="",
                    help="score with this packaged model file (e.g. ranker-v2: its booster and calibration) "
                         "instead of training; writes bench/results/<model>-<split>.{md,json}")
    args = ap.parse_args(argv)
    if args.split == "test":
        raise SystemExit("ranker_eval.py develops on dev; the test split is measured through quality.py only")
    args.powers = _floats(args.powers)
    if not args.powers:
        raise SystemExit("--powers: give at least one cost power, e.g. 0,0.5,1")
    if args.model and (args.train_tasks or args.ablation_only):
        raise SystemExit("--model scores with a trained model file; drop --train-tasks / --ablation-only")
    started = time.monotonic()
    tasks = {t.id: t for t in load_tasks(args.tasks) if t.split == args.split}
    rows = load_rows(args.tasks, args.split)
    allc = list(range(len(FEATURES)))
    if args.ablation_only:
        ablate(args, rows, tasks, allc)
        return
    if args.model:
        ranker, t = load_model(args.model, rows)
        args.powers = tuple(sorted({*args.powers, ranker.cost_power}))
        args.model_power, args.train_seconds = ranker.cost_power, t.get("seconds")
        args.trees, args.seed = t["trees"], t["seed"]
        args.trained_on = (f"{t['tasks_n']} {t['train_split']} tasks of {t['tasks']} ({len(t['repos'])} repositories), "
                           f"calibration {t['calib_split']}")
        res = evaluate(rows, [ranker.score(r["X"]) for r in rows], tasks, args.powers, calibration=ranker.calibration)
        args.no_ablation = True
    elif args.train_tasks is not None:
        train = load_rows(args.train_tasks, args.train_split, cached_only=True)
        if {r["repo"] for r in train} & {r["repo"] for r in rows}:
            raise SystemExit("train and evaluation repositories overlap; split by repository")
        booster = fit(train, allc, args.seed, args.trees, args.leaves)
        cal = calibrate(train, out_of_fold(train, allc, args.seed, args.trees, args.leaves))
        args.trained_on = f"{len(train)} {args.train_split} tasks of {args.train_tasks.name} ({len({r['repo'] for r in train})} repositories)"
        res = evaluate(rows, [booster.predict(r["X"], num_threads=1) for r in rows], tasks, args.powers, calibration=cal)
        args.no_ablation = True
    else:
        args.trained_on = "out of fold"
        res = evaluate(rows, out_of_fold(rows, allc, args.seed, args.trees), tasks, args.powers)
    if any(not r["base"] for r in rows):
        raise SystemExit("some evaluation rows were cached without the chunk-BM25 baseline (ranker_build.py's train "
                         "rows); delete them from /tmp/ranker/feat-<features> and rerun")
    base = {b: [{"line_recall": r["base"][str(b)]["line_recall"], "file_hit": r["base"][str(b)]["file_hit"],
                 "task": r["task"], "repo": r["repo"]} for r in rows] for b in BUDGETS}
    per_task = {"bm25-chunk": base, **res}
    summary = {m: {b: {"line_recall": _mean(v, "line_recall"), "file_hit": _mean(v, "file_hit")}
                   for b, v in per.items()} for m, per in per_task.items()}
    # the allocator's power: best mean recall at 4k and 8k (the headline budgets)
    # the allocator's power: the model file's own (chosen on dev when it was built), else the best mean
    # recall at 4k and 8k (the headline budgets)
    power = args.model_power if args.model else \
        max(args.powers, key=lambda p: (sum(summary[f"alloc p={p}"][b]["line_recall"] for b in (4096, 8192)), -p))
    per_task["ranker+alloc"] = res[f"alloc p={power}"]
    summary["ranker+alloc"] = summary[f"alloc p={power}"]
    ablation: dict[str, dict[int, float]] = {}
    if not args.no_ablation:
        for g, names in GROUPS.items():
            for mode, cols in (("alone", [FEATURES.index(f) for f in names]),
                               ("removed", [c for c in allc if FEATURES[c] not in names])):
                r = evaluate(rows, out_of_fold(rows, cols, args.seed, args.trees), tasks, (power,), with_rank=False,
                             budgets=ABLATION_BUDGETS)
                ablation[f"{g} {mode}"] = {b: _mean(r[f"alloc p={power}"][b], "line_recall") for b in ABLATION_BUDGETS}
                print(g, mode, ablation[f"{g} {mode}"], file=sys.stderr, flush=True)
    args.seconds = round(time.monotonic() - started)
    write(args, rows, summary, ablation, per_task, power)


def ablate(args: argparse.Namespace, rows: list[dict[str, Any]], tasks: dict[str, Any], allc: list[int]) -> None:
    """Each feature group removed, then alone: cross-validated recall at 4k/8k, written as each finishes."""
    out = HERE / "results" / f"ranker-{args.split}-ablation"
    table: dict[str, dict[int, float]] = {}
    configs = [("all", allc)] + [(f"{g} removed", [c for c in allc if FEATURES[c] not in names])
                                 for g, names in GROUPS.items()] + \
        [(f"{g} alone", [FEATURES.index(f) for f in names]) for g, names in GROUPS.items()]
    for name, cols in configs:
        r = evaluate(rows, out_of_fold(rows, cols, args.seed, args.ablation_trees), tasks, (args.power,),
                     with_rank=False, budgets=ABLATION_BUDGETS)
        table[name] = {b: _mean(r[f"alloc p={args.power}"][b], "line_recall") for b in ABLATION_BUDGETS}
        lines = [f"# Chunk ranker ablation on {args.split} (in process, repository-grouped cross-validation)", "",
                 f"{len(rows)} tasks; {args.ablation_trees} trees per model (fewer than the shipped model's: "
                 f"10 cross-validations on a shared 2-core machine), allocator power {args.power}; command: "
                 f"`.venv/bin/python bench/ranker_eval.py --ablation-only`. Gold-line recall.", "",
                 "| features | " + " | ".join(str(b) for b in ABLATION_BUDGETS) + " |",
                 "|---|" + "---|" * len(ABLATION_BUDGETS)]
        lines += [f"| {k} | " + " | ".join(str(v[b]) for b in ABLATION_BUDGETS) + " |" for k, v in table.items()]
        out.with_suffix(".md").write_text("\n".join(lines) + "\n")
        out.with_suffix(".json").write_text(json.dumps({"trees": args.ablation_trees, "power": args.power,
                                                        "ablation": table}, indent=1) + "\n")
        print(name, table[name], file=sys.stderr, flush=True)


def write(args: argparse.Namespace, rows: list[dict[str, Any]], summary: dict[str, Any],
          ablation: dict[str, dict[int, float]], per_task: dict[str, Any], power: float) -> None:
    """``bench/results/ranker-<split>.{json,md}``."""
    out = HERE / "results" / (f"{args.model}-{args.split}" if args.model else
                              f"ranker-{args.split}" + ("-trained" if args.train_tasks else ""))
    repos = sorted({r["repo"] for r in rows})
    wins = {b: _wlt(per_task["ranker+alloc"][b], per_task["bm25-chunk"][b]) for b in BUDGETS}
    ceiling = round(statistics.fmean(float(r["label"].sum()) / max(r["n_gold"], 1) for r in rows), 3)
    out.with_suffix(".json").write_text(json.dumps(
        {"split": args.split, "tasks": len(rows), "repos": repos, "seed": args.seed, "trees": args.trees,
         "trained_on": args.trained_on, "model": args.model or None, "seconds": args.seconds, "cost_power": power, "candidate_recall_ceiling": ceiling, "summary": summary,
         "wlt_vs_bm25_chunk": wins, "ablation": ablation, "per_task": per_task}, indent=1) + "\n")
    how = f"trained on {args.trained_on}" if args.train_tasks or args.model else "repository-grouped cross-validation"
    cmd = (f" --model {args.model}" if args.model else "") + \
        (f" --train-tasks {args.train_tasks} --trees {args.trees} --leaves {args.leaves}" if args.train_tasks else "")
    lines = [f"# Chunk ranker on {args.split} (in process, {how})", "",
             f"{len(rows)} tasks, {len(repos)} repositories, seed {args.seed}, {args.trees} trees; command: "
             f"`.venv/bin/python bench/ranker_eval.py{cmd} --powers {','.join(str(p) for p in args.powers)}`; "
             f"{args.seconds} s. "
             "No task is scored by a model that saw its repository. "
             f"Gold lines inside a candidate chunk (the ceiling): {ceiling}. "
             + (f"Allocator cost power: the model file's, chosen on this split by `ranker_sweep.py`: {power}."
              if args.model else f"Allocator cost power chosen on these figures (best 4k+8k): {power}."), "",
             "| budget | bm25-chunk | ranker (full chunks in order) | "
             + " | ".join(f"alloc p={p}" for p in args.powers) + " | chosen / bm25 | W/T/L vs bm25-chunk | file hit bm25 / chosen |",
             "|---|---|---|" + "---|" * len(args.powers) + "---|---|---|"]
    for b in BUDGETS:
        s = {m: summary[m][b] for m in summary}
        ratio = s["ranker+alloc"]["line_recall"] / max(s["bm25-chunk"]["line_recall"], 1e-9)
        w, t, l_ = wins[b]
        lines.append(f"| {b} | {s['bm25-chunk']['line_recall']} | {s['ranker']['line_recall']} | "
                     + " | ".join(str(s[f"alloc p={p}"]["line_recall"]) for p in args.powers)
                     + f" | {ratio:.2f}x | {w}/{t}/{l_} | {s['bm25-chunk']['file_hit']} / {s['ranker+alloc']['file_hit']} |")
    if args.model:
        lines += model_section(args, summary, per_task, power)
    lines += ["", "Per repository at 8192 (bm25-chunk / chosen):", ""]
    for repo in repos:
        a = [x for x in per_task["bm25-chunk"][8192] if x["repo"] == repo]
        c = [x for x in per_task["ranker+alloc"][8192] if x["repo"] == repo]
        lines.append(f"- {repo}: {_mean(a, 'line_recall')} / {_mean(c, 'line_recall')} ({len(a)} tasks)")
    if ablation:
        lines += ["", f"## Ablation (allocator p={power}, gold-line recall; each group alone / removed)", "",
                  "| features | " + " | ".join(str(b) for b in ABLATION_BUDGETS) + " |",
                  "|---|" + "---|" * len(ABLATION_BUDGETS)]
        lines.append("| all | " + " | ".join(str(summary["ranker+alloc"][b]["line_recall"])
                                           for b in ABLATION_BUDGETS) + " |")
        for k, v in ablation.items():
            lines.append(f"| {k} | " + " | ".join(str(v[b]) for b in ABLATION_BUDGETS) + " |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def load_model(version: str, rows: list[dict[str, Any]]) -> tuple[Any, dict[str, Any]]:
    """A packaged model file and its provenance (``trained``), refused when it was trained on a
    repository of ``rows``."""
    try:
        ranker = load_ranker(version)
    except FileNotFoundError:
        raise SystemExit(f"no model {version} in repomap/chunkrank; build it with bench/train_ranker.py "
                         f"--version {version}") from None
    meta = json.loads((HERE.parent / "repomap" / "chunkrank" / f"{version}.json").read_text())
    seen = set(meta["trained"]["repos"]) & {r["repo"] for r in rows}
    if seen:
        raise SystemExit(f"{version} was trained on {sorted(seen)}, evaluated here: its figures would be in-sample")
    return ranker, meta["trained"]


def model_section(args: argparse.Namespace, summary: dict[str, Any], per_task: dict[str, Any],
                  power: float) -> list[str]:
    """The model's headline table (rank order and allocator vs chunk BM25, ratios, W/T/L, file hit) and,
    for comparison, the out-of-fold figures of ``ranker-<split>.json`` (v1's cross-validation)."""
    lines = ["", f"## {args.model} vs chunk BM25 (gold-line recall, file hit in brackets)", "",
             f"{args.model}: {args.trained_on}; {args.trees} trees, trained in {args.train_seconds} s; "
             f"the allocator's cost power is the model file's ({power}).", "",
             f"| budget | bm25-chunk | {args.model} rank order | ratio | W/T/L | {args.model} + allocator (p = {power}) "
             "| ratio | W/T/L |", "|---|---|---|---|---|---|---|---|"]
    for b in BUDGETS:
        base = summary["bm25-chunk"][b]
        cells = []
        for m in ("ranker", "ranker+alloc"):
            w, t, l_ = _wlt(per_task[m][b], per_task["bm25-chunk"][b])
            v = summary[m][b]
            cells.append(f"{v['line_recall']} ({v['file_hit']}) | {v['line_recall'] / max(base['line_recall'], 1e-9):.2f}x "
                         f"| {w}/{t}/{l_}")
        lines.append(f"| {b} | {base['line_recall']} ({base['file_hit']}) | " + " | ".join(cells) + " |")
    oof = HERE / "results" / f"ranker-{args.split}.json"
    if oof.is_file():
        old = json.loads(oof.read_text())
        lines += ["", f"For comparison, ranker-v1's pipeline **out of fold** on this split (repository-grouped "
                  f"cross-validation over its {len(old['repos'])} repositories: each task scored by a model trained on "
                  f"the other folds' {args.split} tasks; {old['trees']} trees, allocator p = {old['cost_power']}; "
                  f"`bench/results/{oof.stem}.md`). The shipped ranker-v1 itself is trained on all of them, so its own "
                  f"{args.split} figures would be in-sample:", "",
                  "| budget | bm25-chunk | rank order (oof) | + allocator (oof) |", "|---|---|---|---|"]
        for b in BUDGETS:
            o = {m: old["summary"][m][str(b)] for m in ("bm25-chunk", "ranker", "ranker+alloc")}
            lines.append(f"| {b} | {o['bm25-chunk']['line_recall']} ({o['bm25-chunk']['file_hit']}) | "
                         f"{o['ranker']['line_recall']} ({o['ranker']['file_hit']}) | "
                         f"{o['ranker+alloc']['line_recall']} ({o['ranker+alloc']['file_hit']}) |")
    return lines


def _wlt(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> tuple[int, int, int]:
    d = [x["line_recall"] - y["line_recall"] for x, y in zip(a, b)]
    return sum(v > 1e-9 for v in d), sum(abs(v) <= 1e-9 for v in d), sum(v < -1e-9 for v in d)


if __name__ == "__main__":
    main()
