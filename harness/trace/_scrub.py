"""Scrub recorded headers: every exchange passes through `scrub_headers` before it exists.

What a secret is, and how it is found in any text, is `harness._secrets`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping

from .._secrets import (
    ANTHROPIC_KEY_PATTERN,
    BEARER_PATTERN,
    REDACTED,
    default_secrets,
    find_secret,
    redact,
    redact_json,
    secret_forms,
    usable_secrets,
)

__all__ = ["REDACTED", "default_secrets", "find_secret", "redact", "redact_json", "scrub_headers", "secret_forms"]

# Names that carry credentials. Matched on the last word so that counters such as
# `anthropic-ratelimit-tokens-remaining` keep their value.
_SECRET_NAME = re.compile(
    r"(?:^|[-_])(?:authorization|cookie|api[-_]?key|apikey|token|secret|password|session|credentials?)$"
)


def _is_secret_value(value: str, secrets: Iterable[str]) -> bool:
    if ANTHROPIC_KEY_PATTERN.search(value) or BEARER_PATTERN.search(value):
        return True
    return any(form in value for secret in secrets for form in secret_forms(secret))


@functools.lru_cache(maxsize=1024)
def _scrubbed(name: str, value: str, secrets: tuple[str, ...]) -> str:
    """The value as kept: REDACTED when the header carries a credential. A recording repeats most of
    its headers on every exchange (content-type, anthropic-version, the SDK's x-stainless-*), so each
    pair is judged once, not three regular expressions and every secret's forms each time."""
    return REDACTED if _SECRET_NAME.search(name) or _is_secret_value(value, secrets) else value


def scrub_headers(
    headers: Mapping[str, str | list[str] | tuple[str, ...]] | Iterable[tuple[str, str]] | None,
    secrets: Iterable[str] = (),
) -> dict[str, str]:
    """Lower-case names, join repeated values, and replace every credential with REDACTED.

    Accepts a mapping (values may be lists, as in VCR cassettes) or (name, value) pairs (HAR, raw HTTP).
    """
    if not headers:
        return {}
    known = tuple(usable_secrets(secrets)) if secrets else ()
    # Every exchange passes here twice: the common shapes (a dict; a name and its one value, as a
    # string or VCR.py's one-item list) skip the general steps, which give them the same result.
    pairs = headers.items() if isinstance(headers, dict) or isinstance(headers, Mapping) else headers
    scrubbed: dict[str, str] = {}
    for raw_name, raw_value in pairs:
        name = (raw_name if type(raw_name) is str else str(raw_name)).strip().lower()
        if type(raw_value) is str:
            value = raw_value
        elif isinstance(raw_value, (list, tuple)):
            if len(raw_value) == 1 and type(raw_value[0]) is str:
                value = raw_value[0]
            else:
                value = ", ".join([str(v) for v in raw_value if v is not None])
        else:
            value = "" if raw_value is None else str(raw_value)
        if name in scrubbed:
            value = f"{scrubbed[name]}, {value}"
        scrubbed[name] = _scrubbed(name, value, known)
    return scrubbed
