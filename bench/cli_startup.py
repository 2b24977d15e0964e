"""Start-up time of the installed ``navigator`` console script, with its references in the same run.

Each round runs every command once, in a shuffled order, so machine load (this is a
shared 2-core box) falls on all of them alike; the table reports median / p90 / min
wall time per command over ``--rounds`` rounds.

Commands (the real console scripts of the venv, as a user types them):

* ``navigator --help`` — the target (≤ 0.25 s, issue 17); ``navigator --version``;
  ``navigator explore --help`` (one command's module loaded);
* references: the interpreter alone (``python -c pass``), and a two-command typer
  app's ``--help`` (``python -c`` with the app inline): the floor any typer CLI pays;
* ``repo-map --help`` for comparison (the engine's own CLI, not this benchmark's target);
* with ``--before REV`` (default ``9315a62``, the CLI before issue 17): that revision's
  ``navigator --help``, its tree unpacked with ``git archive`` to a temporary folder and
  imported ahead of the installed package — the same interpreter and dependencies.

Run::

    .venv/bin/python bench/cli_startup.py [--rounds 30] [--out bench/results/cli-startup]

Writes ``<out>.json`` (every sample) and ``<out>.md`` (the table).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
TYPER_APP = (
    "import typer\n"
    "app = typer.Typer(rich_markup_mode=None)\n"
    "@app.command()\n"
    "def a(x: int = 1):\n    'A.'\n"
    "@app.command()\n"
    "def b(y: str = 'q'):\n    'B.'\n"
    "app()\n"
)

COMMANDS: dict[str, list[str]] = {
    "navigator --help": [str(BIN / "navigator"), "--help"],
    "navigator --version": [str(BIN / "navigator"), "--version"],
    "navigator explore --help": [str(BIN / "navigator"), "explore", "--help"],
    "reference: python -c pass": [sys.executable, "-c", "pass"],
    "reference: minimal typer app --help": [sys.executable, "-c", TYPER_APP, "--help"],
    "repo-map --help": [str(BIN / "repo-map"), "--help"],
}
TARGET = "navigator --help"
TARGET_S = 0.25


def run_once(argv: list[str]) -> float:
    """Wall seconds of one run (stdout discarded; a failure aborts the benchmark)."""
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "COLUMNS": "80"})
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return elapsed


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "cli-startup")
    parser.add_argument("--before", default="9315a62", help="git revision of the 'before' reference ('' to skip)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cli-startup-") as tmp:
        if args.before:
            COMMANDS[f"reference: navigator --help at {args.before}"] = before_command(args.before, Path(tmp))
        run(args)


def before_command(rev: str, tmp: Path) -> list[str]:
    """``navigator --help`` of revision ``rev``: its folders mapped to the namespace, first on sys.path."""
    tree, package = tmp / "tree", tmp / "pkg" / "durable_navigator"
    tree.mkdir()
    package.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(Path(__file__).resolve().parent.parent), "archive", rev],
                             capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    for folder in ("navtypes", "repomap", "navcore", "activities", "workflows", "workers", "cli"):
        (package / folder).symlink_to(tree / folder)
    code = (f"import sys; sys.path.insert(0, {str(package.parent)!r}); sys.argv = ['navigator', '--help']\n"
            "from durable_navigator.cli.app import main\nmain()")
    return [sys.executable, "-c", code]


def run(args: argparse.Namespace) -> None:
    """Time every command over ``args.rounds`` shuffled rounds and write the results."""
    rng = random.Random(args.seed)
    samples: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for name, argv in COMMANDS.items():
        run_once(argv)  # warm the page cache and .pyc files; not counted
    load_before = os.getloadavg()
    for _ in range(args.rounds):
        order = list(COMMANDS)
        rng.shuffle(order)
        for name in order:
            samples[name].append(run_once(COMMANDS[name]))
    load_after = os.getloadavg()
    rows = {name: {"median_s": statistics.median(v), "p90_s": percentile(v, 0.9), "min_s": min(v), "runs": len(v)}
            for name, v in samples.items()}
    doc = {
        "rounds": args.rounds,
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "loadavg_before": load_before,
        "loadavg_after": load_after,
        "target": {"command": TARGET, "max_median_s": TARGET_S, "met": rows[TARGET]["median_s"] <= TARGET_S},
        "results": rows,
        "samples": samples,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(doc, indent=1) + "\n")
    lines = [
        f"# CLI start-up ({args.rounds} rounds, shuffled order each round; Python {doc['python']}, "
        f"{doc['cpus']} CPUs, load {load_before[0]:.1f} → {load_after[0]:.1f})",
        "",
        "| command | median s | p90 s | min s |",
        "|---|---|---|---|",
    ]
    for name, r in rows.items():
        lines.append(f"| {name} | {r['median_s']:.3f} | {r['p90_s']:.3f} | {r['min_s']:.3f} |")
    met = "met" if doc["target"]["met"] else "NOT met"
    lines += ["", f"Target: `{TARGET}` median ≤ {TARGET_S} s — {met}."]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
