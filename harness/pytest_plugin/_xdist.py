"""pytest-xdist: each worker writes its scenario results to its own file; the controller merges them."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest

from ._state import State, state_of, worker_file


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """xdist controller, before a worker starts: tell it where its own results file goes."""
    state = state_of(node.config)
    if not (state.collect_scenarios or state.results_path or state.report_dir):
        return
    if state.results_path is not None:
        base = state.results_path
    else:
        if state.temp_dir is None:
            state.temp_dir = Path(tempfile.mkdtemp(prefix="harness-results-"))
        base = state.temp_dir / "results.jsonl"
    own = worker_file(base, node.gateway.id)
    # A worker that runs no scenario writes nothing, so a file of an earlier session must not be taken for its.
    own.unlink(missing_ok=True)
    state.worker_files.append(own)
    node.workerinput["harness_results_base"] = str(base)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node: Any, ids: list[str]) -> None:
    """xdist controller, once a worker has collected and before anything runs: the models of the paid runs
    that have no price, said once, as without xdist. The controller collects nothing itself (nor does it
    show what its workers report at collection), so it plans the collected scenario items again."""
    from ._scenarios import collected_runs, unpriced_warning_of

    state = state_of(node.config)
    if state.unpriced_said or not state.collect_scenarios:
        return
    state.unpriced_said = True  # every worker collects the same items
    warning = unpriced_warning_of(node.config, collected_runs(node.config, ids))
    reporter = node.config.pluginmanager.get_plugin("terminalreporter")
    if warning and reporter is not None:
        reporter.write_line(warning)


def merge_workers(state: State) -> None:
    from ..results._merge import merge_results
    from ..results._store import write_results

    files = [f for f in state.worker_files if f.exists()]
    state.results = merge_results(files, warnings=state.warnings) if files else []
    if state.results_path is not None:
        write_results(state.results_path, state.results)
    # The merged file holds every line; worker files left beside it would be merged twice by a later glob.
    for file in files:
        file.unlink(missing_ok=True)
