"""The secrets that must never be written or printed, and how to find them in any text.

`find_secret` is the last look at a recording before a recorder keeps it (headers were already
scrubbed by `harness.trace._scrub.scrub_headers`). `redact_json` blanks secrets in what is written as a
record rather than refused (results lines, and the reports built from them): a model can echo the
key. `redact` does the same for any text printed (see `harness._console`).

The secrets are the environment's credentials (`ANTHROPIC_API_KEY`, `ANTHROPIC_AUTH_TOKEN`), the
values of the variables named in `HARNESS_SECRETS` (comma-separated names) or with `--secret NAME`,
and anything shaped like an Anthropic key. Each is looked for as written, URL-encoded and in
base64 (standard and URL-safe, at each of the three alignments it can take inside a longer
encoded text), so an echoed or re-encoded key is caught too.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import urllib.parse
from collections.abc import Iterable

REDACTED = "[REDACTED]"

ANTHROPIC_KEY_PATTERN = re.compile(r"sk-ant-[A-Za-z0-9][A-Za-z0-9_\-]{6,}")
# What may stand between the scheme and its token as a text spells it: whitespace, or whitespace escaped
# (JSON's \n \t \r \f and \u000b, repr's \x0b, each with its backslash doubled when JSON text is quoted
# in JSON again, XML's &#09;). Taking only \n, \t and \r let "Bearer\u000b<token>" and "Bearer\f<token>"
# reach the results file whole, and repr's "Bearer\x0b<token>" the console, JUnit and the page.
# A URL spells a space or a tab %20 or %09: "?authorization=Bearer%20<token>" in a recorded URL or in an
# error quoting it. An escape is taken whole (its backslashes with it), so JSON stays JSON once the gap
# becomes one space.
_BEARER_ESCAPE = r"\\+(?:[ntrfv]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4})|&#(?:[0-9]+|x[0-9a-fA-F]+);|%(?:20|09)"
# The scheme starts a word, or follows an escape whose last character is a letter or digit (\nBearer, and
# JSON's backspace: \bBearer).
_BEARER_START = r"(?:(?<!\w)|(?<=\\[bntrfv])|(?<=\\x[0-9a-fA-F]{2})|(?<=\\u[0-9a-fA-F]{4}))"
BEARER_PATTERN = re.compile(_BEARER_START + r"Bearer(?:\s|" + _BEARER_ESCAPE + r")+[A-Za-z0-9._~+/=\-]{8,}",
                            re.IGNORECASE)
# The same pattern serves JSON text: token characters are never escaped in JSON, so a match ends where
# the token does (never past a string's closing quote).
BEARER_JSON_PATTERN = BEARER_PATTERN

# A given secret shorter than this is not a real key; matching it inside ordinary values would
# redact half the headers of a test run with a dummy key such as "test".
MIN_SECRET_LENGTH = 8

_ENV_SECRETS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


SECRET_NAMES_VARIABLE = "HARNESS_SECRETS"
"""Environment variable naming (comma-separated) more variables whose values are secrets."""

_listed: list[str] = []


def add_secret_variable(name: str) -> None:
    """Treat the value of environment variable `name` as a secret from now on (`--secret NAME`)."""
    if name not in _listed:
        _listed.append(name)


def secret_variables() -> tuple[str, ...]:
    """Names of the environment variables whose values are secrets."""
    named = [n.strip() for n in os.environ.get(SECRET_NAMES_VARIABLE, "").split(",") if n.strip()]
    return tuple(dict.fromkeys((*_ENV_SECRETS, *named, *_listed)))


def default_secrets() -> tuple[str, ...]:
    """The credentials of this environment, which must never be written or printed anywhere."""
    return tuple(value for name in secret_variables() if (value := os.environ.get(name, "").strip()))


def too_short_to_redact() -> list[str]:
    """The variables named as secrets (`--secret NAME`, HARNESS_SECRETS) whose values are too short to be
    looked for, and so are printed and written as they are: said once, never their values. The
    environment's own credentials are left out: a dummy key ("test") in a test run is no secret."""
    return [name for name in secret_variables() if name not in _ENV_SECRETS
            and 0 < len(os.environ.get(name, "").strip()) < MIN_SECRET_LENGTH]


def unset_named() -> list[str]:
    """The variables named as secrets (`--secret NAME`, HARNESS_SECRETS) that are not set, or set empty:
    nothing is looked for in their name. The environment's own credentials are left out: a run against a
    cassette or a scripted model needs no key."""
    return [name for name in secret_variables() if name not in _ENV_SECRETS and not os.environ.get(name, "").strip()]


