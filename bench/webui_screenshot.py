"""The Web UI as a user sees it: start a server, run an exploration, screenshot the run's pages.

Steps (everything real: the installed ``navigator`` console script, the embedded
Temporal server, Debian's Chromium in headless mode, driven over the DevTools
protocol on loopback):

1. ``navigator server --background`` on free ports, in a private sandbox (config,
   database and XDG dirs under a temporary directory), and a ``navigator worker``:
   the Web UI's *Current Details* (like ``navigator log`` of a running run) come from
   a query, which a worker answers — after ``explore`` ends, its in-process worker
   is gone, and the page shows the history, the result and the static summary and
   details, but no current details until a worker runs;
2. ``navigator explore`` of the fixture repository (offline model), whose printed
   Web UI link is the page checked;
3. Chromium opens the run's *User Metadata* tab and its *Event History*, and the
   script checks what the page renders:
   * the current details show the cost as text — ``Cost: $0.0000 of $1.0000``, not
     the math markup ``\\(0.0000 of \\)1.0000`` that unescaped dollars turned into;
   * the static summary and details of the run are set (no "No summary available");
   * the activity summaries are there (``scan …``, ``iter N · …``, ``write result · …``);
4. screenshots of both pages land in ``--out-dir`` (default ``bench/results/``),
   with ``webui-check.json`` recording what was found.

Exit code 0 when every check passes, 1 otherwise (the failed checks are printed).
``tests/cli/test_webui.py`` runs it (skipped only when ``chromium`` is not installed;
CI installs it with ``apt-get install -y chromium``, see ``.ci/run``).

Run::

    .venv/bin/python bench/webui_screenshot.py [--out-dir bench/results] [--chromium /usr/bin/chromium]
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from websockets.sync.client import connect
from durable_navigator.workers.devserver import free_port

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_REPO = ROOT / "tests" / "fixtures" / "navigator_repo"
NAVIGATOR = Path(sys.executable).parent / "navigator"
GOAL = "why are tokens double-counted in budget enforcement?"
#: how long a page may take to render what is checked (the UI is a heavy single-page app)
PAGE_TIMEOUT_S = 90.0
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
COST_TEXT = re.compile(r"Cost: \$\d+\.\d{4} of \$\d+\.\d{4}")



class Chromium:
    """Headless Chromium with a fresh profile, one page driven over the DevTools protocol."""

    def __init__(self, binary: str, width: int, height: int) -> None:
        self.profile = tempfile.mkdtemp(prefix="navigator-chromium-")
        port = free_port()
        self.proc = subprocess.Popen(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={self.profile}", f"--remote-debugging-port={port}",
             f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json", timeout=5) as reply:
                    tabs = json.load(reply)
                break
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError("chromium did not open its DevTools port") from None
                time.sleep(0.2)
        page = next(t for t in tabs if t["type"] == "page")
        self._stack = contextlib.ExitStack()
        self.ws = self._stack.enter_context(connect(page["webSocketDebuggerUrl"], max_size=64 * 1024 * 1024))
        self.ids = itertools.count(1)
        self.call("Page.enable")

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        """One DevTools command; events arriving meanwhile are skipped."""
        ident = next(self.ids)
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv(timeout=120))
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message["result"]

    def eval(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        reply = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        return reply["result"].get("value")

    def goto(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def wait_for(self, expression: str, timeout_s: float = PAGE_TIMEOUT_S) -> bool:
        """Poll ``expression`` until it is truthy."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.eval(expression):
                return True
            time.sleep(0.5)
        return False

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        try:
            self._stack.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            shutil.rmtree(self.profile, ignore_errors=True)


#: the text of every markdown panel (each is a same-origin srcdoc iframe) of the User Metadata tab
FRAMES_JS = ("Array.from(document.querySelectorAll('iframe')).map(f => f.contentDocument && "
             "f.contentDocument.body ? f.contentDocument.body.innerText : '')")


def sandbox_env(root: Path) -> dict[str, str]:
    """A private config (free ports, database under ``root``) and XDG dirs: nothing of the user's is touched."""
    config = root / "navigator.yaml"
    config.write_text(f"embedded:\n  port: {free_port()}\n  ui_port: {free_port()}\n"
                      f"  db_filename: {root / 'state' / 'temporal.db'}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TEMPORAL_", "NAVIGATOR_", "GEMINI_", "GOOGLE_"))}
    env.update(NAVIGATOR_CONFIG=str(config), XDG_STATE_HOME=str(root / "xdg-state"),
               XDG_CACHE_HOME=str(root / "xdg-cache"), NAVIGATOR_IDLE_TIMEOUT_S="600")
    return env


def navigator(env: dict[str, str], *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(NAVIGATOR), *args], env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"navigator {' '.join(args)} exited {proc.returncode}: {proc.stderr[-1500:]}")
    return proc


