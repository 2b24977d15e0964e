"""The issue-4 modules of the shared model package stay pure (safe in the workflow sandbox)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MODULES = ["planning/planning", "planning/parse", "planning/prompts", "navigator/guardrails", "run/compression", "run/tools"]
ALLOWED = {"__future__", "collections", "dataclasses", "hashlib", "json", "re", "typing", "enum", "pydantic", "navcore", "navtypes"}
FORBIDDEN_NAMES = {"open", "print", "input"}


@pytest.mark.parametrize("name", MODULES)
def test_module_imports_only_pure_dependencies(name: str) -> None:
    tree = ast.parse((ROOT / "navcore" / f"{name}.py").read_text())
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {a.name.removeprefix("durable_navigator.").split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.removeprefix("durable_navigator.").split(".")[0])
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in FORBIDDEN_NAMES, f"navcore/{name}.py calls {node.func.id}()"
    assert imported <= ALLOWED, f"navcore/{name}.py imports {sorted(imported - ALLOWED)}"
