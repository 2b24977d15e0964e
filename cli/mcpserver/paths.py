"""Which paths an MCP client may name: existing, readable, and inside the allowed roots.

An agent passes paths as text. Each one is resolved here before anything uses it:
``~`` expanded, made absolute against the server's working directory, symlinks
resolved (so a link inside an allowed root that points outside it is refused), then
checked against the ``--allow-root`` trees. Without any ``--allow-root`` every
directory the server process can read is allowed, as for ``navigator explore``.
The same check guards the run tools: a run whose repository lies outside the roots
is invisible to the client (``run_status``, ``stop_run``, the resources, ``list_runs``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from durable_navigator.navtypes.errors import NavigatorError

__all__ = ["AllowedRoots", "PathRefused"]

#: longest path text accepted from a client (longer is refused before touching the filesystem)
MAX_PATH_CHARS = 4096


class PathRefused(NavigatorError):
    """A client-supplied path that does not exist, cannot be read, or lies outside the roots."""

    kind = "PathRefused"


class AllowedRoots:
    """The ``--allow-root`` trees (resolved); empty means every readable directory."""

    def __init__(self, roots: Iterable[Path] = ()) -> None:
        resolved: list[Path] = []
        for root in roots:
            text = str(root)
            shown = text if len(text) <= 200 else f"{text[:40]}… ({len(text):,} characters)"
            try:
                path = Path(root).expanduser()
                is_dir = path.is_dir()
                if is_dir:
                    resolved.append(path.resolve())
            except (OSError, ValueError, RuntimeError) as exc:
                # ENAMETOOLONG, an embedded NUL, a symlink loop: is_dir()/resolve() raise rather than answer
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                raise PathRefused(f"--allow-root {shown} cannot be read ({reason}); pass an existing directory") \
                    from None
            if not is_dir:
                raise PathRefused(f"--allow-root {shown} is not an existing directory; pass one")
        self.roots: tuple[Path, ...] = tuple(dict.fromkeys(resolved))

    @property
    def restricted(self) -> bool:
        """True when ``--allow-root`` limits the trees."""
        return bool(self.roots)

    def describe(self) -> str:
        """The roots as one line (for refusals and the server's start-up note)."""
        if not self.roots:
            return "any directory this server can read"
        return ", ".join(str(r) for r in self.roots)

    def contains(self, path: Path) -> bool:
        """True when the resolved ``path`` is one of the roots or below one."""
        return not self.roots or any(path == root or path.is_relative_to(root) for root in self.roots)

    def repository(self, text: str, what: str = "repo") -> Path:
        """The resolved repository directory named by ``text``, or :class:`PathRefused`."""
        path = self._resolve(text, what)
        if not path.is_dir():
            raise PathRefused(f"{what} {text!r} is not a directory; pass the repository's root folder")
        if not os.access(path, os.R_OK | os.X_OK):
            raise PathRefused(f"{what} {text!r} cannot be read by the server process")
        return path

    def file(self, text: str, what: str) -> Path:
        """The resolved readable file named by ``text``, or :class:`PathRefused`."""
        path = self._resolve(text, what)
        if not path.is_file() or not os.access(path, os.R_OK):
            raise PathRefused(f"{what} {text!r} is not a readable file")
        return path

    def recorded(self, recorded: str | None, run_id: str) -> None:
        """Refuse a run whose recorded repository is outside the roots (or unknown while restricted)."""
        if not self.restricted:
            return
        if recorded and self.contains(Path(recorded)):
            return
        # the same words whether the run exists elsewhere or not: nothing leaks about other trees
        raise PathRefused(f"run {run_id} is not a run of a repository under the allowed roots ({self.describe()})")

    def _resolve(self, text: str, what: str) -> Path:
        if not text or not text.strip():
            raise PathRefused(f"{what} is empty; pass the absolute path of a folder on the server's machine")
        if len(text) > MAX_PATH_CHARS or "\x00" in text:
            raise PathRefused(f"{what} is not a usable path")
        path = Path(text.strip()).expanduser()
        try:
            # strict: a missing path is refused here, and links are followed to where they lead
            resolved = path.resolve(strict=True)
        except FileNotFoundError:
            raise PathRefused(f"{what} {text!r} does not exist on the server's machine") from None
        except (OSError, RuntimeError) as exc:  # permission denied on a parent, a symlink loop
            raise PathRefused(f"{what} {text!r} cannot be resolved ({type(exc).__name__})") from None
        if not self.contains(resolved):
            raise PathRefused(
                f"{what} {text!r} is outside the allowed roots ({self.describe()}); "
                "ask for a repository under one of them"
            )
        return resolved

    @classmethod
    def of(cls, roots: Sequence[Path] | None) -> AllowedRoots:
        """Build from the command's ``--allow-root`` values."""
        return cls(roots or ())
