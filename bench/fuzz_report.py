"""The fuzzer's findings: failure groups, minimal repros, the known items of issue #29, the result files.

A failing call's *signature* is its first problem's category, its command and the gist of the
problem (a traceback's exception line, an exit code) with paths and numbers blurred, so one bug
makes one group. Each group's shortest call is shrunk — option by option, re-run in-process —
while the signature stays: that is the group's repro. Groups matching an item other helpers of
issue #29 are fixing are labelled with it (:data:`KNOWN`); the rest are new.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import time
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from fuzz_exec import Call, Outcome, Zygote, check, execute

#: budget values whose refusal (or acceptance) issue #29's edge-wedge item covers
_EDGE_BUDGETS = {"nan", "NaN", "inf", "-inf", "1e-12", "5e-324", "1e308", "1e400", "0.0000001", "1e-7", "0", "-0",
                 "-1", "10001"}


#: the items of issue #29 other helpers are fixing (branch: what), as failures are labelled with them
FS_ITEM = "edge-fs: symlink loops / non-UTF-8 file names"
BUDGET_ITEM = "edge-wedge: budget values (nan, inf, tiny, huge) / request validation"
EMPTY_ITEM = "edge-wedge: empty repository"
UI_ITEM = "edge-wedge: ui of a nonexistent run exits 0"
JOBS_ITEM = "edge-wedge: jobs file validation"
DASH_ITEM = "edge-wedge: goal starting with '-'"
KNOWN_ITEMS = (FS_ITEM, BUDGET_ITEM, EMPTY_ITEM, UI_ITEM, JOBS_ITEM, DASH_ITEM)


@dataclass
class RunFinding:
    """A run the final check found stuck or failed."""

    workflow_id: str
    detail: str


@dataclass
class Group:
    """Failing calls with one signature, and the repro shrunk from them."""

    signature: str
    count: int
    known: str | None
    repro: list[str]
    surface: str
    repro_code: int | None
    repro_stderr: str
    reproduced: bool
    indexes: list[int] = field(default_factory=list)
    #: the stderr of the failing call itself (the repro's is that of the re-run, which may have passed)
    first_stderr: str = ""


def _value_after(argv: list[str], option: str) -> str | None:
    for i, arg in enumerate(argv[:-1]):
        if arg == option:
            return argv[i + 1]
    return None


def known_item(call: Call, outcome: Outcome, sandbox: str) -> str | None:
    """The issue #29 item (being fixed by another helper) this failure belongs to, if any."""
    argv = call.argv
    joined = "\0".join(argv)
    budget = _value_after(argv, "--budget-usd") or (argv[2] if call.command == "budget" and len(argv) > 2 else None)
    if any(f"/trees/{name}" in joined for name in ("file-loop", "non-utf8", "dir-loop")):
        return FS_ITEM
    if budget in _EDGE_BUDGETS:
        return BUDGET_ITEM
    if "/trees/empty" in joined:
        return EMPTY_ITEM
    if call.command == "ui" and outcome.code == 0:
        return UI_ITEM
    if call.command == "batch run":
        return JOBS_ITEM
    positional = [a for a in argv[1:3] if a.startswith("-") and a not in ("--json", "--detach")]
    if call.command in ("explore", "ask", "investigate") and positional and outcome.code == 2:
        return DASH_ITEM
    return None


_BLUR = [(re.compile(r"/tmp/fuzz-surfaces-\w+"), "$SANDBOX"), (re.compile(r"fz-[a-z]+-\d+"), "fz-ID"),
         (re.compile(r"\d+"), "N"), (re.compile(r"'[^']{40,}'"), "'…'")]


def signature(call: Call, problem: str) -> str:
    """Category · command · gist of ``problem``, blurred."""
    category, _, detail = problem.partition(": ")
    if category in ("multi-line-error", "half-written"):
        detail = ""
    for pattern, repl in _BLUR:
        detail = pattern.sub(repl, detail) if category != "unexpected-exit" else detail
    if category == "unexpected-exit":
        detail = detail.split(" (")[0] + " (" + call.probe + ")"
    return f"{category} · {call.command} · {detail[:160]}"


