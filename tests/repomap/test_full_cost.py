"""The whole-file (level-4) cost counted when a render needs it, not at index time.

The index keeps the exact count of small files only (``index.EAGER_FULL_BYTES``) and a
proven lower bound of the rest; ``fit.must_price`` names the files whose exact count can
change the fit, the renderer counts those from the file as it is now, and the engine
stores the counts in the cache (``full_costs``). Maps must be the same as with every
count made at index time.
"""

from __future__ import annotations

import random
import shutil
import sqlite3
import sysconfig
from pathlib import Path

import pytest

from durable_navigator.navtypes.flightplan import FlightPlan, FocusPath, FocusSymbol, Level, VerbosityRule
from durable_navigator.repomap import RepoMap
from durable_navigator.repomap import index as index_mod
from durable_navigator.repomap.cache import SCHEMA
from durable_navigator.repomap.config import EngineConfig
from durable_navigator.repomap.fit import FileCosts, Fitter, must_price
from durable_navigator.repomap.index import REC, _full_lower_bound, full_bounds, full_cost, index_file
from durable_navigator.repomap.tokens import count_tokens

STDLIB = Path(sysconfig.get_paths()["stdlib"])
GOAL = "parse a configuration file with sections and interpolate values"
SOURCES = ["configparser.py", "argparse.py", "shlex.py", "textwrap.py", "fnmatch.py", "glob.py", "csv.py",
           "json/__init__.py", "json/decoder.py", "json/encoder.py", "json/scanner.py", "json/tool.py",
           "email/header.py", "email/utils.py", "email/_parseaddr.py", "string.py", "tomllib/_parser.py",
           "difflib.py", "pprint.py", "calendar.py", "locale.py", "gettext.py", "netrc.py", "colorsys.py"]


def _repo(dest: Path) -> Path:
    root = dest / "repo"
    for rel in SOURCES:
        src = STDLIB / rel
        if src.exists():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, root / rel)
    (root / "notes.txt").write_text("caf\u00e9 na\u00efve \u4e2d\u6587 " * 400, encoding="utf-8")
    (root / "latin1.py").write_bytes(b"# \xe9\xe8 " * 1500 + b"\nx = 1\n")
    return root


def _plans() -> list[FlightPlan]:
    out = []
    for budget in (1200, 4000, 16000, 64000):
        out.append(FlightPlan(goal=GOAL, token_budget=budget))
        out.append(FlightPlan(goal="json decoder scanner", token_budget=budget, show_why=False))
    out.append(FlightPlan(goal=GOAL, token_budget=9000, rules=[VerbosityRule(glob="json/**", level=Level.FULL),
                                                               VerbosityRule(glob="email/*", level=Level.DOCS)]))
    out.append(FlightPlan(goal=GOAL, token_budget=6000, focus_paths=[FocusPath(glob="configparser.py")], focus_symbols=[FocusSymbol(symbol="RawConfigParser.read")]))
    out.append(FlightPlan(goal=GOAL, token_budget=6000, exclude=["email/**"], default_level=Level.FULL))
    return out


def _maps(root: Path, cache: Path) -> list[str]:
    rm = RepoMap.open(root, cache_dir=cache, jobs=1)
    return [rm.render_text(p) for p in _plans()]


@pytest.mark.parametrize("text", [
    "def f(a_b, c2d):\n    return a_b + 123456 + c2d  # it's\n",
    "caf\u00e9 na\u00efve x\u00e9y \u4e2d\u6587abc \u0661\u0662\u0663 d\u00e9\u00e9f",
    "__init__ __ _ _x x_ a.b.c a1b2c3 'll 're \u2014x\u2014 \u00a0a",
    "\ufffd\ufffd ab\ufffdcd",
    "",
])
def test_the_lower_bound_never_exceeds_the_count(text: str) -> None:
    raw = text.encode()
    assert _full_lower_bound(raw) <= count_tokens(text)


