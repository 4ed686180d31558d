"""The report: one self-contained HTML page, plus JUnit, Markdown and JSON for CI, from stored results only.

Nothing here imports the transport or the agents: a report is rebuilt from a results file without
re-running anything.

The names are imported on first use: `harness report` starts the process that shares its work
(`_processes`, the standard library only) before it imports the code that builds the page, which the
worker imports meanwhile on another core.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_dir, lazy_exports

_EXPORTS = {
    "wilson_interval": "harness._stats",
    "finding_line": "harness.report._ci",
    "json_summary": "harness.report._ci",
    "json_text": "harness.report._ci",
    "junit_xml": "harness.report._ci",
    "markdown_summary": "harness.report._ci",
    "CellStats": "harness.report._compare",
    "Comparison": "harness.report._compare",
    "ReportData": "harness.report._data",
    "prepare": "harness.report._data",
    "Page": "harness.report._render",
    "build_report": "harness.report._render",
    "page_html": "harness.report._render",
    "prepare_page": "harness.report._render",
    "render_report": "harness.report._render",
    "write_page": "harness.report._render",
}

# Literal, so that linters and readers see the public names; a test keeps it equal to _EXPORTS.
__all__ = [
    "CellStats",
    "Comparison",
    "Page",
    "ReportData",
    "build_report",
    "finding_line",
    "json_summary",
    "json_text",
    "junit_xml",
    "markdown_summary",
    "page_html",
    "prepare",
    "prepare_page",
    "render_report",
    "wilson_interval",
    "write_page",
]

if TYPE_CHECKING:
    from .._stats import wilson_interval
    from ._ci import finding_line, json_summary, json_text, junit_xml, markdown_summary
    from ._compare import CellStats, Comparison
    from ._data import ReportData, prepare
    from ._render import Page, build_report, page_html, prepare_page, render_report, write_page


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())
__dir__ = lazy_dir(_EXPORTS, globals())