#: positional tokens (the command's words included) after the command's first word
_HEAD = {"explore": 3, "ask": 3, "investigate": 3, "map": 2, "mode": 3, "budget": 3, "status": 2, "log": 2,
         "result": 2, "ui": 2, "approve": 2, "reject": 2, "stop": 2, "batch": 3, "generate": 2, "stats": 2,
         "schema": 1, "ls": 1, "config": 2, "server": 1, "worker": 1, "mcp": 1}


def _units(argv: list[str], command: str) -> list[list[int]]:
    """Removable units of ``argv``: an option with its value, or one token; never the command and its positionals."""
    first = command.split()[-1] if command.startswith("repo-map") else command.split()[0]
    start = argv.index(first) if first in argv else len(argv)
    head = set(range(start, start + _HEAD.get(first, 1)))
    units, i = [], 0
    while i < len(argv):
        if i in head:
            i += 1
            continue
        if argv[i].startswith("--") and i + 1 < len(argv) and i + 1 not in head and not argv[i + 1].startswith("--"):
            units.append([i, i + 1])
            i += 2
        else:
            units.append([i])
            i += 1
    return units


def shrink(call: Call, sig: str, env: dict[str, str], cwd: str, zygote: Zygote, tries: int = 16) -> tuple[Call, int, str, bool]:
    """``call`` with every unit removed whose removal keeps ``sig``; (call, code, stderr, reproduced)."""

    def run(candidate: Call) -> tuple[bool, int, str]:
        code, _, out, err = execute(candidate, env, cwd, zygote)
        problems = check(candidate, code, out, err)
        return any(signature(candidate, p) == sig for p in problems), code, err

    base = Call(**{**asdict(call), "mode": "fork", "out_dir": None})
    base.out_dir = call.out_dir
    same, code, err = run(base)
    if not same:
        return base, code, err, False
    changed = True
    while changed and tries > 0:
        changed = False
        for unit in _units(base.argv, base.command):
            if tries <= 0:
                break
            tries -= 1
            trial = Call(**{**asdict(base), "argv": [a for j, a in enumerate(base.argv) if j not in unit]})
            ok, c, e = run(trial)
            if ok:
                base, code, err, changed = trial, c, e, True
                break
    return base, code, err, True


def shrink_groups(pairs: list[tuple[Call, Outcome]], env: dict[str, str], cwd: str, skip: bool,
                  budget_s: float = 420.0) -> list[Group]:
    """Group the failing calls by signature; shrink each group's shortest call (unless ``skip``), within ``budget_s``."""
    deadline = time.monotonic() + budget_s
    by_sig: dict[str, list[tuple[Call, Outcome]]] = defaultdict(list)
    for call, outcome in pairs:
        for problem in outcome.problems:
            by_sig[signature(call, problem)].append((call, outcome))
    zygote = None if skip or not by_sig else Zygote(env)
    groups = []
    try:
        for sig, members in sorted(by_sig.items(), key=lambda kv: -len(kv[1])):
            call, outcome = min(members, key=lambda m: (m[0].starts is not None, len("".join(m[0].argv))))
            known = known_item(call, outcome, cwd)
            repro, code, err, ok = call, outcome.code, outcome.stderr_tail, False
            if zygote is not None and "stuck" not in sig and time.monotonic() < deadline:
                repro, code, err, ok = shrink(call, sig, env, cwd, zygote)
            groups.append(Group(sig, len(members), known, repro.argv, call.surface, code, err[-1500:], ok,
                                [c.index for c, _ in members[:20]], outcome.stderr_tail[-1500:]))
    finally:
        if zygote is not None:
            zygote.close()
    return groups


def _shell(surface: str, argv: list[str], sandbox: str) -> str:
    text = " ".join(shlex.quote(os.fsencode(a).decode("utf-8", "backslashreplace")) for a in [surface, *argv])
    return text.replace(sandbox, "$SANDBOX")


def log_tracebacks(path: Path) -> dict[str, int]:
    """Tracebacks in the server + worker log, by their last line (blurred): a signal the worker could not
    decode is logged there and dropped, which no exit code shows (``navigator stop`` of a batch did that)."""
    try:
        text = path.read_text("utf-8", "replace")
    except OSError:
        return {}
    found: Counter[str] = Counter()
    for chunk in text.split("Traceback (most recent call last):")[1:]:
        tail = [ln for ln in chunk.splitlines() if ln.strip() and not ln.startswith((" ", "\t"))]
        line = tail[0] if tail else "?"
        for pattern, repl in _BLUR:
            line = pattern.sub(repl, line)
        found[line[:200]] += 1
    return dict(found.most_common())


