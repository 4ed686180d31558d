"""The scripted model: a fake Messages API that plays a script, in-process or as a local server.

    model = ScriptedModel([{"tool_use": {"name": "get_customer", "input": {"id": "C1"}}}, {"text": "Done."}])
    client = model.client()            # or: with model.serve() as base_url: ...
    ...
    model.assert_complete()

The script format is documented in docs/scripted-model.md.
"""

from ...errors import ScriptError, ScriptExhausted
from ._model import ScriptedModel, ScriptedRequest
from ._script import Script, ScriptedError, Step, StreamError, load_script, parse_script
from ._transport import AsyncScriptedTransport, ScriptedTransport

__all__ = [
    "AsyncScriptedTransport",
    "Script",
    "ScriptError",
    "ScriptExhausted",
    "ScriptedError",
    "ScriptedModel",
    "ScriptedRequest",
    "ScriptedTransport",
    "Step",
    "StreamError",
    "load_script",
    "parse_script",
]