def secret_warnings() -> list[str]:
    """What the command line and the pytest plugin say of the variables named as secrets whose values
    are not redacted: too short to be looked for (`too_short_to_redact`; matched inside ordinary text
    a short value would blank half of every output), or not set at all (`unset_named`: a misspelt
    `--secret ANTROPIC_KEY`, or a CI job without the variable, whose results made elsewhere may hold
    the value). The user is told rather than left trusting a redaction that never happens."""
    short = [f"the value of {name} (named a secret) is shorter than {MIN_SECRET_LENGTH} characters: too short "
             "to be told from ordinary text, it is not redacted" for name in too_short_to_redact()]
    unset = [f"{name} (named a secret) is not set or is empty: nothing is redacted for it; is the name right?"
             for name in unset_named()]
    return short + unset


def usable_secrets(secrets: Iterable[str]) -> list[str]:
    return [s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_LENGTH]


_MIN_ENCODED_LENGTH = 12
"""An encoded fragment shorter than this could match by chance in ordinary text."""


@functools.lru_cache(maxsize=64)
def secret_forms(secret: str) -> tuple[str, ...]:
    """The ways `secret` is spelt in text: as is, URL-encoded, and inside base64 at each alignment.

    Inside a longer base64 text the secret starts at byte offset 0, 1 or 2 of a 3-byte group; for each,
    the characters that depend only on the secret's own bytes are kept (the first and last groups
    also encode neighbouring bytes, so they are cut).
    """
    forms = {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret, safe="")}
    forms.add("".join(f"%{b:02X}" for b in secret.encode("utf-8")))
    raw = secret.encode("utf-8")
    for shift, skip in ((0, 0), (1, 2), (2, 3)):
        padded = b"\0" * shift + raw
        whole = len(padded) // 3 * 4
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            fragment = encode(padded).decode("ascii")[skip:whole]
            if len(fragment) >= _MIN_ENCODED_LENGTH:
                forms.add(fragment)
    return tuple(sorted(forms, key=len, reverse=True))


def redact(text: str, secrets: Iterable[str] | None = None) -> str:
    """`text` with every form of every secret, and anything shaped like a key, replaced by REDACTED.

    For any text printed or logged; `secrets` defaults to `default_secrets()`. JSON that must stay
    valid JSON goes through `redact_json` instead.
    """
    known = usable_secrets(default_secrets() if secrets is None else secrets)
    for secret in known:
        for form in secret_forms(secret):
            if form in text:
                text = text.replace(form, REDACTED)
    if "sk-ant-" in text:
        text = ANTHROPIC_KEY_PATTERN.sub(REDACTED, text)
    return BEARER_PATTERN.sub(f"Bearer {REDACTED}", text) if may_hold_bearer(text) else text


