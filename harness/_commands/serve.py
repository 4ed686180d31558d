"""`harness serve`: one run's transport, in any mode, as a local Messages API for any agent to call.

Prints the base URL to export, answers until Ctrl-C or SIGTERM (or, scripted, until the script is
played with `--exit-when-done`), with a scenario's tool fixtures beside it when asked (`--tools`),
then settles the run as `harness run` does: the cassette given to `--record` is written (scrubbed,
scanned for the key), and unused scripted steps or replayed interactions are reported and fail the
command.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .._modes import MODES
from ..errors import HarnessError, UsageError
from ._signals import sigterm_interrupts

if TYPE_CHECKING:
    from ..agents import Task
    from ..transport import Endpoint, Session

RERECORD_HINT = ("harness serve --mode record --record FILE (live API, needs ANTHROPIC_API_KEY), "
                 "or SCRIPT --record FILE (offline)")


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="serve a scripted model, a cassette or the live API as a local Messages API",
        description=(
            "Serve a run as a local Anthropic Messages API: a scripted model playing SCRIPT (YAML/JSON, "
            "see docs/scripted-model.md), a cassette replayed (--mode replay --cassette FILE), or the live "
            "API (--mode live, or --mode record to keep what passed). Point an agent at the printed "
            "ANTHROPIC_BASE_URL; the real key, when one is needed, stays inside the harness."
        ),
    )
    parser.add_argument("script", metavar="SCRIPT", nargs="?", help="the script file to play (mode scripted)")
    parser.add_argument(
        "--mode", choices=MODES, default="scripted",
        help="what answers: scripted (SCRIPT), replay (--cassette), live or record (the API, or "
        "ANTHROPIC_BASE_URL; needs ANTHROPIC_API_KEY) (default: %(default)s)",
    )
    parser.add_argument("--cassette", metavar="FILE", help="mode replay: the cassette to answer from")
    parser.add_argument(
        "--record", metavar="FILE",
        help="write what passed to FILE as a vcrpy cassette, scrubbed and scanned for the key "
        "(modes scripted, live and record; mode record needs it)",
    )
    parser.add_argument(
        "--tools", metavar="SCENARIO",
        help="also run SCENARIO's tool fixtures at POST {base_url}/harness/tools/{name} (the tool's input as "
        "the JSON body; the answer is the tool_result's content and is_error), for agents in any language",
    )
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to listen on (default: %(default)s, loopback only)")
    parser.add_argument("--port", type=_port, default=8765,
                        help="port to listen on; 0 picks a free one (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed for generated ids and signatures (default: %(default)s)")
    parser.add_argument(
        "--exit-when-done", action="store_true", help="mode scripted: stop once every step has been answered",
    )
    parser.add_argument("--quiet", action="store_true", help="do not print a line per request")
    parser.set_defaults(func=run)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:  # past 65535 the socket's bind raises OverflowError, a traceback
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535 (0 for any free one), got {text!r}")
    return port


def run(args: argparse.Namespace) -> int:
    from ..agents._served_tools import TOOLS_PREFIX, USER_PATH, tools_handler, user_handler
    from ..trace._model import HARNESS_ROLES
    from ..transport import Endpoint, open_session
    from ..transport.scripted import ScriptedModel, load_script

    mode, options = _session_options(args)
    tools, no_user = _tools_task(args.tools) if args.tools is not None else (None, "")
    left_to_run = 0
    if mode == "scripted":
        script = load_script(args.script)
        # An agent alone is served: steps answering a judge or a simulated user are `harness run`'s.
        served = tuple(step for step in script.steps if step.thread not in HARNESS_ROLES)
        left_to_run = len(script.steps) - len(served)
        script = dataclasses.replace(script, steps=served, threads=frozenset(s.thread for s in served if s.thread))
        options["script"] = ScriptedModel(script, seed=args.seed)
    # An agent alone is served: the judge's and simulated user's recorded calls are `harness run`'s to make.
    session = open_session(mode, rerecord_hint=RERECORD_HINT, harness_calls=False, **options)
    log = None if args.quiet else _stderr
    try:
        endpoint = Endpoint(args.host, args.port, log=log)
    except OSError as exc:
        session.close(run_failed=True, why="the endpoint could not listen")
        print(f"harness: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}; "
              "pick another --port (0 for any free one)", file=sys.stderr)
        return 2
    if session.model is not None:
        # The scripted model says which step answered each request, which says more than a status; the
        # endpoint still logs what never reached it (a path that is no API call), the likeliest mistake.
        session.model.log = log
        endpoint.log_forwarded = False
    with contextlib.ExitStack() as serving:
        base_url = session.serve(endpoint.start(), at_root=True)
        serving.callback(endpoint.stop)
        if tools is not None and session.route is not None:
            tools.base_url = base_url
            tools.watch_answers(lambda: session.exchanges)
            session.route.local[TOOLS_PREFIX] = tools_handler(tools)
            # No simulated user is played here: an agent asking for its next turn is told why, as under
            # `harness run` with a scenario that declares none, not given the 404 of a stray path.
            session.route.local[USER_PATH] = user_handler(tools, no_user)
        # A script or CI job runs `harness serve ... &` then `kill $!`: it stops like Ctrl-C, with the
        # report of what was left unused and its exit status.
        serving.enter_context(sigterm_interrupts())
        print(f"export ANTHROPIC_BASE_URL={base_url}", flush=True)
        _stderr(_serving_what(args, session))
        try:
            _wait(session, endpoint, until_done=args.exit_when_done)
        except KeyboardInterrupt:
            _stderr("stopped")
    if tools is not None:
        _stderr(f"{len(tools.executions)} tool call(s) answered from the fixtures of {args.tools}")
    return _settle(session, args, left_to_run)


def _tools_task(path: str) -> tuple[Task, str]:
    """The task whose tools `--tools` serves: the scenario's fixtures, loaded (and checked) before serving;
    and the 404's message for an agent that asks for the simulated user's next turn, which serve never plays."""
    from ..agents._served_tools import NO_SIMULATED_USER
    from ..run._execute import build_task
    from ..scenario import load_scenario

    source = load_scenario(path)
    if not source.scenario.tools:
        raise UsageError(f"--tools {path}: the scenario declares no tools")
    no_user = NO_SIMULATED_USER if source.scenario.user is None else (
        f"{path} declares a simulated user, but harness serve plays none (its calls are `harness run`'s to "
        "make), so there is no next user turn to ask for: to converse with it, run the scenario with `harness run`"
    )
    return build_task(source, source.scenario.model, None), no_user


def _session_options(args: argparse.Namespace) -> tuple[Any, dict[str, Any]]:
    """The mode of the session and its options, or UsageError naming the option that is wrong."""
    mode = args.mode
    if mode == "scripted":
        if args.script is None:
            raise UsageError("mode scripted needs SCRIPT, the script file to play")
        if args.cassette is not None:
            raise UsageError("--cassette is for --mode replay; to keep a scripted run use --record FILE")
        return mode, {"cassette": args.record} if args.record else {}
    if args.script is not None:
        raise UsageError(f"SCRIPT is for mode scripted, not {mode}")
    if args.exit_when_done:
        raise UsageError("--exit-when-done is for mode scripted (a script has a known end)")
    if mode == "replay":
        if args.cassette is None:
            raise UsageError("mode replay needs --cassette FILE, the recording to answer from")
        if args.record is not None:
            raise UsageError("mode replay answers from --cassette and records nothing new; drop --record")
        return mode, {"cassette": args.cassette}
    if args.cassette is not None:
        raise UsageError(f"--cassette is for --mode replay; with --mode {mode} use --record FILE")
    if mode == "record" and args.record is None:
        raise UsageError("mode record needs --record FILE, where to write what passed")
    # Live with --record is a recording: the same as mode record.
    return ("record", {"cassette": args.record}) if args.record else ("live", {})


def _without_userinfo(url: str) -> str:
    """The URL without the user:password@ a proxy's may carry, to print."""
    parts = urlsplit(url)
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def _serving_what(args: argparse.Namespace, session: Session) -> str:
    if session.model is not None:
        what = f"serving {len(session.model.steps)} steps of {args.script}"
        ends = "stops when all are played" if args.exit_when_done else "Ctrl-C or SIGTERM to stop"
    elif session.mode == "replay":
        what, ends = f"replaying {args.cassette}", "Ctrl-C or SIGTERM to stop"
    else:
        # ANTHROPIC_BASE_URL may point elsewhere (a proxy, a stand-in): say where requests really go.
        upstream = _without_userinfo(session.route.upstream) if session.route is not None else "the live API"
        what, ends = f"forwarding to {upstream}", "Ctrl-C or SIGTERM to stop"
    if args.record:
        what += f", recording to {args.record}"
    if args.tools:
        from ..agents._served_tools import TOOLS_PREFIX

        what += f"; tools of {args.tools} at {session.base_url}{TOOLS_PREFIX}{{name}}"
    return f"{what}; {ends}"


