"""Exports imported on first use, for package `__init__` modules (PEP 562).

`harness check` reads traces without ever talking to a model; packages whose public names live
beside the SDK (agents, transports) must not make it import the SDK just by being imported.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module `__getattr__` that imports `name` from `exports[name]` (absolute, or relative to
    `package`) on first access and caches it in the package's namespace."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            # A submodule, as `import harness.trace` then `harness.trace.formats` reads it: imported by the
            # package's `__init__` when it imported every name at once, importing it is what Python would do.
            if not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}") is not None:
                return importlib.import_module(f"{package}.{name}")
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    return __getattr__


def lazy_dir(exports: dict[str, str], namespace: dict[str, Any]) -> Callable[[], list[str]]:
    """A module `__dir__` that lists `exports` before they are imported: `dir()`, `help()` and a REPL's
    completion read names from it, and would otherwise show none of the package's public names."""

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __dir__