def totals(pairs: list[tuple[Call, Outcome]], mcp: list[Any], runs: dict[str, Any],
           mcp_end: dict[str, Any]) -> dict[str, int]:
    """The bar's figures."""
    def count(prefix: str) -> int:
        return sum(any(p.startswith(prefix) for p in o.problems) for _, o in pairs)

    return {
        "cli_calls": len(pairs),
        "cli_in_process": sum(o.mode == "fork" for _, o in pairs),
        "cli_subprocess": sum(o.mode == "subprocess" for _, o in pairs),
        "mcp_calls": len(mcp),
        "tracebacks": count("traceback"),
        "stuck_calls": count("stuck"),
        "exit_codes_outside_table": count("bad-exit"),
        "unexpected_exit_codes": count("unexpected-exit"),
        "multi_line_errors": count("multi-line-error"),
        "half_written": count("half-written"),
        "bad_json": count("bad-json"),
        "repo_map_exit_1": count("exit-1"),
        "failing_calls": sum(bool(o.problems) for _, o in pairs),
        "mcp_problems": sum(bool(m.problems) for m in mcp) + int(bool(mcp_end.get("session_error"))),
        "stuck_runs": len({r["workflow_id"] for r in runs.get("stuck_after_stop", []) + runs.get("workflow_task_failing", [])}),
        "failed_runs": len(runs.get("failed_runs", [])),
        "worker_log_tracebacks": sum(runs.get("worker_log_tracebacks", {}).values()),
    }


