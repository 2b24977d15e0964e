"""Indexing progress: a bar with files per second on a terminal, a line now and then when piped.

Fed either directly by the engine (``navigator map``: ``RepoMap.open(progress=bar.update)``)
or from the scan activity's heartbeat details (``explore`` and ``status --watch``
read them from the workflow's pending activity, see :func:`cli.follow.scan_progress`).
Small repositories index in well under a second: no bar below :data:`MIN_FILES`.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

__all__ = ["IndexProgressBar", "MIN_FILES", "LINE_EVERY_S", "progress_text"]

#: fewer files to index than this: no bar (it would flash for a fraction of a second)
MIN_FILES = 200
#: when piped, one progress line at most this often (and one at the end)
LINE_EVERY_S = 2.0


def progress_text(done: int, total: int, rate: float | None) -> str:
    """``indexing 1200/5000 files · 850 files/s`` (the piped line, and the tests' anchor)."""
    speed = f" · {rate:,.0f} files/s" if rate is not None else ""
    return f"indexing {done:,}/{total:,} files{speed}"


class IndexProgressBar:
    """Thread-safe progress of one indexing; use as a context manager around it."""

    def __init__(self, console: Console, min_files: int = MIN_FILES) -> None:
        self.console = console
        self.min_files = min_files
        self._lock = threading.Lock()
        self._started: float | None = None
        self._last_line = 0.0
        self._last: tuple[int, int, float | None] | None = None
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> IndexProgressBar:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close(finished=exc_type is None)

    def rate(self, done: int) -> float | None:
        """Files per second since the first update (``None`` before a meaningful interval)."""
        if self._started is None:
            return None
        elapsed = time.monotonic() - self._started
        return done / elapsed if elapsed >= 0.2 and done else None

    def update(self, done: int, total: int, rate: float | None = None) -> None:
        """``done`` of ``total`` files indexed; ``rate`` when the sender measured it (files/s)."""
        with self._lock:
            now = time.monotonic()
            if self._started is None:
                self._started = now
            rate = rate if rate is not None else self.rate(done)
            self._last = (done, total, rate)
            if total < self.min_files:
                return
            if self.console.is_terminal:
                self._draw(done, total, rate)
            elif now - self._last_line >= LINE_EVERY_S or done >= total:
                self._last_line = now
                self.console.print(progress_text(done, total, rate), markup=False)

    def _draw(self, done: int, total: int, rate: float | None) -> None:
        if self._bar is None:
            self._bar = Progress(
                TextColumn("indexing"), BarColumn(bar_width=None), MofNCompleteColumn(), TextColumn("files"),
                TextColumn("{task.fields[speed]}"), TimeElapsedColumn(),
                console=self.console, transient=True, expand=False,
            )
            self._task = self._bar.add_task("indexing", total=total, speed="")
            self._bar.start()
        assert self._task is not None
        speed = f"{rate:,.0f} files/s" if rate is not None else ""
        self._bar.update(self._task, completed=done, total=total, speed=speed)

    def close(self, finished: bool = True) -> None:
        """Take the bar down; on a terminal, leave one summary line of a finished indexing."""
        with self._lock:
            bar, self._bar = self._bar, None
            if bar is None:
                return
            bar.stop()
            if finished and self._last is not None:
                done, total, rate = self._last
                self.console.print(progress_text(done, total, rate), markup=False)
