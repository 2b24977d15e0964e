"""A plan's glob that is exactly a file's path names that file only.

The learned allocation put the root ``Makefile`` in full with the rule ``Makefile``; the engine
matched it like ``.gitignore`` does, at any depth, so ``docs/Makefile`` (1,589 tokens) was in
full too, over the allocation's budget, and the fitter cut the file the goal was about.
"""

from __future__ import annotations

from pathlib import Path

from durable_navigator.navtypes.flightplan import FlightPlan, FocusPath, Level, VerbosityRule
from durable_navigator.repomap import RepoMap
from durable_navigator.repomap.globs import plan_match


def _repo(tmp_path: Path) -> RepoMap:
    files = {"Makefile": "all:\n\techo root\n", "docs/Makefile": "html:\n\techo docs\n" * 40,
             "pkg/a[1].py": "def one():\n    return 1\n", "pkg/a1.py": "def two():\n    return 2\n",
             "README.md": "# root\n", "docs/README.md": "# docs\n" * 30}
    root = tmp_path / "repo"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return RepoMap.open(root, cache_dir=tmp_path / "cache", jobs=1)


def test_a_rule_naming_a_root_file_is_that_file_only(tmp_path: Path) -> None:
    engine = _repo(tmp_path)
    plan = FlightPlan(token_budget=4000, default_level=Level.PATH,
                      rules=[VerbosityRule(glob="Makefile", level=Level.FULL),
                             VerbosityRule(glob="pkg/a[1].py", level=Level.FULL)],
                      exclude=["README.md"])
    levels = {f.path: int(f.level) for f in engine.render(plan).files}
    assert levels["Makefile"] == Level.FULL and levels["docs/Makefile"] == Level.PATH
    assert levels["pkg/a[1].py"] == Level.FULL and levels["pkg/a1.py"] == Level.PATH  # not a character class
    assert "README.md" not in levels and levels["docs/README.md"] == Level.PATH  # exclude: the root one only
    every = plan.model_copy(update={"rules": [VerbosityRule(glob="**/Makefile", level=Level.FULL)], "exclude": []})
    levels = {f.path: int(f.level) for f in engine.render(every).files}
    assert levels["Makefile"] == levels["docs/Makefile"] == Level.FULL


def test_a_focus_path_naming_a_root_file_is_that_file_only(tmp_path: Path) -> None:
    engine = _repo(tmp_path)
    ranked = {r.path: r for r in engine.rank(FlightPlan(token_budget=4000, focus_paths=[FocusPath(glob="Makefile")]))}
    assert ranked["Makefile"].focused and not ranked["docs/Makefile"].focused


def test_globs_that_name_no_file_keep_their_meaning() -> None:
    files = frozenset({"Makefile", "docs/Makefile", "src/x.py"})
    assert plan_match("*.py", "src/x.py", files) and plan_match("src", "src/x.py", files)
    assert plan_match("Makefile", "docs/Makefile", frozenset({"docs/Makefile"}))  # no root Makefile: any depth
    assert not plan_match("Makefile", "docs/Makefile", files)
