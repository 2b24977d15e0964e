"""Which files a context pack's map leaves out, and why (for ``context.md``).

Two sources, both in the final map's metadata (``MapMetadata``), so ``context.md``,
``report.json`` (``map_metadata``) and ``status --json`` / ``result --json`` list the
same files: ``not_indexed`` (files the index never took: binary, minified, generated,
oversized, lock files, ignored directories, symlinks leaving the root or looping,
unreadable, names that cannot be shown) with ``not_indexed_counts``, and
``skipped_files`` (files that vanished, became unreadable or turned binary after the
index was built, hidden by the render). Pure formatting; the lists are capped per
reason (``repomap.discover.SKIP_PATHS_PER_REASON``) so a vendored tree cannot flood the pack.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from durable_navigator.repomap.discover import skip_listing

__all__ = ["files_not_in_map", "skipped_files_markdown", "map_header", "REASONS"]

#: skip reason -> what it means for a reader of the context pack
REASONS = {
    "binary": "NUL bytes near the start",
    "minified": "very long lines or a .min/.bundle name",
    "generated": "a generated / do-not-edit marker at the top",
    "oversized": "larger than the size limit",
    "lockfile": "a dependency lock file",
    "ignored_dir": "inside a tool or vendor directory",
    "symlink_escape": "a symlink leading outside the repository (never followed)",
    "symlink_loop": "a symlink that leads back to itself (a loop)",
    "dangling_symlink": "a symlink to a file that does not exist",
    "not_regular": "not a regular file",
    "unreadable": "could not be read",
    "name_clash": "a name that is not UTF-8 whose escaped form is another file's name (that file is shown)",
    "undecodable_name": "a name that cannot be shown and read back unambiguously",
    "vanished": "deleted or renamed after the index was built",
}
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


def files_not_in_map(engine: Any, map_text: str, meta: dict[str, Any] | None) -> dict[str, Any]:
    """What ``context.md`` lists as not in the map, as data (``report.json``'s ``files_not_in_map``).

    From ``meta`` -- the final map's ``MapMetadata`` as JSON -- when there is one: the skips
    of the index that map was drawn from. Without one (no map was rendered) from the
    current ``engine`` (None when the repository could not be opened). ``hidden``: files
    the render hid because they changed after indexing.
    """
    if meta and "not_indexed_counts" in meta:
        return {"source": "map", "index_version": str(meta.get("index_version") or ""),
                "not_indexed": dict(meta.get("not_indexed") or {}),
                "not_indexed_counts": dict(meta.get("not_indexed_counts") or {}),
                "hidden": dict(meta.get("skipped_files") or {})}
    header = map_header(map_text)
    hidden = {str(k): str(v) for k, v in (header.get("skipped") or {}).items()}
    if engine is None:
        return {"source": "none", "index_version": "", "not_indexed": {}, "not_indexed_counts": {},
                "hidden": hidden}
    listed, counts = skip_listing(dict(getattr(engine, "skipped_files", None) or {}))
    return {"source": "index", "index_version": str(getattr(engine, "index_version", "")),
            "not_indexed": listed, "not_indexed_counts": counts, "hidden": hidden,
            "map_index_version": str(header.get("index") or "")}


def _listing(files: dict[str, str], counts: dict[str, int]) -> list[str]:
    by_reason: dict[str, list[str]] = {}
    for path, reason in sorted(files.items()):
        by_reason.setdefault(reason, []).append(path)
    lines: list[str] = []
    for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        paths = by_reason.get(reason, [])
        lines.append(f"- {reason}: {n} — {REASONS.get(reason, reason)}")
        lines += [f"  - `{p}`" for p in paths]
        if n > len(paths):
            lines.append(f"  - … and {n - len(paths)} more")
    return lines


def _counts(files: dict[str, str]) -> dict[str, int]:
    return dict(Counter(files.values()))


def skipped_files_markdown(skips: dict[str, Any]) -> str:
    """The "Files not in the map" section body of :func:`files_not_in_map`; empty when nothing was skipped."""
    counts, hidden = skips["not_indexed_counts"], skips["hidden"]
    parts: list[str] = []
    if counts:
        total = sum(counts.values())
        version, shown = skips["index_version"], skips.get("map_index_version")
        note = "" if not version or not shown or version == shown else \
            f" (as of the current index `{version}`; the map below is from `{shown}`)"
        parts.append(f"Not indexed: {total} file{'s' if total != 1 else ''}{note}.\n")
        parts.append("\n".join(_listing(skips["not_indexed"], counts)) + "\n")
    elif skips["source"] == "none":
        parts.append("The repository could not be opened to list the files its index skipped.\n")
    if hidden:
        n = len(hidden)
        parts.append(f"Hidden from the map because the file changed after indexing: {n} file{'s' if n != 1 else ''}.\n")
        parts.append("\n".join(_listing(hidden, _counts(hidden))) + "\n")
    return "\n".join(parts)
