"""The live Anthropic API as a transport: the only far end that needs a key and the network.

Modes `live` and `record` go through here; `replay` and `scripted` never do, so they need no key.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import anthropic
import httpx2

from ..errors import MissingApiKey

API_KEY_ENV = "ANTHROPIC_API_KEY"


def require_api_key(mode: str = "live", environ: Mapping[str, str] | None = None) -> str:
    """The API key from the environment, or MissingApiKey saying how to set it and what needs none."""
    env = os.environ if environ is None else environ
    key = env.get(API_KEY_ENV, "").strip()
    if not key:
        raise MissingApiKey(
            f"mode {mode!r} calls the Anthropic API, and {API_KEY_ENV} is not set. "
            f"Set it first (export {API_KEY_ENV}=sk-ant-...), or run without the network: "
            "mode 'replay' replays a recorded cassette and mode 'scripted' answers from a scripted model; "
            "neither needs a key."
        )
    return key


def live_transport() -> httpx2.HTTPTransport:
    """A transport to the real API with the SDK's own connection limits."""
    return httpx2.HTTPTransport(limits=anthropic.DEFAULT_CONNECTION_LIMITS)


def async_live_transport() -> httpx2.AsyncHTTPTransport:
    """The same, for async clients."""
    return httpx2.AsyncHTTPTransport(limits=anthropic.DEFAULT_CONNECTION_LIMITS)
