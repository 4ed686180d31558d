"""Import a user's own module (an agent, a rule plugin) from their project without installing it.

`harness` is a console script: `sys.path[0]` is its bin folder, not the user's project, so a module
sitting beside the user's scenarios would not import unless installed or put on PYTHONPATH. The
current folder (and, for scenarios, the scenario's folder) are searched too, after the installed
packages, so an installed module of the same name still wins as it would under `python`.
"""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from pathlib import Path
from types import ModuleType


def import_user_module(name: str, *, near: Path | None = None) -> ModuleType:
    """Import `name` with the current folder and `near` importable.

    When the module itself is not found, the ImportError says where it was looked for; an
    ImportError raised from inside a module that was found is the user's own and is left as it is.
    """
    # Absolute, so a later chdir cannot change what the entry means.
    folders = list(dict.fromkeys(str(f.resolve()) for f in (Path.cwd(), near) if f is not None))
    for folder in folders:
        if folder not in sys.path:
            sys.path.append(folder)
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is None or not (name == exc.name or name.startswith(exc.name + ".")):
            raise
        raise ModuleNotFoundError(
            f"{exc} (looked in {', '.join(folders)} and the installed packages)", name=exc.name
        ) from exc


def raised_at_import(exc: BaseException) -> str:
    """`importing it called sys.exit(5)`, or the exception's own words with the user's line that
    raised it: the harness's importer and Python's own (a module not found, a syntax error, whose
    words already name its file and line) are no place to look."""
    if isinstance(exc, SystemExit):
        return f"importing it called sys.exit({exc.code!r})"
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith((_HARNESS_DIR, _IMPORTLIB_DIR, "<frozen "))]
    where = f" (at {frames[-1].filename}:{frames[-1].lineno})" if frames else ""
    return f"{type(exc).__name__}: {exc}{where}"


_HARNESS_DIR = str(Path(__file__).resolve().parent) + os.sep
_IMPORTLIB_DIR = str(Path(importlib.__file__).parent) + os.sep
