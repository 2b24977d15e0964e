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

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cold_vs_aider import AIDER_CACHE_DIR, BIN, GOAL, _timed, aider_run, arg_parser, run_rounds, summarize  # noqa: E402


def _ours(bin_dir: Path, root: Path, cache: Path, outputs: set[bytes]) -> dict[str, Any]:
    cmd = [str(bin_dir / "repo-map"), "generate", str(root), "--goal", GOAL, "--cache-dir", str(cache)]
    got = _timed(cmd)
    outputs.add(subprocess.run(cmd, capture_output=True, check=True).stdout)  # untimed: the same bytes?
    return got


def main(argv: list[str] | None = None) -> int:
    args = arg_parser(__doc__, rounds=5, seed=21).parse_args(argv)
    bins = {"after": BIN} | ({"before": args.before_bin} if args.before_bin else {})
    outputs: dict[str, set[bytes]] = {who: set() for who in bins}
    try:
        with tempfile.TemporaryDirectory(prefix="warm-vs-aider-") as tmp:
            work = Path(tmp)
            aider_run(args.aider_python, args.root, work, -1, keep_cache=True)  # untimed: makes aider's cache
            for who, b in bins.items():
                subprocess.run([str(b / "repo-map"), "generate", str(args.root), "--goal", GOAL, "--cache-dir",
                                str(work / f"cache-{who}")], capture_output=True, check=True)

            def one(who: str, n: int) -> dict[str, Any]:
                if who == "aider":
                    return aider_run(args.aider_python, args.root, work, n, "warm")
                return _ours(bins[who], args.root, work / f"cache-{who}", outputs[who])

            samples, lines = run_rounds(args, [*bins, "aider"], one, 3)
    finally:
        shutil.rmtree(args.root / AIDER_CACHE_DIR, ignore_errors=True)
    for who, outs in outputs.items():
        if len(outs) != 1:
            raise SystemExit(f"{who}: the warm runs printed {len(outs)} different maps")
    summarize(args, "warm-vs-aider", samples, lines, 3)
    return 0


if __name__ == "__main__":
    sys.exit(main())
