"""Start-up and whole-process figures of the installed CLIs (issue 17, speed).

    .venv/bin/python bench/startup_bench.py help [--runs 10] [--bin OTHER_VENV/bin]
    .venv/bin/python bench/startup_bench.py generate ROOT --cache-dir DIR [--runs 10] [--goal TEXT]
    .venv/bin/python bench/startup_bench.py cold ROOT --cache-dir DIR [--goal TEXT]

Every figure is a new process of the console script in this venv (the default user path:
``navigator`` / ``repo-map`` with default flags), timed from ``subprocess.run`` to its exit,
with its CPU time (user + system of it and everything it waited for) and the load average
before and after. The machine is shared: wall times are upper bounds, read the load.

* ``help``: ``navigator --help``, ``repo-map --help`` and the sub-command helps in
  :data:`SUB_HELPS` (``navigator explore --help``, ...), ``--runs`` times each (median, min).
* ``generate``: ``repo-map generate ROOT --goal TEXT --cache-dir DIR``; one untimed run first
  (it indexes if the cache is cold), then ``--runs`` warm runs; the outputs must be identical.
* ``cold``: the same command once on an empty ``--cache-dir`` (refused if it exists): the cold
  index + first map, and the peak RSS of the largest process of the tree (the CLI or one of
  its index workers: Linux reports the largest descendant's ``ru_maxrss``).

``--bin DIR`` measures the console scripts of another venv (e.g. one with the engine of an
earlier revision installed), ``--label`` names it in the file name and the JSON.

Writes ``bench/results/startup-<what>[-<label>]-<stamp>.json`` and prints one line per figure.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
BIN = Path(sys.executable).parent
GOAL = "why does json.dumps call JSONEncoder.default for objects it cannot serialize?"
#: sub-command helps measured by ``help`` besides the two root helps (issue 17: ``explore --help``)
SUB_HELPS = (("navigator", "explore"), ("navigator", "ask"), ("navigator", "status"), ("navigator", "approve"),
             ("navigator", "server"), ("navigator", "batch"), ("repo-map", "generate"))


def _engine_rev() -> str:
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--", "repomap", "cli"],
                           capture_output=True, text=True).stdout.strip()
    return rev.stdout.strip() + (" +uncommitted" if dirty else "")


def _run(cmd: list[str]) -> dict[str, Any]:
    """One new process: wall, CPU, largest descendant's peak RSS, stdout digest."""
    load = os.getloadavg()
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True)
    wall = time.perf_counter() - t
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return {"wall_s": wall, "cpu_s": r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime,
            "max_rss_mb": r1.ru_maxrss / 1024, "load_before": load, "load_after": os.getloadavg(),
            "stdout_bytes": len(proc.stdout), "stdout": proc.stdout}


def _series(cmd: list[str], runs: int) -> dict[str, Any]:
    got = [_run(cmd) for _ in range(runs)]
    outs = {g.pop("stdout") for g in got}
    walls, cpus = [g["wall_s"] for g in got], [g["cpu_s"] for g in got]
    return {"cmd": cmd, "runs": runs, "wall_median_s": statistics.median(walls), "wall_min_s": min(walls),
            "cpu_median_s": statistics.median(cpus), "cpu_min_s": min(cpus), "identical_outputs": len(outs) == 1,
            "load_first": got[0]["load_before"], "load_last": got[-1]["load_after"], "each": got}


def _line(name: str, s: dict[str, Any]) -> str:
    return (f"{name}: wall median {s['wall_median_s']:.3f} s (min {s['wall_min_s']:.3f}), CPU median "
            f"{s['cpu_median_s']:.3f} s, {s['runs']} runs, load {s['load_first'][0]:.2f} -> {s['load_last'][0]:.2f}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("what", choices=["help", "generate", "cold"])
    p.add_argument("root", nargs="?", type=Path)
    p.add_argument("--cache-dir", type=Path)
    p.add_argument("--runs", type=int, default=10)
    p.add_argument("--goal", default=GOAL)
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--bin", type=Path, default=BIN, help="folder of the console scripts to measure")
    p.add_argument("--label", default="", help="tag of this measurement (file name, JSON)")
    args = p.parse_args(argv)
    bin_dir = args.bin
    doc: dict[str, Any] = {"what": args.what, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                           "engine": _engine_rev() if bin_dir == BIN else f"scripts of {bin_dir}",
                           "label": args.label, "bin": str(bin_dir), "cpus": os.cpu_count(),
                           "python": sys.version.split()[0],
                           "env": {k: os.environ.get(k) for k in ("PYTHONDONTWRITEBYTECODE", "OPENBLAS_NUM_THREADS")}}
    lines = []
    if args.what == "help":
        for name in ("navigator", "repo-map"):
            s = _series([str(bin_dir / name), "--help"], args.runs)
            doc[name] = s
            lines.append(_line(f"{name} --help", s))
        for name, sub in SUB_HELPS:
            s = _series([str(bin_dir / name), sub, "--help"], args.runs)
            doc[f"{name} {sub}"] = s
            lines.append(_line(f"{name} {sub} --help", s))
    else:
        if args.root is None or args.cache_dir is None:
            p.error(f"{args.what} needs ROOT and --cache-dir")
        cmd = [str(bin_dir / "repo-map"), "generate", str(args.root), "--goal", args.goal,
               "--cache-dir", str(args.cache_dir)]
        doc["root"] = str(args.root)
        # aider (repomap_bench.py) leaves its tags cache inside the corpus root: not corpus files
        doc["files"] = sum(1 for q in args.root.rglob("*")
                           if q.is_file() and not any(part.startswith(".aider") for part in q.parts))
        if args.what == "cold":
            if args.cache_dir.exists():
                p.error(f"--cache-dir {args.cache_dir} exists; a cold run needs a new one")
            one = _run(cmd)
            one.pop("stdout")
            doc["cold"] = {"cmd": cmd, **one}
            lines.append(f"cold repo-map generate ({doc['files']} files): wall {one['wall_s']:.2f} s, CPU "
                         f"{one['cpu_s']:.2f} s (CLI + index workers), peak RSS of the largest process "
                         f"{one['max_rss_mb']:.0f} MB, load {one['load_before'][0]:.2f} -> {one['load_after'][0]:.2f}")
        else:
            first = _run(cmd)
            first.pop("stdout")
            doc["first_untimed"] = first
            s = _series(cmd, args.runs)
            doc["warm"] = s
            lines.append(_line(f"warm repo-map generate ({doc['files']} files)", s)
                         + f", outputs identical: {s['identical_outputs']}")
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / f"startup-{args.what}{'-' + args.label if args.label else ''}-{stamp}.json"
    doc["summary"] = lines
    out.write_text(json.dumps(doc, indent=1, default=str))
    print("\n".join(lines + [f"-> {out.relative_to(REPO) if out.is_relative_to(REPO) else out}"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
