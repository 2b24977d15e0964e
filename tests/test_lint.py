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
