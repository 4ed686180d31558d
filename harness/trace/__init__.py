"""Wire exchanges -> calls -> threads: the trace every check reads."""

from ._exchange import exchange_from_http
from ._model import Call, Exchange, Outcome, Thread, ToolExecution, Trace
from ._readers import load_trace, read_exchanges
from ._scrub import REDACTED, default_secrets, find_secret, scrub_headers
from ._sse import StreamResult, reassemble_stream
from ._threads import build_trace

__all__ = ["Call", "Exchange", "Outcome", "ToolExecution", "Thread", "Trace", "build_trace",
           "exchange_from_http", "read_exchanges", "load_trace", "reassemble_stream", "StreamResult",
           "scrub_headers", "find_secret", "default_secrets", "REDACTED"]
