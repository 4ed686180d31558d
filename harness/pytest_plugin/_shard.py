"""--harness-shard K/N: keep one shard of the collected tests, as `harness run --shard` keeps one of the runs.

Registered only when the option is given.
"""

from __future__ import annotations

from typing import Any

import pytest

from ..errors import HarnessError
from ._scenarios import ScenarioItem
from ._state import state_of


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    spec = config.getoption("harness_shard")
    if not spec:
        return
    from ..results._merge import parse_shard, shard_of

    try:
        k, n = parse_shard(spec)
    except HarnessError as exc:
        raise pytest.UsageError(str(exc).replace("--shard", "--harness-shard")) from None
    # A scenario's run id is the key `harness run --shard` uses, so both fronts split runs alike.
    keep: list[pytest.Item] = []
    drop: list[pytest.Item] = []
    for item in items:
        key = item.run.run_id if isinstance(item, ScenarioItem) else item.nodeid
        (keep if shard_of(key, n) == k else drop).append(item)
    state = state_of(config)
    state.shard_dropped = len(drop)
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:
        # The xdist controller collects nothing itself; this is how it learns that an empty shard
        # is empty on purpose (see pytest_testnodedown).
        workeroutput["harness_shard_dropped"] = len(drop)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """xdist controller: how many tests a worker's shard left out (every worker sees the same collection)."""
    dropped = getattr(node, "workeroutput", {}).get("harness_shard_dropped")
    if dropped is not None:
        state = state_of(node.config)
        state.shard_dropped = max(state.shard_dropped or 0, int(dropped))
