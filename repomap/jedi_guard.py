"""Jedi's in-process module lookup, made safe for a worker whose other threads import modules.

Why: with ``jedi.InterpreterEnvironment`` (the engine's callers/callees, ``xref_python.py``), jedi
finds a module by *replacing the process-wide* ``sys.path`` with the project's path for the length
of the lookup (``jedi.inference.compiled.subprocess.functions.get_module_info``). Any other thread
importing at that moment searches the shadow tree instead of the interpreter's path, and two such
lookups in two threads interleave (A saves the real path, B saves A's shadow path, A restores the
real one, B restores A's) so the process keeps a shadow tree as its ``sys.path`` for good. Seen in
``navigator eval`` (two explorations at once in one worker): every later run's workflow sandbox
failed to import ``durable_navigator`` ("No module named 'durable_navigator'") and its workflow
task kept failing, until the activity process pool died too.

A lock cannot fix it: ``multiprocessing`` copies ``sys.path`` into every process it spawns without
any lock (the worker's activity pool then died with "No module named 'pkgutil'"). So the guarded
lookup never touches ``sys.path``: it is jedi's own global lookup with the project's path handed to
``PathFinder`` instead of installed as the process's path, and the fallback that found already
imported modules (builtins, frozen ``os``) through the swapped path reading ``sys.modules``.
"""

from __future__ import annotations

import functools
import importlib.machinery
import sys
import threading
from typing import Any

__all__ = ["install", "installed", "find_module_on"]

_INSTALL_LOCK = threading.Lock()


def find_module_on(sys_path: list[str], string: str) -> Any:
    """Jedi's global module lookup of ``string`` as if ``sys_path`` were the process's path (it is not)."""
    from jedi.inference.compiled.subprocess import functions
    from jedi.inference.compiled.subprocess.functions import ImplicitNSInfo

    loader = None
    for finder in sys.meta_path:
        find_spec = getattr(finder, "find_spec", None)
        if find_spec is None:  # old-style finders: jedi skips them too
            continue
        spec = find_spec(string, sys_path if finder is importlib.machinery.PathFinder else None)
        if spec is None:
            continue
        if spec.origin == "frozen":
            continue
        loader = spec.loader
        if loader is None and not spec.has_location:  # a namespace package
            return ImplicitNSInfo(string, spec.submodule_search_locations._path), True  # type: ignore[union-attr]
        break
    if loader is None and string in sys.modules:
        # the swapped lookup's fallback (importlib.util.find_spec) found modules already imported
        spec = getattr(sys.modules[string], "__spec__", None)
        loader = spec.loader if spec is not None else None
    return functions._find_module_py33(string, sys_path, loader)


def _guard(original: Any) -> Any:
    @functools.wraps(original)
    def get_module_info(inference_state: Any, sys_path: Any = None, full_name: Any = None, **kwargs: Any) -> Any:
        if sys_path is None or kwargs.get("path") is not None or not kwargs.get("is_global_search", True):
            # jedi leaves sys.path alone for these: nothing to guard
            return original(inference_state, sys_path=sys_path, full_name=full_name, **kwargs)
        try:
            return find_module_on([str(p) for p in sys_path], kwargs["string"])
        except ImportError:
            return None, None

    get_module_info.__navigator_guarded__ = True  # type: ignore[attr-defined]
    return get_module_info


def installed() -> bool:
    """Jedi's lookup is guarded in this process."""
    from jedi.inference.compiled.subprocess import functions

    return bool(getattr(functions.get_module_info, "__navigator_guarded__", False))


def install() -> None:
    """Guard jedi's in-process lookup (idempotent; jedi finds the function by name at each call)."""
    from jedi.inference.compiled.subprocess import functions

    with _INSTALL_LOCK:
        if not installed():
            functions.get_module_info = _guard(functions.get_module_info)
