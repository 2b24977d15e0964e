"""Cold index + first map: ``repo-map generate`` (this venv, and optionally another venv's) against
aider's cold repo map, interleaved in one session (issue 17, "cold ≥ 5× faster than aider").

    .venv/bin/python bench/cold_vs_aider.py ROOT [--rounds 2] [--before-bin OTHER_VENV/bin]
        [--aider-python /work/bench-data/perf/aider-venv/bin/python] [--label NAME]

Each round runs every contender once, in a shuffled order, so the (shared machine's) load
falls on all alike. Every sample is a new process timed from ``subprocess.run`` to its exit,
with its CPU seconds (user + system of it and everything it waited for: our index workers)
and the load average before it:

* ours: ``repo-map generate ROOT --goal GOAL --cache-dir <new empty dir>`` (default jobs),
  i.e. discovery, the parallel cold index, the ranking structure and the first map;
* aider: ``bench/aider_harness.py --mode cold`` in aider's venv (its tags cache, written into
  ROOT, deleted before and after): the whole process, and aider's own ``start_to_first_map_s``
  (constructor + first map, imports excluded) and first-map CPU as the harness reports them.

ROOT must be a copy aider may write into (``repomap_bench.py`` makes ``<data>/stdlib``).
Writes ``bench/results/cold-vs-aider[-LABEL]-<stamp>.json`` and prints one line per sample
plus the medians and ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
BIN = Path(sys.executable).parent
GOAL = "why does json.dumps call JSONEncoder.default for objects it cannot serialize?"
AIDER_CACHE_DIR = ".aider.tags.cache.v4"


def _timed(cmd: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    load = os.getloadavg()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, env=env)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.decode()[-800:]}")
    return {"wall_s": wall, "cpu_s": r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime,
            "load_before": load, "load_after": os.getloadavg()}


def _ours(bin_dir: Path, root: Path, work: Path, tag: str, n: int) -> dict[str, Any]:
    cache = work / f"cache-{tag}-{n}"
    got = _timed([str(bin_dir / "repo-map"), "generate", str(root), "--goal", GOAL, "--cache-dir", str(cache)])
    shutil.rmtree(cache, ignore_errors=True)
    return got


def _aider(python: Path, root: Path, work: Path, n: int) -> dict[str, Any]:
    reqs = work / "requests.json"
    if not reqs.exists():
        reqs.write_text(json.dumps([{"id": 0, "goal": GOAL, "map_tokens": 4096, "chat_files": [],
                                     "mentioned_fnames": [], "mentioned_idents": []}]))
    out = work / f"aider-{n}.json"
    got = _timed([str(python), str(REPO / "bench" / "aider_harness.py"), "--root", str(root), "--mode", "cold",
                  "--requests", str(reqs), "--max-requests", "0", "--out", str(out)])
    # aider writes its cache into ROOT; remove it so every contender indexes the same tree
    # (left there, the next cold ``repo-map generate`` would read and hash its 8 MB too)
    shutil.rmtree(root / AIDER_CACHE_DIR, ignore_errors=True)
    doc = json.loads(out.read_text())
    got["aider_start_to_first_map_s"] = doc["start_to_first_map_s"]
    got["aider_first_map_cpu_s"] = doc["first"]["cpu_s"]
    got["aider_version"] = doc.get("aider_version")
    return got


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("root", type=Path)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--before-bin", type=Path, default=None, help="another venv's bin/ (the 'before' engine)")
    p.add_argument("--aider-python", type=Path, default=Path("/work/bench-data/perf/aider-venv/bin/python"))
    p.add_argument("--label", default="")
    p.add_argument("--seed", type=int, default=20)
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    contenders = ["after", "aider"] + (["before"] if args.before_bin else [])
    rng = random.Random(args.seed)
    samples: dict[str, list[dict[str, Any]]] = {c: [] for c in contenders}
    lines = []
    with tempfile.TemporaryDirectory(prefix="cold-vs-aider-") as tmp:
        work = Path(tmp)
        for n in range(args.rounds):
            order = contenders[:]
            rng.shuffle(order)
            for who in order:
                if who == "aider":
                    s = _aider(args.aider_python, args.root, work, n)
                else:
                    s = _ours(BIN if who == "after" else args.before_bin, args.root, work, who, n)
                samples[who].append(s)
                extra = (f", aider's own start→first map {s['aider_start_to_first_map_s']:.2f} s / "
                         f"{s['aider_first_map_cpu_s']:.2f} CPU-s" if who == "aider" else "")
                line = (f"round {n} {who}: wall {s['wall_s']:.2f} s, CPU {s['cpu_s']:.2f} s, "
                        f"load {s['load_before'][0]:.2f}{extra}")
                lines.append(line)
                print(line, flush=True)
    med = {who: {"wall_s": statistics.median(x["wall_s"] for x in v), "cpu_s": statistics.median(x["cpu_s"] for x in v)}
           for who, v in samples.items()}
    a = samples["aider"]
    med["aider"]["start_to_first_map_s"] = statistics.median(x["aider_start_to_first_map_s"] for x in a)
    med["aider"]["first_map_cpu_s"] = statistics.median(x["aider_first_map_cpu_s"] for x in a)
    ratios = {who: {"wall_process": med["aider"]["wall_s"] / med[who]["wall_s"],
                    "cpu_process": med["aider"]["cpu_s"] / med[who]["cpu_s"],
                    "aider_own_first_map_vs_our_process_wall": med["aider"]["start_to_first_map_s"] / med[who]["wall_s"]}
              for who in med if who != "aider"}
    for who, r in ratios.items():
        line = (f"median {who}: wall {med[who]['wall_s']:.2f} s, CPU {med[who]['cpu_s']:.2f} s; aider process "
                f"{med['aider']['wall_s']:.2f} s / {med['aider']['cpu_s']:.2f} CPU-s → aider/ours wall "
                f"{r['wall_process']:.2f}×, CPU {r['cpu_process']:.2f}× (aider's own start→first map "
                f"{med['aider']['start_to_first_map_s']:.2f} s: {r['aider_own_first_map_vs_our_process_wall']:.2f}×)")
        lines.append(line)
        print(line)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"cold-vs-aider{'-' + args.label if args.label else ''}-{stamp}.json"
    out.write_text(json.dumps({"root": str(args.root), "engine": rev.stdout.strip(), "before_bin": str(args.before_bin),
                               "goal": GOAL, "rounds": args.rounds, "cpus": os.cpu_count(), "samples": samples,
                               "medians": med, "ratios": ratios, "summary": lines}, indent=1, default=str))
    print(f"-> {out.relative_to(REPO) if out.is_relative_to(REPO) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