def write_report(args: Any, pairs: list[tuple[Call, Outcome]], groups: list[Group], mcp: list[Any],
                 mcp_end: dict[str, Any], runs: dict[str, Any], wall_s: float, cli_wall_s: float,
                 sandbox: Path) -> tuple[Path, Path]:
    """``fuzz-surfaces-<stamp>.json`` and ``.md`` under ``args.out``."""
    per_command: dict[str, Counter[str]] = defaultdict(Counter)
    for call, outcome in pairs:
        c = per_command[f"{call.surface if call.surface == 'repo-map' else 'navigator'} {call.command}".replace(
            "repo-map repo-map", "repo-map")]
        c["calls"] += 1
        c[f"exit {outcome.code}"] += 1
        c[outcome.mode] += 1
        c["failing"] += bool(outcome.problems)
    sb = str(sandbox)
    by_index = {call.index: (call, outcome) for call, outcome in pairs}
    for finding in runs.get("failed_runs", []) + runs.get("stuck_after_stop", []) + runs.get("workflow_task_failing", []):
        found = re.search(r"fz-[a-z]+-(\d+)", finding["workflow_id"])
        if found and int(found.group(1)) in by_index:
            call, outcome = by_index[int(found.group(1))]
            finding["call"] = _shell(call.surface, call.argv, sb)
            finding["known"] = known_item(call, outcome, sb)
    seconds: dict[str, list[float]] = defaultdict(list)
    for call, outcome in pairs:
        seconds[call.command].append(outcome.seconds)
    data = {
        "config": {k: str(v) for k, v in vars(args).items()},
        "loadavg": os.getloadavg(), "wall_s": round(wall_s, 1), "cli_wall_s": round(cli_wall_s, 1),
        "totals": totals(pairs, mcp, runs, mcp_end),
        "per_command": {k: dict(sorted(v.items())) for k, v in sorted(per_command.items())},
        "exit_codes": dict(sorted(Counter(o.code for _, o in pairs).items())),
        "mean_seconds": {k: round(sum(v) / len(v), 2) for k, v in sorted(seconds.items())},
        "mcp": {"kinds": dict(Counter(m.kind for m in mcp)), "per_tool": dict(Counter(m.tool for m in mcp)),
                "problems": [asdict(m) for m in mcp if m.problems][:30], "end": mcp_end},
        "runs": runs,
        "groups": [{**asdict(g), "repro_shell": _shell(g.surface, g.repro, sb),
                    "repro_stderr": g.repro_stderr.replace(sb, "$SANDBOX"),
                    "first_stderr": g.first_stderr.replace(sb, "$SANDBOX")} for g in groups],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S") + ("-smoke" if args.smoke else "")
    json_path = args.out / f"fuzz-surfaces-{stamp}.json"
    json_path.write_text(json.dumps(data, indent=1, default=str) + "\n")
    md_path = json_path.with_suffix(".md")
    md_path.write_text(_markdown(data))
    return json_path, md_path


def _markdown(data: dict[str, Any]) -> str:
    t = data["totals"]
    lines = [f"# Fuzzing the CLI and MCP surfaces ({time.strftime('%Y-%m-%d %H:%M')})", "",
             f"`python bench/fuzz_surfaces.py` seed {data['config']['seed']}, {data['config']['lanes']} lanes, "
             f"{data['wall_s']} s wall, load average at the end {data['loadavg'][0]:.1f}. In-process calls: a fork "
             "of a warm interpreter entering the console script's `main`; subprocess calls: the installed "
             "`navigator` / `repo-map` scripts. One `navigator server --headless` and one `navigator worker`.", "",
             "| figure | value |", "|---|---|"]
    lines += [f"| {k.replace('_', ' ')} | {v} |" for k, v in t.items()]
    lines += ["", "## Per command", "", "| command | calls | in-process | subprocess | exit codes | failing |",
              "|---|---|---|---|---|---|"]
    for name, c in data["per_command"].items():
        codes = ", ".join(f"{k[5:]}×{v}" for k, v in c.items() if k.startswith("exit "))
        lines.append(f"| `{name}` | {c['calls']} | {c.get('fork', 0)} | {c.get('subprocess', 0)} | {codes} | "
                     f"{c.get('failing', 0)} |")
    lines += ["", "## Failures (one group per signature; repro shrunk and re-run in-process)", ""]
    if not data["groups"]:
        lines.append("None.")
    for g in data["groups"]:
        label = f"known: {g['known']}" if g["known"] else "**NEW**"
        lines += [f"### {g['signature']} — {g['count']} call(s), {label}", "",
                  "```", g["repro_shell"], f"# exit {g['repro_code']}"
                  + ("" if g["reproduced"] else " (not reproduced on re-run / not shrunk)")]
        lines += [f"# {ln}" for ln in g["repro_stderr"].strip().splitlines()[-6:]] + ["```", ""]
        if not g["reproduced"] and g.get("first_stderr", "").strip():
            lines += ["stderr of the failing call:", "", "```"]
            lines += [ln for ln in g["first_stderr"].strip().splitlines()[-6:]] + ["```", ""]
    runs = data["runs"]
    lines += ["## Runs", "", f"Open at the end: {runs.get('open_at_end')} (stopped with `navigator stop`, exit codes "
              f"{runs.get('stop_exit_codes')}); stuck after {180} s: {len(runs.get('stuck_after_stop', []))}; "
              f"workflow task failing: {len(runs.get('workflow_task_failing', []))}; failed runs: "
              f"{len(runs.get('failed_runs', []))}.", ""]
    for line, n in runs.get("worker_log_tracebacks", {}).items():
        lines.append(f"- worker / server log traceback ×{n}: `{line}`")
    for finding in (runs.get("failed_runs", [])[:30] + runs.get("stuck_after_stop", [])[:30]
                    + runs.get("workflow_task_failing", [])[:30]):
        label = f"known: {finding['known']}" if finding.get("known") else "**NEW**"
        lines.append(f"- `{finding['workflow_id']}` ({label}): {finding['detail']}"
                     + (f"\n  started by `{finding['call']}`" if finding.get("call") else ""))
    m = data["mcp"]
    lines += ["", "## MCP", "", f"Outcomes: {m['kinds']}; per tool: {m['per_tool']}; server end: "
              f"{ {k: v for k, v in m['end'].items() if k != 'stderr_tail'} }", ""]
    for p in m["problems"]:
        lines.append(f"- {p['tool']} {p['arguments']}: {p['problems']}")
    return "\n".join(lines) + "\n"
