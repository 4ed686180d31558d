"""The table of runs `harness run` prints is drawn in chunks when it is long (rich lays a table out
whole, which for 100,000 runs took more memory than the runs), and reads exactly as one table."""

from __future__ import annotations

import io
import random

import pytest

from harness._console import print_rich
from harness.results._table import CHUNK, plain_runs_table, runs_table, runs_tables

STATUSES = ("passed", "failed", "error")


def rows(count: int) -> list[tuple[str, ...]]:
    return [(f"scenario-{n % 37}" + "x" * (n % 13), f"claude-sonnet-5-high-r{n}", "replay", STATUSES[n % 3], str(n % 9),
             str(n * 7), "$0.0012", ("-", "T001", "H001,T001")[n % 3]) for n in range(count)]


def drawn(*tables: object) -> str:
    out = io.StringIO()
    for table in tables:
        print_rich(out, table)
    return out.getvalue()


@pytest.mark.parametrize("width", [None, 200, 60])
def test_a_long_table_in_chunks_reads_as_one(width: int | None) -> None:
    many = rows(CHUNK + 263)
    chunks = list(runs_tables(many, width=width))
    assert len(chunks) == (2 if width != 60 else 1)  # too wide for 60 columns: its names fold, one table
    assert drawn(*chunks) == drawn(runs_table(many, width=width))
    assert drawn(*chunks).count("scenario ") == 1  # the header once


def test_a_short_table_is_one_table() -> None:
    assert len(list(runs_tables(rows(CHUNK)))) == 1


# Wide, combining, zero-width, bidi and control characters, tabs and newlines: what run ids, scenario
# names and findings may hold once made inert.
ODD = ["a", "-", "[", "]", " ", "ü", "日", "😀", "\x1b", "\t", "\n", "\r", "\x00", "\u200b", "\u0301", "\u202e", "0"]


def test_the_plain_table_is_what_rich_draws_off_a_terminal() -> None:
    """Off a terminal the table is written directly (rich took 0.4 ms a row), to the same characters."""
    chance = random.Random(7)

    def text(longest: int) -> str:
        return "".join(chance.choice(ODD) for _ in range(chance.randint(0, longest)))

    for _ in range(300):
        table = [(text(30), text(25), chance.choice(["scripted", "replay"]), chance.choice(STATUSES), text(3), text(6),
                  text(8), text(12)) for _ in range(chance.randint(0, 12))]
        assert plain_runs_table(table) == drawn(runs_table(table))
    assert plain_runs_table(rows(CHUNK + 263)) == drawn(*runs_tables(rows(CHUNK + 263)))
