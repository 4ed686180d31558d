"""Fixtures of the framework and SDK-range tests: every virtualenv they need is built at once, in the
background, the first time any of them asks for one (each is reused afterwards; see venvs.py)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import pytest
from venvs import EXAMPLES, Venv, example_requirements, venv

# Building four at once keeps two cores busy: a build spends most of its time waiting on downloads.
_BUILDERS = 4
SDK_RANGE = {
    "sdk-oldest": ["anthropic==0.40.0"],
    "sdk-newest": ["anthropic>=2,<3"],
}


@pytest.fixture(scope="session")
def venvs() -> Callable[[str], Venv]:
    """`venvs(name)`: the venv of an SDK range end (sdk-oldest, sdk-newest) or of an example folder."""
    pool = ThreadPoolExecutor(_BUILDERS, thread_name_prefix="venv-build")
    builds: dict[str, Future[Venv]] = {
        name: pool.submit(venv, name, requirements, pip_install_harness=True) for name, requirements in SDK_RANGE.items()
    }
    for example in EXAMPLES:
        requirements = example_requirements(example)
        if requirements:
            builds[example] = pool.submit(venv, f"example-{example}", requirements)
    pool.shutdown(wait=False)
    return lambda name: builds[name].result()
