"""The harness as a pytest plugin: scenario files as test items, fixtures for a project's own tests.

Loaded through the `pytest11` entry point, so it is present in every pytest session of an environment
that has the harness installed, and does nothing there unless asked (options, marker or fixtures).
It is a thin front: scenarios run through `harness.run`, clients come from `harness.transport`.

Options (command line / ini)
    --harness-scenarios            collect scenario files as tests (ini `harness_scenarios = true`);
                                   one item per scenario x matrix cell, e.g. `refund-basic[claude-sonnet-5-high-r0]`
    harness_scenario_glob (ini)    which files are scenarios, relative to the rootdir, space-separated
                                   patterns (default `scenarios/*.yaml`); pytest must also be pointed at
                                   them (`pytest scenarios tests`, or `testpaths`)
    --harness-mode MODE            run every scenario in this mode instead of its own (replay, record, live, scripted)
                                   (the summary names the scenarios whose own `mode:` it replaced)
    --harness-record-mode MODE     none | once | new_episodes | all (ini `harness_record_mode`)
    --harness-results PATH         write each scenario run's result there (JSON Lines, like `harness run`)
    --harness-report DIR           write the HTML report of the scenario runs there at the end
    --harness-prices FILE          price the scenario runs with FILE merged over the shipped table, as
                                   `harness run --prices`; models of live or record runs without a price
                                   are said once, after collection, before anything runs
    --harness-shard K/N            keep only the K-th of N shards of the collected items (CI matrix jobs):
                                   scenario items by run id, other tests by node id, as `harness run --shard`;
                                   an empty shard exits 0, not pytest's 5, so its matrix job stays green

Record mode, the same four modes as pytest-recording, decided in this order (first one set wins):
    1. the command line, `--harness-record-mode`
    2. the ini file, `harness_record_mode`
    3. the test's marker, `@pytest.mark.harness(record_mode=...)`
    4. `none`: replay only, offline; a request the cassette does not hold fails the test.
The command line wins so that CI can force `none` whatever a test or the ini asks for. For a cassette:
`none` replays; `once` replays an existing cassette and records a missing one; `new_episodes` replays
what matches and records the rest; `all` records everything again. Recording calls the live API and
needs ANTHROPIC_API_KEY. A test with `script=` always talks to its scripted model; when its marker
also names a `cassette`, that cassette is written from the script (`once`: only when missing;
`new_episodes`, `all`: again; `none`: never), and never replays in the script's place. A scenario
item applies a record mode given on the command line or in the ini to scenarios in mode replay or
record; scripted and live scenarios keep their mode.

Under pytest-xdist every worker writes its results to `<results>.<worker id>.jsonl` beside the
results file, and the controller merges them (`merge_results`) into the results file and the report.
"""

from __future__ import annotations

import pytest

# Only light modules at import time: this package is loaded into every pytest session of an
# environment that has the harness installed, used or not, and `harness.results` alone pulls in
# deepdiff (and pandas when it is installed), about a second. Everything else is imported where used.
from .._modes import MODES, RECORD_MODES
from .._secrets import add_secret_variable, secret_warnings
from . import _fixtures, _scenarios, _shard, _summary, _xdist
from ._record import cassette_mode, configured_record_mode, resolve_record_mode
from ._state import DEFAULT_SCENARIO_GLOB, STATE, State

__all__ = ["cassette_mode", "resolve_record_mode"]


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("harness", "agent harness (scenarios, cassettes, scripted models)")
    group.addoption("--harness-scenarios", action="store_true", default=False,
                    help="collect scenario files (ini harness_scenario_glob) as test items, one per matrix cell")
    group.addoption("--harness-mode", choices=MODES, default=None,
                    help="run every scenario in this mode instead of its own")
    group.addoption("--harness-record-mode", choices=RECORD_MODES, default=None,
                    help="cassette record mode; wins over ini harness_record_mode and the "
                         "harness marker (default: none)")
    group.addoption("--harness-secret", action="append", default=[], metavar="NAME",
                    help="an environment variable whose value is redacted from every report and file, "
                    "besides ANTHROPIC_API_KEY (repeatable)")
    group.addoption("--harness-results", metavar="PATH", default=None,
                    help="write each scenario run's result to this JSON Lines file (merged over xdist workers)")
    group.addoption("--harness-report", metavar="DIR", default=None,
                    help="write the HTML report of the scenario runs to this directory at the end of the session")
    group.addoption("--harness-prices", metavar="FILE", default=None,
                    help="YAML prices merged over the shipped table (harness/cost/prices.yaml), as `harness run "
                    "--prices`: what the scenario runs cost, their max_cost_usd and the report are priced with it")
    group.addoption("--harness-shard", metavar="K/N", default=None,
                    help="run only the K-th of N shards (1-based) of the collected tests, chosen by a hash of the "
                    "run id (scenarios) or node id (other tests); join the results with `harness merge`")
    parser.addini("harness_scenarios", "collect scenario files as test items", type="bool", default=False)
    parser.addini("harness_scenario_glob", "scenario file patterns relative to the rootdir", type="args",
                  default=DEFAULT_SCENARIO_GLOB)
    parser.addini("harness_record_mode", "cassette record mode: none, once, new_episodes or all", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "harness(cassette=None, script=None, record_mode=None): the cassette or scripted model behind the "
        "harness_client fixture, and the record mode (the command line and the ini win over it)",
    )
    state = State(config)
    config.stash[STATE] = state
    for name in config.getoption("harness_secret", default=[]) or []:
        add_secret_variable(name)
    # Said as `harness --secret` says it (a value too short, or unset, is not redacted), in the session's
    # harness section: not a pytest warning, which `-W error` or `filterwarnings = error` would make an INTERNALERROR.
    state.warnings.extend(secret_warnings())
    # A misspelt ini record mode is one usage error for the session, not one setup error per test
    # that uses a harness fixture (or none at all, when no test does).
    configured_record_mode(config)
    state.check_results_path()
    state.check_report_dir()
    state.load_prices()
    # Each part is a plugin of its own; the scenario items and the sharding are there only when asked
    # for, so a session that does not use them runs none of their hooks.
    for name, part in (("fixtures", _fixtures), ("summary", _summary), ("xdist", _xdist)):
        config.pluginmanager.register(part, f"harness-{name}")
    if state.collect_scenarios:
        config.pluginmanager.register(_scenarios, "harness-scenarios")
    if config.getoption("harness_shard"):
        config.pluginmanager.register(_shard, "harness-shard")
