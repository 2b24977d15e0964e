"""Reading a repository's files without ever blocking on one that is not a file.

Discovery lists only regular files (``lstat``), but a name is opened later — by the indexer,
the renderer, the freshness check — and the tree may have changed in between; and some files
are read before any listing (each ``.gitignore`` of the walk). ``open()`` on a FIFO blocks
until a writer appears, which may be never: one named pipe in a tree (``mkfifo .gitignore``)
wedged ``repo-map generate`` and every exploration of that tree forever. A device file can
block too, or read without end (``/dev/zero``).

:func:`read_regular` opens with ``O_NONBLOCK`` (which makes the open of a FIFO return at once;
it changes nothing for a regular file) and checks the *opened* file with ``fstat``, so no
rename between a check and the open can slip a pipe in. Anything but a regular file raises
:class:`NotRegularFileError`, an ``OSError``: every caller already treats an unreadable file
as skipped or vanished.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

__all__ = ["NotRegularFileError", "read_regular"]

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class NotRegularFileError(OSError):
    """The path names a FIFO, socket, device or directory, not a regular file."""


def read_regular(path: str | Path, *, follow_symlinks: bool = True, limit: int | None = None) -> bytes:
    """The bytes of the regular file ``path`` (at most ``limit`` when given).

    ``follow_symlinks=False`` refuses a symlink itself (``ELOOP``), as git does for a
    ``.gitignore``. Raises ``OSError`` (:class:`NotRegularFileError` for a FIFO, socket,
    device or directory) instead of blocking.
    """
    flags = _FLAGS if follow_symlinks else _FLAGS | os.O_NOFOLLOW
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "directory" if stat.S_ISDIR(mode) else "FIFO" if stat.S_ISFIFO(mode) else "special file"
            raise NotRegularFileError(errno.EINVAL, f"not a regular file (a {kind})", str(path))
        # a regular file never blocks; clear O_NONBLOCK anyway so a read means what it always means
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=True) as fh:
            fd = -1
            return fh.read() if limit is None else fh.read(limit)
    finally:
        if fd >= 0:
            os.close(fd)
