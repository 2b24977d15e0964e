"""The linter of ``[tool.ruff]`` (pyproject.toml) finds nothing: unused imports, stale ``__all__``
names and shadowed imports are refused before they land (issue 30)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from ruff.__main__ import find_ruff_bin

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing() -> None:
    proc = subprocess.run([find_ruff_bin(), "check", "--no-cache", "--output-format", "concise", str(ROOT)],
                          capture_output=True, text=True, timeout=300, check=False, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr


#: the package's top folders (pyproject's [tool.setuptools.package-dir]: each is durable_navigator.<name>)
PACKAGES = ("navtypes", "repomap", "navcore", "activities", "workflows", "workers", "cli")


def _modules() -> list[str]:
    out = []
    for top in PACKAGES:
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
            out.append(".".join(("durable_navigator", *parts)))
    return out


def test_every_name_a_module_exports_exists() -> None:
    """``__all__`` holds no stale name (ruff does not check a package's ``__init__``)."""
    import importlib

    stale = []
    for name in _modules():
        module = importlib.import_module(name)
        stale += [f"{name}.{n}" for n in getattr(module, "__all__", ()) if not hasattr(module, n)]
    assert stale == []
