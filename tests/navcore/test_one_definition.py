"""One definition per name in navcore (issue 30): no two modules define the same public class.

A second ``class CriterionStatus`` in another feature's module type-checks, pickles and validates
like the first, so nothing else notices the drift; this test does. Import a shared class from
its one home instead of defining it again.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

NAVCORE = Path(__file__).resolve().parents[2] / "navcore"


def _public_classes(root: Path) -> dict[str, list[str]]:
    """Public class name -> the modules under ``root`` (relative paths) that define it."""
    homes: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                homes[node.name].append(path.relative_to(root).as_posix())
    return dict(homes)


def test_no_two_navcore_modules_define_the_same_public_class() -> None:
    homes = _public_classes(NAVCORE)
    assert len(homes) > 100  # the walk saw the package (its subpackages included)
    twice = {name: paths for name, paths in homes.items() if len(paths) > 1}
    assert twice == {}


def test_the_check_sees_a_duplicate(tmp_path: Path) -> None:
    """The rule above is not vacuous: the same walk over a package with a copy reports it."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.py").write_text("class CriterionStatus:\n    pass\n")
    (tmp_path / "y.py").write_text("class CriterionStatus:\n    pass\nclass _Private:\n    pass\n")
    assert _public_classes(tmp_path) == {"CriterionStatus": ["a/x.py", "y.py"]}
