"""The rules an agent loop's trace must follow (documented in docs/rules.md), registered with `@rule`.

One module per family (`_loop` L, `_tools` T, `_history` H, `_limits` B, `_request` R, `_retries` E,
`_multiagent` M, `_workflow` W), each registered with `@rule` like a user's plugin; `builtin` imports them.

Options (`check_trace(trace, options={...})`; a missing option means the default):

| option | type | default | rules |
|---|---|---|---|
| `max_consecutive_tool_errors` | int | `limits.tool_errors`, else 3 | T007 |
| `sequential_tools` | list[str] of tool names | none | T008 (with tool events) |
| `history_projection` | bool: the agent sends a client-side projection of its history | False | H002 off when True |
| `limits` | {"steps": int, "tokens": int, "wall_time_s": float, "tool_errors": int}, each None = unset; a dict or `agents.Limits` | no limits | B001-B004; L002 lets B004 judge a run that reached one |
| `max_retries` | int: retries allowed per call | 5 | E001 |
| `prerequisites` | [{"tool", "requires", "match": {tool arg: requires arg}}] | none | W001 |
| `approvals` | [{"tool", "approval_tool"}]: one granted approval (JSON `approved: true` or "approved") per run | none | W002 |
| `circuit_breakers` | [{"tool": name or "*", "failures": int, "cooldown_s": float}] | none | W003 |

The W policies may also come nested under `policies` (the shape `Task.policies` carries); top-level wins.
"""

from ._registry import CheckContext, Example, Finding, Rule, check_trace, load_plugin, rule, rules

__all__ = ["CheckContext", "Example", "Finding", "Rule", "check_trace", "load_plugin", "rule", "rules"]
