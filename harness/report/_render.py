"""Render the self-contained HTML report: one page, inline CSS and JS, no network, works from file://.

Jinja2 with autoescape on for everything from a trace; the only script is ours, allowed by its
hash in a Content-Security-Policy that forbids every network fetch and every inline event handler.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, Template
from markupsafe import Markup

from .._console import reveal_bidi
from .._output import write_with
from ..cost import PriceTable
from ..results._model import RunResult
from ..trace._normalize import printable
from ..trace._scrub import default_secrets, redact_json
from ._chunks import RunChunk, _Details, _record_json
from ._compare import no_cheapest_reason
from ._data import ReportData, cell_latency, prepare, seconds, tokens, usd
from ._svg import cost_vs_pass_rate, tokens_per_step


def _asset(name: str) -> str:
    return resources.files("harness.report").joinpath("templates", name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def content_security_policy(script: str, style: str) -> str:
    """Nothing may load from anywhere; only our own script and stylesheet, by hash, may run."""
    return (
        "default-src 'none'; "
        f"script-src {_sha256(script)}; "
        f"style-src {_sha256(style)}; "
        "img-src data:; base-uri 'none'; form-action 'none'; frame-src 'none'"
    )


def percent(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}"


def _finalize(value: Any) -> Any:
    """Every `{{ }}` output: direction controls made visible (Markup is ours: script, style, SVG)."""
    if isinstance(value, str) and not isinstance(value, Markup):
        return reveal_bidi(value)
    return value


@lru_cache(maxsize=1)
def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("harness.report", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_finalize,
    )
    env.filters["usd"] = usd
    env.filters["tokens"] = tokens
    env.filters["seconds"] = seconds
    env.filters["cell_latency"] = cell_latency
    env.filters["percent"] = percent
    return env


def page_template() -> Template:
    """The page's template, compiled at its first use and kept (by Jinja's environment): about 0.05 s,
    which a two-process build spends while the worker reads (`_files`), not once both are done. With the
    macros it imports, which Jinja would compile only as the page is rendered (another 0.03 s)."""
    env = environment()
    env.get_template("_tables.html.j2")
    return env.get_template("report.html.j2")


def _runs_json(page: Page, secrets: tuple[str, ...]) -> Iterator[str]:
    """The runs as a JSON array, a chunk or a run at a time, so a page of 100,000 runs is never a list
    of 100,000 dicts nor one string of all of them. The records its chunks hold, made as their runs
    were read (`_Details`), are put in as they are, when made with the `secrets` this page is redacted
    of; the runs after the last such chunk (a page of runs no `_Details` read) are made here."""
    runs = page.data.runs
    listed = 0
    yield "["
    for chunk in page.chunks:
        if (chunk.records is None or chunk.secrets != secrets or chunk.first != listed + 1
                or listed + chunk.count > len(runs)):
            break
        yield ("," if listed else "") + chunk.records
        listed += chunk.count
    for i in range(listed, len(runs)):
        yield ("," if i else "") + _record_json(runs[i], secrets)
    yield "]"


@dataclass
class Page:
    """What the page is made of: the report's figures and every run's body, packed."""

    data: ReportData
    chunks: list[RunChunk]


def prepare_page(results: Iterable[RunResult], prices: PriceTable | None = None) -> Page:
    """One pass over `results` (a list, or a results file as it is read): each trace is rendered and
    let go, so memory grows with the number of runs, not with their traces."""
    details = _Details()
    data = prepare(results, prices, render=details)
    details.close()
    return Page(data, details.chunks)


_RUNS_DATA = "<!--runs-data-->"
_RUN_CHUNKS = "<!--run-chunks-->"
"""Where the runs' data and bodies go in the rendered template: put in piece by piece, never
through the template, so the page is written without ever being one string. Every string of a trace
is escaped by the template, so no `<!--` in the rendered text is anyone's but ours."""


def page_pieces(page: Page, title: str = "Agent harness report") -> Iterator[str]:
    """The page, piece after piece, every piece redacted: what `write_page` writes."""
    data = page.data
    secrets = default_secrets()
    script, style = _asset("report.js"), _asset("report.css")
    context: dict[str, Any] = {
        "title": title,
        "data": data,
        "scenarios": sorted({run.result.scenario for run in data.runs}),
        "csp": content_security_policy(script, style),
        # Markup: raw text elements must not be entity-escaped, and the CSP hash is over these exact bytes.
        "script": Markup(script),
        "style": Markup(style),
        "no_cheapest": no_cheapest_reason(data.comparison),
        "scatter": cost_vs_pass_rate(data.comparison.overall),
        "bars": tokens_per_step(data.comparison.overall),
        "runs_data": Markup(_RUNS_DATA),
        "run_chunks": Markup(_RUN_CHUNKS),
    }
    # Recorded bodies may hold lone surrogates (valid JSON, not encodable): escaped, the page can be written.
    frame = redact_json(printable(page_template().render(context)), secrets)
    head, rest = frame.split(_RUNS_DATA)
    middle, tail = rest.split(_RUN_CHUNKS)
    yield head
    yield from _runs_json(page, secrets)
    yield middle
    for chunk in page.chunks:
        yield (f'<script type="application/gzip" class="run-chunk" data-first="{chunk.first}" '
               f'data-count="{chunk.count}">{chunk.data}</script>\n')
    yield tail


def page_html(page: Page, title: str = "Agent harness report") -> str:
    """The whole page as a string."""
    return "".join(page_pieces(page, title))


def render_report(results: Iterable[RunResult], *, prices: PriceTable | None = None,
                  title: str = "Agent harness report") -> str:
    """The whole page of `results` as a string."""
    return page_html(prepare_page(results, prices), title)


def write_page(page: Page, out_dir: str | Path, title: str = "Agent harness report") -> Path:
    """Write `<out_dir>/index.html` and return its path.

    The page shows each run's bodies; results may come straight from a run, not from a results file
    (which is redacted as it is written), so every piece of the page is redacted before it is written.
    The page, not the results: it holds each body once, the traces hold every history again.
    """
    path = Path(out_dir) / "index.html"
    write_with(path, lambda out: out.writelines(page_pieces(page, title)))
    return path


def build_report(results: Iterable[RunResult], out_dir: str | Path, *, prices: PriceTable | None = None,
                 title: str = "Agent harness report") -> Path:
    """Write the page of `results` to `<out_dir>/index.html` and return its path."""
    return write_page(prepare_page(results, prices), out_dir, title)
