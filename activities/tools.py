"""Code tools the navigator model can call between map updates, as activities.

Integration note (for ``workers/`` and ``workflows/navigator.py``)
------------------------------------------------------------------
Build one :class:`CodeToolActivities` per worker with the engine opener the
other activities use and the artifact store, and register :meth:`all`::

    tools = CodeToolActivities(engine_for=nav_acts.engine, store=artifact_store)

Activity names are ``navcore.run.tools.TOOL_ACTIVITY[name]`` (``tools.search_codebase``,
``tools.read_file``, ``tools.list_directory``, ``tools.get_callers``,
``tools.get_callees``); each takes a :class:`~navcore.run.tools.ToolRequest` and
returns a :class:`~navcore.run.tools.ToolResult`. Errors the model can cause (bad
arguments, paths outside the repository, unknown symbols, missing files) come
back as ``ok=False`` results with a one-line error saying what to do — they
never fail the workflow. Bugs (anything else) still raise, so Temporal's retry
policy and the failure are visible rather than hidden. Every path goes through
``repomap.safepath.resolve_inside`` (``..``, absolute paths and symlinks that
leave the root are refused); reads are limited to indexed files. Output over
``ToolLimits.max_inline_chars`` is stored whole as an artifact and returned as
a capped preview plus ``artifact_ref``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

from pydantic import ValidationError
from temporalio import activity

from durable_navigator.activities.requests import EngineSource
from durable_navigator.navcore.run.artifacts import ArtifactRef
from durable_navigator.navcore.run.compression import truncate_text
from durable_navigator.navtypes.errors import NavigatorError, PathEscapeError
from durable_navigator.repomap.regular import NotRegularFileError, read_regular
from durable_navigator.navcore.run.tools import (
    ListDirectoryArgs,
    ReadFileArgs,
    SearchArgs,
    SymbolArgs,
    ToolLimits,
    ToolName,
    ToolRequest,
    ToolResult,
    parse_tool_args,
)

__all__ = ["CodeToolActivities", "BytesStore"]

class BytesStore(Protocol):
    """The part of ``activities.artifacts.ArtifactStore`` the tools need."""

    def put_bytes(self, data: bytes, media_type: str, summary: str = "") -> ArtifactRef:
        """Store ``data`` and return its reference."""
        ...


def _resolve_inside(root: Path, relpath: str) -> Path:
    from durable_navigator.repomap.safepath import resolve_inside

    return resolve_inside(root, relpath)


def _rel(root: Path, path: str) -> str:
    """The POSIX path relative to the root of a model-given path, escapes refused.

    Paths are display names both ways (``repomap.fsnames``): a file whose name is not
    printable UTF-8 is named, listed and read as ``caf\\xe9.py``.
    """
    from durable_navigator.repomap.fsnames import display_name

    resolved = _resolve_inside(root, path)
    rel = display_name(resolved.relative_to(root.resolve()).as_posix())
    return "" if rel == "." else rel


#: a file the index lists is gone from the working tree (deleted, renamed, another checkout)
_VANISHED = ("{path} was deleted or renamed after the repository was indexed; the next map will not list it. "
             "Use list_directory or search_codebase to find the current files")


def _how(ref: Any) -> str:
    """``call, jedi``: what the site does and how it was tied to the definition."""
    return ", ".join(x for x in (getattr(ref, "kind", ""), getattr(ref, "how", "")) if x)


def _fail(tool: str, error: str) -> ToolResult:
    return ToolResult(tool=tool, ok=False, error=" ".join(error.split())[:1000], summary=f"{tool}: error")


#: seconds between heartbeats while a tool runs (jedi's first inference on a cold engine takes seconds)
HEARTBEAT_EVERY_S = 1.0


async def _with_heartbeat(work: Awaitable[ToolResult], detail: str) -> ToolResult:
    """Await ``work``, heartbeating every second so a slow first query is not taken for a lost worker."""
    task = asyncio.ensure_future(work)
    if not activity.in_activity():
        return await task
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=HEARTBEAT_EVERY_S)
            if done:
                return task.result()
            activity.heartbeat(f"{detail} (running)")
    finally:
        if not task.done():
            task.cancel()


class CodeToolActivities:
    """``search_codebase``, ``read_file``, ``list_directory``, ``get_callers``, ``get_callees``."""

    def __init__(
        self,
        engine_for: EngineSource,
        store: BytesStore | None = None,
        limits: ToolLimits = ToolLimits(),
        host_queue: Callable[[], str] = lambda: "",
    ) -> None:
        """``host_queue()``: the queue only this host polls (its warm index), named in every result so
        the run sends its next index-bound activities there (``workflows/blocks/affinity.py``)."""
        self._engine_for = engine_for
        self._store = store
        self.limits = limits
        self._host_queue = host_queue

    def all(self) -> list[Callable[..., Awaitable[ToolResult]]]:
        """The bound activity methods, for ``Worker(activities=...)``."""
        return [self.search_codebase, self.read_file, self.list_directory, self.get_callers, self.get_callees]

    # ------------------------------------------------------------------ plumbing

    def _finish(self, tool: str, text: str, summary: str, capped: bool = False) -> ToolResult:
        """Cap ``text`` inline; store the whole output as an artifact when it is larger."""
        if len(text) > self.limits.max_output_chars:
            text, capped = truncate_text(text, self.limits.max_output_chars), True
        cap = self.limits.max_inline_chars
        if len(text) <= cap:
            return ToolResult(tool=tool, ok=True, content=text, truncated=capped, summary=summary)
        ref = None
        if self._store is not None:
            ref = self._store.put_bytes(text.encode("utf-8"), "text/plain; charset=utf-8", f"{tool}: {summary}")
        hint = (
            f"\n[output capped at {cap} chars; full output stored as artifact {ref.short}]"
            if ref is not None
            else f"\n[output capped at {cap} chars; narrow the request]"
        )
        preview = truncate_text(text, cap - len(hint)) + hint
        return ToolResult(tool=tool, ok=True, content=preview, truncated=True, artifact_ref=ref, summary=summary)

    async def _execute(
        self, req: ToolRequest, name: ToolName, body: Callable[[Any, Path, Any], ToolResult]
    ) -> ToolResult:
        res = await self._execute_here(req, name, body)
        host = self._host_queue()
        return res.model_copy(update={"host_queue": host}) if host else res

    async def _execute_here(
        self, req: ToolRequest, name: ToolName, body: Callable[[Any, Path, Any], ToolResult]
    ) -> ToolResult:
        if req.call.name != name:
            return _fail(name, f"this activity runs {name}, not {req.call.name}; call the matching tool")
        if activity.in_activity():
            activity.heartbeat(f"{name} step {req.step}")
        try:
            args = parse_tool_args(req.call)
        except ValidationError as exc:
            errs = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'args'}: {e['msg']}" for e in exc.errors()[:3])
            return _fail(name, f"bad arguments for {name}: {errs}")
        try:
            engine = await self._engine_for(req.repo_root)
            return await _with_heartbeat(asyncio.to_thread(body, engine, Path(engine.root), args),
                                         f"{name} step {req.step}")
        except PathEscapeError as exc:
            return _fail(name, f"refused: {exc}")
        except NavigatorError as exc:
            return _fail(name, str(exc))
        except (OSError, UnicodeError) as exc:
            return _fail(name, f"{name} could not read the file: {exc.__class__.__name__}; pick another path")

    # ------------------------------------------------------------------ tools

    def _search(self, engine: Any, root: Path, args: SearchArgs) -> ToolResult:
        limit = min(args.limit, self.limits.max_search_results)
        hits = engine.search(args.query, limit=limit)
        lines = []
        for h in hits:
            # "path:12-40  score=…  path::Class.method" (a definition) or "path  score=…" (module code)
            where = f"{h.path}:{h.line}-{h.end_line}" if h.line and h.end_line else (
                f"{h.path}:{h.line}" if h.line else h.path)
            lines.append(f"{where}  score={h.score:.3f}" + (f"  {h.symbol}" if h.symbol else ""))
        text = "\n".join(lines) or f"no matches for {args.query!r}; try other words or a symbol name"
        return self._finish("search_codebase", text, f"search {args.query!r}: {len(hits)} hits")

    def _read(self, engine: Any, root: Path, args: ReadFileArgs) -> ToolResult:
        rel = _rel(root, args.path)
        if rel not in set(engine.files):
            return _fail(
                "read_file",
                f"{args.path} is not an indexed file (missing, a folder, ignored, binary or oversized); "
                "use list_directory or search_codebase to find files",
            )
        try:
            data = read_regular(_resolve_inside(root, rel))  # never blocks on a file turned FIFO since the scan
        except (FileNotFoundError, NotADirectoryError, NotRegularFileError):
            return _fail("read_file", _VANISHED.format(path=rel))
        total = data.count(b"\n") + (0 if not data or data.endswith(b"\n") else 1)
        start = args.start_line
        if start > max(total, 1):
            return _fail("read_file", f"{rel} has {total} lines; start_line {start} is past the end")
        want_end = min(args.end_line or total, total)
        if want_end < start:
            return _fail("read_file", f"end_line {want_end} is before start_line {start}")
        end = min(want_end, start + self.limits.max_read_lines - 1)
        body = engine.read_lines(rel, start, end)
        numbered = "\n".join(f"{start + i:>6}  {line}" for i, line in enumerate(body.splitlines()))
        capped = end < want_end
        note = f"\n[lines {start}-{end} of {total}; ask for {end + 1}-{want_end} next]" if capped else ""
        return self._finish("read_file", f"{rel} lines {start}-{end} of {total}\n{numbered}{note}",
                            f"read {rel}:{start}-{end}", capped)

    def _listdir(self, engine: Any, root: Path, args: ListDirectoryArgs) -> ToolResult:
        rel = _rel(root, args.path)
        if not _resolve_inside(root, rel or ".").is_dir():
            return _fail("list_directory", f"{args.path} is not a folder of the repository; list '.' first")
        prefix = f"{rel}/" if rel else ""
        dirs: dict[str, int] = {}
        files: list[str] = []
        for path in engine.files:
            if not path.startswith(prefix):
                continue
            head, sep, _ = path[len(prefix):].partition("/")
            if sep:
                dirs[head] = dirs.get(head, 0) + 1
            else:
                files.append(head)
        entries = [f"{d}/  ({n} files)" for d, n in sorted(dirs.items())] + sorted(files)
        cap = self.limits.max_dir_entries
        shown = entries[:cap]
        if len(entries) > cap:
            shown.append(f"[{len(entries) - cap} more entries not shown; list a sub-folder]")
        text = "\n".join(shown) or f"{args.path}: no indexed files"
        return self._finish("list_directory", text, f"ls {rel or '.'}: {len(entries)} entries", len(entries) > cap)

    def _symbol_ids(self, engine: Any, root: Path, symbol: str) -> list[str]:
        if "::" in symbol:
            path = symbol.split("::", 1)[0]
            _rel(root, path)  # refuses ids that point outside the root
            return [symbol]
        return sorted({s.id for s in engine.find_symbol(symbol)})[:10]

    def _refs(self, engine: Any, root: Path, args: SymbolArgs, tool: str) -> ToolResult:
        ids = self._symbol_ids(engine, root, args.symbol)
        if not ids:
            return _fail(tool, f"no symbol named {args.symbol!r}; use search_codebase to find its exact name")
        callers = tool == "get_callers"
        get = engine.callers if callers else engine.callees
        cap = self.limits.max_refs
        lines: list[str] = []
        count = 0
        capped = False
        for sid in ids:
            refs = get(sid)
            sure = [r for r in refs if getattr(r, "resolved", True)]
            unsure = [r for r in refs if not getattr(r, "resolved", True)]
            count += len(sure)
            lines.append(f"{sid}: {len(sure)} {'callers' if callers else 'callees'}")
            # "  path:line  enclosing-or-callee id  (call, jedi)": how the site was resolved
            lines += [f"  {r.path}:{r.line}  {r.symbol_id}  ({_how(r)})" for r in sure[:cap]]
            if len(sure) > cap:
                lines.append(f"  [{len(sure) - cap} more not shown]")
                capped = True
            if unsure:
                name = sid.rsplit("::", 1)[-1].rsplit(".", 1)[-1]
                lines.append(f"  + {len(unsure)} sites name '{name}' but may mean another definition "
                             "(the receiver's type is unknown):")
                lines += [f"    {r.path}:{r.line}  {r.symbol_id}" for r in unsure[: max(1, cap // 4)]]
                capped = capped or len(unsure) > max(1, cap // 4)
        return self._finish(tool, "\n".join(lines), f"{tool} {args.symbol}: {count} refs", capped)

    # ------------------------------------------------------------------ activities

    @activity.defn(name="tools.search_codebase")
    async def search_codebase(self, req: ToolRequest) -> ToolResult:
        """Definitions that match the query, with their line ranges (symbol-level BM25)."""
        return await self._execute(req, "search_codebase", self._search)

    @activity.defn(name="tools.read_file")
    async def read_file(self, req: ToolRequest) -> ToolResult:
        """A line range of one indexed file, with line numbers."""
        return await self._execute(req, "read_file", self._read)

    @activity.defn(name="tools.list_directory")
    async def list_directory(self, req: ToolRequest) -> ToolResult:
        """Indexed files and sub-folders directly under a folder."""
        return await self._execute(req, "list_directory", self._listdir)

    @activity.defn(name="tools.get_callers")
    async def get_callers(self, req: ToolRequest) -> ToolResult:
        """Code sites that reference a definition, resolved through imports and scopes."""
        return await self._execute(req, "get_callers", lambda e, r, a: self._refs(e, r, a, "get_callers"))

    @activity.defn(name="tools.get_callees")
    async def get_callees(self, req: ToolRequest) -> ToolResult:
        """Definitions a definition's body references, resolved."""
        return await self._execute(req, "get_callees", lambda e, r, a: self._refs(e, r, a, "get_callees"))
