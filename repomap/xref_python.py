"""Python name resolution through jedi, confined to the repository's indexed files.

jedi follows imports, scopes, assignments and annotations (``self._ledger:
BudgetLedger`` then ``self._ledger.reserve(...)``) to the definition a name means.
It reads files itself, so it never sees the repository directly: it works on a
**shadow tree** in the engine's cache dir — one symlink per indexed Python file,
each checked with ``resolve_inside`` when it is made — whose import path is the
shadow root plus every package root inside it (``src/`` layouts). A symlink that
leaves the repository is not indexed, so it has no shadow; a relative import
beyond the top package lands in the cache dir, which holds no Python file; the
jedi environment is this interpreter (no subprocess) with unsafe extension
loading off. Results are mapped back to repository paths; anything else (the
standard library, jedi's stubs) is "outside" and never a repository definition.

One ``PythonResolver`` per engine version: jedi scripts are kept per file and
every answer per site, behind one lock (jedi is not thread-safe).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
import time
import uuid
from collections import OrderedDict
from pathlib import Path
from typing import Any

from durable_navigator.navtypes.errors import PathEscapeError
from durable_navigator.repomap import jedi_guard
from durable_navigator.repomap.safepath import resolve_inside
from durable_navigator.repomap.xref_sites import is_python

__all__ = ["PythonResolver", "OUTSIDE"]

#: a jedi answer outside the repository (standard library, stubs, builtins)
OUTSIDE = ("", 0)
#: jedi scripts kept per resolver (each holds its file's parse and inference state)
_MAX_SCRIPTS = 256


class PythonResolver:
    """``goto`` for sites of the indexed Python files of one engine version."""

    def __init__(self, root: Path, files: list[str], shadow_base: Path, version: str, keep: int) -> None:
        self._root = root
        self._files = [f for f in files if is_python(f)]
        self._base = shadow_base
        self._version = version
        self._keep = keep
        self._lock = threading.RLock()
        self._project: Any = None
        self._shadow: Path | None = None
        self._scripts: OrderedDict[str, Any] = OrderedDict()
        self._answers: dict[tuple[str, int, int], list[tuple[str, int]]] = {}
        self.jedi_seconds = 0.0

    # ---- shadow tree ------------------------------------------------------------
    def _ensure(self) -> None:
        if self._project is not None:
            return
        import jedi

        jedi_guard.install()  # jedi swaps the process-wide sys.path: other threads' imports must wait
        shadow = self._make_shadow()
        roots = sorted(_package_roots(self._files))
        self._project = jedi.Project(shadow, sys_path=[str(shadow / r) if r else str(shadow) for r in roots],
                                     smart_sys_path=False, load_unsafe_extensions=False)
        self._env = jedi.InterpreterEnvironment()
        self._shadow = shadow

    def _make_shadow(self) -> Path:
        tag = hashlib.blake2b(str(self._root).encode(), digest_size=6).hexdigest()
        final = self._base / f"{tag}-{self._version}" / "tree"
        if not final.is_dir():
            tmp = final.parent / f"tree.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            tmp.mkdir(parents=True)
            for rel in self._files:
                try:
                    real = resolve_inside(self._root, rel)
                except (PathEscapeError, OSError):  # a path that escapes now gets no shadow
                    continue
                link = tmp / rel
                link.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(real, link)
            try:
                os.rename(tmp, final)
            except OSError:  # another process made it first
                shutil.rmtree(tmp, ignore_errors=True)
            self._prune(tag)
        return final

    def _prune(self, tag: str) -> None:
        mine = sorted((p for p in self._base.glob(f"{tag}-*") if p.is_dir()),
                      key=lambda p: p.stat().st_mtime, reverse=True)
        for old in mine[self._keep:]:
            shutil.rmtree(old, ignore_errors=True)

    # ---- resolution -----------------------------------------------------------------
    def goto(self, path: str, text: str, line: int, column: int) -> list[tuple[str, int]]:
        """Definitions the name at ``path:line:column`` means: ``(repo path, line)`` or :data:`OUTSIDE`.

        Empty when jedi cannot tell (an untyped parameter's attribute, a dynamic
        lookup): the caller falls back to scope evidence.
        """
        key = (path, line, column)
        with self._lock:
            got = self._answers.get(key)
            if got is not None:
                return got
            self._ensure()
            t0 = time.perf_counter()
            try:
                names = self._script(path, text).goto(line, column, follow_imports=True)
            except Exception:  # noqa: BLE001 - jedi bugs on odd code must not fail a tool call
                names = []
            got = sorted({self._where(n) for n in names})
            self.jedi_seconds += time.perf_counter() - t0
            self._answers[key] = got
            return got

    def _script(self, path: str, text: str) -> Any:
        import jedi

        script = self._scripts.get(path)
        if script is None:
            assert self._shadow is not None
            script = jedi.Script(text, path=self._shadow / path, project=self._project, environment=self._env)
            self._scripts[path] = script
            if len(self._scripts) > _MAX_SCRIPTS:
                self._scripts.popitem(last=False)
        else:
            self._scripts.move_to_end(path)
        return script

    def _where(self, name: Any) -> tuple[str, int]:
        mp = name.module_path
        if mp is None or self._shadow is None or name.line is None:
            return OUTSIDE
        try:
            rel = Path(mp).relative_to(self._shadow).as_posix()
        except ValueError:
            return OUTSIDE
        return (rel, int(name.line)) if rel in self._indexed else OUTSIDE

    @property
    def _indexed(self) -> frozenset[str]:
        s = getattr(self, "_indexed_set", None)
        if s is None:
            s = self._indexed_set = frozenset(self._files)
        return s


def _package_roots(files: list[str]) -> set[str]:
    """Folders that hold a top-level module or package (what ``sys.path`` would list)."""
    inits = {f.rsplit("/", 1)[0] for f in files if f.endswith("/__init__.py")}
    roots: set[str] = {""}
    for f in files:
        d = f.rsplit("/", 1)[0] if "/" in f else ""
        while d in inits:
            d = d.rsplit("/", 1)[0] if "/" in d else ""
        roots.add(d)
    return roots
