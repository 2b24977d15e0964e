"""Generators of fuzzed CLI calls: one per ``navigator`` / ``repo-map`` command (see README's command table).

Each generator draws the arguments of one call from :mod:`fuzz_inputs`' edge values and zoo. Most
calls are refusals; a *near-valid* share has every value valid but one, so it reaches the checks a
user's typo would reach. Calls that can start a run name it (``--id fz-…``), are bounded
(``--max-iterations 1-2``, ``--max-stages 1``, one job) and mostly ``--detach``; the driver stops
whatever is still running at the end.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from fuzz_exec import Call
from fuzz_inputs import BAD_IDS, BUDGETS, INTS, MODELS, MODES, PLANNING, STATUSES, TEXTS, TOKENS, Zoo

#: options no command has, and odd spellings of real ones
UNKNOWN = ["--nope", "-z", "--json=1", "--JSON", "--budget", "--token", "--", "-", "--help=1", "-hh", "--max-iter=2"]
WEIRD_GLOBAL = [["--log-level", "loud"], ["--log-level", ""], ["--log-level", "debug"], ["--log-json"],
                ["--log-console"], ["--config", "/no/such/navigator.yaml"], ["--version"], ["--help"]]


@dataclass
class State:
    """What the driver knows while it fuzzes: runs it started (live, parked for a verdict, done)."""

    zoo: Zoo
    out_root: Path
    live: list[str] = field(default_factory=list)
    parked: list[str] = field(default_factory=list)
    finished: list[str] = field(default_factory=list)
    batches: list[str] = field(default_factory=list)
    counter: itertools.count = field(default_factory=itertools.count)

    def out_dir(self) -> str:
        return str(self.out_root / f"out-{next(self.counter)}")

    def some_id(self, rng: random.Random, settled_only: bool = False) -> tuple[str, str]:
        """A run id and what it is: a bad one, a finished run, or (unless ``settled_only``) a live one."""
        pools = [("bad", BAD_IDS), ("finished", self.finished), ("batch-as-run", self.batches)]
        if not settled_only:
            pools += [("live", self.live), ("parked", self.parked)]
        pools = [(k, p) for k, p in pools if p]
        kind, pool = rng.choice(pools)
        return rng.choice(pool), kind


Gen = Callable[[random.Random, State, int], Call]


def _opts(rng: random.Random, table: list[tuple[str, Callable[[], str | None]]], rate: float) -> list[str]:
    """Each option of ``table`` with probability ``rate`` (a None value: a flag)."""
    argv: list[str] = []
    for name, value in table:
        if rng.random() < rate:
            v = value()
            argv += [name] if v is None else [name, v]
    return argv


def _noise(rng: random.Random, argv: list[str]) -> list[str]:
    """Sometimes an unknown option, a repeated --json, --help or a weird root option."""
    roll = rng.random()
    if roll < 0.06:
        argv = [*argv, rng.choice(UNKNOWN)]
    elif roll < 0.08:
        argv = [*argv, "--json", "--json"]
    elif roll < 0.1:
        argv = [*argv, "--help"]
    return argv


def _root(rng: random.Random, state: State, argv: list[str], read_only: bool) -> list[str]:
    """Root options before the command; a fuzzed navigator.yaml only for commands that start nothing."""
    if rng.random() < 0.05:
        return [*rng.choice(WEIRD_GLOBAL), *argv]
    if read_only and rng.random() < 0.08:
        return ["--config", state.zoo.file("config", rng), *argv]
    return argv


def _pick(rng: random.Random, values: list[str]) -> Callable[[], str]:
    return lambda: rng.choice(values)


def gen_explore(rng: random.Random, state: State, i: int) -> Call:
    """``explore``: fuzz mode (everything random) or near-valid (bounded, mostly detached)."""
    out = state.out_dir()
    if rng.random() < 0.25:  # near-valid
        wid = f"fz-explore-{i}"
        interactive = rng.random() < 0.25
        argv = ["explore", str(state.zoo.good_repo), rng.choice(TEXTS[7:9] + TEXTS[18:19]), "--id", wid,
                "--max-iterations", rng.choice(["1", "2"]), "--out", out, "--json"]
        detach = interactive or rng.random() < 0.9
        argv += ["--detach"] if detach else []
        argv += ["--interactive"] if interactive else []
        bad = rng.choice(["budget", "tokens", "model", "repo", "goal", "planning", "profile", "branches", "none",
                          "none"])
        argv = _near_valid(rng, state, argv, bad)
        kind = "parked" if interactive else "live" if detach else "finished"
        return Call(i, "navigator", "explore", _noise(rng, argv), timeout=240.0 if not detach else 90.0,
                    starts=f"{kind}:{wid}", out_dir=out, probe=f"near-valid explore, bad {bad}")
    argv = ["explore", state.zoo.tree(rng), rng.choice(TEXTS)]
    argv += _opts(rng, [("--budget-usd", _pick(rng, BUDGETS)), ("--tokens", _pick(rng, TOKENS)),
                        ("--model", _pick(rng, MODELS)), ("--max-iterations", _pick(rng, INTS)),
                        ("--profile", lambda: state.zoo.file("profile", rng)), ("--planning", _pick(rng, PLANNING)),
                        ("--review", lambda: None), ("--branches", _pick(rng, INTS)),
                        ("--json", lambda: None)], 0.35)
    # a call that is valid by chance must stay bounded and leave nothing running behind the driver's back
    wid = f"fz-explore-{i}"
    argv += ["--detach", "--max-iterations", "1", "--out", out, "--id", wid]
    return Call(i, "navigator", "explore", _noise(rng, argv), timeout=90.0, out_dir=out, probe="fuzzed explore",
                starts=f"live:{wid}")


def _near_valid(rng: random.Random, state: State, argv: list[str], bad: str) -> list[str]:
    """``argv`` with one value replaced by an edge value."""
    if bad == "budget":
        return [*argv, "--budget-usd", rng.choice(BUDGETS)]
    if bad == "tokens":
        return [*argv, "--tokens", rng.choice(TOKENS)]
    if bad == "model":
        return [*argv, "--model", rng.choice(MODELS)]
    if bad == "repo":
        argv = list(argv)
        argv[1] = str(rng.choice(list(state.zoo.trees.values())))
        return argv
    if bad == "goal":
        argv = list(argv)
        argv[2] = rng.choice(TEXTS)
        return argv
    if bad == "planning":
        return [*argv, "--planning", rng.choice(PLANNING)]
    if bad == "profile":
        return [*argv, "--profile", state.zoo.file("profile", rng)]
    if bad == "branches":
        return [*argv, "--branches", rng.choice(INTS)]
    return argv


def gen_ask(rng: random.Random, state: State, i: int) -> Call:
    """``ask``: bounded research runs (detached) or refusals."""
    out = state.out_dir()
    wid = f"fz-ask-{i}"
    argv = ["ask", state.zoo.tree(rng) if rng.random() < 0.6 else str(state.zoo.good_repo), rng.choice(TEXTS)]
    argv += _opts(rng, [("--budget-usd", _pick(rng, BUDGETS)), ("--model", _pick(rng, MODELS)),
                        ("--profile", _pick(rng, ["researcher", "reviewer", "nonsense", "", "stage-worker"])),
                        ("--profiles", lambda: state.zoo.file("profiles", rng)), ("--json", lambda: None)], 0.3)
    argv += ["--id", wid, "--out", out, "--detach"]
    return Call(i, "navigator", "ask", _noise(rng, argv), timeout=90.0, out_dir=out, starts=f"live:{wid}",
                probe="fuzzed ask")


def gen_investigate(rng: random.Random, state: State, i: int) -> Call:
    """``investigate``: one stage at most, detached; interactive ones park on their plan."""
    out = state.out_dir()
    wid = f"fz-inv-{i}"
    interactive = rng.random() < 0.3
    argv = ["investigate", state.zoo.tree(rng) if rng.random() < 0.6 else str(state.zoo.good_repo), rng.choice(TEXTS)]
    argv += _opts(rng, [("--budget-usd", _pick(rng, BUDGETS)), ("--model", _pick(rng, MODELS)),
                        ("--branches", _pick(rng, INTS)), ("--worker", _pick(rng, ["researcher", "nope", ""])),
                        ("--profiles", lambda: state.zoo.file("profiles", rng)), ("--json", lambda: None)], 0.3)
    argv += ["--max-stages", rng.choice(["1", "1", "0", "13", "x"]), "--id", wid, "--out", out, "--detach"]
    argv += ["--interactive"] if interactive else []
    return Call(i, "navigator", "investigate", _noise(rng, argv), timeout=90.0, out_dir=out,
                starts=f"{'parked' if interactive else 'live'}:{wid}", probe="fuzzed investigate")


def gen_read(rng: random.Random, state: State, i: int) -> Call:
    """``status`` / ``log`` / ``result`` / ``ui`` of a run (``--watch`` / ``--wait`` only on settled ids)."""
    command = rng.choice(["status", "log", "result", "ui"])
    follow = command in ("status", "result") and rng.random() < 0.2
    wid, kind = state.some_id(rng, settled_only=follow)
    argv = [command, wid]
    if follow:
        argv.append("--watch" if command == "status" else "--wait")
    if rng.random() < 0.5:
        argv.append("--json")
    if kind == "batch-as-run" and command == "status":
        # a batch is a run: `status` describes it like any other (exit 0); the pool also holds ids of batches
        # whose `batch run` was refused and never started (exit 4); log/result/ui need an exploration's
        expect: frozenset[int] | None = frozenset({0, 4})
    else:
        expect = (frozenset({4, 2}) if kind in ("bad", "batch-as-run")
                  else frozenset({0, 1} | ({2} if command == "ui" else set())) if kind == "finished" else None)
    full = _noise(rng, _root(rng, state, argv, True))
    # a fuzzed root option (a broken --config, --version) or noise decides the exit code: no expectation
    plain = full == argv and len(argv) <= 3 and "--" not in wid
    return Call(i, "navigator", command, full, timeout=120.0 if follow else 60.0,
                expect=expect if plain else None, probe=f"{command} of a {kind} id")


def gen_ls(rng: random.Random, state: State, i: int) -> Call:
    """``ls`` with filters."""
    argv = ["ls", *_opts(rng, [("--status", _pick(rng, STATUSES)), ("--repo", lambda: state.zoo.tree(rng)),
                               ("--limit", _pick(rng, INTS)), ("--json", lambda: None)], 0.5)]
    return Call(i, "navigator", "ls", _noise(rng, _root(rng, state, argv, True)), probe="ls")


def gen_verdict(rng: random.Random, state: State, i: int) -> Call:
    """``approve`` / ``reject`` / ``mode`` / ``budget`` on any id, parked runs most often."""
    command = rng.choice(["approve", "reject", "mode", "budget"])
    if state.parked and rng.random() < 0.5:
        wid, kind = rng.choice(state.parked), "parked"
    else:
        wid, kind = state.some_id(rng)
    argv = [command, wid]
    if command == "approve":
        argv += _opts(rng, [("--turn", _pick(rng, INTS)), ("--plan", lambda: None),
                            ("--edit", lambda: state.zoo.file("stageplan", rng)), ("--sender", _pick(rng, TEXTS))], 0.3)
    elif command == "reject":
        argv += _opts(rng, [("-f", _pick(rng, TEXTS)), ("--turn", _pick(rng, INTS)), ("--plan", lambda: None)], 0.4)
    elif command == "mode":
        argv.append(rng.choice(MODES))
    else:
        argv.append(rng.choice(BUDGETS))
    argv += ["--json"] if rng.random() < 0.3 else []
    return Call(i, "navigator", command, _noise(rng, argv), probe=f"{command} on a {kind} id")


def gen_stop(rng: random.Random, state: State, i: int) -> Call:
    """``stop`` of any id (the driver's own cleanup uses the same command)."""
    wid, kind = state.some_id(rng)
    argv = ["stop", wid, *_opts(rng, [("--reason", _pick(rng, TEXTS)), ("--sender", _pick(rng, TEXTS)),
                                      ("--json", lambda: None)], 0.4)]
    return Call(i, "navigator", "stop", _noise(rng, argv), probe=f"stop on a {kind} id")


def gen_batch(rng: random.Random, state: State, i: int) -> Call:
    """``batch run`` of a fuzzed jobs file (detached, named) or ``batch status|results|ls|stop``."""
    sub = rng.choice(["run", "run", "run", "status", "results", "ls", "stop"])
    if sub == "run":
        out, bid = state.out_dir(), f"fz-batch-{i}"
        argv = ["batch", "run", state.zoo.file("jobs", rng), "--id", bid, "--out", out, "--detach"]
        argv += _opts(rng, [("--budget-usd", _pick(rng, BUDGETS)), ("--concurrency", _pick(rng, INTS)),
                            ("--no-check-repos", lambda: None), ("--json", lambda: None)], 0.3)
        return Call(i, "navigator", "batch run", _noise(rng, argv), timeout=90.0, out_dir=out, starts=f"batch:{bid}",
                    probe="batch run of a fuzzed jobs file")
    if sub == "ls":
        argv = ["batch", "ls", *_opts(rng, [("--limit", _pick(rng, INTS)), ("--json", lambda: None)], 0.5)]
    else:
        bid = rng.choice(state.batches + BAD_IDS[:6] + state.finished[:2]) if state.batches else rng.choice(BAD_IDS)
        argv = ["batch", sub, bid]
        argv += ["--json"] if sub != "stop" and rng.random() < 0.5 else []
        argv += ["--reason", rng.choice(TEXTS)] if sub == "stop" and rng.random() < 0.4 else []
    return Call(i, "navigator", f"batch {sub}", _noise(rng, argv), probe=f"batch {sub}")


def gen_map(rng: random.Random, state: State, i: int) -> Call:
    """``navigator map`` of every tree, with fuzzed goal / plan / tokens."""
    argv = ["map", state.zoo.tree(rng), *_opts(rng, [("--goal", _pick(rng, TEXTS)),
                                                     ("--plan", lambda: state.zoo.file("plan", rng)),
                                                     ("--tokens", _pick(rng, TOKENS)), ("--json", lambda: None)], 0.4)]
    return Call(i, "navigator", "map", _noise(rng, _root(rng, state, argv, True)), timeout=120.0, probe="map")


def gen_repo_map(rng: random.Random, state: State, i: int) -> Call:
    """``repo-map generate|schema|stats``."""
    sub = rng.choice(["generate", "generate", "generate", "stats", "schema"])
    cache = lambda: rng.choice([str(state.out_root / "rm-cache"), str(state.zoo.trees["file_not_dir"]), "/dev/null",
                                str(state.zoo.missing / "c"), ""])  # noqa: E731
    if sub == "schema":
        argv = ["schema", *([rng.choice(UNKNOWN)] if rng.random() < 0.3 else [])]
    elif sub == "stats":
        argv = ["stats", state.zoo.tree(rng), *_opts(rng, [("--cache-dir", cache), ("--jobs", _pick(rng, INTS))], 0.3)]
    else:
        argv = ["generate", state.zoo.tree(rng)]
        argv += _opts(rng, [("--plan", lambda: state.zoo.file("plan", rng)), ("--budget", _pick(rng, TOKENS)),
                            ("--goal", _pick(rng, TEXTS)), ("--format", _pick(rng, ["text", "json", "xml", ""])),
                            ("--cache-dir", cache), ("--jobs", _pick(rng, INTS)), ("--timings", lambda: None)], 0.35)
    return Call(i, "repo-map", f"repo-map {sub}", _noise(rng, argv), timeout=120.0, probe=f"repo-map {sub}")


def gen_misc(rng: random.Random, state: State, i: int) -> Call:
    """The rest: root, ``config``, ``server`` (status and refusals only), ``worker`` and ``mcp`` refusals."""
    pick = rng.choice([0, 1, 2, 3, 4, 5, 8] * 3 + [6, 7])  # `mcp` (6, 7) opens a Temporal session: a tenth
    if pick == 0:
        argv, cmd = rng.choice([[], ["--version"], ["--help"], ["explroe"], ["--nope"], ["help"], [""]]), "root"
    elif pick == 1:
        argv, cmd = _root(rng, state, ["config", "show", *(["--json"] if rng.random() < 0.5 else [])], True), "config"
    elif pick == 2:
        argv, cmd = ["config", rng.choice(["", "edit", "--help", "show --json"])], "config"
    elif pick == 3:
        argv, cmd = ["server", "status", *(["--json"] if rng.random() < 0.5 else [])], "server status"
    elif pick == 4:
        bad = rng.choice([["--port", "abc"], ["--port", "-1"], ["--ui-port", "x"], ["--idle-timeout", "0"],
                          ["--idle-timeout", "-5"], ["--idle-timeout", "abc"], ["--ip", ""], ["--nope"]])
        argv, cmd = ["server", *bad], "server"
    elif pick == 5:
        bad = rng.choice([["--max-concurrent-activities", v] for v in ("0", "-1", "abc", "")]
                         + [["--health-port", v] for v in ("0", "70000", "abc", "-1")] + [["--nope"]])
        argv, cmd = ["worker", *bad], "worker"
    elif pick in (6, 7):
        opts = _opts(rng, [("--allow-root", lambda: state.zoo.tree(rng)), ("--out", lambda: state.zoo.tree(rng))], 0.5)
        if rng.random() < 0.4:
            opts += ["--http", *rng.choice([["--port", "-1"], ["--port", "70000"], ["--port", "abc"],
                                            ["--host", "999.1.1.1", "--port", "0"], ["--host", "no such host", "--port", "0"]])]
        argv, cmd = ["mcp", *opts], "mcp"
    else:
        argv, cmd = [rng.choice(["status", "approve", "budget", "mode", "map", "explore", "ask"])], "missing-argument"
    return Call(i, "navigator", cmd, _noise(rng, argv), timeout=60.0, probe=cmd)


#: generator -> weight in the mix
MIX: list[tuple[Gen, float]] = [(gen_explore, 14), (gen_ask, 3), (gen_investigate, 3), (gen_read, 16), (gen_ls, 5),
                                (gen_verdict, 12), (gen_stop, 5), (gen_batch, 7), (gen_map, 9), (gen_repo_map, 9),
                                (gen_misc, 9)]


def generate(rng: random.Random, state: State, i: int) -> Call:
    """One call of the weighted mix."""
    gens, weights = zip(*MIX)
    return rng.choices(gens, weights)[0](rng, state, i)
