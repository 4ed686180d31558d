"""The report: one self-contained HTML page, plus JUnit, Markdown and JSON for CI, from stored results only.

Nothing here imports the transport or the agents: a report is rebuilt from a results file without
re-running anything.
"""

from .._stats import wilson_interval
from ._ci import finding_line, json_summary, json_text, junit_xml, markdown_summary
from ._compare import CellStats, Comparison
from ._data import ReportData, prepare
from ._render import Page, build_report, page_html, prepare_page, render_report, write_page

__all__ = [
    "CellStats",
    "Page",
    "Comparison",
    "ReportData",
    "build_report",
    "finding_line",
    "json_summary",
    "json_text",
    "junit_xml",
    "markdown_summary",
    "prepare",
    "page_html",
    "prepare_page",
    "render_report",
    "wilson_interval",
    "write_page",
]
