"""Are the packs a user gets byte-identical before and after a refactor? (issue #30's identity check)

Runs the installed CLI the way a user does — ``navigator explore REPO GOAL`` on the embedded default
(embedded Temporal, offline model, no API key, default flags), one command per goal, all against one
background server like a user's shell — and records each ``context.md`` with the parts that differ
between any two runs by nature (the workflow id, clock times, durations) masked. Run it once per
checkout and compare the two JSON files::

    python bench/pack_identity.py --navigator /work/wt/a/.venv/bin/navigator --out a.json
    python bench/pack_identity.py --navigator /work/wt/b/.venv/bin/navigator --out b.json
    python bench/pack_identity.py --compare a.json b.json

The repositories are fixed checkouts outside either tree (the fixture repository, a Go and a Python
project of the quality corpus), so both runs map the same bytes.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))  # the package, when run from a checkout

from durable_navigator.workers.devserver import free_port  # noqa: E402

#: this repository at a fixed commit: a 300-file Python tree every clone can unpack (``git archive``)
SELF_COMMIT = "52b6c24"
#: (repository, goal): fixed trees, goals of every form (behaviour, a symbol, an error text, a file)
CASES: tuple[tuple[str, str], ...] = (
    ("tests/fixtures/navigator_repo", "how does the navigator enforce the USD budget?"),
    ("tests/fixtures/navigator_repo", "where are token counts recorded in the ledger"),
    ("tests/fixtures/navigator_repo", "add a retry to the model call when the provider times out"),
    ("tests/fixtures/repos/go", "how are requests routed to handlers?"),
    (f"self@{SELF_COMMIT}", "why are tokens double-counted in budget enforcement?"),
    (f"self@{SELF_COMMIT}", "RepoMap.render ignores the focus paths of the flight plan"),
    (f"self@{SELF_COMMIT}", "the embedded Temporal server does not stop when the worker is idle"),
    (f"self@{SELF_COMMIT}", "where does navigator batch resume a stopped batch?"),
)


#: what differs between two runs of the same request by nature
_VOLATILE = (
    (re.compile(r"\bnav-[0-9A-Za-z._-]+"), "nav-<id>"),
    (re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s)\b"), "<duration>"),
)


def normalized(text: str) -> str:
    """``text`` with the run id, clock times and durations masked."""
    for pattern, mask in _VOLATILE:
        text = pattern.sub(mask, text)
    return text


def _environment(root: Path) -> dict[str, str]:
    """A private config, state and embedded port: never another user's server, never their cache."""
    env = dict(os.environ)
    for name in ("STATE", "CACHE", "CONFIG", "DATA"):
        env[f"XDG_{name}_HOME"] = str(root / name.lower())
    config = root / "config" / "durable-navigator" / "navigator.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f"embedded: {{port: {free_port()}, ui_port: {free_port()}, idle_timeout_s: 600}}\n")
    env.pop("TEMPORAL_ADDRESS", None)
    return env


def _tree(checkout: Path, repo: str, root: Path) -> Path:
    """The case's repository as a copy under ``root``, outside any git repository: the same path and bytes
    in every run (inside the checkout, the map's index id would name the checkout's own commit)."""
    tree = root / repo.replace("/", "_")
    if tree.exists():
        return tree
    if repo.startswith("self@"):
        tree.mkdir(parents=True)
        archive = subprocess.run(["git", "-C", str(checkout), "archive", SELF_COMMIT], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
    else:
        shutil.copytree(checkout / repo, tree)
    return tree


def run_cases(navigator: Path, checkout: Path, work: Path) -> dict[str, dict[str, str]]:
    """Each case's masked ``context.md`` and its digest, keyed ``repo :: goal``; ``work`` is emptied first."""
    out: dict[str, dict[str, str]] = {}
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = _environment(work)
    try:
        for repo, goal in CASES:
            path = _tree(checkout, repo, work / "trees")
            dest = work / "out" / str(len(out))
            done = subprocess.run([str(navigator), "explore", str(path), goal, "--out", str(dest)], env=env,
                                  capture_output=True, text=True, timeout=900, check=False)
            if done.returncode != 0:
                raise SystemExit(f"{repo} :: {goal}: exit {done.returncode}\n{done.stderr[-2000:]}")
            [context] = sorted(dest.rglob("context.md"))
            text = normalized(context.read_text())
            key = f"{Path(repo).name} :: {goal}"
            out[key] = {"sha256": hashlib.sha256(text.encode()).hexdigest(), "text": text}
            print(f"{len(out)}/{len(CASES)} {key[:60]}: {out[key]['sha256'][:12]}", file=sys.stderr, flush=True)
    finally:
        subprocess.run([str(navigator), "server", "stop"], env=env, capture_output=True, timeout=120, check=False)
    return out


def compare(a: Path, b: Path) -> int:
    """Print which packs differ (with the first differing line); exit 1 when any does."""
    left, right = json.loads(a.read_text()), json.loads(b.read_text())
    differ = 0
    for key in sorted(set(left) | set(right)):
        if left.get(key, {}).get("sha256") == right.get(key, {}).get("sha256"):
            print(f"same     {key}")
            continue
        differ += 1
        lines = zip(left.get(key, {}).get("text", "").splitlines(), right.get(key, {}).get("text", "").splitlines())
        first = next(((i, x, y) for i, (x, y) in enumerate(lines) if x != y), None)
        print(f"DIFFERS  {key}" + (f"\n  line {first[0] + 1}:\n  - {first[1][:160]}\n  + {first[2][:160]}" if first else ""))
    print(f"{len(set(left) | set(right)) - differ} identical, {differ} different")
    return 1 if differ else 0


def tempfile_root() -> str:
    """The system's temporary folder."""
    import tempfile

    return tempfile.gettempdir()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--navigator", type=Path, help="the installed CLI of the checkout under test")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--work", type=Path, default=Path(tempfile_root()) / "pack-identity",
                    help="emptied and reused: the repositories are copied here, at the same path in every run")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args()
    if args.compare:
        raise SystemExit(compare(*args.compare))
    if args.navigator is None or args.out is None:
        ap.error("pass --navigator and --out (or --compare BEFORE AFTER)")
    checkout = args.navigator.resolve().parent.parent.parent  # <checkout>/.venv/bin/navigator
    result = run_cases(args.navigator, checkout, args.work)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