def _wait(session: Session, endpoint: Endpoint, *, until_done: bool) -> None:
    # Short waits in a loop keep the main thread responsive to Ctrl-C.
    if until_done and session.model is not None:
        while not session.model.wait_until_done(timeout=0.2):
            pass
        # The last answer is settled before its final bytes go out: let them reach the client.
        while not endpoint.wait_idle(timeout=0.2):
            pass
        return
    stop = threading.Event()
    while not stop.wait(0.2):
        pass


def _settle(session: Session, args: argparse.Namespace, left_to_run: int = 0) -> int:
    """Close the run as `harness run` does: write the recording unless the harness had to make answers
    up, report replay misses and what was left unused; 1 if anything went wrong. `left_to_run` script
    steps answer the harness's own calls, which only `harness run` makes."""
    status = 0
    problems = [str(problem) for problem in session.problems]
    for problem in problems:
        _stderr(problem)
        status = 1
    closed = False
    try:
        session.close(run_failed=bool(problems), why=problems[0].splitlines()[0] if problems else None)
        closed = True
    except HarnessError as exc:
        # A refused write (the key in the cassette) lands here, not in cassette_not_written: the file
        # was not written, so the "recorded" line below must not follow it.
        _stderr(str(exc))
        status = 1
    if session.cassette_not_written is not None:
        _stderr(session.cassette_not_written)
        status = 1
    elif args.record and closed:
        _stderr(f"recorded {Path(args.record)}")
    if status == 0:
        if session.model is not None:
            _stderr(f"all {len(session.model.steps)} steps were played" + (
                f"; the script's {left_to_run} judge or simulated-user step(s) are the harness's own, answered "
                "under `harness run`, not served here" if left_to_run else ""))
        elif session.mode == "replay":
            left = session.cassette.harness_calls_left() if session.cassette is not None else 0
            _stderr(f"every interaction of {args.cassette} was played" if not left else
                    f"every interaction the agent made in {args.cassette} was played; its {left} judge or "
                    "simulated-user call(s) are the harness's own, made by `harness run`, not served here")
    return status


def _stderr(line: str) -> None:
    # One write with its newline: each connection logs from its own thread, and print's two writes
    # (the text, then the newline) let another request's line in between.
    sys.stderr.write(f"harness serve: {line}\n")
    sys.stderr.flush()
