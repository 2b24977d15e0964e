"""Warm start + first map: ``repo-map generate`` against aider's warm repo map, interleaved in one
session (issue 17, "warm ``repo-map generate`` in a new process ≥ 20× faster than aider").

    .venv/bin/python bench/warm_vs_aider.py ROOT [--rounds 5] [--before-bin OTHER_VENV/bin]
        [--aider-python /work/bench-data/perf/aider-venv/bin/python] [--label NAME]

Both caches are made first (one untimed cold run each; aider's tags cache lives in ROOT, so
ROOT must be a copy aider may write into, and it is removed at the end). Then each round runs
every contender once, in a shuffled order; every sample is a new process timed from
``subprocess.run`` to its exit, with its CPU seconds and the load average before it:

* ours: ``repo-map generate ROOT --goal GOAL --cache-dir DIR`` (the same cache every round);
  the outputs of all rounds must be identical;
* aider: ``bench/aider_harness.py --mode warm`` (cache present): the whole process, and aider's
  own start→first map (constructor + first ``get_repo_map``, imports excluded).

Writes ``bench/results/warm-vs-aider[-LABEL]-<stamp>.json`` and prints one line per sample plus
the medians and ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cold_vs_aider import AIDER_CACHE_DIR, BIN, GOAL, REPO, RESULTS, _timed  # noqa: E402


def _ours(bin_dir: Path, root: Path, cache: Path, outputs: set[bytes]) -> dict[str, Any]:
    cmd = [str(bin_dir / "repo-map"), "generate", str(root), "--goal", GOAL, "--cache-dir", str(cache)]
    got = _timed(cmd)
    outputs.add(subprocess.run(cmd, capture_output=True, check=True).stdout)  # untimed: the same bytes?
    return got


def _aider(python: Path, root: Path, work: Path, mode: str) -> dict[str, Any]:
    reqs = work / "requests.json"
    if not reqs.exists():
        reqs.write_text(json.dumps([{"id": 0, "goal": GOAL, "map_tokens": 4096, "chat_files": [],
                                     "mentioned_fnames": [], "mentioned_idents": []}]))
    out = work / f"aider-{mode}.json"
    got = _timed([str(python), str(REPO / "bench" / "aider_harness.py"), "--root", str(root), "--mode", mode,
                  "--requests", str(reqs), "--max-requests", "0", "--out", str(out)])
    doc = json.loads(out.read_text())
    got["aider_start_to_first_map_s"] = doc["start_to_first_map_s"]
    got["aider_version"] = doc.get("aider_version")
    return got


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("root", type=Path)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--before-bin", type=Path, default=None, help="another venv's bin/ (the 'before' engine)")
    p.add_argument("--aider-python", type=Path, default=Path("/work/bench-data/perf/aider-venv/bin/python"))
    p.add_argument("--label", default="")
    p.add_argument("--seed", type=int, default=21)
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    bins = {"after": BIN} | ({"before": args.before_bin} if args.before_bin else {})
    contenders = [*bins, "aider"]
    rng = random.Random(args.seed)
    samples: dict[str, list[dict[str, Any]]] = {c: [] for c in contenders}
    outputs: dict[str, set[bytes]] = {who: set() for who in bins}
    lines = []
    try:
        with tempfile.TemporaryDirectory(prefix="warm-vs-aider-") as tmp:
            work = Path(tmp)
            _aider(args.aider_python, args.root, work, "cold")  # untimed: makes aider's cache
            for who, b in bins.items():
                subprocess.run([str(b / "repo-map"), "generate", str(args.root), "--goal", GOAL, "--cache-dir",
                                str(work / f"cache-{who}")], capture_output=True, check=True)
            for n in range(args.rounds):
                order = contenders[:]
                rng.shuffle(order)
                for who in order:
                    if who == "aider":
                        s = _aider(args.aider_python, args.root, work, "warm")
                    else:
                        s = _ours(bins[who], args.root, work / f"cache-{who}", outputs[who])
                    samples[who].append(s)
                    extra = (f", aider's own start→first map {s['aider_start_to_first_map_s']:.2f} s"
                             if who == "aider" else "")
                    line = (f"round {n} {who}: wall {s['wall_s']:.3f} s, CPU {s['cpu_s']:.3f} s, "
                            f"load {s['load_before'][0]:.2f}{extra}")
                    lines.append(line)
                    print(line, flush=True)
    finally:
        shutil.rmtree(args.root / AIDER_CACHE_DIR, ignore_errors=True)
    for who, outs in outputs.items():
        if len(outs) != 1:
            raise SystemExit(f"{who}: the warm runs printed {len(outs)} different maps")
    med = {who: {"wall_s": statistics.median(x["wall_s"] for x in v), "cpu_s": statistics.median(x["cpu_s"] for x in v)}
           for who, v in samples.items()}
    med["aider"]["start_to_first_map_s"] = statistics.median(x["aider_start_to_first_map_s"] for x in samples["aider"])
    ratios = {who: {"wall_process": med["aider"]["wall_s"] / med[who]["wall_s"],
                    "aider_own_first_map_vs_our_process_wall": med["aider"]["start_to_first_map_s"] / med[who]["wall_s"]}
              for who in bins}
    for who, r in ratios.items():
        line = (f"median {who}: wall {med[who]['wall_s']:.3f} s, CPU {med[who]['cpu_s']:.3f} s; aider process "
                f"{med['aider']['wall_s']:.2f} s, its own start→first map {med['aider']['start_to_first_map_s']:.2f} s "
                f"→ aider/ours {r['wall_process']:.1f}× (process), {r['aider_own_first_map_vs_our_process_wall']:.1f}× "
                f"(aider's own start→first map against our whole process)")
        lines.append(line)
        print(line)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"warm-vs-aider{'-' + args.label if args.label else ''}-{stamp}.json"
    out.write_text(json.dumps({"root": str(args.root), "engine": rev.stdout.strip(), "goal": GOAL, "rounds": args.rounds,
                               "cpus": os.cpu_count(), "samples": samples, "medians": med, "ratios": ratios,
                               "summary": lines}, indent=1, default=str))
    print(f"-> {out.relative_to(REPO) if out.is_relative_to(REPO) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
