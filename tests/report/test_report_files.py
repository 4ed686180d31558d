"""The page of results files built by two processes (the runs' details in a worker): the same page as
one process makes, and a failure of either said clearly, never a hang."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from report_data import matrix, runs_data

import harness.report._files as files
import harness.report._processes as spawn
import harness.results._store as store
from harness.cli import main
from harness.cost import load_prices
from harness.errors import InputError
from harness.report import Page, page_html, prepare_page
from harness.report._files import ReportWorkerError, ResultsChangedError, prepare_files
from harness.results import RunResult, write_results
from harness.results._store import _line


def many_runs(copies: int) -> list[RunResult]:
    """The report tests' matrix `copies` times over, each copy's runs repeats of their own: more runs
    than one chunk of details holds."""
    runs = []
    for copy in range(copies):
        for result in matrix():
            repeat = result.repeat + 10 * copy
            run_id = result.run_id.removesuffix(f"-r{result.repeat}]") + f"-r{repeat}]"
            runs.append(dataclasses.replace(result, repeat=repeat, run_id=run_id))
    return runs


OWNERS = "mww" * 20
"""Who reads each chunk of runs when a test says so (`_claimed`): "m" this process, "w" the worker."""


def _claimed(owners: str = OWNERS) -> spawn.StartedWorker:
    """A worker started with the chunks of runs claimed already as `owners` says (chunk k read by
    `owners[k]`, later ones by whichever process comes first), so a test knows who reads what."""
    started = spawn.StartedWorker()
    assert started.claims is not None
    os.pwrite(started.claims, owners.encode("ascii"), 1)
    return started


def _readers(lines: list[str]) -> list[bool]:
    """For each line (all runs, in order; line n holds run n): whether this process reads it, not the
    worker, the chunks claimed as `_claimed` claims them."""
    return [OWNERS[(n - 1) // files.CHUNK_RUNS] == "m" for n in range(1, len(lines) + 1)]


def test_one_or_two_processes_make_the_same_page(tmp_path: Path) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    runs = many_runs(4)  # 104 runs: three chunks of details, the last one short
    write_results(first, runs[:70])
    write_results(second, runs[70:])
    paths = [first, second]
    one = page_html(prepare_files(paths, processes=1))
    two = page_html(prepare_files(paths, processes=2))
    assert one == two
    assert one.count('class="run-chunk"') == 3
    # The worker's chunk between two of this process's, whoever would have come to it first.
    assert page_html(prepare_files(paths, started=_claimed("mwm"))) == one
    # Priced with a table given, and only some runs (what `harness run` asks for): the same again.
    prices = load_prices()
    only = {run.run_id for run in runs[::3]}
    assert (page_html(prepare_files(paths, prices, only=only, processes=1))
            == page_html(prepare_files(paths, prices, only=only, processes=2))
            == page_html(prepare_files(paths, prices, only=only, started=_claimed("wm"))))


def test_the_figures_a_worker_sends_are_received_as_it_made_them() -> None:
    """Its records pickled as their fields (`BY_FIELDS`), made again by their classes: every attribute of
    every record the same, whatever a run holds (findings, expectations, scores, a prices table of its own,
    no outcome, the harness's own calls)."""
    from multiprocessing import Pipe

    from harness.report._chunks import RunChunk
    from harness.report._data import Tally, run_figures, without_trace
    from harness.scores import Score

    for cls in files.BY_FIELDS:  # what making a record again by its `__init__` takes
        assert dataclasses.is_dataclass(cls) and not cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
        assert all(field.init for field in dataclasses.fields(cls)) and not hasattr(cls, "__post_init__")
    runs = matrix()
    runs[0] = dataclasses.replace(runs[0], scores=(Score("exact", 0.5, "half", label="partial"),),
                                  prices=load_prices(), outcome=None, error="it broke", case="c1")
    tally = Tally(None)
    figures = [without_trace(run_figures(n, run, tally.table(run))[0]) for n, run in enumerate(runs, start=1)]
    assert any(run.entry.findings for run in figures) and any(run.entry.result.expectations for run in figures)
    receive, send = Pipe(duplex=False)
    with receive, send:
        files._send_chunk(send, RunChunk(1, len(runs), "data"), figures)
        kind, chunk, received = receive.recv()
    assert (kind, chunk) == ("chunk", RunChunk(1, len(runs), "data"))

    def attributes(value: Any) -> Any:
        """Every attribute of every record in `value`, with its class (equality compares fields only), a NaN
        as a string (a row's unknown cost is one: never equal to itself)."""
        if hasattr(value, "__dict__") and not isinstance(value, type):
            return type(value), attributes(vars(value))
        if isinstance(value, dict):
            return {key: attributes(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value), [attributes(item) for item in value]
        return "NaN" if isinstance(value, float) and math.isnan(value) else value

    assert attributes(received) == attributes(figures)


def test_a_secret_added_as_the_command_runs_is_redacted_by_the_worker_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "worker-told-" + "q" * 30  # no key's pattern: redacted only as a secret it is told of
    runs = many_runs(1)
    trace = runs[0].trace
    assert trace is not None
    trace.notes.append(f"the agent printed {secret}")
    results = tmp_path / "results.jsonl"
    # Written unredacted (the file's writer would redact it): the page must redact it by itself.
    results.write_text("".join(_line(run) for run in runs), encoding="utf-8")
    assert secret in results.read_text(encoding="utf-8")
    monkeypatch.setenv("MY_TOKEN", secret)
    monkeypatch.setattr("harness._secrets.secret_variables", lambda: ("MY_TOKEN",))
    # The worker's environment has MY_TOKEN but not the name added at run time: it is told the secrets.
    page = page_html(prepare_files([results], started=_claimed("w")))
    assert secret not in page
    assert page == page_html(prepare_files([results], processes=1))


def test_each_run_is_listed_redacted_by_the_process_that_read_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A run's record in the page's list (its error, its search text) is made where the run is read, the worker too.
    secret = "Listed-Token-" + "Q" * 30  # mixed case: the search text, lowercased, is redacted before it is
    runs = [dataclasses.replace(run, error=f"the gateway said {secret}") for run in many_runs(4)]
    results = tmp_path / "results.jsonl"
    results.write_text("".join(_line(run) for run in runs), encoding="utf-8")  # unredacted, as above
    assert secret in results.read_text(encoding="utf-8")
    monkeypatch.setenv("MY_TOKEN", secret)
    monkeypatch.setattr("harness._secrets.secret_variables", lambda: ("MY_TOKEN",))
    page = page_html(prepare_files([results], processes=2))
    listed = runs_data(page)
    assert [run["n"] for run in listed] == list(range(1, 105))
    assert all(run["error"] == "the gateway said [REDACTED]" for run in listed)
    assert all("the gateway said [redacted]" in run["search"] for run in listed)
    assert secret not in page and secret.lower() not in page
    assert page == page_html(prepare_files([results], processes=1))


def test_runs_whose_records_were_not_made_as_they_were_read_are_listed_as_the_page_is_written(
        monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "late-told-" + "z" * 30
    runs = [dataclasses.replace(run, error=f"the gateway said {secret}") for run in many_runs(4)]
    monkeypatch.setattr("harness._secrets.secret_variables", lambda: ("MY_TOKEN",))
    monkeypatch.delenv("MY_TOKEN", raising=False)
    page = prepare_page(runs)
    assert len(page.chunks) == 3 and all(chunk.records for chunk in page.chunks)
    made = page_html(page)
    # Chunks without records (a page not made by `_Details`), all or from one on: each run listed as before.
    for kept in range(3):
        chunks = [*page.chunks[:kept], *(dataclasses.replace(chunk, records=None) for chunk in page.chunks[kept:])]
        assert page_html(Page(page.data, chunks)) == made
    # A secret told after the runs were read: their records, made without it, are made again with it.
    assert all(secret in run["error"] for run in runs_data(made))
    monkeypatch.setenv("MY_TOKEN", secret)
    assert all(run["error"] == "the gateway said [REDACTED]" for run in runs_data(page_html(page)))


def test_a_damaged_line_is_said_once_with_its_file_line_and_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results.jsonl"
    write_results(results, many_runs(3))
    lines = results.read_text(encoding="utf-8").splitlines(keepends=True)
    lines[40] = lines[40].replace('"duration_s":', '"duration_s":"slow","was":', 1)
    results.write_text("".join(lines), encoding="utf-8")
    monkeypatch.setattr(files, "_default_processes", lambda paths: 2)
    assert main(["report", str(results), "-o", str(tmp_path / "out")]) == 2
    out, err = capfd.readouterr()
    said = [line for line in err.splitlines() if line.strip()]
    assert said == [f"harness: {results}:41: not a harness result record (duration_s: expected a number, "
                    "got a string ('slow'))"], err
    assert "Traceback" not in out + err
    assert not (tmp_path / "out").exists()


def test_each_chunk_is_read_by_the_process_that_comes_to_it_first(tmp_path: Path) -> None:
    started = spawn.StartedWorker()
    assert started.claims is not None
    try:
        os.pwrite(started.claims, b"w", 1 + 2)  # chunk 2 claimed by the worker before this process begins
        ours, theirs = files._Claims(started.claims, files._Claims.MAIN), files._Claims(started.claims, b"w")
        # The worker is ahead at first, then this process: a chunk goes to whoever asks first, once.
        assert [theirs.claim(0), theirs.claim(1)] == [b"w", b"w"]
        assert [ours.claim(k) for k in range(5)] == [b"w", b"w", b"w", b"m", b"m"]
        assert [theirs.claim(k) for k in range(3, 7)] == [b"m", b"m", b"w", b"w"]
        # Asked run by run: a chunk's first run decides for its CHUNK_RUNS runs.
        size = files.CHUNK_RUNS
        runs = range(4 * size + 1, 7 * size + 2)  # chunks 4 (this process's), 5 and 6 (the worker's), 7's first run
        assert [ours.ours(n) for n in runs] == [True] * size + [False] * 2 * size + [True]
    finally:
        started.close()


def test_a_worker_that_loses_its_core_leaves_every_chunk_to_this_process(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    write_results(results, many_runs(8))  # 208 runs: five chunks
    one = page_html(prepare_files([results], processes=1))
    started = spawn.StartedWorker()
    assert started.process is not None and started.claims is not None
    claims, pid = os.dup(started.claims), started.process.pid  # the build takes both from `started`
    os.kill(pid, signal.SIGSTOP)  # stopped before it claims anything
    all_ours: list[bool] = []

    def resume_once_all_are_claimed() -> None:
        deadline = time.monotonic() + 120  # never a hung test: resumed in any case
        while os.pread(claims, 6, 0) != b"\0mmmmm" and time.monotonic() < deadline:
            time.sleep(0.01)
        all_ours.append(os.pread(claims, 6, 0) == b"\0mmmmm")
        os.kill(pid, signal.SIGCONT)

    resuming = threading.Thread(target=resume_once_all_are_claimed, daemon=True)
    resuming.start()
    try:
        # This process reads every run while the worker cannot; the worker, going on, finds them read.
        assert page_html(prepare_files([results], started=started)) == one
        resuming.join()
        assert all_ours == [True]
    finally:
        os.close(claims)


def _damaged(lines: list[str], index: int) -> None:
    lines[index] = lines[index].replace('"duration_s":', '"duration_s":"slow","was":', 1)


def _said(results: Path, number: int) -> str:
    return (f"{results}:{number}: not a harness result record (duration_s: expected a number, "
            "got a string ('slow'))")


@pytest.mark.parametrize("first", ["worker", "main"])
def test_the_first_damaged_line_is_said_whichever_process_reads_it(first: str, tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    write_results(results, many_runs(8))  # 208 runs: chunks read by both processes
    lines = results.read_text(encoding="utf-8").splitlines(keepends=True)
    readers = _readers(lines)
    # A run of each process's share (line n holds run n), the worker's first or this process's first.
    worker = next(n for n in range(1, len(lines) + 1) if not readers[n - 1])
    ours = next(n for n in range(worker, len(lines) + 1) if readers[n - 1])
    assert worker < ours
    if first == "main":
        ours = next(n for n in range(1, worker) if readers[n - 1])
    for n in (worker, ours):
        _damaged(lines, n - 1)
    # Damaged, the lines are a few bytes longer: still read by the same processes.
    assert [_readers(lines)[n - 1] for n in (worker, ours)] == [False, True]
    results.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(InputError) as one:
        prepare_files([results], processes=1)
    with pytest.raises(InputError) as two:
        prepare_files([results], started=_claimed())
    assert str(two.value) == str(one.value) == _said(results, min(worker, ours))


def test_a_torn_last_line_the_worker_would_read_is_noted_once(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    runs = many_runs(4)  # 104 runs: the 105th line, torn, would be the worker's
    torn = _line(runs[0])[:300]
    assert not _readers([_line(run) for run in runs] + [torn])[104]
    results.write_text("".join(_line(run) for run in runs) + torn, encoding="utf-8")
    warnings: list[str] = []
    two = page_html(prepare_files([results], warnings=warnings, started=_claimed()))
    assert warnings == [f"{results}:105: last line is incomplete (interrupted run?); skipped"]
    assert two == page_html(prepare_files([results], processes=1))


def test_a_line_whose_run_id_its_start_misstates_is_left_to_one_process(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results.jsonl"
    runs = many_runs(4)
    lines = [_line(run) for run in runs]
    # JSON keeps a key's last value: the run this line holds is not the one its first key names.
    index = _readers(lines).index(False)
    lines[index] = lines[index].replace("{", '{"run_id":"not-this-one",', 1)
    results.write_text("".join(lines), encoding="utf-8")
    only = {run.run_id for run in runs[::2]} | {runs[index].run_id}
    capsys.readouterr()
    two = page_html(prepare_files([results], only=only, started=_claimed()))
    assert two == page_html(prepare_files([results], only=only, processes=1))
    assert runs[index].run_id in two
    assert capsys.readouterr().err == ""  # no failure to say: the page is one process's, as it must be


def test_a_worker_that_ends_without_its_chunks_is_an_error_not_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = tmp_path / "results.jsonl"
    write_results(results, many_runs(1))
    # An interpreter that exits at once, having read nothing: the worker died before its first chunk.
    monkeypatch.setattr(sys, "executable", "/bin/false")
    with pytest.raises(ReportWorkerError, match=r"ended before it finished \(exit code 1\)"):
        prepare_files([results], processes=2)


def test_a_worker_that_cannot_start_is_said(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "results.jsonl"
    write_results(results, many_runs(1))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "no-python"))
    with pytest.raises(ReportWorkerError, match="cannot start the process building the runs' details"):
        prepare_files([results], processes=2)


def test_a_worker_that_fails_says_why(tmp_path: Path) -> None:
    read, write = os.pipe()
    from multiprocessing.connection import Connection

    with Connection(read, writable=False) as receive, tempfile.TemporaryFile() as claims:
        files._build_details(Connection(write, readable=False), files._Claims(claims.fileno(), files._Claims.WORKER),
                             [tmp_path / "gone.jsonl"], [None], None, None, ())
        kind, why, where = receive.recv()
    # Sent as a damaged input at the first run, to be said as this process says it: not a failure of its own.
    assert (kind, why, where) == ("input", (str(tmp_path / "gone.jsonl"), "no such results file", None, None), 1)


def test_results_that_change_between_the_two_reads_are_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = tmp_path / "results.jsonl"
    write_results(results, many_runs(3))
    reads = files._numbered

    def fewer(*args: Any, **kwargs: Any) -> Any:
        # This process numbers one run less than the worker does: as if a line were appended meanwhile.
        runs = []
        for run in reads(*args, **kwargs):
            # Its bytes read as it is taken, as the report reads them: the file closes once all are taken.
            assert run[1].utf8.startswith(b'{"run_id":')
            runs.append(run)
        return iter(runs[:-1] if kwargs["main"] else runs)

    monkeypatch.setattr(files, "_numbered", fewer)
    with pytest.raises(ReportWorkerError, match="the results changed while the report read them"):
        prepare_files([results], processes=2)


def test_the_number_of_processes_can_be_told(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(spawn.PROCESSES_VARIABLE, raising=False)  # as the environment running the tests may set it
    results = tmp_path / "results.jsonl"
    write_results(results, many_runs(1))  # small: one process unless told
    assert files._default_processes([results]) == 1
    monkeypatch.setenv(spawn.PROCESSES_VARIABLE, "2")
    assert files._default_processes([results]) == 2
    monkeypatch.setenv(spawn.PROCESSES_VARIABLE, "many")
    capsys.readouterr()
    assert main(["report", str(results), "-o", str(tmp_path / "out")]) == 2
    assert "HARNESS_REPORT_PROCESSES is 'many': give 1 or 2 (processes building a report)" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_lines_appended_while_two_processes_read_are_read_by_neither(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = tmp_path / "results.jsonl"
    lines = [_line(run) for run in many_runs(4)]
    # A live `harness run` has written 60 lines and half the 61st when the report begins.
    begun = "".join(lines[:60]) + lines[60][:200]
    results.write_text(begun, encoding="utf-8")
    starts = subprocess.Popen

    def appending(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        # The sizes are taken; the worker has not read yet: the run writes the rest meanwhile.
        with results.open("a", encoding="utf-8") as file:
            file.write(lines[60][200:] + "".join(lines[61:]))
        return starts(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", appending)
    warnings: list[str] = []
    two = prepare_files([results], warnings=warnings, processes=2)
    monkeypatch.undo()
    assert len(two.data.runs) == 60
    assert warnings == [f"{results}:61: last line is incomplete (interrupted run?); skipped"]
    # The page of the file as it was when the report began.
    os.truncate(results, len(begun.encode("utf-8")))
    assert page_html(two) == page_html(prepare_files([results], processes=1))


def test_lines_appended_while_one_process_reads_are_not_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    results = tmp_path / "results.jsonl"
    lines = [_line(run) for run in many_runs(2)]
    results.write_text("".join(lines[:30]), encoding="utf-8")
    scan = store._scan

    def appending(*args: Any) -> Any:
        # The report has begun reading the file when a live `harness run` appends to it.
        found = scan(*args)
        with results.open("a", encoding="utf-8") as file:
            file.write("".join(lines[30:]))
        return found

    monkeypatch.setattr(store, "_scan", appending)
    page = prepare_files([results], processes=1)
    assert [run.result.run_id for run in page.data.runs] == [run.run_id for run in many_runs(2)[:30]]


def test_a_file_rewritten_while_two_processes_read_it_is_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = tmp_path / "results.jsonl"
    write_results(results, many_runs(3))
    before = results.stat()
    starts = subprocess.Popen

    def rewriting(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        # The same runs, the same size, one result changed in place: the run ids cannot tell.
        text = results.read_text(encoding="utf-8")
        assert '"passed"' in text
        results.write_text(text.replace('"passed"', '"failed"', 1), encoding="utf-8")
        os.utime(results, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
        return starts(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", rewriting)
    with pytest.raises(ResultsChangedError, match=f"{results} was replaced or rewritten while the report read it"):
        prepare_files([results], processes=2)


@pytest.mark.parametrize("python", ["no-python", "/bin/false"])
def test_a_worker_that_cannot_start_or_dies_leaves_the_page_to_one_process(
    python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results.jsonl"
    write_results(results, many_runs(1))
    with results.open("a", encoding="utf-8") as file:
        file.write('{"run_id":"cut')  # a torn last line: noted once, not once per read
    one = page_html(prepare_files([results], processes=1))
    monkeypatch.delenv(spawn.PROCESSES_VARIABLE, raising=False)
    monkeypatch.setattr(files, "_default_processes", lambda paths: 2)  # chosen, not asked for
    monkeypatch.setattr(sys, "executable", python if python.startswith("/") else str(tmp_path / python))
    capsys.readouterr()
    warnings: list[str] = []
    assert page_html(prepare_files([results], warnings=warnings)) == one
    assert warnings == [f"{results}:27: last line is incomplete (interrupted run?); skipped"]
    said = capsys.readouterr().err.splitlines()
    why = "cannot start" if python == "no-python" else r"ended before it finished \(exit code 1\)"
    assert len(said) == 1 and re.fullmatch(
        rf"harness: (the process building the runs' details )?.*{why}.*; building the report in one process",
        said[0]), said
    # Asked for by the variable, two processes it is, or a clear error.
    monkeypatch.setenv(spawn.PROCESSES_VARIABLE, "2")
    with pytest.raises(ReportWorkerError, match="cannot start|ended before it finished"):
        prepare_files([results])


@pytest.mark.parametrize(("cores", "large", "processes"), [(1, True, 1), (2, True, 2), (4, True, 2), (2, False, 1)])
def test_two_processes_need_a_large_file_and_a_second_core_whatever_the_load(
    cores: int, large: bool, processes: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = tmp_path / "results.jsonl"
    write_results(results, many_runs(1))
    monkeypatch.delenv(spawn.PROCESSES_VARIABLE, raising=False)
    size = results.stat().st_size
    monkeypatch.setattr(spawn, "TWO_PROCESSES_FROM_BYTES", size if large else size + 1)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(cores)), raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: cores)
    # Runs claim chunks as they come: a busy machine (or a host's load seen from a container) gives the
    # worker less to read, not a build on one core.
    monkeypatch.setattr(os, "getloadavg", lambda: (9.0, 9.0, 9.0), raising=False)
    assert files._default_processes([results]) == processes


def test_the_worker_puts_the_harness_on_its_path_only_when_missing(tmp_path: Path) -> None:
    show = "import json, sys\nprint(json.dumps(sys.path))\n"

    def path_of(code: str, *args: str) -> list[str]:
        done = subprocess.run([sys.executable, spawn.SAFE_PATH, "-c", code, *args], capture_output=True, text=True,
                              check=True, cwd=tmp_path)
        return json.loads(done.stdout)

    plain = path_of(show)
    assert "" not in plain and str(tmp_path) not in plain  # nothing of the directory it is started in
    # Installed: the harness's root is site-packages, on the path already, which stays where it is (after
    # the standard library).
    installed = sysconfig.get_paths()["purelib"]
    assert installed in plain
    assert path_of(spawn._ON_PATH + show, "0", installed) == plain
    # Run in place from a checkout: its root goes first.
    checkout = str((tmp_path / "checkout").resolve())
    assert path_of(spawn._ON_PATH + show, "0", checkout) == [checkout, *plain]


def test_the_worker_runs_this_process_s_harness_whatever_directory_it_is_started_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Started in a directory with a package named harness (another checkout, another version) and a
    # signal.py, the worker imported those before the harness this process runs: its half of the page
    # built by other code, or, as here, no worker at all.
    results = tmp_path / "results.jsonl"
    write_results(results, many_runs(2))
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "harness").mkdir(parents=True)
    (elsewhere / "harness" / "__init__.py").write_text("raise SystemExit('another harness')\n", encoding="utf-8")
    (elsewhere / "signal.py").write_text("raise SystemExit('another signal')\n", encoding="utf-8")
    one = page_html(prepare_files([results], processes=1))
    monkeypatch.chdir(elsewhere)
    assert page_html(prepare_files([results], processes=2, started=_claimed())) == one  # 2: its failure said


def test_a_receiving_thread_that_cannot_start_is_said_and_the_worker_reaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = tmp_path / "results.jsonl"
    write_results(results, many_runs(1))
    started: list[subprocess.Popen[bytes]] = []
    starts = subprocess.Popen

    def kept(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        started.append(starts(*args, **kwargs))
        return started[-1]

    def no_thread(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(subprocess, "Popen", kept)
    monkeypatch.setattr(threading.Thread, "start", no_thread)
    with pytest.raises(ReportWorkerError, match=r"cannot start the thread receiving the runs' details "
                                                r"\(can't start new thread\)"):
        prepare_files([results], processes=2)
    [worker] = started
    assert worker.returncode is not None  # ended and reaped, not left running


@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_a_task_that_cannot_be_pickled_is_said_not_a_thread_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = tmp_path / "results.jsonl"
    write_results(results, many_runs(1))
    prices = dataclasses.replace(load_prices())  # a copy: the shipped table itself is given to every worker
    object.__setattr__(prices, "held", threading.Lock())  # what pickle cannot take
    with pytest.raises(ReportWorkerError, match=r"failed: cannot give it its task \(TypeError: cannot pickle"):
        prepare_files([results], prices, processes=2)
    # Not asked for, the page is built by one process.
    monkeypatch.delenv(spawn.PROCESSES_VARIABLE, raising=False)
    monkeypatch.setattr(files, "_default_processes", lambda paths: 2)
    assert page_html(prepare_files([results], prices)) == page_html(prepare_files([results], prices, processes=1))


def _first_lines(lines: list[str]) -> tuple[int, int, int]:
    """Three runs, line n holding run n: two of the worker's in its first chunk, then the first of this
    process's after them (this process reads it before it asks the worker for anything)."""
    readers = _readers(lines)
    first = readers.index(False) + 1
    ours = readers.index(True, first) + 1
    assert ours - first >= 10
    return first + 4, first + 9, ours


def test_a_line_not_utf8_is_said_by_whichever_process_reads_it(tmp_path: Path) -> None:
    # A run's line is decoded only if its bytes fail to parse, by the process that reads it, not as
    # both number the lines: one in the worker's share is said as one process says it, before a later
    # damaged line of this process's.
    results = tmp_path / "results.jsonl"
    write_results(results, many_runs(8))
    lines = results.read_bytes().splitlines(keepends=True)
    readers = _readers([line.decode() for line in lines])
    worker = next(n for n in range(1, len(lines) + 1) if not readers[n - 1])
    ours = next(n for n in range(worker, len(lines) + 1) if readers[n - 1])
    lines[worker - 1] = lines[worker - 1].replace(b'"scenario":"', b'"scenario":"\xff', 1)
    lines[ours - 1] = lines[ours - 1].replace(b'"scenario":"', b'"scenario":"\xc3', 1)
    results.write_bytes(b"".join(lines))
    said = f"{results}:{worker}: not UTF-8 (invalid start byte); results files are UTF-8 JSON Lines"
    with pytest.raises(InputError) as one:
        prepare_files([results], processes=1)
    with pytest.raises(InputError) as two:
        prepare_files([results], started=_claimed())
    assert str(two.value) == str(one.value) == said


def test_the_first_damaged_line_is_said_when_the_worker_stopped_at_a_line_it_cannot_number(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    runs = many_runs(8)
    lines = [_line(run) for run in runs]
    misstated, damaged, ours = _first_lines(lines)
    # The worker stops at a line whose first key names a run of `only` its record is not; a damaged line of
    # its own comes after it, one of this process's later still: the worker's is the first.
    lines[misstated - 1] = lines[misstated - 1].replace("{", '{"run_id":"not-its-own",', 1)
    for n in (damaged, ours):
        _damaged(lines, n - 1)
    results.write_text("".join(lines), encoding="utf-8")
    only = {run.run_id for run in runs} - {runs[misstated - 1].run_id} | {"not-its-own"}
    with pytest.raises(InputError) as one:
        prepare_files([results], only=only, processes=1)
    with pytest.raises(InputError) as two:
        prepare_files([results], only=only, started=_claimed())
    assert str(two.value) == str(one.value) == _said(results, damaged)


def test_the_first_damaged_line_is_said_when_the_worker_died_before_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results.jsonl"
    lines = [_line(run) for run in many_runs(8)]
    _, damaged, ours = _first_lines(lines)
    for n in (damaged, ours):
        _damaged(lines, n - 1)
    results.write_text("".join(lines), encoding="utf-8")
    # A worker that dies at once: the worker's damaged line, the first, is never read by it.
    monkeypatch.setattr(sys, "executable", "/bin/false")
    monkeypatch.delenv(spawn.PROCESSES_VARIABLE, raising=False)
    monkeypatch.setattr(files, "_default_processes", lambda paths: 2)  # chosen, not asked for
    capsys.readouterr()
    with pytest.raises(InputError) as chosen:
        prepare_files([results], started=_claimed())
    assert str(chosen.value) == _said(results, damaged)
    assert "building the report in one process" in capsys.readouterr().err
    # Asked for, two processes it is: the worker's failure is said, not a damaged line that is not the first.
    with pytest.raises(ReportWorkerError, match=r"ended before it finished \(exit code 1\)"):
        prepare_files([results], processes=2, started=_claimed())


def test_a_ctrl_c_while_the_worker_starts_is_no_traceback(tmp_path: Path) -> None:
    # Ctrl-C reaches the worker too (one process group), maybe while it still imports the harness: a
    # harness whose import is interrupted so stands in for it, put on the worker's path as a checkout is.
    root = tmp_path / "checkout"
    (root / "harness" / "report").mkdir(parents=True)
    (root / "harness" / "__init__.py").write_text("", encoding="utf-8")
    (root / "harness" / "report" / "__init__.py").write_text("", encoding="utf-8")
    (root / "harness" / "report" / "_files.py").write_text(
        "import os, signal\nos.kill(os.getpid(), signal.SIGINT)\nsum(range(1000))\n"
        "def worker_main():\n    print('started')\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", spawn._WORKER_START, "0", str(root)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "started\n", "")


def test_a_name_of_this_process_s_own_is_read_by_one_process(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    write_results(results, many_runs(4))
    one = page_html(prepare_files([results], processes=1))
    assert one.count('class="run-chunk"') == 3
    # /dev/stdin, /dev/fd/N: a name of a file this process holds, which the worker does not (its stdin is
    # its task): the page is left to one process, not a missing file, nor results said to have changed.
    with results.open("rb") as held:
        assert page_html(prepare_files([f"/dev/fd/{held.fileno()}"], processes=2)) == one


def test_a_file_replaced_as_the_worker_starts_is_said_not_read_by_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    results = tmp_path / "results.jsonl"
    runs = many_runs(4)
    write_results(results, runs[:60])
    starts = subprocess.Popen

    def replacing(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        # `harness merge -o` renames a new file over it: the worker opens another file than this process.
        write_results(results, runs[20:])
        return starts(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", replacing)
    with pytest.raises(ResultsChangedError, match=f"{results} was replaced or rewritten while the report read it"):
        prepare_files([results], processes=2)


# `harness report` in a fresh interpreter, every worker it starts recorded: whether the code that builds
# the page was imported when it started, and whether it was left running once the command returned.
_RECORDED_REPORT = """\
import sys
import harness.report._processes as spawn
made = []
class Recorded(spawn.StartedWorker):
    def __init__(self):
        self.early = "harness.report._data" not in sys.modules
        super().__init__()
        made.append(self)
spawn.StartedWorker = Recorded
from harness.cli import main
status = main(["report", *sys.argv[1:]])
print(status, [(w.early, w.process is None and w.receive is None) for w in made])
"""


def _recorded_report(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _RECORDED_REPORT, *argv], capture_output=True, text=True,
                          timeout=120, env={**os.environ, spawn.PROCESSES_VARIABLE: "2"}, cwd=tmp_path)


def test_harness_report_starts_its_worker_before_importing_what_builds_the_page(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    write_results(results, many_runs(4))
    done = _recorded_report(tmp_path, str(results), "-o", str(tmp_path / "two"))
    # Started early, then taken by the build, which ended it.
    assert done.stdout.splitlines()[-1] == "0 [(True, True)]", done.stderr
    page = (tmp_path / "two" / "index.html").read_text(encoding="utf-8")
    assert page.count('class="run-chunk"') == 3
    assert page == page_html(prepare_files([results], processes=1))


def test_a_worker_started_early_is_ended_when_the_report_fails_before_it_is_given_its_task(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    write_results(results, many_runs(4))
    prices = tmp_path / "prices.yaml"
    prices.write_text("models: [not, a, mapping]\n", encoding="utf-8")
    done = _recorded_report(tmp_path, str(results), "-o", str(tmp_path / "out"), "--prices", str(prices))
    assert done.stdout.splitlines()[-1] == "2 [(True, True)]", done.stderr
    assert str(prices) in done.stderr and not (tmp_path / "out").exists()


def test_a_report_killed_before_its_worker_has_its_task_leaves_no_traceback_nor_worker(tmp_path: Path) -> None:
    # SIGTERM to the report alone (`kill`, `timeout`, a CI job cancelled), not to its process group: the
    # worker it started early lives on, finds its task's pipe closed, and must end without a word, as
    # it did when it was started with its task. The prices file, a FIFO, holds the report where the
    # worker is started and its task not yet given: `harness report` reads it before building the page.
    results = tmp_path / "results.jsonl"
    write_results(results, many_runs(4))
    prices = tmp_path / "prices.yaml"
    os.mkfifo(prices)
    report = subprocess.Popen(
        [sys.executable, "-m", "harness", "report", str(results), "-o", str(tmp_path / "out"), "--prices", str(prices)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        env={**os.environ, spawn.PROCESSES_VARIABLE: "2"})
    try:
        with prices.open("w", encoding="utf-8"):  # returns once the report opened it to read
            report.terminate()
            report.wait(timeout=60)
        # The worker holds the pipes too: their end is its end.
        out, err = report.communicate(timeout=60)
    finally:
        report.kill()
    # Heard as Ctrl-C is (exit 130, one line): the report ends its worker itself, as it does on any end.
    assert report.returncode == 130 and (out, err) == ("", "harness: interrupted\n")
    assert not (tmp_path / "out").exists()


def test_a_report_is_built_where_the_system_has_no_fcntl(tmp_path: Path) -> None:
    # Windows has no fcntl: a report there is built by one process (`start_early`), which must not
    # need the module only the two processes' claims use.
    results = tmp_path / "results.jsonl"
    write_results(results, many_runs(1))
    code = ("import sys\nsys.modules['fcntl'] = None\n"
            "from harness.report._files import prepare_files\n"
            "print(len(prepare_files([sys.argv[1]], processes=1).data.runs))\n")
    done = subprocess.run([sys.executable, "-c", code, str(results)], capture_output=True, text=True)
    assert (done.returncode, done.stderr, done.stdout) == (0, "", f"{len(many_runs(1))}\n")


# A two-process build in a fresh interpreter, and the modules each process holds once the page is written:
# the worker's it prints itself on stderr as it ends (let end, as `harness report` lets it, not killed first).
_MODULES_OF_A_BUILD = """\
import json, os, sys
import harness.report._files as files
import harness.report._processes as spawn
spawn._WORKER_START += "import json\\nprint(json.dumps(sorted(sys.modules)), file=sys.stderr)\\n"
stop = files._Worker.stop
def waiting_stop(self):
    self._process.wait(timeout=60)
    stop(self)
files._Worker.stop = waiting_stop
from harness.report import write_page
started = spawn.StartedWorker()
os.pwrite(started.claims, sys.argv[3].encode("ascii"), 1)
write_page(files.prepare_files([sys.argv[1]], started=started), sys.argv[2])
print(json.dumps(sorted(sys.modules)))
"""

NOT_IN_THE_WORKER = ("pydantic", "pydantic_core.core_schema", "jinja2", "markupsafe", "yaml", "numpy", "pandas",
                     "deepdiff", "anthropic", "httpx")
"""What the worker never needs: it reads runs (priced, unless told a table, with the shipped one, which the report
reads and gives it) and packs their details; it validates no file, writes no page, reads no YAML, compares nothing."""

NOT_IN_A_REPORT = ("pydantic", "pydantic_core.core_schema", "deepdiff", "anthropic", "httpx", "urllib.request", "http",
                   "ssl", "email")
"""What `harness report` never needs without `--prices`: nothing it reads is validated, nothing fetched."""


def _held(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return [m for m in modules if any(m == name or m.startswith(name + ".") for name in names)]


def test_a_two_process_build_imports_only_what_building_the_page_needs(tmp_path: Path) -> None:
    results = tmp_path / "results.jsonl"
    runs = many_runs(2)  # 52 runs: the first chunk read by this process, the second by the worker
    assert all(run.prices is None for run in runs)  # priced with the shipped table
    write_results(results, runs)
    done = subprocess.run([sys.executable, "-c", _MODULES_OF_A_BUILD, str(results), str(tmp_path / "out"), "mw"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    main_modules, worker_modules = json.loads(done.stdout), json.loads(done.stderr.splitlines()[-1])
    # Each read and priced runs; the page is the one process's.
    for modules in (main_modules, worker_modules):
        assert {"harness.results._store", "harness.report._chunks", "harness.cost._prices"} <= set(modules)
    page = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert page == page_html(prepare_files([results], processes=1))
    assert _held(worker_modules, NOT_IN_THE_WORKER) == [], "the worker imports what it never uses"
    assert _held(main_modules, NOT_IN_A_REPORT) == [], "the report imports what it never uses"
    assert {"jinja2", "numpy", "yaml"} <= set(main_modules)  # the page, the comparison, prices.yaml


def test_harness_report_imports_no_validation_nor_web_client(tmp_path: Path) -> None:
    # Every output, in one process: the CI outputs' escapes (JUnit) included.
    results = tmp_path / "results.jsonl"
    write_results(results, many_runs(1))
    code = ("import json, sys\nfrom harness.cli import main\nstatus = main(['report', *sys.argv[1:]])\n"
            "print(status, json.dumps(sorted(sys.modules)))\n")
    argv = [str(results), "-o", str(tmp_path / "out"), "--junit", str(tmp_path / "junit.xml"),
            "--markdown", str(tmp_path / "summary.md"), "--json", str(tmp_path / "summary.json")]
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**os.environ, spawn.PROCESSES_VARIABLE: "1"})
    status, modules = done.stdout.splitlines()[-1].split(" ", 1)
    assert status == "0", done.stderr
    assert _held(json.loads(modules), NOT_IN_A_REPORT) == []


def test_what_writing_the_page_loads_is_loaded_before_the_runs_are_read(tmp_path: Path) -> None:
    # A two-process build loads the comparison's modules and the page's templates while the worker reads
    # (`_two_processes`): whatever either loads only at its first use would be loaded after both processes
    # have read every run, with the other core idle. A fresh interpreter: nothing loaded by another test.
    results = tmp_path / "results.jsonl"
    write_results(results, many_runs(2))
    code = """\
import json, sys
from harness.report import page_html, prepare_page
from harness.report._compare import load_comparison
from harness.report._render import environment, page_template
from harness.results import read_results
page = prepare_page(read_results(sys.argv[1]))
load_comparison()
page_template()
loader, loaded, modules = environment().loader, [], set(sys.modules)
get_source = loader.get_source
loader.get_source = lambda env, name: loaded.append(name) or get_source(env, name)
page_html(page)
print(json.dumps({"templates": loaded, "modules": sorted(set(sys.modules) - modules),
                  "paired": len(page.data.comparison.paired)}))
"""
    done = subprocess.run([sys.executable, "-c", code, str(results)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    after = json.loads(done.stdout)
    assert after["paired"] > 0  # settings compared two by two: medians, percentiles and bootstrap intervals
    assert after == {"templates": [], "modules": [], "paired": after["paired"]}
