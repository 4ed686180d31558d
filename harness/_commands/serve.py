"""`harness serve SCRIPT`: run the scripted model as a local Messages API for any agent to call.

Prints the base URL to export, answers until Ctrl-C (or until the script is played with
`--exit-when-done`), then reports the steps left unused and fails if there are any.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import threading
from typing import Any

from ..errors import HarnessError
from ..transport.scripted import ScriptedModel, load_script
from ._signals import sigterm_interrupts


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve",
        help="serve a scripted model as a local Messages API",
        description=(
            "Serve SCRIPT (YAML/JSON, see docs/scripted-model.md) as a fake Anthropic Messages API. "
            "Point an agent at the printed ANTHROPIC_BASE_URL; each request gets the script's next step."
        ),
    )
    parser.add_argument("script", metavar="SCRIPT", help="the script file to play")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    parser.add_argument("--port", type=int, default=8765, help="port to listen on; 0 picks a free one (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed for generated ids and signatures (default: %(default)s)")
    parser.add_argument(
        "--exit-when-done", action="store_true", help="stop once every step has been answered",
    )
    parser.add_argument("--quiet", action="store_true", help="do not print a line per request")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    model = ScriptedModel(load_script(args.script), seed=args.seed)
    log = None if args.quiet else _stderr
    with contextlib.ExitStack() as serving:
        try:
            # The socket is bound on entering `serve()`, not on calling it: a port in use fails here.
            base_url = serving.enter_context(model.serve(args.host, args.port, log=log))
        except OSError as exc:
            print(f"harness: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}; "
                  "pick another --port (0 for any free one)", file=sys.stderr)
            return 2
        # A script or CI job runs `harness serve ... &` then `kill $!`: it stops like Ctrl-C, with the
        # report of unused steps and its exit status.
        serving.enter_context(sigterm_interrupts())
        print(f"export ANTHROPIC_BASE_URL={base_url}", flush=True)
        _stderr(f"serving {len(model.steps)} steps of {args.script}; "
                + ("stops when all are played" if args.exit_when_done else "Ctrl-C or SIGTERM to stop"))
        try:
            _wait(model, until_done=args.exit_when_done)
        except KeyboardInterrupt:
            _stderr("stopped")
    return _report(model)

def _wait(model: ScriptedModel, *, until_done: bool) -> None:
    # Short waits in a loop keep the main thread responsive to Ctrl-C.
    if until_done:
        while not model.wait_until_done(timeout=0.2):
            pass
    else:
        stop = threading.Event()
        while not stop.wait(0.2):
            pass


def _report(model: ScriptedModel) -> int:
    try:
        model.assert_complete()
    except HarnessError as exc:
        _stderr(str(exc))
        return 1
    _stderr(f"all {len(model.steps)} steps were played")
    return 0


def _stderr(line: str) -> None:
    print(f"harness serve: {line}", file=sys.stderr, flush=True)
