"""Record mode: which of none, once, new_episodes, all applies to a test, and what it means for a cassette.

The order is written once, in the package docstring; `resolve_record_mode` is where it is applied.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import pytest

from .._modes import RECORD_MODES, RecordMode

MARKER_KEYS = ("cassette", "script", "record_mode")


def resolve_record_mode(command_line: str | None, ini: str | None, marker: str | None) -> RecordMode:
    """The record mode that applies: command line, then ini, then marker, then `none` (see the module docstring)."""
    for where, value in (("--harness-record-mode", command_line), ("harness_record_mode", ini),
                         ("@pytest.mark.harness(record_mode=...)", marker)):
        if value:
            if value not in RECORD_MODES:
                raise pytest.UsageError(
                    f"{where}: {value!r} is not a record mode; use one of {', '.join(RECORD_MODES)}")
            return value  # type: ignore[return-value]
    return "none"


def configured_record_mode(config: pytest.Config) -> RecordMode | None:
    """The record mode set for the whole session (command line or ini), or None when neither sets one."""
    command_line = config.getoption("harness_record_mode")
    ini = ini_record_mode(config)
    return resolve_record_mode(command_line, ini, None) if command_line or ini else None


def ini_record_mode(config: pytest.Config) -> str | None:
    """The ini file's `harness_record_mode`, None when it is not set (an empty value is not set)."""
    return str(config.getini("harness_record_mode") or "").strip() or None


def cassette_mode(record_mode: RecordMode, cassette: Path) -> tuple[Literal["replay", "record"], RecordMode | None]:
    """The transport mode a cassette needs under a record mode: only recording talks to the API."""
    if record_mode == "none" or (record_mode == "once" and cassette.exists()):
        return "replay", None
    return "record", record_mode


def record_mode_source(request: pytest.FixtureRequest) -> str:
    """Where the test's record mode came from, for messages: the user must know what to change."""
    config = request.config
    if config.getoption("harness_record_mode"):
        return "from --harness-record-mode"
    if ini_record_mode(config):
        return "from the ini option harness_record_mode"
    if marker_kwargs(request).get("record_mode"):
        return "from @pytest.mark.harness(record_mode=...)"
    return "the default"


def rerecord_hint(nodeid: str) -> str:
    """How to record a test's cassette again, as the pytest command to type (the transport's own
    advice names open_session, which a test never calls)."""
    return (
        f"`pytest {nodeid} --harness-record-mode=all` (live API, needs ANTHROPIC_API_KEY; new_episodes keeps "
        "what still matches), or @pytest.mark.harness(script=[...], cassette=...) to write it from a scripted model"
    )


def marker_kwargs(request: pytest.FixtureRequest) -> dict[str, Any]:
    marker = request.node.get_closest_marker("harness")
    if marker is None:
        return {}
    unknown = sorted(set(marker.kwargs) - set(MARKER_KEYS))
    if marker.args or unknown:
        given = ", ".join([repr(a) for a in marker.args] + unknown)
        raise pytest.UsageError(
            f"{request.node.nodeid}: @pytest.mark.harness takes keywords {', '.join(MARKER_KEYS)} only (got {given})"
        )
    return dict(marker.kwargs)
