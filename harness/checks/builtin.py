"""The built-in catalogue: importing this module registers every rule of docs/rules.md.

Each family is a module whose rules use the same `@rule` decorator a user's plugin would.
"""

from . import _history, _limits, _loop, _multiagent, _request, _retries, _tools, _workflow  # noqa: F401

__all__: list[str] = []
