"""Fixtures for a project's own tests: a client on a cassette or a scripted model, its trace, scripted models.

Also the report hook they need: fixture teardown must know whether the test failed, and a failure's
text never shows the key.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .._modes import RecordMode
from .._secrets import redact
from ..errors import MissingApiKey, UnplayedInteractions
from ._record import (
    cassette_mode,
    ini_record_mode,
    marker_kwargs,
    record_mode_source,
    rerecord_hint,
    resolve_record_mode,
)
from ._state import REPORTS

if TYPE_CHECKING:
    import anthropic

    from ..trace._model import Trace
    from ..transport import Session
    from ..transport.scripted import ScriptedModel


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    # Fixture teardown needs to know whether the test failed: a failed test keeps its old cassette
    # and is not also blamed for the answers it never got to use.
    report = yield
    item.stash.setdefault(REPORTS, {})[report.when] = report
    _redact_report(report)
    return report


def _redact_report(report: pytest.TestReport) -> None:
    """A failure's text and captured output go to the terminal and to --junitxml: never the key.

    An agent's error message can quote the key it was given; the report is rewritten only when
    something was redacted, so every other failure keeps pytest's own formatting.
    """
    if report.longrepr is not None:
        text = str(report.longrepr)
        clean = redact(text)
        if clean != text:
            report.longrepr = clean
    report.sections = [(title, redact(content)) for title, content in report.sections]


def _test_failed(item: pytest.Item) -> bool:
    reports = item.stash.get(REPORTS, {})
    return any(r.failed for r in reports.values())




@pytest.fixture
def harness_record_mode(request: pytest.FixtureRequest) -> RecordMode:
    """The record mode for this test: command line, then ini, then the `harness` marker, then `none`."""
    config = request.config
    return resolve_record_mode(
        config.getoption("harness_record_mode"),
        ini_record_mode(config),
        marker_kwargs(request).get("record_mode"),
    )


def default_cassette(request: pytest.FixtureRequest) -> Path:
    """`cassettes/<module>/<test name>.yaml` beside the test module, as pytest-recording names them."""
    name = request.node.name
    if request.cls is not None:
        name = f"{request.cls.__name__}.{name}"
    safe = re.sub(r"[^\w.\-\[\]]", "_", name)
    return request.path.parent / "cassettes" / request.path.stem / f"{safe}.yaml"


def _relative_to_test(request: pytest.FixtureRequest, value: str | Path) -> Path:
    path = Path(value)
    return path if path.is_absolute() else request.path.parent / path


@pytest.fixture
def harness_session(request: pytest.FixtureRequest, harness_record_mode: RecordMode) -> Iterator[Session]:
    """The transport behind `harness_client`: the marker's scripted model, or the test's cassette.

    On teardown it settles like a run: a recorded cassette is written, and replayed or scripted answers
    the test left unused fail it (UnplayedInteractions) unless the test already failed.
    """
    from ..transport import open_session

    kwargs = marker_kwargs(request)
    script = kwargs.get("script")
    given_cassette = kwargs.get("cassette")
    node = request.node.nodeid
    source = record_mode_source(request)
    if script is not None:
        if isinstance(script, (str, Path)):
            script = _relative_to_test(request, script)
        cassette = _relative_to_test(request, given_cassette) if given_cassette is not None else None
        # The script always answers; open_session decides from the record mode whether the cassette
        # is (re)written from it.
        session = open_session("scripted", script=script, cassette=cassette,
                               record_mode=harness_record_mode if cassette is not None else None)
    else:
        cassette = (_relative_to_test(request, given_cassette) if given_cassette is not None
                    else default_cassette(request))
        mode, record_mode = cassette_mode(harness_record_mode, cassette)
        if mode == "replay" and not cassette.exists():
            # pytrace=False: the user's setup is wrong, not the plugin; its traceback would only hide the advice.
            pytest.fail(
                f"no cassette at {cassette} (record mode {harness_record_mode!r}, {source}); record it with "
                f"`pytest {node} --harness-record-mode=once` (calls the API, needs ANTHROPIC_API_KEY), point "
                "@pytest.mark.harness(cassette=...) at one, or give @pytest.mark.harness(script=[...]) to answer "
                "from a scripted model",
                pytrace=False,
            )
        opened: Session | None = None
        try:
            opened = open_session(mode, cassette=cassette, record_mode=record_mode, rerecord_hint=rerecord_hint(node))
        except MissingApiKey:
            pass  # failed below, outside the handler: "During handling of the above exception" is noise here
        if opened is None:
            pytest.fail(
                f"ANTHROPIC_API_KEY is not set, and record mode {harness_record_mode!r} ({source}) would record "
                f"{cassette} from the live API. Set it to record; or run offline: "
                f"`--harness-record-mode=none` replays {'it' if cassette.exists() else 'existing cassettes only'}, "
                "and @pytest.mark.harness(script=[...], cassette=...) records from a scripted model",
                pytrace=False,
            )
        session = opened
    try:
        yield session
    finally:
        failed = _test_failed(request.node)
        try:
            session.close(run_failed=failed)
        except UnplayedInteractions:
            # Replay still counts unplayed answers after a failed run; the test's own failure is the news.
            if not failed:
                raise


@pytest.fixture
def harness_client(harness_session: Session) -> anthropic.Anthropic:
    """An `anthropic.Anthropic` bound to the test's cassette (default `cassettes/<module>/<test>.yaml`)
    or, with `@pytest.mark.harness(script=[...])`, to a scripted model. For async code use
    `harness_session.async_client()`."""
    return harness_session.client()


class TraceOf:
    """Calling it gives the trace of everything that went through the test's harness clients so far."""

    def __init__(self, session: Session, source: str) -> None:
        self._session = session
        self._source = source

    def __call__(self, *, whole_run: bool = False) -> Trace:
        """`whole_run=True` when the test ran a whole agent loop, so what is missing at the end is an error."""
        from ..trace import build_trace

        return build_trace(list(self._session.exchanges), self._source, whole_run=whole_run)


@pytest.fixture
def harness_trace(request: pytest.FixtureRequest, harness_session: Session) -> TraceOf:
    """A callable: `harness_trace()` is the trace of what ran through `harness_client` until now."""
    return TraceOf(harness_session, request.node.nodeid)


@pytest.fixture
def scripted_model(request: pytest.FixtureRequest) -> Iterator[Callable[..., ScriptedModel]]:
    """A factory: `scripted_model([{"text": "Hi"}])` gives a `ScriptedModel` (`.client()`, `.serve()`).

    Every model made is checked at teardown with `assert_complete()`, so steps the code under test
    never asked for fail the test, unless it already failed for another reason.
    """
    from ..transport.scripted import ScriptedModel

    made: list[ScriptedModel] = []

    def make(script: Any, **options: Any) -> ScriptedModel:
        if isinstance(script, (str, Path)):
            script = _relative_to_test(request, script)
        model = ScriptedModel(script, **options)
        made.append(model)
        return model

    yield make
    if not _test_failed(request.node):
        for model in made:
            model.assert_complete()
