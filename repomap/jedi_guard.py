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

The fix: the swap happens under the interpreter's global import lock (``_imp.acquire_lock``, the
lock ``importlib`` holds around every finder call), so no other thread's module search sees the
swapped path and no two swaps interleave. The lock is reentrant, so jedi's own finder calls inside
it proceed.
"""

from __future__ import annotations

import _imp
import functools
import threading
from typing import Any

__all__ = ["install", "installed"]

_INSTALL_LOCK = threading.Lock()


def _guard(original: Any) -> Any:
    @functools.wraps(original)
    def get_module_info(inference_state: Any, sys_path: Any = None, full_name: Any = None, **kwargs: Any) -> Any:
        if sys_path is None:  # jedi leaves sys.path alone: nothing to guard
            return original(inference_state, sys_path=sys_path, full_name=full_name, **kwargs)
        _imp.acquire_lock()
        try:
            return original(inference_state, sys_path=sys_path, full_name=full_name, **kwargs)
        finally:
            _imp.release_lock()

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
