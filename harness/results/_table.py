"""The table of runs that `harness run` and the pytest plugin print at the end: one row a run, the
same columns in both, so a run reads the same whichever front made it."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING

from .._console import inert

if TYPE_CHECKING:
    from rich.table import Table

    from ._model import RunResult

HEADER = ("scenario", "cell", "mode", "status", "steps", "tokens", "cost", "findings")
_NUMBERS = (4, 5, 6)
"""Columns right-aligned: steps, tokens, cost."""
_FOLDING = ("scenario", "cell", "findings")


def run_row(result: RunResult, cell: str) -> tuple[str, ...]:
    """A finished run's row; `cell` is its matrix cell as the front names it (`claude-sonnet-5-high-r1`)."""
    # As the report, JSON and Markdown say it: a run of a model with no price was never free.
    cost = "unpriced" if result.cost_usd is None else f"${result.cost_usd:.4f}"
    codes = sorted({f.code for f in result.findings if f.severity == "error"})
    return (scenario_case(result.scenario, result.case), cell, result.mode, result.status, str(result.steps),
            str(result.usage.total), cost, ",".join(codes) or "-")


def unmade_row(scenario: str, cell: str, mode: str, status: str) -> tuple[str, ...]:
    """The row of a planned run that did not finish (`cut`, `not made`): nothing measured."""
    return (scenario, cell, mode, status, "-", "-", "-", "-")


def scenario_case(scenario: str, case: str | None) -> str:
    """`support-refund[large-order]`: the scenario, and its case when it has cases, as run ids write them."""
    return scenario + (f"[{case}]" if case is not None else "")


def runs_table(rows: Iterable[tuple[str, ...]], *, width: int | None = None,
               widths: Sequence[int] | None = None, header: bool = True) -> Table:
    """The rich table of `rows` (untrusted text, made inert here); failed and error rows in red.

    Columns are two spaces apart, one when that is what fits the table in `width` columns (a terminal's);
    a table wider still folds its names. `widths` lays it out as part of a longer table (`runs_tables`):
    its columns that wide, with the `header` or without."""
    from rich.table import Table

    rows = [tuple(inert(cell) for cell in row) for row in rows]
    natural = sum(widths or _widths(rows)) + 2 * (len(HEADER) - 1)
    table = Table(box=None, pad_edge=False, padding=(0, 1), show_edge=False, header_style="bold",
                  collapse_padding=width is not None and natural > width, show_header=header)
    for number, title in enumerate(HEADER):
        # On a narrow terminal the names fold onto more lines; the status and the numbers are never cut.
        folds = title in _FOLDING
        table.add_column(title, justify="right" if number in _NUMBERS else "left", no_wrap=not folds,
                         overflow="fold", min_width=widths[number] if widths else None)
    for row in rows:
        table.add_row(*row, style="red" if row[3] in ("failed", "error") else None)
    return table


def plain_runs_table(rows: Sequence[tuple[str, ...]]) -> str:
    """`runs_table` as rich draws it off a terminal (a log, a pipe, pytest without colour): the columns
    two spaces apart, nothing folded, no trailing blanks. Written here, not by rich: rich took 0.4 ms a
    row, the largest cost a long batch paid in one process (at -j 2, a fifth of the command's time)."""
    from rich.cells import cell_len

    rows = [tuple(inert(cell) for cell in row) for row in rows]
    if any("\t" in cell or "\n" in cell for row in rows for cell in row):
        from .._console import render_rich

        return render_rich(runs_table(rows), styled=False)  # rich lays such cells out its own way
    widths = [max(map(cell_len, column)) for column in zip(HEADER, *rows, strict=True)]
    lines = []
    for row in (HEADER, *rows):
        cells = []
        for number, (cell, width) in enumerate(zip(row, widths, strict=True)):
            pad = " " * (width - cell_len(cell))
            cells.append(pad + cell if number in _NUMBERS else cell + pad)
        lines.append("  ".join(cells).rstrip() + "\n")
    return "".join(lines)


CHUNK = 500
"""Rows laid out at once by `runs_tables`."""


def runs_tables(rows: Sequence[tuple[str, ...]], *, width: int | None = None) -> Iterator[Table]:
    """`runs_table` of `rows` as tables of `CHUNK` rows that read as one (the header once, the columns as
    wide in each): rich lays a table out whole, which for 100,000 runs took more memory than the
    command's runs. A table too wide for `width`, whose names fold, is one table as before."""
    widths = _widths([tuple(inert(cell) for cell in row) for row in rows])
    if len(rows) <= CHUNK or (width is not None and sum(widths) + 2 * (len(HEADER) - 1) > width):
        yield runs_table(rows, width=width)
        return
    for start in range(0, len(rows), CHUNK):
        yield runs_table(rows[start:start + CHUNK], width=width, widths=widths, header=start == 0)


def _widths(rows: Sequence[tuple[str, ...]]) -> list[int]:
    """Each column's width: its longest cell, the header's included."""
    return [max(map(len, column)) for column in zip(HEADER, *rows, strict=True)]
