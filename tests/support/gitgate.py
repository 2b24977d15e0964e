"""A git repository over plain ("dumb") HTTP whose object downloads wait at a gate the test opens.

``git ls-remote`` reads only ``info/refs`` and passes; a fetch (a worker host checking the
commit out inside its scan activity) then asks for ``objects/…`` and waits there until
:meth:`GitGate.release`. So a test knows, without timing, that a host is *inside* the activity
(:attr:`GitGate.entered` is set) and can SIGKILL it there. The server runs in a thread of the
test on a free loopback port; :meth:`GitGate.close` stops it.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["GitGate"]

#: how long a held request waits for the gate before it gives up (the test failed meanwhile)
HOLD_LIMIT_S = 300.0


class _Handler(SimpleHTTPRequestHandler):
    gate: GitGate

    def do_GET(self) -> None:  # noqa: N802 - the http.server name
        if self.path.startswith("/repo.git/objects/"):
            self.gate.entered.set()
            self.gate.opened.wait(HOLD_LIMIT_S)
        super().do_GET()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        self.gate.requests.append(self.path)


class GitGate:
    """``http://127.0.0.1:<port>/repo.git``: a bare clone of ``source`` (committed on ``main``)."""

    def __init__(self, source: Path, root: Path) -> None:
        self.entered, self.opened = threading.Event(), threading.Event()
        self.requests: list[str] = []
        tree, bare = root / "tree", root / "srv" / "repo.git"
        shutil.copytree(source, tree)
        env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
               "GIT_COMMITTER_EMAIL": "t@example.invalid", "PATH": "/usr/bin:/bin", "HOME": str(root)}
        for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "fixture"]):
            subprocess.run(["git", *args], cwd=tree, env=env, check=True, capture_output=True)
        subprocess.run(["git", "clone", "-q", "--bare", str(tree), str(bare)], check=True, capture_output=True)
        # loose objects (no pack): every fetch asks for objects/… files, and so waits at the gate
        subprocess.run(["git", "update-server-info"], cwd=bare, check=True, capture_output=True)
        handler = type("Handler", (_Handler,), {"gate": self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0),
                                          functools.partial(handler, directory=str(root / "srv")))
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/repo.git"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def release(self) -> None:
        """Let every held and later object request through."""
        self.opened.set()

    def close(self) -> None:
        """Open the gate and stop the server."""
        self.opened.set()
        self.server.shutdown()
        self.server.server_close()
