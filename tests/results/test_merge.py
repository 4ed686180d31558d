"""Shards and xdist workers write separate results files; merging them must give one run's results.

Covers the shard selection (stable, 1-based, validated) and the merge (order, duplicates, torn lines),
through the library and through `harness merge`.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from harness.cli import main
from harness.errors import HarnessError, InputError
from harness.results import (
    ResultsWriter,
    RunResult,
    merge_results,
    parse_shard,
    read_results,
    select_shard,
    shard_of,
    write_results,
)
from harness.results._merge import merge_files, run_id_order


def result(run_id: str, status: str = "passed", duration: float = 0.1) -> RunResult:
    scenario = run_id.split("[", 1)[0]
    return RunResult(
        run_id=run_id, scenario=scenario, scenario_path=f"scenarios/{scenario}.yaml", model="claude-sonnet-5",
        effort="high", repeat=int(run_id.rsplit("-r", 1)[1].rstrip("]")), mode="scripted",
        status=status,  # type: ignore[arg-type]
        outcome=None, duration_s=duration,
    )


IDS = [f"s{s}[claude-sonnet-5-high-r{r}]" for s in range(8) for r in range(3)]


def test_shards_partition_the_runs_whatever_n() -> None:
    for n in (1, 2, 3, 5):
        shards = [select_shard(IDS, k, n) for k in range(1, n + 1)]
        assert sorted(i for shard in shards for i in shard) == sorted(IDS)
        assert sum(len(s) for s in shards) == len(IDS)


def test_adding_a_scenario_moves_no_other_run() -> None:
    before = {i: shard_of(i, 4) for i in IDS}
    grown = IDS + [f"new-one[claude-sonnet-5-high-r{r}]" for r in range(3)]
    assert {i: shard_of(i, 4) for i in grown if i in before} == before
    assert {shard_of(i, 4) for i in IDS} == {1, 2, 3, 4}  # the hash spreads runs, it does not pile them up


def test_shard_is_the_same_in_every_process_whatever_the_hash_seed() -> None:
    # Python's hash() is salted per process; CI machines must agree on who runs what
    import subprocess
    import sys

    code = "from harness.results import shard_of; print(shard_of('refund-basic[claude-sonnet-5-high-r0]', 7))"
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={"PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert runs == {f"{shard_of('refund-basic[claude-sonnet-5-high-r0]', 7)}\n"}


@pytest.mark.parametrize("spec, expected", [("1/1", (1, 1)), ("2/4", (2, 4)), (" 3 / 3 ", (3, 3))])
def test_shard_spec_is_parsed(spec: str, expected: tuple[int, int]) -> None:
    assert parse_shard(spec) == expected


@pytest.mark.parametrize("spec, hint", [("0/4", "K counts from 1"), ("5/4", "at most N=4"), ("2", "expected K/N"),
                                        ("a/b", "expected K/N"), ("1/0", "at least 1")])
def test_a_bad_shard_spec_says_what_is_expected(spec: str, hint: str) -> None:
    with pytest.raises(HarnessError, match=hint):
        parse_shard(spec)


def test_merge_orders_by_run_id_reading_numbers_as_numbers(tmp_path: Path) -> None:
    ids = [f"a[m-high-r{r}]" for r in range(12)]
    write_results(tmp_path / "one.jsonl", [result(i) for i in ids[::2]])
    write_results(tmp_path / "two.jsonl", [result(i) for i in reversed(ids[1::2])])
    merged = merge_results([tmp_path / "two.jsonl", tmp_path / "one.jsonl"])
    assert [r.run_id for r in merged] == ids


def test_an_identical_duplicate_is_kept_once(tmp_path: Path) -> None:
    write_results(tmp_path / "a.jsonl", [result("x[m-high-r0]"), result("y[m-high-r0]")])
    merged = merge_results([tmp_path / "a.jsonl", tmp_path / "a.jsonl"])
    assert [r.run_id for r in merged] == ["x[m-high-r0]", "y[m-high-r0]"]


def test_a_conflicting_duplicate_names_both_files(tmp_path: Path) -> None:
    write_results(tmp_path / "shard1.jsonl", [result("x[m-high-r0]", "passed")])
    write_results(tmp_path / "shard2.jsonl", [result("x[m-high-r0]", "failed")])
    with pytest.raises(InputError) as caught:
        merge_results([tmp_path / "shard1.jsonl", tmp_path / "shard2.jsonl"])
    message = str(caught.value)
    assert "shard1.jsonl" in message and "shard2.jsonl" in message and "x[m-high-r0]" in message


def test_a_torn_last_line_is_skipped_with_a_warning(tmp_path: Path) -> None:
    write_results(tmp_path / "w0.jsonl", [result("x[m-high-r0]")])
    write_results(tmp_path / "w1.jsonl", [result("y[m-high-r0]")])
    with (tmp_path / "w1.jsonl").open("a") as f:
        f.write('{"run_id": "z[m-high-r0]", "scen')
    warnings: list[str] = []
    merged = merge_results([tmp_path / "w0.jsonl", tmp_path / "w1.jsonl"], warnings=warnings)
    assert [r.run_id for r in merged] == ["x[m-high-r0]", "y[m-high-r0]"]
    assert len(warnings) == 1 and "w1.jsonl:2" in warnings[0] and "incomplete" in warnings[0]


def test_a_missing_file_is_an_error_that_names_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nope.jsonl: no such results file"):
        merge_results([tmp_path / "nope.jsonl"])


def test_the_merge_command_joins_a_directory_and_reports_torn_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shards = tmp_path / "shards"
    write_results(shards / "s1" / "results.jsonl", [result("b[m-high-r0]", "failed")])
    write_results(shards / "s2" / "results.jsonl", [result("a[m-high-r0]")])
    with (shards / "s2" / "results.jsonl").open("a") as f:
        f.write("{")
    assert main(["merge", str(shards), "-o", str(tmp_path / "merged.jsonl")]) == 0
    out, err = capsys.readouterr()
    assert "merged 2 run(s) (1 not passed)" in out
    assert "warning" in err and "incomplete" in err
    assert [r.run_id for r in read_results(tmp_path / "merged.jsonl")] == ["a[m-high-r0]", "b[m-high-r0]"]


def test_the_merge_command_exits_2_on_a_conflict(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_results(tmp_path / "a.jsonl", [result("x[m-high-r0]", duration=1.0)])
    write_results(tmp_path / "b.jsonl", [result("x[m-high-r0]", duration=2.0)])
    assert main(["merge", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "-o", str(tmp_path / "m.jsonl")]) == 2
    assert "also in" in capsys.readouterr().err
    assert not (tmp_path / "m.jsonl").exists()


SCENARIO = """\
name: {name}
prompt: Who is customer C1?
mode: scripted
matrix: {{efforts: [low, high], repeats: 2}}
tools:
- name: get_customer
  input_schema: {{type: object, properties: {{customer_id: {{type: string}}}}}}
  fixture: {{output: {{customer_id: C1, name: Ana Ruiz}}}}
