"""Where the changed lines go that a map does not show (dev split only; in process, a labelled shortcut).

``python bench/quality_gaps.py [--budget 8192] [--set policy.X=V ...] [--out FILE.json]``

For each of the 180 quality dev tasks, the offline navigator's map (``quality_tune.explore``, the
pack's frame left out as in ``quality_tune``) is parsed with the benchmark's scorer and each gold
line is put in one class: shown in full (``verbatim``), shown as a signature or doc line
(``sig_doc``), in a file the map shows but not on a shown line (``file_shown_line_not``), in a file
listed by its path only (``path_only``), in a file the map does not list (``absent``). Prints the
mean share per class over tasks, and the share of the map's visible lines that are in gold files.
And where the map's tokens go (``spend``): per task, the tokens of files shown whole (L4) and of
files shown through expansions, each split by whether the file holds changed lines, with the share
of the task's changed lines each kind shows.
It refuses the test split (it reads ``split == "dev"`` tasks only).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import quality_tune as qt  # noqa: E402
from quality_score import parse_context, read_source  # noqa: E402
from taskset import load_tasks, repo_dir  # noqa: E402

from durable_navigator.repomap import RepoMap  # noqa: E402
from durable_navigator.repomap.tokens import count_tokens  # noqa: E402

CLASSES = ("verbatim", "sig_doc", "file_shown_line_not", "path_only", "absent")
SPEND = ("whole_gold", "whole_other", "expanded_gold", "expanded_other", "listed")
_FILE_LINE = re.compile(r"^(\S.*?) \[L(\d) ")


def spend(text: str, parsed: object, gold_lines: dict[str, list[int]]) -> dict[str, float]:
    """Tokens of the map per kind of shown file (``SPEND``: whole, expanded, or listed without
    code; gold = the file holds changed lines) and, per kind, the share of the changed lines it shows."""
    blocks: list[tuple[str, int, list[str]]] = []
    for line in text.splitlines():
        m = _FILE_LINE.match(line)
        if m and not line.startswith("# repo-map"):
            blocks.append((m.group(1), int(m.group(2)), []))
        elif blocks:
            blocks[-1][2].append(line)
    total = sum(len(v) for v in gold_lines.values()) or 1
    out = {f"{k}_{w}": 0.0 for k in SPEND for w in ("tokens", "recall")}
    for path, level, body in blocks:
        code = any(b.startswith("```") for b in body)
        kind = "listed" if not code else ("whole" if level == 4 else "expanded") + (
            "_gold" if path in gold_lines else "_other")
        out[f"{kind}_tokens"] += count_tokens("\n".join([path, *body]))
        sf = parsed.files.get(path)  # type: ignore[attr-defined]
        if sf is not None:
            out[f"{kind}_recall"] += sum(1 for n in gold_lines.get(path, ()) if n in sf.verbatim) / total
    return out


def classify(parsed: object, gold_lines: dict[str, list[int]]) -> dict[str, float]:
    """Share of the task's gold lines in each class (see the module docstring)."""
    c: Counter[str] = Counter()
    total = 0
    for path, numbers in gold_lines.items():
        sf = parsed.files.get(path)  # type: ignore[attr-defined]
        for n in numbers:
            total += 1
            if sf is None:
                c["absent"] += 1
            elif not sf.visible:
                c["path_only"] += 1
            elif n in sf.verbatim:
                c["verbatim"] += 1
            elif n in sf.visible:
                c["sig_doc"] += 1
            else:
                c["file_shown_line_not"] += 1
    return {k: c[k] / total if total else 0.0 for k in CLASSES}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=int, default=8192)
    ap.add_argument("--set", action="append", default=[], metavar="policy.X=V",
                    help="override an OfflinePolicyConfig field for this run (as quality_tune --set)")
    ap.add_argument("--out", type=Path, default=None, help="per-task rows as JSON")
    args = ap.parse_args(argv)
    for item in args.set:
        key, _, value = item.partition("=")
        scope, _, field = key.partition(".")
        if scope != "policy":
            raise SystemExit(f"--set {item}: only policy.X=V here")
        qt.POLICY = qt._override(qt.POLICY, field, value)
    tasks = qt._unpacked([t for t in load_tasks(HERE / "tasks" / "quality_tasks.jsonl") if t.split == "dev"])
    by_repo = defaultdict(list)
    for t in tasks:
        by_repo[repo_dir(t)].append(t)
    rows = []
    for root, group in by_repo.items():
        engine = RepoMap.open(root, config=qt.ENGINE, cache_dir=qt.CACHE)
        source = read_source(root)
        for task in group:
            text, _trace = qt.explore(engine, task.goal, args.budget)
            parsed = parse_context(text, source)
            vis_all = sum(len(sf.visible) for sf in parsed.files.values())
            vis_gold = sum(len(parsed.files[p].visible) for p in task.gold_lines if p in parsed.files)
            rows.append({"task": task.id, "repo": task.repo, **classify(parsed, task.gold_lines),
                         **spend(text, parsed, task.gold_lines),
                         "gold_share_of_visible": vis_gold / max(1, vis_all), "files_listed": len(parsed.files),
                         "files_visible": sum(1 for sf in parsed.files.values() if sf.visible)})
    keys = (*CLASSES, "gold_share_of_visible", "files_listed", "files_visible",
            *(f"{k}_{w}" for k in SPEND for w in ("tokens", "recall")))
    summary = {"budget": args.budget, "tasks": len(rows),
               **{k: round(statistics.fmean(r[k] for r in rows), 3) for k in keys}}
    print(json.dumps(summary, indent=1))
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "rows": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
