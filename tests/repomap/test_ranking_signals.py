"""Two ranking/fitting rules the context quality depends on.

* A goal word that names a file (``ledger`` -> ``ledger.py``) is evidence the file
  is about the goal even when its text uses the word rarely (BM25 favours rare
  words elsewhere): the ``name`` signal.
* A level an explicit rule asked for is degraded only after every auto-level file
  has given way: the plan's choices first, the engine's fill with what is left.
"""

from __future__ import annotations

from pathlib import Path

from durable_navigator.navtypes.flightplan import FlightPlan, Level, VerbosityRule
from durable_navigator.repomap import EngineConfig, RepoMap


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def _named_repo(root: Path) -> Path:
    files = {
        # the file about the goal: says "ledger" only in its name
        "app/ledger.py": "class Book:\n    def reserve(self, amount):\n        return amount\n\n"
        "    def settle(self, amount):\n        return -amount\n",
        # prose that mentions the goal's rarer word many times
        "app/notes.py": "\n".join(f"def enforce_{i}():\n    '''enforce the rules, enforce them'''\n" for i in range(6)),
    }
    for i in range(8):
        files[f"app/mod{i}.py"] = f"def helper_{i}(x):\n    return x + {i}\n"
    return _write(root, files)


def test_a_goal_word_naming_a_file_ranks_that_file_first(tmp_path: Path) -> None:
    root = _named_repo(tmp_path / "repo")
    plan = FlightPlan(token_budget=4000, goal="how does the ledger enforce limits?")
    ranked = RepoMap.open(root, cache_dir=tmp_path / "c", jobs=1).rank(plan)
    assert ranked[0].path == "app/ledger.py"
    assert ranked[0].signals["name"] == 1.0
    assert all(r.signals.get("name", 0.0) == 0.0 for r in ranked[1:])

    off = EngineConfig.model_validate({"rank": {"name_weight": 0.0}})
    plain = RepoMap.open(root, config=off, cache_dir=tmp_path / "c2", jobs=1).rank(plan)
    assert plain[0].path == "app/notes.py"  # without it, BM25 alone prefers the prose
    assert "name" not in plain[0].signals


def _big_and_small(root: Path) -> Path:
    big = "\n".join(f"def step_{i}(value):\n    '''Step {i}.'''\n    total = value * {i}\n    return total + {i}\n"
                    for i in range(60))
    files = {"core/big.py": big}
    for i in range(25):
        files[f"extra/small{i}.py"] = f"def tiny_{i}(a, b):\n    '''Tiny helper {i}.'''\n    return a + b + {i}\n"
    return _write(root, files)


def _shown_in_full(engine: RepoMap, plan: FlightPlan) -> bool:
    """True when big.py's last body line is in the map (only level 4 shows bodies)."""
    return "total = value * 59" in engine.render(plan).text


def test_an_explicit_rule_keeps_its_level_while_auto_files_give_way(tmp_path: Path) -> None:
    root = _big_and_small(tmp_path / "repo")
    engine = RepoMap.open(root, cache_dir=tmp_path / "c", jobs=1)
    full = next(r for r in engine.rank(FlightPlan(token_budget=10**6)) if r.path == "core/big.py").level_tokens[4]
    plan = FlightPlan(token_budget=full + 400, goal="tiny helper",
                      rules=[VerbosityRule(glob="core/big.py", level=Level.FULL)])
    rendered = engine.render(plan)
    assert rendered.metadata.tokens_used <= plan.token_budget
    assert _shown_in_full(engine, plan)
    # the small files the goal matches better gave way (some hidden) to make room, not the rule
    assert rendered.metadata.files_per_level.get("0", 0) > 0

    soft = EngineConfig.model_validate({"render": {"protect_rules": False}})
    old = RepoMap.open(root, config=soft, cache_dir=tmp_path / "c2", jobs=1)
    assert not _shown_in_full(old, plan)  # value per token alone gives the rule away
