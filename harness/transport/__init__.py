"""The seam between an agent and the model: replay, record, live and scripted transports.

The agent under test never knows which one answers it; each is an httpx2 transport behind the same
Messages API, and every session is also served over HTTP on the local endpoint (`Session.serve`). Names are imported on
first use, so `harness serve` (the scripted model alone) does not pay for the SDK.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_dir, lazy_exports

_EXPORTS = {
    "Capture": "._capture",
    "CaptureTransport": "._capture",
    "CassetteTransport": "._cassette",
    "ENDPOINT_API_KEY": "._endpoint",
    "Endpoint": "._endpoint",
    "Route": "._endpoint",
    "shared_endpoint": "._endpoint",
    "RecordMode": "harness._modes",
    "read_cassette_metadata": "._cassette",
    "require_api_key": "._live",
    "Mode": "harness._modes",
    "Session": "._session",
    "open_session": "._session",
}

# Literal, so that linters and readers see the public names; a test keeps it equal to _EXPORTS.
__all__ = [
    "Capture",
    "CaptureTransport",
    "CassetteTransport",
    "ENDPOINT_API_KEY",
    "Endpoint",
    "Mode",
    "RecordMode",
    "Route",
    "Session",
    "open_session",
    "read_cassette_metadata",
    "require_api_key",
    "shared_endpoint",
]

if TYPE_CHECKING:
    from .._modes import Mode, RecordMode
    from ._capture import Capture, CaptureTransport
    from ._cassette import CassetteTransport, read_cassette_metadata
    from ._endpoint import ENDPOINT_API_KEY, Endpoint, Route, shared_endpoint
    from ._live import require_api_key
    from ._session import Session, open_session


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
__dir__ = lazy_dir(_EXPORTS, globals())
