"""In-process shortcut for tuning the offline policy on the DEV split (never the test split).

**Labelled shortcut, not the product's figure.** The figures this project reports
come from ``quality.py run`` (the installed CLI through Temporal, default flags,
one long-running worker). This script replays the same offline model in one
process — the first turn's code-tool round through the real tool code, then
decide → apply → render until it finalizes or hits the iteration cap — so a
policy change can be measured on the 180 dev tasks in minutes instead of hours.
It refuses the test split.

    .venv/bin/python bench/quality_tune.py [--budgets 4096 8192 16384 32768] [--repos owner/name ...]
        [--limit N] [--exclude-tasks bench/tasks/quality_tasks.jsonl] [--out /work/bench-data/tune/<name>.json]
        [--compare other.json]

Scores use the benchmark's own scorer (``quality_score``) on the map section,
next to the engine alone and both BM25 baselines, per budget and per repository.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from temporalio.testing import ActivityEnvironment

from durable_navigator.activities.models.offline import OfflineTurn, offline_decision
from durable_navigator.activities.models.offline.config import OfflinePolicyConfig
from durable_navigator.activities.pack import PACK_CONFIG
from durable_navigator.activities.tools import CodeToolActivities
from durable_navigator.navcore.run.tools import ToolRequest
from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.repomap import RepoMap
from durable_navigator.repomap.config import EngineConfig
from durable_navigator.workflows.blocks.tools import tool_result_lines

HERE = Path(__file__).resolve().parent
from _project import count_tokens  # noqa: E402
from quality_baselines import Retriever, chunk_docs, file_docs, pack  # noqa: E402
from quality_score import parse_context, read_source, score_context  # noqa: E402
from taskset import Task, load_tasks, materialize, repo_dir  # noqa: E402

BUDGETS = (4096, 8192, 16384, 32768)
MAX_ITERATIONS = 12
CACHE = Path("/work/bench-data/tune/cache")


def _override(model: Any, dotted: str, value: str) -> Any:
    """``model`` (a frozen pydantic config) with ``a.b=value`` set (value parsed as JSON when it can be)."""
    head, _, rest = dotted.partition(".")
    current = getattr(model, head)
    if rest:
        return model.model_copy(update={head: _override(current, rest, value)})
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    return model.model_validate({**model.model_dump(), head: parsed})


POLICY = OfflinePolicyConfig()
#: score the map re-rendered at the budget the pack's frame leaves (``--no-pack-frame``: the whole budget)
PACK_FRAME = True
#: run in checkouts whose ``.git`` holds the parent's history (``--with-git``)
WITH_GIT = False
ENGINE = EngineConfig()


def explore(engine: RepoMap, goal: str, budget: int) -> tuple[str, dict[str, Any]]:
    """The offline model's loop in process; returns the final map text and a short trace."""
    plan = FlightPlan(token_budget=budget)
    rendered = engine.render(plan)
    recent: list[tuple[str, str]] = []
    results: tuple[str, ...] = ()
    tools = CodeToolActivities(engine_for=_source(engine))
    env = ActivityEnvironment()
    stop = "max_iterations"
    for it in range(1, MAX_ITERATIONS + 1):
        turn = OfflineTurn(goal=goal, flight_plan=plan, iteration=it, max_iterations=MAX_ITERATIONS, engine=engine,
                           map_metadata=rendered.metadata, recent_decisions=tuple(recent[-3:]),
                           tools_available=True, tool_results=results)
        d = offline_decision(turn, POLICY)
        recent.append((d.action, d.reasoning))
        results = ()
        if d.action == "call_tools":
            out = [env_run(env, tools, c, str(engine.root)) for c in d.tool_calls]
            results = tuple(tool_result_lines(out))
            continue
        if d.action == "finalize_context":
            stop = "finalized"
            break
        assert d.updates is not None
        plan = plan.apply(d.updates)
        rendered = engine.render(plan)
    if PACK_FRAME:
        # what ``context.md`` holds: the pack re-renders the final plan's map at the tokens its frame leaves
        rendered = engine.render(plan.model_copy(update={"token_budget": budget - PACK_CONFIG.frame_tokens(budget)}))
    return rendered.text, {"iterations": len(recent), "stop": stop, "tokens": rendered.metadata.tokens_used,
                           "degraded": rendered.metadata.degraded}


