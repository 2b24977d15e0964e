"""The Web UI shows a run the way a user expects: `bench/webui_screenshot.py` in headless Chromium.

Skipped only when Debian's `chromium` is not installed (`apt-get install -y chromium`;
`.ci/run` installs it when it runs as root). The script starts its own server and worker
in a private sandbox and stops them; the screenshots go to this test's temporary folder.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO_ROOT

CHROMIUM = shutil.which("chromium")


@pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_the_run_page_shows_cost_as_text_summaries_and_activity_summaries(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO_ROOT / "bench" / "webui_screenshot.py"), "--out-dir", str(tmp_path),
         "--chromium", str(CHROMIUM)],
        capture_output=True, text=True, timeout=900,
    )
    report = json.loads((tmp_path / "webui-check.json").read_text()) if (tmp_path / "webui-check.json").exists() else {}
    assert proc.returncode == 0, (proc.stdout[-2000:], proc.stderr[-3000:], report.get("checks"))
    assert all(report["checks"].values()), report["checks"]
    details = next(p for p in report["panels"] if p.startswith("Navigator · step"))
    assert "Cost: $0.0000 of $1.0000" in details and "\\(" not in details
    assert any(s.startswith("iter 1 · ") for s in report["activity_summaries"]), report["activity_summaries"]
    for name in report["screenshots"]:
        png = (tmp_path / name).read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 20_000  # a real page, not a blank
