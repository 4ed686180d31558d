"""Inline SVG charts for the comparison: cost vs pass rate, and tokens per step.

Plain SVG with presentation attributes only (no style attributes, no script), so the page's
Content-Security-Policy holds and the charts work from file:// with no library.
"""

from __future__ import annotations

from markupsafe import Markup
from markupsafe import escape as _escape

from ._compare import CellStats
from ._text import reveal_bidi


def escape(text: str) -> Markup:
    """Escaped for SVG text, with direction controls shown (model names come from results files)."""
    return _escape(reveal_bidi(text))

_PALETTE = ["#3867d6", "#20bf6b", "#eb3b5a", "#f7b731", "#8854d0", "#0fb9b1", "#fa8231", "#4b6584"]


def _colour(models: list[str], model: str) -> str:
    return _PALETTE[models.index(model) % len(_PALETTE)]


def cost_vs_pass_rate(cells: list[CellStats]) -> Markup:
    """Scatter: mean cost per run (x) against pass rate (y); the cheapest all-passing cell ringed."""
    priced = [c for c in cells if c.cost_mean is not None]
    width, height, left, right, top, bottom = 560, 300, 60, 150, 20, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    # 10% headroom: a point at the highest cost would otherwise sit on the axis end, its label under the legend.
    max_cost = (max((c.cost_mean or 0.0 for c in priced), default=0.0) or 1.0) * 1.1
    models = sorted({c.model for c in cells})
    parts = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
             f'xmlns="http://www.w3.org/2000/svg"><title>Cost per run vs pass rate</title>']
    parts.append(f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" stroke="#888"/>')
    parts.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#888"/>')
    for frac in (0.0, 0.5, 1.0):
        y = top + plot_h * (1 - frac)
        parts.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">{frac:.0%}</text>')
        parts.append(f'<text x="{left + plot_w * frac:.1f}" y="{top + plot_h + 16}" text-anchor="middle" '
                     f'font-size="11">${max_cost * frac:.4f}</text>')
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 4}" text-anchor="middle" font-size="11">mean cost per run (USD)</text>')
    # Settings with the same cost and pass rate (common: effort changed nothing) share one label,
    # instead of printing their names on top of each other.
    labels: dict[tuple[str, str], list[str]] = {}
    for cell in priced:
        x = left + plot_w * (cell.cost_mean or 0.0) / max_cost
        y = top + plot_h * (1 - cell.pass_rate)
        label = escape(f"{cell.model} / {cell.effort}: {cell.pass_rate:.0%} pass, ${cell.cost_mean:.4f} per run")
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{_colour(models, cell.model)}" fill-opacity="0.8">'
                     f'<title>{label}</title></circle>')
        names = labels.setdefault((f"{x:.0f}", f"{y:.0f}"), [])
        if cell.effort not in names:
            names.append(cell.effort)
        if cell.cheapest_passing:
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="11" fill="none" stroke="#111" stroke-width="2"/>')
    for (x_text, y_text), names in labels.items():
        parts.append(f'<text x="{float(x_text) + 8:.1f}" y="{float(y_text) - 6:.1f}" font-size="10">'
                     f'{escape(", ".join(names))}</text>')
    for i, model in enumerate(models):
        y = top + 14 * i + 6
        parts.append(f'<rect x="{left + plot_w + 14}" y="{y - 8}" width="10" height="10" fill="{_colour(models, model)}"/>')
        parts.append(f'<text x="{left + plot_w + 28}" y="{y + 1}" font-size="11">{escape(model)}</text>')
    unpriced = [c for c in cells if c.cost_mean is None]
    if unpriced:
        listed = escape(", ".join(f"{c.model}/{c.effort}" for c in unpriced))
        parts.append(f'<text x="{left + plot_w + 14}" y="{top + 14 * len(models) + 20}" font-size="10">unpriced: {listed}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def tokens_per_step(cells: list[CellStats]) -> Markup:
    """Horizontal bars: tokens per model call, one bar per setting."""
    row, left, width = 22, 230, 560
    height = row * len(cells) + 30
    peak = max((c.tokens_per_step for c in cells), default=0.0) or 1.0
    models = sorted({c.model for c in cells})
    parts = [f'<svg class="chart" role="img" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
             f'xmlns="http://www.w3.org/2000/svg"><title>Tokens per step</title>']
    for i, cell in enumerate(cells):
        y = 10 + i * row
        bar = (width - left - 80) * cell.tokens_per_step / peak
        parts.append(f'<text x="{left - 6}" y="{y + 14}" text-anchor="end" font-size="11">'
                     f'{escape(cell.model)} / {escape(cell.effort)}</text>')
        parts.append(f'<rect x="{left}" y="{y + 3}" width="{bar:.1f}" height="{row - 8}" fill="{_colour(models, cell.model)}"/>')
        parts.append(f'<text x="{left + bar + 6:.1f}" y="{y + 14}" font-size="11">{cell.tokens_per_step:,.0f}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