def test_bounds_hold_on_stdlib_sources() -> None:
    cfg = EngineConfig()
    for path in sorted(STDLIB.glob("*.py"))[:80] + [STDLIB / "json" / "decoder.py"]:
        data = path.read_bytes()
        rec, _ = index_file(path.name, data, cfg.discover, cfg.render)
        if rec[REC["status"]]:
            continue  # skipped (generated, ...): never shown
        exact = full_cost(data)
        lo, hi = full_bounds(rec)
        assert lo <= exact <= hi, path.name
        if len(data) < index_mod.EAGER_FULL_BYTES:
            assert rec[REC["costs"]][2] == exact  # small files: counted at index time
        else:
            assert rec[REC["costs"]][2] < 0


def test_a_non_utf8_file_is_bounded_by_its_replaced_text() -> None:
    cfg = EngineConfig()
    data = b"x = '\xff\xfe\xfd'\n" * 600
    rec, _ = index_file("m.py", data, cfg.discover, cfg.render)
    assert rec[REC["replaced"]] and rec[REC["costs"]][2] < 0
    lo, hi = full_bounds(rec)
    assert lo <= full_cost(data) == count_tokens(data.decode("utf-8", "replace")) + full_bounds(
        index_file("m.py", b"", cfg.discover, cfg.render)[0])[0] <= hi


def _ladder(rng: random.Random, req: int) -> tuple[FileCosts, tuple[int, int]]:
    line = rng.randint(5, 20)
    c2 = line + rng.randint(0, 300)
    c3 = c2 + rng.choice([0, rng.randint(0, 400)])
    c4 = line + rng.randint(1, 5000)
    lo, hi = line + max(1, c4 - line - rng.randint(0, 3000)), c4 + rng.randint(0, 6000)
    score = rng.choice([0.0, 0.0, rng.random() * 0.1, rng.random()])
    base = (score + 1e-4) ** 4 * rng.choice([1.0, 2.0])
    cost: list[int | None] = [0, line, c2, c3, c4]
    if rng.random() < 0.2:
        cost[2] = cost[3] = None
    for lv in range(req + 1, 5):
        cost[lv] = None
    return FileCosts(cost=cost, value=[base * v for v in (0.0, 0.3, 1.5, 2.0, 3.5)],
                     tier=rng.choice([0, 0, 0, 1, 2]), requested=req), (lo, hi)


@pytest.mark.parametrize("seed", range(150))
def test_must_price_leaves_out_only_files_whose_cost_cannot_change_the_fit(seed: int) -> None:
    """Fit with the exact costs, then with every file must_price leaves out set to its lower
    bound, its upper bound and random values between: the same levels, the same total."""
    rng = random.Random(seed)
    n = rng.randint(5, 120)
    made = [_ladder(rng, rng.choice([4, 4, 4, 4, 3, 1])) for _ in range(n)]
    files = [f for f, _ in made]
    bounds = {i: b for i, (f, b) in enumerate(made) if f.requested == 4}
    target = rng.randint(0, sum(f.cost[f.requested] or 0 for f in files))
    must = must_price(files, bounds, target)
    exact = Fitter([FileCosts(list(f.cost), f.value, f.tier, f.requested) for f in files])
    exact.fit(target)
    for pick in ("lo", "hi", "random", "random"):
        trial = []
        for i, f in enumerate(files):
            cost = list(f.cost)
            if i in bounds and i not in must:
                lo, hi = bounds[i]
                cost[4] = lo if pick == "lo" else hi if pick == "hi" else rng.randint(lo, hi)
            trial.append(FileCosts(cost, f.value, f.tier, f.requested))
        fitter = Fitter(trial)
        fitter.fit(target)
        assert fitter.levels == exact.levels, (seed, pick)
        assert fitter.total == exact.total