def check_pages(browser: Chromium, link: str, out_dir: Path, suffix: str = "") -> dict[str, Any]:
    """Open the run's pages, screenshot them and return what was found (``suffix``: of the files)."""
    found: dict[str, Any] = {"link": link}
    browser.goto(link)
    if not browser.wait_for("/\\/(timeline|history)$/.test(location.pathname)"):
        raise RuntimeError(f"the run's page never opened: {browser.eval('location.href')}")
    base = browser.eval("location.href").rsplit("/", 1)[0]

    browser.goto(f"{base}/user-metadata")
    browser.wait_for(f"{FRAMES_JS}.some(t => t.includes('Cost:'))")
    time.sleep(1.0)  # let the remaining panels settle before the screenshot
    frames = [" ".join(text.split()) for text in browser.eval(FRAMES_JS) or []]
    page = " ".join((browser.eval("document.body.innerText") or "").split())
    found["panels"] = frames
    found["no_summary_shown"] = "No summary available" in page or "No details available" in page
    browser.screenshot(out_dir / f"webui-user-metadata{suffix}.png")

    browser.goto(f"{base}/history")
    browser.wait_for("document.body.innerText.includes('write result ·')" if not suffix else
                     "document.body.innerText.includes('Completed')")
    time.sleep(1.0)
    history = browser.eval("document.body.innerText") or ""
    found["activity_summaries"] = sorted({line.strip() for line in history.splitlines()
                                          if re.match(r"\s*(scan |iter \d+ · |write result · )", line)})
    browser.screenshot(out_dir / f"webui-event-history{suffix}.png")
    return found


def verdicts(found: dict[str, Any], kind: str = "explore") -> dict[str, bool]:
    """The checks, each true when the page shows what it should."""
    panels: list[str] = found.get("panels", [])
    summaries: list[str] = found.get("activity_summaries", [])
    if kind == "ask":
        return {
            "details render the cost as text": any(COST_TEXT.search(p) for p in panels),
            "no math markup in the details": not any("\\(" in p or "\\)" in p for p in panels),
            "static summary set": any(p.startswith("ask navigator_repo:") for p in panels),
            "static details set": any("Question:" in p and "Repository:" in p for p in panels),
            "no empty summary / details panel": not found.get("no_summary_shown", True),
        }
    return {
        "details render the cost as text": any(COST_TEXT.search(p) for p in panels),
        "no math markup in the details": not any("\\(" in p or "\\)" in p for p in panels),
        "static summary set": any(p.startswith("explore navigator_repo:") for p in panels),
        "static details set": any("Goal:" in p and "Repository:" in p for p in panels),
        "no empty summary / details panel": not found.get("no_summary_shown", True),
        "scan activity summary": any(s.startswith("scan ") for s in summaries),
        "iteration activity summaries": any(re.match(r"iter \d+ · ", s) for s in summaries),
        "write-result activity summary": any(s.startswith("write result · ") for s in summaries),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out-dir", type=Path, default=ROOT / "bench" / "results")
    parser.add_argument("--chromium", default=shutil.which("chromium") or "/usr/bin/chromium")
    parser.add_argument("--width", type=int, default=1920)
    parser.add_argument("--height", type=int, default=1400)
    parser.add_argument("--kind", choices=("explore", "ask"), default="explore",
                        help="the run to check: an exploration, or a research run (navigator ask)")
    args = parser.parse_args()
    suffix = "" if args.kind == "explore" else f"-{args.kind}"
    args.out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="navigator-webui-") as tmp:
        root = Path(tmp)
        env = sandbox_env(root)
        server = json.loads(navigator(env, "server", "--background", "--json", timeout=180).stdout)
        worker = subprocess.Popen([str(NAVIGATOR), "worker"], env=env, stdout=subprocess.DEVNULL,
                                  stderr=open(root / "worker.log", "wb"))  # noqa: SIM115 - closed with the process
        browser: Chromium | None = None
        try:
            if args.kind == "ask":
                explored = navigator(env, "ask", str(FIXTURE_REPO), GOAL, "--out", str(root / "out"))
            else:
                explored = navigator(env, "explore", str(FIXTURE_REPO), GOAL, "--max-iterations", "3",
                                     "--out", str(root / "out"))
            link = re.search(r"^Web UI: (\S+)$", explored.stdout, re.M)
            if link is None:
                raise RuntimeError(f"explore printed no Web UI link: {explored.stdout[-1000:]}")
            browser = Chromium(args.chromium, args.width, args.height)
            found = check_pages(browser, link.group(1), args.out_dir, suffix)
        finally:
            if browser is not None:
                browser.close()
            worker.terminate()  # SIGTERM: the worker stops polling and leaves cleanly
            worker.wait(timeout=120)
            navigator(env, "server", "stop", timeout=120)
    checks = verdicts(found, args.kind)
    shots = [f"webui-user-metadata{suffix}.png", f"webui-event-history{suffix}.png"]
    report = {"server": {k: server[k] for k in ("grpc", "ui")}, **found, "checks": checks, "screenshots": shots}
    (args.out_dir / f"webui-check{suffix}.json").write_text(json.dumps(report, indent=1) + "\n")
    for name, ok in checks.items():
        print(f"{'ok  ' if ok else 'FAIL'} {name}")
    print(f"screenshots: {', '.join(str(args.out_dir / shot) for shot in shots)}")
    sys.exit(0 if all(checks.values()) else 1)


if __name__ == "__main__":
    main()
