"""The rules an agent loop's trace must follow (documented in docs/rules.md), registered with `@rule`.

One module per family (`_loop` L, `_tools` T, `_history` H, `_limits` B, `_request` R, `_retries` E,
`_multiagent` M, `_workflow` W), each registered with `@rule` like a user's plugin; `builtin` imports them.

Options: `CheckOptions` (or a mapping of its fields) given to `check_trace`; an unknown key is an error.
`CheckOptions` is imported on first use: it is a pydantic model, and checking a recording without
options never needs pydantic.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from ._registry import CheckContext, Example, Finding, Rule, check_trace, load_plugin, rule, rules

if TYPE_CHECKING:
    from ._options import CheckOptions

__all__ = ["CheckContext", "CheckOptions", "Example", "Finding", "Rule", "check_trace", "load_plugin", "rule", "rules"]

__getattr__ = lazy_exports(__name__, {"CheckOptions": "._options"}, globals())
