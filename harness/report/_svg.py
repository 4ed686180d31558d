"""Inline SVG charts for the comparison: cost vs pass rate, and tokens per step.

Plain SVG with presentation attributes only (no style attributes, no script), so the page's
Content-Security-Policy holds and the charts work from file:// with no library.
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import Markup
from markupsafe import escape as _escape

from .._console import reveal_bidi
from ._compare import CellStats


def escape(text: str) -> Markup:
    """Escaped for SVG text, with direction controls shown (model names come from results files)."""
    return _escape(reveal_bidi(text))

_PALETTE = ["#3867d6", "#20bf6b", "#eb3b5a", "#f7b731", "#8854d0", "#0fb9b1", "#fa8231", "#4b6584"]


_LABEL_SIZE = 10
_CHAR_W = 6.2
"""A generous width per character at the label's font size: boxes may be wider than the text, never narrower."""


@dataclass(frozen=True)
class _Box:
    x0: float
    y0: float
    x1: float
    y1: float

    def overlaps(self, other: _Box) -> bool:
        return self.x0 < other.x1 and other.x0 < self.x1 and self.y0 < other.y1 and other.y0 < self.y1

    def inside(self, area: _Box) -> bool:
        return self.x0 >= area.x0 and self.y0 >= area.y0 and self.x1 <= area.x1 and self.y1 <= area.y1


def _place(text: str, x: float, y: float, placed: list[_Box], area: _Box) -> tuple[_Box, str]:
    """Where a point's label goes: the first spot around the point, then further out, that overlaps
    no other label nor point and stays in the chart; (its box, the SVG text-anchor)."""
    w, h = len(text) * _CHAR_W + 2, _LABEL_SIZE + 4
    candidates: list[tuple[_Box, str]] = []
    for step in range(0, 12):
        dy = step * (h + 1)
        for sy in ((-1, 1) if step else (-1,)):
            cy = y - 4 + sy * dy if step else y - 4
            candidates.append((_Box(x + 8, cy - h + 4, x + 8 + w, cy + 4), "start"))
            candidates.append((_Box(x - 8 - w, cy - h + 4, x - 8, cy + 4), "end"))
    for box, anchor in candidates:
        if box.inside(area) and not any(box.overlaps(other) for other in placed):
            return box, anchor
    return candidates[0]


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
        parts.append(f'<text x="{left + plot_w * frac:.1f}" y="{top + plot_h + 20}" text-anchor="middle" '
                     f'font-size="11">${max_cost * frac:.4f}</text>')
    parts.append(f'<text x="{left + plot_w / 2}" y="{height - 4}" text-anchor="middle" font-size="11">mean '
                 'cost per run (USD)</text>')
    # Settings with the same cost and pass rate (common: effort changed nothing) share one label,
    # instead of printing their names on top of each other.
    labels: dict[tuple[str, str], list[str]] = {}
    points: list[tuple[float, float, float]] = []
    for cell in priced:
        x = left + plot_w * (cell.cost_mean or 0.0) / max_cost
        y = top + plot_h * (1 - cell.pass_rate)
        label = escape(f"{cell.model} / {cell.effort}: {cell.pass_rate:.0%} pass, ${cell.cost_mean:.4f} per run")
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="6" fill="{_colour(models, cell.model)}" fill-opacity="0.8">'
                     f'<title>{label}</title></circle>')
        points.append((x, y, 12.0 if cell.cheapest_passing else 6.0))
        names = labels.setdefault((f"{x:.0f}", f"{y:.0f}"), [])
        if cell.effort not in names:
            names.append(cell.effort)
        if cell.cheapest_passing:
            parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="11" fill="none" stroke="#111" stroke-width="2"/>')
    # Labels keep clear of every point, and of the ring around the cheapest one.
    placed: list[_Box] = [_Box(px - r, py - r, px + r, py + r) for px, py, r in points]
    area = _Box(0, 0, left + plot_w + 10, height)  # labels stay clear of the legend on the right
    for (x_text, y_text), names in labels.items():
        x, y = float(x_text), float(y_text)
        text = ", ".join(names)
        box, anchor = _place(text, x, y, placed, area)
        placed.append(box)
        tx = box.x0 if anchor == "start" else box.x1
        if abs((box.y0 + box.y1) / 2 - y) > 12 or min(abs(box.x0 - x), abs(box.x1 - x)) > 14:
            # Moved away from its point to stay clear of the others: a thin line says whose it is.
            near_x = box.x0 if anchor == "start" else box.x1
            parts.append(f'<line x1="{x:.1f}" y1="{y:.1f}" x2="{near_x:.1f}" y2="{(box.y0 + box.y1) / 2:.1f}" '
                         f'stroke="#999" stroke-width="0.7"/>')
        parts.append(f'<text class="point-label" x="{tx:.1f}" y="{box.y1 - 3:.1f}" text-anchor="{anchor}" '
                     f'font-size="{_LABEL_SIZE}">{escape(text)}</text>')
    for i, model in enumerate(models):
        y = top + 14 * i + 6
        parts.append(
            f'<rect x="{left + plot_w + 14}" y="{y - 8}" width="10" height="10" fill="{_colour(models, model)}"/>')
        parts.append(f'<text x="{left + plot_w + 28}" y="{y + 1}" font-size="11">{escape(model)}</text>')
    unpriced = [c for c in cells if c.cost_mean is None]
    if unpriced:
        listed = escape(", ".join(f"{c.model}/{c.effort}" for c in unpriced))
        parts.append(
            f'<text x="{left + plot_w + 14}" y="{top + 14 * len(models) + 20}" font-size="10">'
            f'unpriced: {listed}</text>')
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
        parts.append(
            f'<rect x="{left}" y="{y + 3}" width="{bar:.1f}" height="{row - 8}" fill="{_colour(models, cell.model)}"/>')
        parts.append(f'<text x="{left + bar + 6:.1f}" y="{y + 14}" font-size="11">{cell.tokens_per_step:,.0f}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
