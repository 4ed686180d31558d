"""`--plugin MODULE`, shared by the commands that check: import each rule module, or say which failed."""

from __future__ import annotations

import sys
from collections.abc import Iterable

from ..checks import load_plugin


def load_plugins(modules: Iterable[str]) -> bool:
    """Import each module named by `--plugin`; False (after one line on stderr) when one cannot be imported."""
    for module in modules:
        try:
            load_plugin(module)
        except ImportError as exc:
            print(f"harness: cannot import plugin {module!r}: {exc}", file=sys.stderr)
            return False
        except Exception as exc:  # noqa: BLE001 - the plugin's own code failing at import is its error, not ours
            print(f"harness: plugin {module!r} failed while importing: {type(exc).__name__}: {exc}", file=sys.stderr)
            return False
    return True
