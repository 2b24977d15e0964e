"""Engine behaviour: cache reuse, incremental re-index, queries, CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from typer.testing import CliRunner

from durable_navigator.navtypes.flightplan import FlightPlan
from durable_navigator.repomap import EngineConfig, RepoMap
from durable_navigator.repomap.cli import app
from durable_navigator.repomap.tokens import count_tokens, estimate_tokens
from tests.support.repomap import FIXTURES


def _copy(tmp_path: Path, name: str = "python") -> Path:
    root = tmp_path / name
    shutil.copytree(FIXTURES / name, root)
    return root


def test_warm_start_parses_nothing_and_edit_reparses_one(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    cache = tmp_path / "cache"
    cold = RepoMap.open(root, cache_dir=cache, jobs=1)
    assert cold.stats()["parsed_this_open"] == 4
    warm = RepoMap.open(root, cache_dir=cache, jobs=1)
    assert warm.stats()["parsed_this_open"] == 0
    assert warm.index_version == cold.index_version
    (root / "pkg" / "cli.py").write_text("def renamed(x):\n    return x\n")
    edited = RepoMap.open(root, cache_dir=cache, jobs=1)
    assert edited.stats()["parsed_this_open"] == 1
    assert edited.index_version != cold.index_version
    assert [s.name for s in edited.symbols("pkg/cli.py")] == ["renamed"]


def test_parallel_cold_index_matches_serial(tmp_path: Path, multi_repo: Path) -> None:
    from durable_navigator.repomap import EngineConfig

    cfg = EngineConfig(parallel_min_files=1, index_chunk_files=2)
    par = RepoMap.open(multi_repo, config=cfg, cache_dir=tmp_path / "p", jobs=2)
    ser = RepoMap.open(multi_repo, cache_dir=tmp_path / "s", jobs=1)
    plan = FlightPlan(token_budget=900, goal="queue push")
    assert par.render(plan).text == ser.render(plan).text


def test_parallel_cold_index_from_a_thread_uses_forkserver(tmp_path: Path, multi_repo: Path) -> None:
    """A Temporal worker opens engines from a thread pool: its index workers must not be forked."""
    from concurrent.futures import ThreadPoolExecutor

    from durable_navigator.repomap import EngineConfig
    from durable_navigator.repomap import build

    cfg = EngineConfig(parallel_min_files=1, index_chunk_files=2)
    with ThreadPoolExecutor(1) as pool:
        method = pool.submit(lambda: build.pool_context().get_start_method()).result()
        par = pool.submit(RepoMap.open, multi_repo, cfg, tmp_path / "p", 2).result()
    assert method == "forkserver"
    ser = RepoMap.open(multi_repo, cache_dir=tmp_path / "s", jobs=1)
    plan = FlightPlan(token_budget=900, goal="queue push")
    assert par.render(plan).text == ser.render(plan).text


def test_git_discovery_respects_gitignore(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / ".gitignore").write_text("ignored/\n")
    (root / "ignored").mkdir()
    (root / "ignored" / "x.py").write_text("X = 1\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    rm = RepoMap.open(root, cache_dir=tmp_path / "c", jobs=1)
    assert "ignored/x.py" not in rm.files and "pkg/budget.py" in rm.files
    assert not (root / ".cache").exists()
    # pointed straight at a directory the enclosing repository ignores: it is walked
    (root / "ignored" / ".gitignore").write_text("skip.py\n")
    (root / "ignored" / "skip.py").write_text("S = 1\n")
    inner = RepoMap.open(root / "ignored", cache_dir=tmp_path / "c", jobs=1)
    assert inner.files == [".gitignore", "x.py"]  # its own .gitignore still applies (skip.py)


def test_walk_discovery_respects_nested_gitignore(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "pkg" / ".gitignore").write_text("cli.py\n")
    rm = RepoMap.open(root, cache_dir=tmp_path / "c", jobs=1)
    assert "pkg/cli.py" not in rm.files and "pkg/budget.py" in rm.files


def test_walk_discovery_skips_gitignore_lines_git_cannot_use(tmp_path: Path) -> None:
    """psf/black's tree outside git had a lone ``!`` in a .gitignore: pathspec refused the whole file
    and discovery failed. git skips such a line and applies the rest; so does the walk."""
    root = _copy(tmp_path)
    (root / "pkg" / ".gitignore").write_text("!\ncli.py\nfoo\\\n!budget.py\n")
    rm = RepoMap.open(root, cache_dir=tmp_path / "c", jobs=1)
    assert "pkg/cli.py" not in rm.files and "pkg/budget.py" in rm.files


def test_symbol_queries(multi_engine: RepoMap) -> None:
    [charge] = multi_engine.find_symbol("charge")
    assert charge.id == "python/pkg/budget.py::charge" and charge.kind == "function"
    callers = multi_engine.callers(charge.id)
    assert any(r.path == "python/pkg/cli.py" and r.symbol_id == "python/pkg/cli.py::main" for r in callers)
    callees = multi_engine.callees("python/pkg/cli.py::main")
    assert {r.symbol_id for r in callees} >= {"python/pkg/budget.py::Budget", "python/pkg/budget.py::charge"}
    hits = multi_engine.search("Deposit account balance", limit=5)
    assert hits[0].path == "go/main.go"
    assert any(h.symbol == "go/main.go::Deposit" for h in hits)
    assert multi_engine.read_lines("go/main.go", 11, 11) == "func (a *Account) Deposit(amount int) int {\n"


def test_estimate_is_close_to_exact() -> None:
    text = (FIXTURES / "python" / "pkg" / "budget.py").read_text()
    exact, est = count_tokens(text), estimate_tokens(text)
    assert abs(est - exact) / exact < 0.25


def test_cli_generate_schema_stats_and_errors(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    runner = CliRunner()
    env = {"NAVIGATOR_CACHE_DIR": str(tmp_path / "cache")}
    res = runner.invoke(app, ["generate", str(root), "--budget", "300", "--goal", "charge tokens"], env=env)
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("# repo-map {") and count_tokens(res.stdout) <= 300
    res = runner.invoke(app, ["generate", str(root), "--budget", "300", "--format", "json"], env=env)
    doc = json.loads(res.stdout)
    assert doc["metadata"]["tokens_used"] == count_tokens(doc["text"])
    plan = tmp_path / "plan.yaml"
    plan.write_text("token_budget: 250\nfocus_symbols:\n  - symbol: charge\n")
    assert runner.invoke(app, ["generate", str(root), "--plan", str(plan)], env=env).exit_code == 0
    plan.write_text("token_budget: 250\nbogus: 1\n")
    bad = runner.invoke(app, ["generate", str(root), "--plan", str(plan)], env=env)
    assert bad.exit_code == 2 and "bogus" in bad.stderr and "line 2" in bad.stderr
    missing = runner.invoke(app, ["generate", str(tmp_path / "missing")], env=env)
    assert missing.exit_code == 2 and "does not exist" in missing.stderr
    assert runner.invoke(app, ["generate", str(root), "--budget", "-1"], env=env).exit_code == 2
    assert "properties" in json.loads(runner.invoke(app, ["schema"]).stdout)
    stats = json.loads(runner.invoke(app, ["stats", str(root)], env=env).stdout)
    assert stats["files"] == 4 and stats["languages"] == {"other": 1, "python": 3}


def test_concurrent_renders_on_one_engine_agree(multi_repo: Path, tmp_path: Path) -> None:
    from concurrent.futures import ThreadPoolExecutor

    rm = RepoMap.open(multi_repo, cache_dir=tmp_path / "c", jobs=1)  # fresh: lazy state built under races
    plans = [FlightPlan(token_budget=300 + 100 * (i % 3), goal=["queue", "cart total", "budget"][i % 3])
             for i in range(9)]
    with ThreadPoolExecutor(max_workers=4) as pool:
        texts = list(pool.map(lambda p: rm.render(p).text, plans))
    assert texts == [rm.render(p).text for p in plans]


def test_timings_go_into_the_header_only_when_asked(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    rm = RepoMap.open(root, cache_dir=tmp_path / "cache")
    plan = FlightPlan(token_budget=300, goal="charge tokens")
    plain_a, plain_b = rm.render(plan).text, rm.render(plan).text
    assert plain_a == plain_b and "timings_ms" not in plain_a.splitlines()[0]
    timed = rm.render(plan, include_timings=True)
    head = json.loads(timed.text.splitlines()[0].removeprefix("# repo-map "))
    assert set(head["timings_ms"]) == {"open", "rank"} and head["timings_ms"]["open"] > 0
    assert count_tokens(timed.text) == timed.metadata.tokens_used <= 300
    res = CliRunner().invoke(app, ["generate", str(root), "--budget", "300", "--timings"],
                             env={"NAVIGATOR_CACHE_DIR": str(tmp_path / "cache2")})
    assert res.exit_code == 0, res.output
    assert '"timings_ms":{"open":' in res.stdout.splitlines()[0]


def test_files_with_the_same_bytes_keep_their_own_path_and_parser(tmp_path: Path) -> None:
    """Records and bags are cached by content: files sharing bytes must not share path terms or
    language. (An empty ``__init__.py`` and an empty ``.txt``; two identical ``__init__.py`` in
    packages with different names -- in this repository and in another one indexed earlier
    through the same cache.)"""
    cache = tmp_path / "cache"
    other = tmp_path / "other"
    (other / "gammapkg").mkdir(parents=True)
    (other / "gammapkg" / "__init__.py").write_text("from .core import run\n")
    (other / "gammapkg" / "empty.txt").write_text("")
    RepoMap.open(other, cache_dir=cache, jobs=1)

    root = tmp_path / "repo"
    for pkg in ("alphapkg", "betapkg"):
        (root / pkg).mkdir(parents=True)
        (root / pkg / "__init__.py").write_text("from .core import run\n")
        (root / pkg / "core.py").write_text(f"def run():\n    return '{pkg}'\n")
    (root / "notes.txt").write_text("")
    (root / "alphapkg" / "empty.py").write_text("")
    for jobs, cfg in ((1, None), (2, EngineConfig(parallel_min_files=1, index_chunk_files=1))):
        rm = RepoMap.open(root, config=cfg, cache_dir=cache, jobs=jobs)
        # path terms, file by file (search() ranks definitions since main's symbol search; the
        # term columns it starts from are what terms_in reads)
        for pkg, other_pkg in (("alphapkg", "betapkg"), ("betapkg", "alphapkg")):
            assert rm.terms_in([pkg], [f"{pkg}/__init__.py"]) == {pkg}, (jobs, pkg)
            assert rm.terms_in([pkg], [other_pkg]) == set(), (jobs, pkg)
        assert rm.terms_in(["gammapkg"]) == set(), jobs
        langs = {p: rm._built.records[p][1] for p in ("notes.txt", "alphapkg/empty.py")}
        assert langs == {"notes.txt": "", "alphapkg/empty.py": "python"}, (jobs, langs)
        assert rm.render(FlightPlan(token_budget=2000)).metadata.files_without_symbol_support == 1


def test_terms_in_reads_term_columns_of_the_given_files_and_folders(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "a").mkdir(parents=True)
    (root / "b").mkdir()
    (root / "a" / "ledger.py").write_text("def post_entry(amount):\n    return amount\n")
    (root / "b" / "queue.py").write_text("def push_item(item):\n    return item\n")
    rm = RepoMap.open(root, cache_dir=tmp_path / "cache", jobs=1)
    terms = ["entry", "Item", "nowhere"]
    assert rm.terms_in(terms) == {"entry", "Item"}
    assert rm.terms_in(terms, ["a"]) == {"entry"}
    assert rm.terms_in(terms, ["b/", "a/ledger.py"]) == {"entry", "Item"}
    assert rm.terms_in(terms, ["b/queue.py"]) == {"Item"}
    assert rm.terms_in(terms, ["missing"]) == set()
