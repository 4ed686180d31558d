"""The report: one self-contained HTML page, plus JUnit, Markdown and JSON for CI, from stored results only.

Nothing here imports the transport or the agents: a report is rebuilt from a results file without
re-running anything.
"""

from ._ci import finding_line, json_summary, json_text, junit_xml, markdown_summary
from ._compare import CellStats, Comparison, wilson_interval
from ._data import ReportData, prepare
from ._render import build_report, render_report

__all__ = [
    "CellStats",
    "Comparison",
    "ReportData",
    "build_report",
    "finding_line",
    "json_summary",
    "json_text",
    "junit_xml",
    "markdown_summary",
    "prepare",
    "render_report",
    "wilson_interval",
]
