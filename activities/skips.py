"""Which files a context pack's map leaves out, and why (for ``context.md``).

Two sources: the engine's index (files it never indexed: binary, minified,
generated, oversized, lock files, ignored directories, symlinks leaving the
root, unreadable) and the final map's header (files that vanished, became
unreadable or turned binary after the index was built, hidden by the render).
Pure formatting; the lists are capped so a vendored tree cannot flood the pack.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["skipped_files_markdown", "map_header", "REASONS"]

#: skip reason -> what it means for a reader of the context pack
REASONS = {
    "binary": "NUL bytes near the start",
    "minified": "very long lines or a .min/.bundle name",
    "generated": "a generated / do-not-edit marker at the top",
    "oversized": "larger than the size limit",
    "lockfile": "a dependency lock file",
    "ignored_dir": "inside a tool or vendor directory",
    "symlink_escape": "a symlink leading outside the repository (never followed)",
    "not_regular": "not a regular file",
    "unreadable": "could not be read",
    "vanished": "deleted or renamed after the index was built",
}
#: paths listed per reason; the rest are counted
PATHS_PER_REASON = 15
_HEADER_PREFIX = "# repo-map "


def map_header(map_text: str) -> dict[str, Any]:
    """The JSON fields of a rendered map's first line (empty when it has none)."""
    first = map_text.split("\n", 1)[0]
    if not first.startswith(_HEADER_PREFIX):
        return {}
    try:
        fields = json.loads(first[len(_HEADER_PREFIX):])
    except ValueError:
        return {}
    return fields if isinstance(fields, dict) else {}


def _by_reason(files: dict[str, str]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for path, reason in sorted(files.items()):
        out.setdefault(reason, []).append(path)
    return out


def _listing(files: dict[str, str]) -> list[str]:
    lines: list[str] = []
    for reason, paths in sorted(_by_reason(files).items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines.append(f"- {reason}: {len(paths)} — {REASONS.get(reason, reason)}")
        lines += [f"  - `{p}`" for p in paths[:PATHS_PER_REASON]]
        if len(paths) > PATHS_PER_REASON:
            lines.append(f"  - … and {len(paths) - PATHS_PER_REASON} more")
    return lines


def skipped_files_markdown(engine: Any, map_text: str) -> str:
    """The "Files not in the map" section body; empty when nothing was skipped.

    ``engine`` is the current repo-map engine of the repository (or None when it
    could not be opened); its ``skipped_files`` are the index's skips.
    """
    header = map_header(map_text)
    at_render = header.get("skipped") or {}
    at_index: dict[str, str] = dict(getattr(engine, "skipped_files", None) or {}) if engine is not None else {}
    parts: list[str] = []
    if at_index:
        version, shown = getattr(engine, "index_version", ""), header.get("index")
        note = "" if not version or not shown or version == shown else \
            f" (as of the current index `{version}`; the map below is from `{shown}`)"
        parts.append(f"Not indexed: {len(at_index)} file{'s' if len(at_index) != 1 else ''}{note}.\n")
        parts.append("\n".join(_listing(at_index)) + "\n")
    elif engine is None:
        parts.append("The repository could not be opened to list the files its index skipped.\n")
    if at_render:
        n = len(at_render)
        parts.append(f"Hidden from the map because the file changed after indexing: {n} file{'s' if n != 1 else ''}.\n")
        parts.append("\n".join(_listing({str(k): str(v) for k, v in at_render.items()})) + "\n")
    return "\n".join(parts)
