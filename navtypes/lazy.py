"""Package names loaded on first use (PEP 562), for the packages whose ``__init__`` would
otherwise import every submodule: ``navcore``, ``repomap`` and ``workers``.

Importing one submodule of such a package (the CLI reads ``navcore.model.endpoints``, reaches
``workers.devserver``) must not build every model or import every workflow; a name of the
package is imported from its module when it is first read, then kept in the package's globals.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(package: str, namespace: dict[str, Any],
               home: Mapping[str, str]) -> Callable[[str], Any]:
    """The package's module ``__getattr__``: ``name`` -> ``getattr(import_module(home[name]), name)``.

    ``home`` maps each name to its module, absolute or relative to ``package`` (``".config"``).
    """

    def __getattr__(name: str) -> Any:
        module = home.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    return __getattr__
