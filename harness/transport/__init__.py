"""The seam between an agent and the model: replay, record, live and scripted transports.

The agent under test never knows which one answers it; each is an httpx2 transport (and the
scripted model also a local HTTP server) behind the same Messages API.
"""

from ._capture import Capture, CaptureTransport
from ._cassette import CassetteTransport, RecordMode, read_cassette_metadata
from ._live import require_api_key
from ._session import Mode, Session, open_session

__all__ = [
    "Capture",
    "CaptureTransport",
    "CassetteTransport",
    "Mode",
    "RecordMode",
    "Session",
    "open_session",
    "read_cassette_metadata",
    "require_api_key",
]
