"""No merge-conflict markers in the project's tracked text files.

A research merge once left ``<<<<<<< HEAD`` / ``>>>>>>> main`` in README's
architecture table and nothing failed; this catches the next one.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = re.compile(r"^(<{7} |>{7} |={7}$)", re.MULTILINE)
TEXT = (".py", ".md", ".toml", ".yaml", ".yml", ".cfg", ".txt", ".json", ".sh", ".rst")


def test_no_conflict_markers_in_tracked_files() -> None:
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    files = [f for f in listed if f.endswith(TEXT) or f in ("Dockerfile", ".ci/run")]
    assert len(files) > 50, "git ls-files listed too few files; is this a checkout?"
    bad = [f for f in files if (ROOT / f).is_file() and MARKER.search((ROOT / f).read_text(errors="replace"))]
    assert bad == [], f"merge-conflict markers in {bad}"
