"""Keep secrets off disk: scrub recorded headers and scan written text for keys.

Every exchange passes through `scrub_headers` before it exists; `find_secret` is the last look
at a file before a recorder keeps it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

REDACTED = "[REDACTED]"

# Names that carry credentials. Matched on the last word so that counters such as
# `anthropic-ratelimit-tokens-remaining` keep their value.
_SECRET_NAME = re.compile(
    r"(?:^|[-_])(?:authorization|cookie|api[-_]?key|apikey|token|secret|password|session|credentials?)$"
)
_ANTHROPIC_KEY = re.compile(r"sk-ant-[A-Za-z0-9][A-Za-z0-9_\-]{6,}")
_BEARER = re.compile(r"\bBearer\s+[A-Za-z0-9._~+/=\-]{8,}", re.IGNORECASE)

# A given secret shorter than this is not a real key; matching it inside ordinary values would
# redact half the headers of a test run with a dummy key such as "test".
_MIN_SECRET_LENGTH = 8

_ENV_SECRETS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


def default_secrets() -> tuple[str, ...]:
    """The credentials of this environment, which must never be written anywhere."""
    return tuple(value for name in _ENV_SECRETS if (value := os.environ.get(name, "").strip()))


def _usable(secrets: Iterable[str]) -> list[str]:
    return [s for s in secrets if isinstance(s, str) and len(s) >= _MIN_SECRET_LENGTH]


def _is_secret_value(value: str, secrets: list[str]) -> bool:
    if _ANTHROPIC_KEY.search(value) or _BEARER.search(value):
        return True
    return any(secret in value for secret in secrets)


def scrub_headers(
    headers: Mapping[str, str | list[str] | tuple[str, ...]] | Iterable[tuple[str, str]] | None,
    secrets: Iterable[str] = (),
) -> dict[str, str]:
    """Lower-case names, join repeated values, and replace every credential with REDACTED.

    Accepts a mapping (values may be lists, as in VCR cassettes) or (name, value) pairs (HAR, raw HTTP).
    """
    if not headers:
        return {}
    known = _usable(secrets)
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    scrubbed: dict[str, str] = {}
    for raw_name, raw_value in pairs:
        name = str(raw_name).strip().lower()
        if isinstance(raw_value, (list, tuple)):
            value = ", ".join(str(v) for v in raw_value if v is not None)
        else:
            value = "" if raw_value is None else str(raw_value)
        if name in scrubbed:
            value = f"{scrubbed[name]}, {value}"
        if _SECRET_NAME.search(name) or _is_secret_value(value, known):
            value = REDACTED
        scrubbed[name] = value
    return scrubbed


def find_secret(text: str, secrets: Iterable[str]) -> str | None:
    """Say where the first secret in `text` is (never the secret itself), or None when it is clean."""
    found: list[tuple[int, str]] = []
    for secret in _usable(secrets):
        at = text.find(secret)
        if at >= 0:
            found.append((at, f"a given secret ({len(secret)} characters, starting {secret[:6]!r}) at offset {at}"))
    match = _ANTHROPIC_KEY.search(text)
    if match:
        found.append((match.start(), f"an Anthropic API key (sk-ant-...) at offset {match.start()}"))
    if not found:
        return None
    return min(found)[1]
