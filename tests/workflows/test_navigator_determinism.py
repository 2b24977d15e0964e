"""Static guard: no workflow module uses a clock, randomness, env, I/O or threads (issue 30: every one,
not only the navigator's)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import durable_navigator.workflows as package

WORKFLOW_DIR = Path(package.__file__).parent
#: every module workflow code runs (the workflows and the blocks they are built from)
MODULES = sorted(p for p in WORKFLOW_DIR.rglob("*.py") if p.name != "__init__.py")

FORBIDDEN_IMPORTS = {"time", "random", "os", "threading", "subprocess", "socket", "uuid", "pathlib", "datetime.datetime"}
FORBIDDEN_CALLS = {"print", "open", "input"}
FORBIDDEN_ATTRS = {("datetime", "now"), ("datetime", "utcnow"), ("time", "time"), ("os", "environ")}


def _rel(path: Path) -> str:
    return path.relative_to(WORKFLOW_DIR).as_posix()


def test_every_workflow_module_is_checked() -> None:
    names = {_rel(p) for p in MODULES}
    assert {"navigator.py", "research.py", "investigation.py", "batch.py", "blocks/steerable.py"} <= names
    assert len(names) >= 18


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_workflow_module_has_no_nondeterministic_calls(path: Path) -> None:
    tree = ast.parse(path.read_text())
    problems: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            problems += [a.name for a in node.names if a.name.removeprefix("durable_navigator.").split(".")[0] in FORBIDDEN_IMPORTS]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.removeprefix("durable_navigator.").split(".")[0] in FORBIDDEN_IMPORTS:
            problems.append(node.module)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FORBIDDEN_CALLS:
            problems.append(f"{node.func.id}() at line {node.lineno}")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if (node.value.id, node.attr) in FORBIDDEN_ATTRS:
                problems.append(f"{node.value.id}.{node.attr} at line {node.lineno}")
    assert problems == []


@pytest.mark.parametrize("path", MODULES, ids=_rel)
def test_project_imports_are_passed_through_the_sandbox(path: Path) -> None:
    tree = ast.parse(path.read_text())
    top_level_project = [
        n.module for n in tree.body
        if isinstance(n, ast.ImportFrom) and n.module and n.module.removeprefix("durable_navigator.").split(".")[0] in {"navcore", "activities", "repomap"}
    ]
    assert top_level_project == []  # only inside workflow.unsafe.imports_passed_through()
