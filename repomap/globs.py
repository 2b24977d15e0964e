"""Flight-plan glob matching (see ``navcore/flightplan.py`` for the semantics).

``*`` and ``?`` stay inside one path segment, ``**`` crosses directories, a
bare directory (``src/budget`` or ``src/budget/``) matches everything below it,
and a glob without ``/`` also matches a file's basename at any depth (like
``.gitignore``), so ``*.py`` means every Python file. In a plan, a glob that is exactly
the path of a file of the repository names that file only (:func:`plan_match`): a rule for
the root ``Makefile`` does not also show ``docs/Makefile`` in full, and a path with ``[`` in
it names itself; ``**/Makefile`` is every Makefile.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection

__all__ = ["glob_match", "compile_glob", "plan_match"]

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


def plan_match(glob: str, path: str, files: Collection[str]) -> bool:
    """:func:`glob_match`, except that a glob that is exactly one of ``files`` (the repository's
    paths) names that file only: the learned allocation's rule for the root ``Makefile`` gave
    ``docs/Makefile`` 1,589 tokens in full as well, and the map fitted that by cutting the file
    the goal was about."""
    if glob in files:
        return glob == path
    return glob_match(glob, path)
