"""The live Anthropic API as a transport: the only far end that needs a key and the network.

Modes `live` and `record` go through here; `replay` and `scripted` never do, so they need no key.
"""

from __future__ import annotations

import functools
import os
import ssl
from collections.abc import Mapping

import anthropic
import httpx2

from ..errors import MissingApiKey

API_KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
DEFAULT_BASE_URL = "https://api.anthropic.com"


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


def upstream_base_url(environ: Mapping[str, str] | None = None) -> str:
    """Where the SDK sends requests by default: ANTHROPIC_BASE_URL when set, else the API."""
    env = os.environ if environ is None else environ
    return (env.get(BASE_URL_ENV) or DEFAULT_BASE_URL).rstrip("/")


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """One TLS context for every transport of the process, built on first use.

    Building one loads the CA bundle (tens of milliseconds); a context per run made a batch of
    short runs spend most of its time there. A context is safe to share between connections.
    """
    return httpx2.create_ssl_context()


def live_transport() -> httpx2.HTTPTransport:
    """The process's transport to the real API (or ANTHROPIC_BASE_URL), shared by every run: one pool
    of kept-alive connections with the SDK's own limits. A transport per run opened and closed a
    connection for every run, which cost a batch of short runs more than their calls; a connection
    carries bytes only, each run's capture and cassette sit in front of it. A forked child (a worker
    process) gets a pool of its own, never its parent's sockets."""
    return _live_transport_of(os.getpid())


@functools.cache
def _live_transport_of(pid: int) -> httpx2.HTTPTransport:
    return httpx2.HTTPTransport(verify=shared_ssl_context(), limits=anthropic.DEFAULT_CONNECTION_LIMITS)


def async_live_transport() -> httpx2.AsyncHTTPTransport:
    """A transport to the real API for one run's async clients: its connections belong to the run's event
    loop, so they are not shared."""
    return httpx2.AsyncHTTPTransport(verify=shared_ssl_context(), limits=anthropic.DEFAULT_CONNECTION_LIMITS)