def test_refill_prices_a_file_only_when_its_lower_bound_fits() -> None:
    files = [FileCosts([0, 10, 40, 60, 10_000], [0.0, 0.3, 1.5, 2.0, 3.5], 0, 4),
             FileCosts([0, 10, 40, 60, 70], [0.0, 0.3, 1.5, 2.0, 3.5], 0, 4)]
    asked: list[int] = []

    def price(i: int) -> int:
        asked.append(i)
        return 90

    fitter = Fitter(files, {0: 5_000, 1: 65}, price)
    fitter.fit(100)
    fitter.refill(100)
    assert 0 not in asked  # 5,000 tokens at least: never counted
    assert all(i in (0, 1) for i in asked)


def _ab_maps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[list[str], list[str], Path]:
    root = _repo(tmp_path)
    monkeypatch.setattr(index_mod, "EAGER_FULL_BYTES", 1 << 40)  # every count at index time (main's way)
    eager = _maps(root, tmp_path / "cache-eager")
    monkeypatch.setattr(index_mod, "EAGER_FULL_BYTES", 0)  # no count at index time
    lazy_cache = tmp_path / "cache-lazy"
    lazy = _maps(root, lazy_cache)
    return eager, lazy, lazy_cache


def test_maps_are_the_same_as_with_every_count_made_at_index_time(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    eager, lazy, cache = _ab_maps(tmp_path, monkeypatch)
    assert lazy == eager
    for text, plan in zip(lazy, _plans()):
        assert count_tokens(text) <= plan.token_budget
    # the counts a render made are in the cache: a new process reads them, counts none again
    stored = sqlite3.connect(cache / f"repomap-{SCHEMA}.sqlite3").execute("SELECT count(*) FROM full_costs")
    assert stored.fetchone()[0] > 0
    calls = []
    real = index_mod.full_cost
    monkeypatch.setattr("durable_navigator.repomap.engine.full_cost", lambda d: calls.append(1) or real(d))
    assert _maps(_repo_root(tmp_path), cache) == eager
    assert not calls


def _repo_root(tmp_path: Path) -> Path:
    return tmp_path / "repo"


def test_rank_counts_level_4_lazily_and_exactly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _repo(tmp_path)
    monkeypatch.setattr(index_mod, "EAGER_FULL_BYTES", 1 << 40)
    eager = RepoMap.open(root, cache_dir=tmp_path / "c1", jobs=1).rank(FlightPlan(goal=GOAL))
    monkeypatch.setattr(index_mod, "EAGER_FULL_BYTES", 0)
    lazy = RepoMap.open(root, cache_dir=tmp_path / "c2", jobs=1).rank(FlightPlan(goal=GOAL))
    assert [r.path for r in lazy] == [r.path for r in eager]
    for a, b in zip(lazy, eager):
        assert a.level_tokens[Level.FULL] == b.level_tokens[4]
        assert tuple(a.level_tokens) == tuple(b.level_tokens) and a.level_tokens == b.level_tokens
        assert len(a.level_tokens) == 5 and list(a.level_tokens)[:4] == list(b.level_tokens)[:4]
    import copy
    import dataclasses
    import pickle

    calls = []
    real = index_mod.full_cost
    monkeypatch.setattr("durable_navigator.repomap.engine.full_cost", lambda d: calls.append(1) or real(d))
    lazy = RepoMap.open(root, cache_dir=tmp_path / "c3", jobs=1).rank(FlightPlan(goal=GOAL))
    assert [r.level_tokens[Level.OUTLINE] for r in lazy] == [r.level_tokens[2] for r in eager]
    assert not calls  # levels below 4 (an int or a Level) count nothing
    assert lazy[0].level_tokens[Level.FULL] == eager[0].level_tokens[4] and len(calls) <= 1
    assert pickle.loads(pickle.dumps(lazy[0].level_tokens)) == tuple(eager[0].level_tokens)
    assert copy.deepcopy(lazy[1]).level_tokens == tuple(eager[1].level_tokens)
    assert dataclasses.asdict(lazy[2])["level_tokens"] == tuple(eager[2].level_tokens)


def test_a_file_changed_or_vanished_before_the_render_is_priced_now_or_hidden(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index_mod, "EAGER_FULL_BYTES", 0)
    root = _repo(tmp_path)
    cache = tmp_path / "cache"
    rm = RepoMap.open(root, cache_dir=cache, jobs=1)
    # a budget everything fits in: every file's count is needed
    plan = FlightPlan(goal=GOAL, token_budget=1_000_000, rules=[VerbosityRule(glob="*.py", level=Level.FULL)])
    # changed: the render counts what is on disk now, and does not store it under the old key
    (root / "colorsys.py").write_text("def f():\n    return 1\n" * 3, encoding="utf-8")
    (root / "shlex.py").write_text("x = 1\n" * 5000, encoding="utf-8")
    (root / "fnmatch.py").unlink()
    (root / "glob.py").write_bytes(b"\0binary now" * 100)
    res = rm.render(plan)
    assert count_tokens(res.text) == res.metadata.tokens_used <= plan.token_budget
    assert res.metadata.skipped_files.get("fnmatch.py") == "vanished"
    assert res.metadata.skipped_files.get("glob.py") == "binary"
    shown = {f.path: f for f in res.files}
    assert shown["colorsys.py"].level == shown["shlex.py"].level == 4
    for p in ("colorsys.py", "shlex.py"):  # counted from the file as it is now
        assert rm._built.records[p][REC["costs"]][2] == full_cost((root / p).read_bytes())
    assert "    return 1\n" in res.text and "x = 1\nx = 1\n" in res.text
    keys = rm._built.keys
    db = sqlite3.connect(cache / f"repomap-{SCHEMA}.sqlite3")
    stored = {k for (k,) in db.execute("SELECT key FROM full_costs")}
    assert keys["colorsys.py"] not in stored and keys["shlex.py"] not in stored
    # every budget still fits, down to a tight one
    for budget in (300, 2_000, 8_000):
        res = rm.render(FlightPlan(goal=GOAL, token_budget=budget))
        assert count_tokens(res.text) <= budget


def test_schema_is_bumped_for_records_without_a_whole_file_count() -> None:
    assert SCHEMA == "v4"


@pytest.mark.parametrize("seed", range(40))
def test_exits_hold_every_level_the_fitter_can_pick_in_the_range(seed: int) -> None:
    """Brute force: _step at every integer L4 cost of the range picks a level _exits names."""
    from durable_navigator.repomap.fit import _exits, _step

    rng = random.Random(seed)
    for _ in range(25):
        f, _b = _ladder(rng, 4)
        line = f.cost[1] or 0
        lo = max(line + 1, (f.cost[3] or line) // rng.choice([1, 2, 3])) + rng.randint(1, 50)
        hi = lo + rng.randint(0, 3000)
        exits = set(_exits(f.cost, f.value, lo, hi))
        picked = {_step(f.cost, f.value, 4, c)[1] for c in range(lo, hi + 1)}
        assert picked <= exits, (seed, f.cost, lo, hi)


def test_storing_counts_never_waits_for_a_locked_cache(tmp_path: Path) -> None:
    """Another process holding the write lock: the counts are not stored (counted again next
    time), the render neither waits the busy timeout nor fails; reads still work."""
    import time

    from durable_navigator.repomap.cache import IndexCache

    cache = IndexCache(tmp_path / "c")
    cache.put_full_costs([("k1", 10)])
    other = sqlite3.connect(cache.path, timeout=0)
    other.execute("BEGIN IMMEDIATE")
    try:
        t = time.perf_counter()
        cache.put_full_costs([("k2", 20)])
        assert time.perf_counter() - t < 5
        assert cache.get_full_costs(["k1", "k2"]) == {"k1": 10}
    finally:
        other.rollback()
        other.close()
    cache.put_full_costs([("k2", 20)])
    assert cache.get_full_costs(["k1", "k2", "k3"]) == {"k1": 10, "k2": 20}
