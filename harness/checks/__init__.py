"""The invariant catalogue of INVARIANTS.md as registered rules, and the expectations of scenarios."""

from ._registry import CheckContext, Finding, Rule, check_trace, load_plugin, rule, rules

__all__ = ["CheckContext", "Finding", "Rule", "check_trace", "load_plugin", "rule", "rules"]
