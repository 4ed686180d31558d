"""Wire exchanges -> calls -> threads: the trace every check reads.

The names are imported on first use: a report reads traces stored in results files, never a
recording, and must not import the recordings' readers (`formats`: yaml, email) with the model.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_dir, lazy_exports

_EXPORTS = {
    "Call": "._model",
    "Exchange": "._model",
    "Outcome": "._model",
    "Thread": "._model",
    "ToolExecution": "._model",
    "Trace": "._model",
    "exchange_from_http": "._exchange",
    "load_trace": "._readers",
    "read_exchanges": "._readers",
    "REDACTED": "._scrub",
    "default_secrets": "._scrub",
    "find_secret": "._scrub",
    "scrub_headers": "._scrub",
    "StreamResult": "._sse",
    "reassemble_stream": "._sse",
    "build_trace": "._threads",
}

# Literal, so that linters and readers see the public names; a test keeps it equal to _EXPORTS.
__all__ = [
    "Call",
    "Exchange",
    "Outcome",
    "REDACTED",
    "StreamResult",
    "Thread",
    "ToolExecution",
    "Trace",
    "build_trace",
    "default_secrets",
    "exchange_from_http",
    "find_secret",
    "load_trace",
    "read_exchanges",
    "reassemble_stream",
    "scrub_headers",
]

if TYPE_CHECKING:
    from ._exchange import exchange_from_http
    from ._model import Call, Exchange, Outcome, Thread, ToolExecution, Trace
    from ._readers import load_trace, read_exchanges
    from ._scrub import REDACTED, default_secrets, find_secret, scrub_headers
    from ._sse import StreamResult, reassemble_stream
    from ._threads import build_trace


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
__dir__ = lazy_dir(_EXPORTS, globals())
