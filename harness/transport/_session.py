"""One run's transport, chosen by mode: the runner's single entry point to the seam.

`open_session` builds capture -> (cassette) -> far end (nothing, the live API, or a scripted model),
hands out SDK clients wired to it in-process, serves the same chain over HTTP on the local endpoint
(`serve()`), and on close settles the run: cassette written, nothing unplayed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeAlias

import anthropic
import httpx2

from .._modes import MODES, RECORD_MODES, Mode, RecordMode
from ..errors import HarnessError, UsageError
from ..trace import Exchange, default_secrets
from ..trace._model import HARNESS_ROLE_HEADER, HARNESS_ROLES, HarnessRole
from ._capture import Capture, CaptureTransport
from ._cassette import CassetteTransport
from ._live import async_live_transport, live_transport, require_api_key, upstream_base_url
from ._ratelimit import RateLimitedTransport, shared_limiter

if TYPE_CHECKING:
    from ._endpoint import Endpoint, Route
    from .scripted import Script, ScriptedModel

OFFLINE_API_KEY = "replay-no-key"
"""The key clients get when nothing real answers: any value works, none is ever sent anywhere."""

ScriptSource: TypeAlias = "ScriptedModel | Script | Sequence[Mapping[str, Any]] | str | Path"
"""A `ScriptedModel`, or what `ScriptedModel(...)` accepts: a list of steps or a script file path."""


class Session:
    """The transport of one run. Use `open_session`; close it (or leave its `with` block) to settle."""

    def __init__(
        self,
        mode: Mode,
        capture: Capture,
        far_sync: httpx2.BaseTransport | None,
        far_async: httpx2.AsyncBaseTransport | None,
        cassette: CassetteTransport | None,
        model: ScriptedModel | None,
        api_key: str,
        upstream: str,
    ) -> None:
        self.mode: Mode = mode
        self.capture = capture
        self.harness_capture = Capture(capture.secrets)
        """The harness's own calls (judge, simulated user), kept apart from the agent's `capture`."""
        self.cassette = cassette
        self.model = model
        """The ScriptedModel in `scripted` mode, else None."""
        self._far_sync = far_sync
        self._far_async = far_async
        self._api_key = api_key
        self._upstream = upstream
        self._endpoint: Endpoint | None = None
        self._route: Route | None = None
        self.base_url: str | None = None
        """This run's URL on the local endpoint once `serve()` was called, else None."""
        self._clients: list[anthropic.Anthropic] = []
        self._async_clients: list[anthropic.AsyncAnthropic] = []
        self._harness_clients: dict[HarnessRole, anthropic.Anthropic] = {}
        self._released = False
        self._closed = False

    @property
    def exchanges(self) -> list[Exchange]:
        """Every request the agent sent and what it got, in order (scrubbed)."""
        return self.capture.exchanges

    @property
    def harness_exchanges(self) -> list[Exchange]:
        """The harness's own calls of the run (judge, simulated user), in order (scrubbed)."""
        return self.harness_capture.exchanges

    @property
    def problems(self) -> list[HarnessError]:
        """Failures of the seam during the run, even those the agent swallowed or died of: replay
        misses, and requests that came after the scripted model's script ran out. Either way the
        agent got an answer the harness made up (an exception, a 500), so findings about what it
        did next would blame the agent for the harness's gap."""
        found: list[HarnessError] = list(self.cassette.failures) if self.cassette is not None else []
        exhausted = self.model.exhausted() if self.model is not None else None
        if exhausted is not None:
            found.append(exhausted)
        return found

    def _options(self, options: dict[str, Any]) -> dict[str, Any]:
        if "http_client" in options:
            raise TypeError("the session owns the HTTP client (that is the seam); pass SDK options only")
        options.setdefault("api_key", self._api_key)
        options.setdefault("max_retries", anthropic.DEFAULT_MAX_RETRIES)
        for name in ("api_key", "auth_token"):
            value = options.get(name)
            if isinstance(value, str) and value and value != OFFLINE_API_KEY:
                self.capture.add_secret(value)
                self.harness_capture.add_secret(value)
                if self.cassette is not None:
                    self.cassette.add_secret(value)
        return options

    def _sync_far_end(self) -> httpx2.BaseTransport:
        if self.cassette is not None:
            return self.cassette
        if self._far_sync is None:
            raise TypeError(f"mode {self.mode!r} has no sync transport")
        return self._far_sync

    def _async_far_end(self) -> httpx2.AsyncBaseTransport:
        if self.cassette is not None:
            return self.cassette
        if self._far_async is None:
            raise TypeError(f"mode {self.mode!r} has no async transport")
        return self._far_async

    def client(self, **options: Any) -> anthropic.Anthropic:
        """An `anthropic.Anthropic` whose every request goes through this session (SDK options pass through)."""
        self._check_open()
        _require_in_process_sdk()
        transport = CaptureTransport(self._sync_far_end(), self.capture, close_inner=False)
        client = anthropic.Anthropic(http_client=anthropic.DefaultHttpxClient(transport=transport),
                                     **self._options(options))
        self._clients.append(client)
        return client

    def harness_client(self, role: HarnessRole) -> anthropic.Anthropic:
        """The client of the harness's own calls in `role` (`judge`, `simulated user`): through the
        same cassette and far end as the agent's, so they are recorded, replayed and scripted alike,
        but marked with `x-harness-role` and captured apart (`harness_exchanges`), out of the
        agent's trace. It stays usable after `release_agent`, until `close`."""
        if self._closed:
            raise RuntimeError("this session is closed; open a new one for another run")
        client = self._harness_clients.get(role)
        if client is None:
            transport = CaptureTransport(self._sync_far_end(), self.harness_capture, close_inner=False)
            client = anthropic.Anthropic(
                http_client=anthropic.DefaultHttpxClient(transport=transport),
                default_headers={HARNESS_ROLE_HEADER: role},
                **self._options({}),
            )
            self._harness_clients[role] = client
        return client

    def async_client(self, **options: Any) -> anthropic.AsyncAnthropic:
        """The same as `client`, for async agents."""
        self._check_open()
        _require_in_process_sdk()
        transport = CaptureTransport(self._async_far_end(), self.capture, close_inner=False)
        client = anthropic.AsyncAnthropic(
            http_client=anthropic.DefaultAsyncHttpxClient(transport=transport), **self._options(options)
        )
        self._async_clients.append(client)
        return client

    def serve(self, endpoint: Endpoint | None = None, *, at_root: bool = False) -> str:
        """Serve this run over HTTP on `endpoint` (the process's shared loopback endpoint by default);
        returns its base URL, e.g. `http://127.0.0.1:PORT/run/<id>`, for any client in any language.

        Requests to it go through the same capture -> cassette -> far end as `client()`, addressed
        to the same upstream URL (the API, or ANTHROPIC_BASE_URL), so both paths give the same
        trace. In live and record mode the endpoint sends the real key upstream in place of whatever
        the client sent: agents get only the placeholder `ENDPOINT_API_KEY`. `at_root` serves the
        run at the endpoint's root instead of a /run/<id> prefix (`harness serve`: one run only).
        Closing the session stops serving it. Calling again returns the same URL.
        """
        from ._endpoint import Route, shared_endpoint

        self._check_open()
        if self.base_url is not None:
            return self.base_url
        self._endpoint = endpoint if endpoint is not None else shared_endpoint()
        self._route = Route(
            transport=CaptureTransport(self._sync_far_end(), self.capture, close_inner=False),
            upstream=self._upstream,
            api_key=self._api_key if self.mode in ("live", "record") else None,
            capture=self.capture,
            offline=self.mode in ("replay", "scripted"),
        )
        if at_root:
            if self._endpoint.default is not None:
                raise UsageError("this endpoint already serves a run at its root")
            self._endpoint.default = self._route
            self.base_url = self._endpoint.base_url
        else:
            self.base_url = self._endpoint.open(self._route)
        return self.base_url

    @property
    def route(self) -> Route | None:
        """The run's route on the endpoint once served: its local handlers and the notes it took."""
        return self._route

    @property
    def notes(self) -> list[str]:
        """What the endpoint noticed about the run's traffic (requests that were no API call)."""
        return list(self._route.notes) if self._route is not None else []

    def _stop_serving(self) -> None:
        if self._endpoint is None or self.base_url is None:
            return
        if self._endpoint.default is self._route:
            self._endpoint.default = None
        else:
            self._endpoint.close_route(self.base_url)

    def _check_open(self) -> None:
        if self._released or self._closed:
            raise RuntimeError("this session is closed; open a new one for another run")

    @property
    def cassette_not_written(self) -> str | None:
        """After closing a recording session: why its cassette was not written, else None."""
        return self.cassette.not_written if self.cassette is not None else None

    def close(self, *, run_failed: bool = False, why: str | None = None, hold: bool = False) -> None:
        """Settle the run: record -> write the cassette atomically and scan it for the key;
        replay -> UnplayedInteractions if recorded answers are left; scripted -> assert_complete().

        `run_failed=True` (the agent's run raised, or ended in an error outcome, for the reason
        `why`) keeps any previous cassette untouched and checks nothing, so the run's own error is
        the one reported. A recording with no interaction in it is never written either.
        `hold=True` writes no cassette yet: `settle` does, once the run has been judged.
        """
        if self._closed:
            return
        self.release_agent()
        self._closed = True
        for client in self._harness_clients.values():
            client.close()
        # Async clients hold no connection of their own here: their transports are closed below. The
        # live transport is the process's, kept open for the next run.
        if self._far_sync is not None and self.mode not in ("live", "record"):
            self._far_sync.close()
        if self.cassette is not None:
            self.cassette.finish(save=not run_failed, why=why, hold=hold)
        if self.model is not None and not run_failed:
            self.model.assert_complete()

    async def aclose(self, *, run_failed: bool = False, why: str | None = None, hold: bool = False) -> None:
        """`close` for async runs: also closes the async clients' connections."""
        await self.arelease_agent()
        self.close(run_failed=run_failed, why=why, hold=hold)

    def left_only_harness_answers(self) -> bool:
        """Whatever the run left unplayed (scripted steps, recorded answers) is the harness's own: a
        judge's or a simulated user's. A judge stopped by its first malformed verdict leaves its other
        answers so, and that is the verdict's failure, not one of its own."""
        if self.model is not None and any(step.thread not in HARNESS_ROLES for step in self.model.unused):
            return False
        return self.cassette is None or self.cassette.unplayed_are_harness_calls()

    def release_agent(self) -> None:
        """The agent's run is over: its clients are closed and the endpoint stops serving it. The
        transport stays open for the harness's own calls (a judge reading the run) until `close`
        settles it, so those are recorded and replayed with the rest."""
        if self._released:
            return
        self._released = True
        self._stop_serving()
        for client in self._clients:
            client.close()

    async def arelease_agent(self) -> None:
        """`release_agent` for async runs: also closes the async clients and the async far end, on
        their event loop (the harness's own calls are sync)."""
        for client in self._async_clients:
            await client.close()
        self._async_clients = []
        if self._far_async is not None and not self._closed:
            await self._far_async.aclose()
            self._far_async = None
        self.release_agent()

    def settle(self, *, passed: bool, why: str | None = None, keep_failed: bool = False) -> None:
        """After `close(hold=True)`: write the recording only if the run `passed`; otherwise keep the
        previous cassette (`cassette_not_written` says why), and with `keep_failed` put the failed
        recording beside it as `NAME.failed.yaml`."""
        if self.cassette is not None:
            self.cassette.settle(keep=passed, why=why, keep_failed=keep_failed)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(run_failed=exc_type is not None, why=_raised(exc))

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose(run_failed=exc_type is not None, why=_raised(exc))


