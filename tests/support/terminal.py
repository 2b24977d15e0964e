"""A process on a pseudo-terminal of a given size, with a VT100 screen (pyte) of what it shows.

``expect`` waits for a pattern in the output stream (ANSI codes removed);
``screen_text`` / ``screen_lines`` are what a user sees: the emulated 80-column
screen with every line the process wrote, wrapped where the terminal wraps it.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time
from pathlib import Path

import pyte

__all__ = ["Terminal", "ANSI"]

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


class Terminal:
    """The master side of a pty running one process."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str], columns: int = 80, rows: int = 50,
                 history: int = 5000) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        env = {**env, "TERM": "xterm", "COLUMNS": str(columns), "LINES": str(rows)}
        self.proc = subprocess.Popen(args, cwd=cwd, env=env, stdin=slave, stdout=slave, stderr=slave,
                                     start_new_session=True, close_fds=True)
        os.close(slave)
        self.master = master
        self.columns = columns
        self.screen = pyte.HistoryScreen(columns, rows, history=history)
        self.stream = pyte.ByteStream(self.screen)
        self.seen = ""
        self.cursor = 0

    def expect(self, pattern: str, timeout_s: float = 120.0) -> str:
        """Wait until ``pattern`` appears after the previous match; returns the match."""
        deadline = time.monotonic() + timeout_s
        regex = re.compile(pattern)
        while True:
            match = regex.search(self.seen, self.cursor)
            if match:
                self.cursor = match.end()
                return match.group(0)
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.proc.poll() is not None and not self._read(0.2):
                raise AssertionError(f"never saw {pattern!r}; screen:\n{self.screen_text()[-4000:]}")
            self._read(min(remaining, 0.5))

    def _read(self, timeout_s: float) -> bool:
        ready, _, _ = select.select([self.master], [], [], timeout_s)
        if not ready:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed the terminal
            return False
        self.stream.feed(data)
        self.seen += ANSI.sub("", data.decode("utf-8", "replace"))
        return bool(data)

    def send(self, line: str) -> None:
        """Type ``line`` and Enter."""
        os.write(self.master, (line + "\n").encode())

    def screen_lines(self) -> list[str]:
        """Every row the terminal shows or scrolled off (history first), right-stripped."""
        rows = [_row_text(row, self.columns) for row in self.screen.history.top]
        rows += [line.rstrip() for line in self.screen.display]
        while rows and not rows[-1]:
            rows.pop()
        return rows

    def screen_text(self) -> str:
        """:meth:`screen_lines` joined with newlines."""
        return "\n".join(self.screen_lines())

    def close(self, timeout_s: float = 60.0) -> int:
        """Wait for the process (killing its group if it hangs); returns its exit code."""
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            return self.proc.wait()
        finally:
            while self._read(0.1):
                pass
            os.close(self.master)


def _row_text(row: dict[int, pyte.screens.Char], columns: int) -> str:
    return "".join(row[x].data if x in row else " " for x in range(columns)).rstrip()
