"""Fixtures of the framework and SDK-range tests: every virtualenv they need starts building in the
background as soon as collection ends, so the builds overlap the rest of the suite instead of
adding their whole time to it (each is reused afterwards; see venvs.py)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
from venvs import EXAMPLES, Venv, example_requirements, venv

HERE = Path(__file__).resolve().parent
SDK_RANGE = {
    "sdk-oldest": ["anthropic==0.40.0"],
    "sdk-1x": ["anthropic>=1,<2"],
    "sdk-newest": ["anthropic>=2,<3"],
}
# The oldest end gets the harness itself `pip install`ed, as a project pinning anthropic<1 would;
# the newest is what `pip install -e .` of this checkout already resolves to, so it needs only the
# harness's dependencies resolved with it (and can build beside the others: see venvs.py).
PIP_INSTALLED = {"sdk-oldest"}
_builds: dict[str, Future[Venv]] = {}


def _start_builds() -> None:
    if _builds:
        return
    # All at once: a build spends most of its time waiting on downloads, not on the two cores.
    pool = ThreadPoolExecutor(len(SDK_RANGE) + len(EXAMPLES), thread_name_prefix="venv-build")
    for name, requirements in SDK_RANGE.items():
        _builds[name] = pool.submit(venv, name, requirements, pip_install_harness=name in PIP_INSTALLED)
    for example in EXAMPLES:
        requirements = example_requirements(example)
        if requirements:
            _builds[example] = pool.submit(venv, f"example-{example}", requirements)
    pool.shutdown(wait=False)


def pytest_collection_finish(session: pytest.Session) -> None:
    # Under xdist each worker collects everything but runs only some tests; both start the builds
    # and the per-venv lock makes the second wait for the first's result instead of building twice.
    if any(HERE in Path(str(item.path)).parents and "venvs" in getattr(item, "fixturenames", ())
           for item in session.items):
        _start_builds()


@pytest.fixture(scope="session")
def venvs() -> Callable[[str], Venv]:
    """`venvs(name)`: the venv of an SDK version (sdk-oldest, sdk-1x, sdk-newest) or of an example folder."""
    _start_builds()
    return lambda name: _builds[name].result()