def env_run(env: ActivityEnvironment, tools: CodeToolActivities, call: Any, root: str) -> Any:
    import asyncio

    return asyncio.run(env.run(getattr(tools, call.name), ToolRequest(repo_root=root, call=call)))


def _source(engine: RepoMap) -> Any:
    async def get(root: str) -> RepoMap:
        return engine

    return get


def oof_rankers(tasks_file: Path, trees: int = 50, seed: int = 7) -> dict[str, Any]:
    """Per dev repository, the shipped ranker's recipe retrained without that repository's tasks
    (``train_ranker.repo_folds``; the shipped calibration is out-of-fold already): dev figures of
    the learned policy that are not in-sample while the shipped model is trained on dev."""
    from train_ranker import fit, load_rows, repo_folds

    from durable_navigator.repomap.chunkrank.features import FEATURES
    from durable_navigator.repomap.chunkrank.model import ChunkRanker, load_ranker

    base = load_ranker()
    rows = load_rows(tasks_file, "dev", cached_only=True)
    cols = [FEATURES.index(f) for f in base.features]
    out: dict[str, Any] = {}
    for held in repo_folds(rows):
        gone = set(held)
        booster = fit([r for i, r in enumerate(rows) if i not in gone], cols, seed, trees)
        ranker = ChunkRanker(booster.model_to_string(), base.features, base.calibration, "oof", base.cost_power)
        out.update({rows[i]["repo"]: ranker for i in held})
    return out


#: ``--oof``: repository -> the ranker that never saw it
OOF: dict[str, Any] = {}


def run(tasks: list[Task], budgets: tuple[int, ...]) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    by_repo: dict[Path, list[Task]] = defaultdict(list)
    for t in tasks:
        if WITH_GIT:
            from corpus import materialize_with_git

            by_repo[materialize_with_git(t)].append(t)
        else:
            by_repo[repo_dir(t)].append(t)
    done = 0
    for root, group in by_repo.items():
        engine = RepoMap.open(root, config=ENGINE, cache_dir=CACHE)
        source = read_source(root)
        files = file_docs(engine.files, source)
        chunks = chunk_docs(engine.files, source, lambda p: [(s.start_line, s.end_line) for s in engine.symbols(p)])
        by_file, by_chunk = Retriever(files, source), Retriever(chunks, source)
        if OOF:
            from durable_navigator.repomap.chunkrank import model as chunk_model

            chunk_model.load_ranker = lambda *_a, _r=OOF[group[0].repo], **_k: _r  # type: ignore[assignment]
        for task in group:
            for budget in budgets:
                t0 = time.perf_counter()
                text, trace = explore(engine, task.goal, budget)
                took = time.perf_counter() - t0
                rec = {"task": task.id, "repo": task.repo, "budget": budget, "seconds": round(took, 3), **trace,
                       # the map itself, to tell a refactor that changed no map from one that did
                       "map_sha256": hashlib.sha256(text.encode()).hexdigest()}
                rec["navigator"] = score_context(parse_context(text, source), task.gold_lines, source)
                eng = engine.render(FlightPlan(token_budget=budget, goal=task.goal)).text
                rec["engine"] = score_context(parse_context(eng, source), task.gold_lines, source)
                for name, retr in (("bm25-file", by_file), ("bm25-chunk", by_chunk)):
                    ctx = pack(retr.rank(task.goal), budget, source, count_tokens)
                    rec[name] = score_context(parse_context(ctx, source), task.gold_lines, source)
                records.append(rec)
            done += 1
            print(f"[{done}/{len(tasks)}] {task.id} nav@8k={_get(records, task.id, 8192)}", file=sys.stderr, flush=True)
    return records


def _get(records: list[dict[str, Any]], task: str, budget: int) -> Any:
    for r in records:
        if r["task"] == task and r["budget"] == budget:
            return round(r["navigator"]["line_recall"], 2)
    return None


def summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for budget in sorted({r["budget"] for r in records}):
        rows = [r for r in records if r["budget"] == budget]
        entry = {}
        for m in ("navigator", "engine", "bm25-file", "bm25-chunk"):
            entry[m] = {k: round(statistics.fmean(r[m][k] for r in rows), 3) for k in ("line_recall", "file_hit")}
        entry["seconds_median"] = round(statistics.median(r["seconds"] for r in rows), 2)
        per_repo = defaultdict(list)
        for r in rows:
            per_repo[r["repo"]].append(r)
        entry["per_repo_line"] = {repo: {m: round(statistics.fmean(x[m]["line_recall"] for x in rs), 2)
                                         for m in ("navigator", "bm25-file", "bm25-chunk")}
                                  for repo, rs in sorted(per_repo.items())}
        out[str(budget)] = entry
    return out


def _unpacked(tasks: list[Task]) -> list[Task]:
    """``tasks`` whose parent unpacks; a mirror missing a blob (a large file the fetch left out) drops
    its task, said on stderr (the corpus' dev repositories have a few such commits)."""
    import subprocess

    kept = []
    for t in tasks:
        try:
            materialize([t])
        except subprocess.CalledProcessError:
            print(f"skipped {t.id}: its parent does not unpack from the mirror (missing blob)", file=sys.stderr)
            continue
        kept.append(t)
    return kept


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", type=Path, default=HERE / "tasks" / "quality_tasks.jsonl")
    ap.add_argument("--budgets", type=int, nargs="+", default=list(BUDGETS))
    ap.add_argument("--repos", nargs="*", default=[])
    ap.add_argument("--limit", type=int, default=0, help="first N tasks of each repository")
    ap.add_argument("--exclude-tasks", type=Path, default=None,
                    help="skip tasks whose commit is in this tasks file (corpus dev minus the quality dev tasks "
                         "the hand rules were tuned on)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--set", action="append", default=[], metavar="policy.X=V|engine.X.Y=V",
                    help="override an OfflinePolicyConfig / EngineConfig field for this run (experiments)")
    ap.add_argument("--oof", action="store_true",
                    help="rank each repository with a model retrained without it (the shipped one saw dev)")
    ap.add_argument("--with-git", action="store_true", help="checkouts with the parent's history in .git")
    ap.add_argument("--no-pack-frame", action="store_true",
                    help="score the map at the whole budget (before the pack budget left room for the frame)")
    ap.add_argument("--ranker", default=None, metavar="ranker-vN",
                    help="rank with this model of the package instead of the shipped ones (model.ranker_for; choosing one on dev)")
    args = ap.parse_args()
    if args.ranker:
        from durable_navigator.repomap.chunkrank import model as chunk_model

        chosen = chunk_model.load_ranker(args.ranker)  # fails here, before any task, on an unknown version
        chunk_model.load_ranker = lambda *_a, **_k: chosen  # type: ignore[assignment]
    global POLICY, ENGINE, PACK_FRAME, WITH_GIT
    PACK_FRAME = not args.no_pack_frame
    WITH_GIT = args.with_git
    for item in args.set:
        key, _, value = item.partition("=")
        scope, _, field = key.partition(".")
        if scope == "policy":
            POLICY = _override(POLICY, field, value)
        elif scope == "engine":
            ENGINE = _override(ENGINE, field, value)
        else:
            raise SystemExit(f"--set {item}: start with policy. or engine.")
    tasks = [t for t in load_tasks(args.tasks) if t.split == "dev"]  # never the test split
    if args.repos:
        tasks = [t for t in tasks if t.repo in args.repos]
    if args.exclude_tasks:
        seen_commits = {t.commit for t in load_tasks(args.exclude_tasks)}
        tasks = [t for t in tasks if t.commit not in seen_commits]
    if args.limit:
        seen: dict[str, int] = defaultdict(int)
        kept = []
        for t in tasks:
            seen[t.repo] += 1
            if seen[t.repo] <= args.limit:
                kept.append(t)
        tasks = kept
    if args.oof:
        OOF.update(oof_rankers(args.tasks))
    if not WITH_GIT:
        tasks = _unpacked(tasks)
    records = run(tasks, tuple(args.budgets))
    result = {"summary": summary(records), "records": records}
    print(json.dumps(result["summary"], indent=1))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
