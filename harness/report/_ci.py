"""CI outputs of `harness report`: JUnit XML, a Markdown job summary and a JSON summary.

They read the same prepared data as the HTML page. JUnit has one testcase per run (classname the
scenario, name the matrix cell, `case[cell]` for a scenario with cases); failures list findings as
`CODE thread T, step S: reason`.

Each is redacted as a whole before it is returned (the environment's secrets, key-shaped text, Bearer
tokens: `harness._secrets`), so a library caller writing one writes no secret a run's error or a model's
words held. Data that holds no run is said to be no pass in each: a testcase in error in JUnit, `"status":
"no runs"` in JSON, "⚠️ no runs" in Markdown, so a CI reading any of them does not show green for nothing
tested.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from typing import Any

from .._console import inert, reveal_bidi
from .._secrets import REDACTED, default_secrets, redact, redact_json, usable_secrets
from ..checks._registry import Finding
from ._compare import no_cheapest_reason
from ._data import ReportData, RunEntry, cell_latency, total_cost_text, usd

# XML 1.0 cannot carry most control characters, and a model's output may contain any of them.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def finding_line(finding: Finding) -> str:
    """A finding as every text output shows it (`Finding.line`)."""
    return finding.line()


def _failure_lines(run: RunEntry) -> list[str]:
    """Why the run did not pass, as the CLI and the pytest plugin say it (`RunResult.reasons`): the
    findings come first whatever the status, so a replay miss a rule explains names that rule."""
    return run.result.reasons() or [f"run {run.result.status}"]


NO_RUNS = ("The results hold no run: nothing was tested. Check that the job ran its scenarios and reported the "
           "results file they wrote.")


def junit_xml(data: ReportData, secrets: Iterable[str] | None = None) -> str:
    """JUnit XML, one testcase per run, redacted of `secrets` (default: the environment's, `default_secrets()`).

    With no run, one testcase in error says so: a suite of 0 tests reads as a pass to CI's JUnit readers."""
    suite = ET.Element("testsuite", {
        "name": "harness",
        "tests": str(len(data.runs) or 1),
        "failures": str(data.totals["failed"]),
        "errors": str(data.totals["error"] if data.runs else 1),
        "skipped": "0",
        "time": f"{sum(r.result.duration_s for r in data.runs):.3f}",
    })
    if not data.runs:
        case = ET.SubElement(suite, "testcase", {"classname": "harness", "name": "no runs", "time": "0.000"})
        error = ET.SubElement(case, "error", {"message": "no runs: nothing was tested", "type": "harness.no_runs"})
        error.text = NO_RUNS
    for run in data.runs:
        r = run.result
        # With cases, one scenario has a run per case in each cell: the case keeps their names apart.
        name = run.cell if r.case is None else f"{r.case}[{run.cell}]"
        case = ET.SubElement(suite, "testcase", {"classname": _xml_text(r.scenario), "name": _xml_text(name),
                                                 "time": f"{r.duration_s:.3f}"})
        # properties first, as pytest writes them: readers that follow the JUnit schema's element
        # order (failure/error, then system-out) otherwise drop or reject what follows.
        props = ET.SubElement(case, "properties")
        for name, value in (("run_id", r.run_id), ("model", r.model), ("effort", r.effort or "default"),
                            ("steps", str(r.steps)),
                            ("cost_usd", "unpriced" if run.cost_usd is None else f"{run.cost_usd:.6f}")):
            ET.SubElement(props, "property", {"name": name, "value": _xml_text(value)})
        ET.SubElement(props, "property", {"name": "mode", "value": _xml_text(r.mode)})
        if r.case is not None:
            ET.SubElement(props, "property", {"name": "case", "value": _xml_text(r.case)})
        for score in r.scores:
            shown = "no value" if score.value is None else f"{score.value:.4g}"
            ET.SubElement(props, "property", {"name": f"score.{score.name}", "value": _xml_text(shown)})
        if r.status != "passed":
            lines = _failure_lines(run)
            kind = "failure" if r.status == "failed" else "error"
            element = ET.SubElement(case, kind, {"message": _xml_text(lines[0]), "type": f"harness.{r.status}"})
            element.text = _xml_text("\n".join(lines))
        warnings = [finding_line(link.finding) + (" (expected by the scenario)" if link.expected else "")
                    for link in run.findings if link.finding.severity == "warning" or link.expected]
        if warnings:
            ET.SubElement(case, "system-out").text = _xml_text("\n".join(warnings))
    ET.indent(suite)
    text = '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
    return _redact_xml(text, _secrets(secrets))


_TEXT_ESCAPES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
"""What ElementTree escapes in text (`&` first: the others' escapes hold one)."""
_ATTRIBUTE_ESCAPES = {**_TEXT_ESCAPES, '"': "&quot;", "\n": "&#10;", "\r": "&#13;", "\t": "&#09;"}
"""What ElementTree escapes in an attribute."""


def _escaped(text: str, escapes: dict[str, str]) -> str:
    """`text` as ElementTree writes it, `escapes` replaced in order. What xml.sax.saxutils.escape does, whose
    module imports urllib.request (with it http.client, ssl, email): about 0.03 s of CPU for three replaces."""
    for char, escape in escapes.items():
        text = text.replace(char, escape)
    return text


def _redact_xml(xml: str, secrets: tuple[str, ...]) -> str:
    """`xml` redacted as a whole (one pass), a secret in its escaped spellings too: a run's error is
    written escaped (a secret's & < > ", the tab or line break after "Bearer"), which `redact` misses."""
    known = usable_secrets(secrets)
    escaped = {form for secret in known
               for form in (_escaped(secret, _TEXT_ESCAPES), _escaped(secret, _ATTRIBUTE_ESCAPES))} - set(known)
    # `redact`'s Bearer pattern takes an attribute's escape (&#09;) between the scheme and the token too.
    return redact(xml, [*known, *escaped])


def _secrets(secrets: Iterable[str] | None) -> tuple[str, ...]:
    return default_secrets() if secrets is None else tuple(secrets)


def _md(text: object) -> str:
    """One Markdown table cell of untrusted text: no pipes, no line breaks, no raw HTML, no link or
    image (`[x](https://...)`, `![](https://.../pixel.png)` would load or point anywhere from a CI
    summary); control characters escaped and secrets redacted. Run ids keep their brackets: only
    the `](` and `![` that make a link or an image are broken."""
    value = inert(reveal_bidi(str(text))).replace("\\", "\\\\").replace("|", "\\|")
    value = value.replace("<", "&lt;").replace(">", "&gt;").replace("](", "]\\(").replace("![", "!\\[")
    return " ".join(value.split())


def markdown_summary(data: ReportData, secrets: Iterable[str] | None = None) -> str:
    """The Markdown job summary, redacted of `secrets` (default: the environment's, `default_secrets()`)."""
    known = usable_secrets(_secrets(secrets))
    # Each cell redacts the environment's secrets before escaping (`_md`); a secret given here is found in
    # the cells as they spell it (| < > escaped, whitespace joined) too.
    escaped = {_md(secret) for secret in known} - {*known, REDACTED}
    return redact(_markdown(data), [*known, *escaped])


def _markdown(data: ReportData) -> str:
    t = data.totals
    if not t["runs"]:
        # Nothing ran is no pass: a job summary read at a glance must not show a green tick for a shard
        # that got no scenario, a results file left empty, a glob that matched nothing.
        return f"## ⚠️ Agent harness: no runs\n\n{NO_RUNS}\n"
    icon = "✅" if t["failed"] == 0 and t["error"] == 0 else "❌"
    out = [f"## {icon} Agent harness: {t['passed']}/{t['runs']} runs passed", "",
           f"{t['failed']} failed · {t['error']} error · {t['findings']} findings"
           + (f" ({t['expected_findings']} expected by their scenarios)" if t["expected_findings"] else "")
           + f" · {total_cost_text(data.total_cost, data.harness_calls)}",
           ""]
    failing = [r for r in data.runs if r.result.status != "passed"]
    if failing:
        out += ["### Failing runs", "", "| run | mode | status | why |", "|---|---|---|---|"]
        for run in failing:
            reasons = _failure_lines(run)
            out.append(f"| {_md(run.result.run_id)} | {_md(run.result.mode)} | {run.result.status} | "
                       f"{'<br>'.join(_md(x) for x in reasons)} |")
        out.append("")
    cmp = data.comparison
    if cmp.overall:
        out += ["### Comparison", ""]
        if cmp.headline and not cmp.scripted:  # all scripted: the reason below says it, once
            out += [f"**{_md(cmp.headline.verdict())}**", ""]
        if cmp.cheapest:
            out += [f"**Cheapest setting that passes everything: {_md(cmp.cheapest.model)} / "
                    f"{_md(cmp.cheapest.effort)}** "
                    f"({usd(cmp.cheapest.cost_mean)} per run)", ""]
        else:
            out += [no_cheapest_reason(cmp), ""]
        out += ["| model | effort | scenarios | runs | pass rate (95% CI) | steps | tokens | "
                "cost/run | latency median / p90 |",
                "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for c in cmp.overall:
            mark = " ⭐" if c.cheapest_passing else ""
            out.append(f"| {_md(c.model)}{mark} | {_md(c.effort)} | {c.scenarios}/{cmp.scenarios} | {c.runs} | "
                       f"{c.pass_rate:.0%} ({c.ci_low:.0%}–{c.ci_high:.0%}) | {c.steps_mean:.1f} "
                       f"| {c.tokens_mean:,.0f} | "
                       f"{usd(c.cost_mean)} | {cell_latency(c, c.latency_median)} / {cell_latency(c, c.latency_p90)} |")
        out.append("")
    return "\n".join(out)


def json_summary(data: ReportData, secrets: Iterable[str] | None = None) -> dict[str, Any]:
    """The JSON summary, redacted of `secrets` (default: the environment's, `default_secrets()`).

    `status` is "passed" (every run passed), "failed" (a run failed or erred) or "no runs" (nothing was
    tested, which `totals` alone, all zeros, would let a CI read as a pass)."""
    summary = _summary(data)
    # Redacted as the JSON text it is written as, so keys (a model's name) and values alike are.
    return json.loads(redact_json(json.dumps(summary, ensure_ascii=False), _secrets(secrets)))  # type: ignore[no-any-return]


def _status(totals: dict[str, int]) -> str:
    if not totals["runs"]:
        return "no runs"
    return "passed" if totals["failed"] == 0 and totals["error"] == 0 else "failed"


def _summary(data: ReportData) -> dict[str, Any]:
    cmp = data.comparison

    def cell(c: Any) -> dict[str, Any]:
        return {k: getattr(c, k) for k in ("model", "effort", "runs", "passed", "pass_rate", "ci_low", "ci_high",
                                           "steps_mean", "tokens_mean", "tokens_per_step", "cost_mean", "cost_total",
                                           "latency_median", "latency_p90", "latency_runs", "latency_recorded",
                                           "scenarios", "passes_everything", "cheapest_passing", "cache_hit_rate",
                                           "scripted_runs")}

    return {
        "totals": dict(data.totals),  # first: how `harness report` tells its own JSON summary from another file
        "status": _status(data.totals),
        "total_cost_usd": data.total_cost,
        "runs": [{
            "run_id": r.result.run_id, "scenario": r.result.scenario, "case": r.result.case, "model": r.result.model,
            "effort": r.result.effort, "repeat": r.result.repeat, "mode": r.result.mode, "status": r.result.status,
            "steps": r.result.steps,
            "tokens": r.tokens, "cost_usd": r.cost_usd, "error": r.result.error,
            "findings": [link.finding.to_dict() for link in r.findings],
            "scores": [score.to_dict() for score in r.result.scores],
        } for r in data.runs],
        "comparison": {
            "overall": [cell(c) for c in cmp.overall],
            "by_scenario": {s: [cell(c) for c in cells] for s, cells in cmp.by_scenario.items()},
            "cheapest_passing": None if cmp.cheapest is None else {"model": cmp.cheapest.model,
                                                                   "effort": cmp.cheapest.effort},
            "scripted_runs": cmp.scripted_runs,
            "verdict": cmp.headline.verdict() if cmp.headline else None,
            "paired": [{
                "a": p.a, "b": p.b, "measure": p.measure, "cases": len(p.cases), "mean_delta": p.mean_delta,
                "ci": p.ci,
                "mcnemar": {"a_only": p.only_a, "b_only": p.only_b, "pairs": p.pairs, "p_value": p.mcnemar_p},
                "cost_ratio": p.cost_ratio, "cost_delta_ci": p.cost_delta_ci, "latency_delta_ci": p.latency_delta_ci,
                "cache_hit_rate": {"a": p.cache_hit_a, "b": p.cache_hit_b}, "scripted": p.scripted,
                "verdict": p.verdict(),
            } for p in cmp.paired],
        },
        "cost_by_model": {row.name: row.cost_usd for row in data.by_model},
        "cost_by_scenario": {row.name: row.cost_usd for row in data.by_scenario},
        "harness_cost_usd": data.harness_cost,
        "cost_by_harness_calls": {row.name: row.cost_usd for row in data.harness_calls},
        "priced_with": dict(data.priced_with),
        "prices_differ": list(data.prices_differ),
    }


def json_text(data: ReportData, secrets: Iterable[str] | None = None) -> str:
    """`json_summary` as the text `harness report --json` writes."""
    return json.dumps(json_summary(data, secrets), indent=2, ensure_ascii=False) + "\n"
