"""Flight-plan glob matching (see ``navcore/flightplan.py`` for the semantics).

``*`` and ``?`` stay inside one path segment, ``**`` crosses directories, a
bare directory (``src/budget`` or ``src/budget/``) matches everything below it,
and a glob without ``/`` also matches a file's basename at any depth (like
``.gitignore``), so ``*.py`` means every Python file.
"""

from __future__ import annotations

import functools
import re

__all__ = ["glob_match", "compile_glob"]

_MAX_COMPILED = 4096


@functools.lru_cache(maxsize=_MAX_COMPILED)
def compile_glob(glob: str) -> re.Pattern[str]:
    """Regex for one glob (cached: plans repeat the same globs every turn)."""
    g = glob.strip().lstrip("./") if glob.startswith("./") else glob.strip()
    i, out = 0, []
    while i < len(g):
        c = g[i]
        if g.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif g.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = g.find("]", i + 1)
            if j < 0:
                out.append(re.escape(c))
                i += 1
            else:
                body = g[i + 1:j].replace("\\", "\\\\")
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    core = "".join(out).rstrip("/")
    # a directory glob matches everything below it
    pattern = f"(?:{core})(?:/.*)?"
    if "/" not in g.rstrip("/"):
        pattern = f"(?:.*/)?{pattern}"
    return re.compile(pattern + r"\Z")


def glob_match(glob: str, path: str) -> bool:
    """True when ``path`` (POSIX, relative) matches the flight-plan ``glob``."""
    return compile_glob(glob).match(path) is not None