expect:
  final_text: {{contains: {expected}}}
script:
- tool_use: {{name: get_customer, input: {{customer_id: C1}}}}
- text: Ana Ruiz.
"""

# What legitimately differs between two runs of the same thing: wall-clock times and durations.
_VARYING = {"started_at", "duration_s", "ended_at"}


def normalized(value: object) -> object:
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in value.items() if k not in _VARYING}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value


def test_sharded_runs_merged_equal_one_unsharded_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    for name, expected in (("alpha", "Ana"), ("beta", "Ana"), ("gamma", "Bob"), ("delta", "Ruiz")):
        (scenarios / f"{name}.yaml").write_text(SCENARIO.format(name=name, expected=expected))
    whole = tmp_path / "whole.jsonl"
    assert main(["run", str(scenarios), "--results", str(whole), "--no-report"]) == 1  # gamma fails on purpose
    shard_files = []
    for k in (1, 2, 3):
        shard_files.append(tmp_path / f"shard-{k}.jsonl")
        main(["run", str(scenarios), "--shard", f"{k}/3", "--results", str(shard_files[-1]), "--no-report"])
    capsys.readouterr()
    sizes = [len(read_results(f)) for f in shard_files]
    assert sum(sizes) == 16 and max(sizes) < 16  # every run once, and split for real
    assert main(["merge", *map(str, shard_files), "-o", str(tmp_path / "merged.jsonl")]) == 0
    unsharded = sorted((normalized(r.to_dict()) for r in read_results(whole)),
                       key=lambda d: d["run_id"])  # type: ignore[index]
    merged = [normalized(r.to_dict()) for r in read_results(tmp_path / "merged.jsonl")]
    assert [d["run_id"] for d in merged] == [d["run_id"] for d in unsharded]  # type: ignore[index]
    assert merged == unsharded
    assert {d["status"] for d in merged if "gamma" in d["run_id"]} == {"failed"}  # type: ignore[index,operator]
    # what the CI job does next with the merged file: the report and the diff against the unsharded run
    report = tmp_path / "report"
    assert main(["report", str(tmp_path / "merged.jsonl"), "-o", str(report), "--junit", str(report / "junit.xml"),
                 "--markdown", str(tmp_path / "summary.md")]) == 0
    assert (report / "index.html").is_file() and "gamma" in (report / "junit.xml").read_text()
    assert main(["diff", str(whole), str(tmp_path / "merged.jsonl")]) == 0  # nothing regressed: same runs


def test_adding_a_scenario_keeps_every_earlier_run_in_its_shard(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    for name in ("alpha", "beta", "gamma"):
        (scenarios / f"{name}.yaml").write_text(SCENARIO.format(name=name, expected="Ana"))

    def shards() -> list[set[str]]:
        found = []
        for k in (1, 2, 3):
            main(["run", str(scenarios), "--shard", f"{k}/3", "--results",
                  str(tmp_path / f"s{k}.jsonl"), "--no-report"])
            found.append({r.run_id for r in read_results(tmp_path / f"s{k}.jsonl")})
        return found

    before = shards()
    (scenarios / "delta.yaml").write_text(SCENARIO.format(name="delta", expected="Ana"))
    after = shards()
    capsys.readouterr()
    assert [shard - {i for i in shard if i.startswith("delta")} for shard in after] == before


def test_the_merge_command_names_every_file_a_folder_held(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a downloaded artifact folder is one argument; "from 1 input(s)" hid which shards' files were in it
    for k in (1, 2, 3):
        write_results(tmp_path / "shards" / f"harness-shard-{k}" / f"shard-{k}.jsonl", [result(f"s{k}[m-high-r0]")])
    assert main(["merge", str(tmp_path / "shards"), "-o", str(tmp_path / "results" / "results.jsonl")]) == 0
    out = capsys.readouterr().out
    assert "merged 3 run(s) (0 not passed) from 3 file(s)" in out
    assert all(f"harness-shard-{k}/shard-{k}.jsonl" in out for k in (1, 2, 3))
    assert len(read_results(tmp_path / "results" / "results.jsonl")) == 3


def test_a_bad_shard_fails_the_run_command_with_the_expected_form(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(tmp_path), "--shard", "4/3", "--results", str(tmp_path / "r.jsonl"), "--no-report"]) == 2
    assert "--shard '4/3': K counts from 1 and must be at most N=3" in capsys.readouterr().err


def test_a_merge_bigger_than_its_memory_is_set_aside_sorted_and_read_back_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A few lines per temporary file: the merge of the files read back must still be one order, with
    # a duplicate from another shard (identical) kept once and the torn line skipped.
    monkeypatch.setattr("harness.results._merge.SPILL_BYTES", 2_000)
    ids = [f"s{s}[claude-sonnet-5-high-r{r}]" for s in range(12) for r in (10, 2, 1)]
    write_results(tmp_path / "a.jsonl", [result(i) for i in ids[::2]])
    write_results(tmp_path / "b.jsonl", [result(i, status="failed") for i in ids[1::2]] + [result(ids[0])])
    with (tmp_path / "b.jsonl").open("a", encoding="utf-8") as f:
        f.write('{"run_id": "torn')
    warnings: list[str] = []
    count = merge_files([tmp_path / "a.jsonl", tmp_path / "b.jsonl"], tmp_path / "m.jsonl", warnings=warnings)
    merged = [r.run_id for r in read_results(tmp_path / "m.jsonl")]
    assert merged == sorted(ids, key=run_id_order) and (count.runs, count.not_passed) == (36, 18)
    assert len(warnings) == 1 and "b.jsonl:20" in warnings[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b.jsonl", "m.jsonl"]  # no temporary left
    with pytest.raises(InputError, match="also in .*a.jsonl with a different result"):
        write_results(tmp_path / "c.jsonl", [result(ids[0], status="failed")])
        merge_files([tmp_path / "a.jsonl", tmp_path / "c.jsonl"], tmp_path / "m2.jsonl")
    assert not (tmp_path / "m2.jsonl").exists()


# Run in a child, which says its own peak RSS: VmHWM of its memory after exec, not a maximum that
# counts the pytest process it was started from (ru_maxrss does, for a fork or a vfork alike).
PEAK = """import sys
from harness.cli import main
status = main(sys.argv[1:])
print(next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")))
sys.exit(status)"""
MEMORY_AIM_KIB = 400 * 1024


def peak_kib(*argv: str) -> int:
    done = subprocess.run([sys.executable, "-c", PEAK, *argv], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads the peak RSS from /proc (Linux)")
def test_ten_shards_of_ten_thousand_runs_merge_and_report_within_the_memory_aim(tmp_path: Path) -> None:
    # What ten CI machines would upload: one small line per run (no trace), written as the results
    # file writes it, its run id changed; 100,000 runs in all.
    line = ResultsWriter.line(result("s0[claude-sonnet-5-high-r0]")).decode("utf-8")
    shards = tmp_path / "shards"
    shards.mkdir()
    for k in range(10):
        with (shards / f"results.shard-{k + 1}.jsonl").open("w", encoding="utf-8") as out:
            out.writelines(line.replace("s0[claude-sonnet-5-high-r0]", f"s{n % 50}[claude-sonnet-5-high-r{n // 50}]")
                           .replace('"scenario":"s0"', f'"scenario":"s{n % 50}"')
                           for n in range(k * 10_000, (k + 1) * 10_000))
    merged, report = tmp_path / "merged.jsonl", tmp_path / "report"
    merge_peak = peak_kib("merge", str(shards), "-o", str(merged))
    report_peak = peak_kib("report", str(merged), "-o", str(report))
    with merged.open("rb") as lines:
        assert sum(1 for _ in lines) == 100_000
    assert "100000 runs" in (report / "index.html").read_text(encoding="utf-8")
    # Peak RSS, never times: a merge holds a digest per run, and a report one run's details at a time.
    assert merge_peak < MEMORY_AIM_KIB and report_peak < MEMORY_AIM_KIB, (merge_peak, report_peak)