def sdk_runs_in_process() -> bool:
    """The installed SDK is built on httpx2 (anthropic 1.0 and later), so its clients can take the
    session's transports in-process; an older one (0.x, built on httpx) reaches a run only over
    HTTP, through the run's local endpoint."""
    return issubclass(anthropic.DefaultHttpxClient, httpx2.Client)


def _require_in_process_sdk() -> None:
    if not sdk_runs_in_process():
        raise UsageError(
            f"anthropic {anthropic.__version__} is built on httpx, not httpx2: its clients cannot take the "
            "harness's in-process transport (that needs anthropic 1.0 or later). Point the client at the "
            "run's endpoint instead: task.client(), or anthropic.Anthropic(base_url=task.base_url, "
            "api_key=task.api_key)"
        )


def _raised(exc: BaseException | None) -> str | None:
    return None if exc is None else f"the run raised {type(exc).__name__}: {exc}"


def _scripted_model(script: ScriptSource | None) -> ScriptedModel:
    from .scripted import ScriptedModel

    if script is None:
        raise UsageError("mode 'scripted' needs script=: a ScriptedModel, a list of steps or a script file")
    return script if isinstance(script, ScriptedModel) else ScriptedModel(script)


def open_session(
    mode: Mode,
    *,
    cassette: str | Path | None = None,
    record_mode: RecordMode | None = None,
    script: ScriptSource | None = None,
    secrets: Iterable[str] | None = None,
    ignore_body_keys: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    rerecord_hint: str | None = None,
    harness_calls: bool = True,
) -> Session:
    """Open the transport of one run.

    replay    answer from `cassette` only, offline, no key (record_mode 'none', the default).
    record    the live API (needs ANTHROPIC_API_KEY) recorded to `cassette`; record_mode 'all' by
              default, or 'once' / 'new_episodes'.
    live      the live API, nothing recorded (needs ANTHROPIC_API_KEY; no cassette).
    scripted  a scripted model answers (`script`), offline, no key; with `cassette`, the run is also
              recorded there, marked as recorded against the scripted model: record_mode 'all' (default)
              and 'new_episodes' write it again, 'once' only when it is missing, 'none' never. The
              script always answers; a scripted session never replays.

    `rerecord_hint` is the advice a replay miss, unplayed answers or a missing cassette end with
    (how to record the cassette again); by default it names `open_session` itself.

    `harness_calls=False` says the run makes none of the harness's own calls (`harness serve` serves
    an agent alone): a replayed cassette's judge and simulated-user calls are then not reported
    unplayed.

    `secrets` are values that must never reach a file or an exchange; the environment's keys
    (`default_secrets()`) are always included, and so is any api_key/auth_token given to a client.
    """
    if mode not in MODES:
        raise UsageError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    if record_mode is not None and record_mode not in RECORD_MODES:
        raise UsageError(f"record_mode {record_mode!r} is not one of {', '.join(RECORD_MODES)}")
    all_secrets = [*default_secrets(), *(secrets or ())]
    path = Path(cassette) if cassette is not None else None
    # Where an in-process client of the run sends its requests; the endpoint addresses them the same.
    upstream = upstream_base_url(environ)

    if mode == "replay":
        if path is None:
            raise UsageError("mode 'replay' needs cassette=: the recording to answer from")
        if record_mode not in (None, "none"):
            raise UsageError(
                f"mode 'replay' is offline and cannot record (record_mode {record_mode!r}): "
                "use mode 'record' (live API) or 'scripted' with that record_mode"
            )
        replay = CassetteTransport(
            path,
            record_mode="none",
            secrets=all_secrets,
            ignore_body_keys=ignore_body_keys,
            rerecord_hint=rerecord_hint,
            harness_calls=harness_calls,
        )
        return Session(mode, Capture(all_secrets), None, None, replay, None, OFFLINE_API_KEY, upstream)

    if mode in ("record", "live"):
        key = require_api_key(mode, environ)
        all_secrets.append(key)
        # Every run of the process that calls this API with this key waits on the same rate limits.
        limiter = shared_limiter(upstream, key)
        far_sync = RateLimitedTransport(live_transport(), limiter)
        far_async = RateLimitedTransport(async_live_transport(), limiter)
        if mode == "live":
            if path is not None or record_mode is not None:
                raise UsageError("mode 'live' records nothing: to record to a cassette use mode 'record'")
            return Session(mode, Capture(all_secrets), far_sync, far_async, None, None, key, upstream)
        if path is None:
            raise UsageError("mode 'record' needs cassette=: where to write the recording")
        if record_mode == "none":
            raise UsageError(
                "mode 'record' with record_mode 'none' would record nothing: use 'once', 'new_episodes' or 'all'")
        recorder = CassetteTransport(
            path,
            record_mode=record_mode or "all",
            inner=far_sync,
            async_inner=far_async,
            recorded_against="live API",
            secrets=all_secrets,
            ignore_body_keys=ignore_body_keys,
            rerecord_hint=rerecord_hint,
        )
        return Session(mode, Capture(all_secrets), far_sync, far_async, recorder, None, key, upstream)

    model = _scripted_model(script)
    scripted_sync, scripted_async = model.transport(), model.async_transport()
    scripted_recorder: CassetteTransport | None = None
    # The script answers every request, so its cassette is only written from it: a cassette left to
    # replay beside the script would answer in its place and leave every scripted step unused. `none`
    # writes nothing, `once` writes a missing cassette only, `new_episodes` and `all` write it again.
    writes = record_mode != "none" and not (record_mode == "once" and path is not None and path.exists())
    if path is not None:
        if writes:
            scripted_recorder = CassetteTransport(
                path,
                record_mode="all",
                inner=scripted_sync,
                async_inner=scripted_async,
                recorded_against="scripted model",
                secrets=all_secrets,
                ignore_body_keys=ignore_body_keys,
                rerecord_hint=rerecord_hint,
            )
    elif record_mode is not None:
        raise UsageError("record_mode needs cassette=: the file to record the scripted run to")
    return Session(
        mode, Capture(all_secrets), scripted_sync, scripted_async, scripted_recorder, model, OFFLINE_API_KEY, upstream
    )
