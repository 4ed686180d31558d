"""Keep secrets off disk: scrub recorded headers and scan written text for keys.

Every exchange passes through `scrub_headers` before it exists; `find_secret` is the last look
at a file before a recorder keeps it. `redact_json` blanks secrets in what is written as a record
rather than refused (results lines, and the reports built from them): a model can echo the key.
"""

from __future__ import annotations

import json
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


def redact_json(text: str, secrets: Iterable[str] = ()) -> str:
    """`text`, JSON, with every given secret and anything shaped like an Anthropic key replaced by REDACTED.

    A results line keeps what the model said and what the tools answered; either may hold the key
    (echoed, or read from the environment), and the line must still be written, so the secret is
    blanked rather than the line refused. A secret is matched as it is spelt inside a JSON string
    (`json.dumps` escapes quotes, backslashes and, with ensure_ascii, every non-ASCII character),
    and only where an escape does not end just before it, so a replacement never splits an escape
    and the text stays valid JSON.
    """
    forms: set[str] = set()
    for secret in _usable(secrets):
        forms.add(json.dumps(secret, ensure_ascii=False)[1:-1])
        forms.add(json.dumps(secret, ensure_ascii=True)[1:-1])
    # Longest first: when one secret contains another, the whole of it goes.
    for form in sorted(forms, key=len, reverse=True):
        if form in text:
            text = re.sub(_UNESCAPED + re.escape(form), lambda m: m.group(1) + REDACTED, text)
    # Key characters are never escaped in JSON and "s" never follows an escaping backslash, so
    # the pattern is found as is.
    return _ANTHROPIC_KEY.sub(REDACTED, text)


# An even run of backslashes (escaped backslashes) not preceded by another: what follows starts
# a character of the string, not the tail of an escape such as `\n`.
_UNESCAPED = r"(?<!\\)((?:\\\\)*)"