def may_hold_bearer(text: str | bytes) -> bool:
    """Whether `text` (or UTF-8 bytes) holds the word bearer in any case: a C string search, where the
    pattern's scan takes many times longer. The scheme is case-insensitive (RFC 9110), as the pattern is,
    so the quick look is too: "earer" or "EARER" alone missed "BEARER <token>" once and "BeArEr <token>"
    after. Looked for in the bytes lowercased, which lowers ASCII letters alone: no other character is
    b, e, a or r in any case, and `str.lower` of a text holding one non-ASCII character (a run's details
    hold "·") took twice as long as encoding it and lowering the bytes."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    return b"bearer" in data.lower()


def find_secret(text: str, secrets: Iterable[str]) -> str | None:
    """Say where the first secret in `text` is (never the secret itself), or None when it is clean."""
    found: list[tuple[int, str]] = []
    for secret in usable_secrets(secrets):
        for form in secret_forms(secret):
            at = text.find(form)
            if at >= 0:
                how = "" if form == secret else (" URL-encoded" if "%" in form else " in base64")
                found.append((at, f"a given secret ({len(secret)} characters, starting {secret[:6]!r}){how} "
                                  f"at offset {at}"))
    match = ANTHROPIC_KEY_PATTERN.search(text)
    if match:
        found.append((match.start(), f"an Anthropic API key (sk-ant-...) at offset {match.start()}"))
    if not found:
        return None
    return min(found)[1]


def redact_json(text: str, secrets: Iterable[str] = (), *, bearer: bool = True) -> str:
    """`text`, JSON, with every given secret, anything shaped like an Anthropic key and the token of a
    `Bearer <token>` replaced by REDACTED; not the last when `bearer` is False: the caller redacts many
    texts' tokens at once (`redact_bearer_json`), looking for the scheme once for all of them.

    A results line keeps what the model said and what the tools answered; either may hold the key
    (echoed, or read from the environment), and the line must still be written, so the secret is
    blanked rather than the line refused. A secret is matched as it is spelt inside a JSON string
    (`json.dumps` escapes quotes, backslashes and, with ensure_ascii, every non-ASCII character),
    and only where an escape does not end just before it, so a replacement never splits an escape
    and the text stays valid JSON.
    """
    for form in _json_forms(tuple(usable_secrets(secrets))):
        if form in text:
            text = re.sub(_UNESCAPED + re.escape(form), lambda m: m.group(1) + REDACTED, text)
    # Key characters are never escaped in JSON and "s" never follows an escaping backslash, so
    # the pattern is found as is. Looked for by its fixed start first, as `redact` does: a C string
    # search, where the pattern's scan took 6 instructions a character (each run's details on a page).
    if "sk-ant-" in text:
        text = ANTHROPIC_KEY_PATTERN.sub(REDACTED, text)
    return redact_bearer_json(text) if bearer else text


def may_hold_secret_json(data: bytes, secrets: tuple[str, ...] = ()) -> bool:
    """Whether `redact_json(text, secrets, bearer=False)` could change the JSON text whose UTF-8 bytes are
    `data`: False when they hold no form of a secret it looks for and not the start of a key, so a text
    kept as bytes (a run's details on a page) need not be decoded only to be found clean. A form's bytes
    are in `data` exactly where the form is in the text (UTF-8 is self-synchronizing)."""
    if b"sk-ant-" in data:
        return True
    # Without secrets (no key in the environment), nothing else: no forms spelt, looked up or iterated.
    for form in _json_forms_utf8(secrets) if secrets else ():
        if form in data:
            return True
    return False


@functools.lru_cache(maxsize=64)
def _json_forms_utf8(secrets: tuple[str, ...]) -> tuple[bytes, ...]:
    # A form holding a lone surrogate (a secret read off a surrogate-escaped environment) is kept as such:
    # it matches no UTF-8 text, as it matches no text that can be encoded.
    return tuple(form.encode("utf-8", "surrogatepass") for form in _json_forms(tuple(usable_secrets(secrets))))


def redact_bearer_json(text: str) -> str:
    """`text`, JSON, with the token of each `Bearer <token>` replaced by REDACTED: an `Authorization`
    header in an error or a model's words, whatever the token, as `redact` does. Token characters are
    never escaped in JSON, so the replacement ends where the token does (and never reaches past a
    string's closing quote: JSON texts joined by commas are redacted as one)."""
    return BEARER_JSON_PATTERN.sub(_json_bearer, text) if may_hold_bearer(text) else text


def _json_bearer(match: re.Match[str]) -> str:
    r"""A match of `BEARER_JSON_PATTERN` redacted, its scheme written "Bearer" unless a backslash precedes
    it: then its "b" may be the letter of JSON's backspace escape (`\bearer <token>`, a backspace then
    "earer"), which "B" would make `\B`, no escape, and the line no JSON; any other letter after a
    backslash is a literal backslash's (`\\Bearer`), kept as written as well."""
    start = match.start()
    scheme = match.group()[:6] if start and match.string[start - 1] == "\\" else "Bearer"
    return f"{scheme} {REDACTED}"


@functools.lru_cache(maxsize=64)
def _json_forms(secrets: tuple[str, ...]) -> tuple[str, ...]:
    """Every form of the secrets as spelt inside a JSON string, longest first (when one secret contains
    another, the whole of it goes). Every results line is redacted with the same few secrets: spelling
    their forms again for each took a third of redacting a line."""
    forms: set[str] = set()
    for secret in secrets:
        for spelt in secret_forms(secret):
            forms.add(json.dumps(spelt, ensure_ascii=False)[1:-1])
            forms.add(json.dumps(spelt, ensure_ascii=True)[1:-1])
            # As the page spells it in its <script> elements' JSON (`report._chunks.script_json`).
            forms.add(json.dumps(spelt, ensure_ascii=False)[1:-1].replace("<", "\\u003c"))
    return tuple(sorted(forms, key=len, reverse=True))


# An even run of backslashes (escaped backslashes) not preceded by another: what follows starts
# a character of the string, not the tail of an escape such as `\n`.
_UNESCAPED = r"(?<!\\)((?:\\\\)*)"
