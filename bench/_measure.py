"""What every benchmark here prints: min / median / max over repeated runs, wall and CPU, and the
ratio of medians to a floor measured in the same run (the machine is shared, so only ratios taken
side by side mean anything). A command run in a process is measured alone: its own wall, CPU and peak RSS."""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Sample:
    """Wall and CPU seconds of each repetition."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    peak_kib: list[int] = field(default_factory=list)
    """Peak RSS of each child process, when the repetition ran one."""

    @property
    def median_wall(self) -> float:
        return statistics.median(self.wall)

    @property
    def median_cpu(self) -> float:
        return statistics.median(self.cpu)


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure(fn: Callable[[], Any], sample: Sample, *, times: int = 1) -> Any:
    """Run `fn` `times` times in a row, adding the wall and CPU time of one run (their mean) to
    `sample`; returns what `fn` last returned. Running a millisecond's work many times per repetition
    keeps a busy machine's scheduling and the clocks' granularity from deciding its figure."""
    cpu, wall = _cpu(), time.perf_counter()
    for _ in range(times):
        value = fn()
    sample.wall.append((time.perf_counter() - wall) / times)
    sample.cpu.append((_cpu() - cpu) / times)
    return value


def times_for(fn: Callable[[], Any], seconds: float) -> int:
    """How many runs of `fn` in a row take about `seconds` (at least one), from one timed run."""
    start = time.perf_counter()
    fn()
    return max(1, round(seconds / max(time.perf_counter() - start, 1e-6)))


# Linux counts in a child's peak RSS what it held before exec: a child forked from this process
# would report at least this process's own size (the cassettes a benchmark just built). So each
# command is started by a small launcher process, which measures it and reports the figures.
_LAUNCHER = """
import os, sys, time
fd, argv = int(sys.argv[1]), sys.argv[2:]
os.set_inheritable(fd, False)  # the command must not hold the report open
start = time.perf_counter()
pid = os.posix_spawnp(argv[0], argv, os.environ)
_, status, usage = os.wait4(pid, 0)
wall = time.perf_counter() - start
os.write(fd, f"{wall} {usage.ru_utime + usage.ru_stime} {usage.ru_maxrss} {os.waitstatus_to_exitcode(status)}".encode())
"""


def measure_process(argv: Sequence[str], sample: Sample, **kwargs: Any) -> int:
    """Run a command once, output discarded, adding its wall, CPU and peak RSS; returns its exit status.

    Wall, CPU and peak RSS are the command's own, as its launcher saw them (`_LAUNCHER`)."""
    [status] = measure_processes([argv], sample, **kwargs)
    return status


def measure_processes(argvs: Sequence[Sequence[str]], sample: Sample, **kwargs: Any) -> list[int]:
    """Run commands at once, output discarded, adding one repetition: the longest of their walls (they
    start within milliseconds of each other), their CPU together and the largest peak RSS; returns
    their exit statuses, in order."""
    kwargs.setdefault("stdout", subprocess.DEVNULL)
    kwargs.setdefault("stderr", subprocess.DEVNULL)
    pipes: list[tuple[int, int]] = []
    unclosed: set[int] = set()
    launchers: list[subprocess.Popen[bytes]] = []
    reports: list[list[bytes]] = []
    try:
        for _ in argvs:
            pipes.append(os.pipe())
            unclosed.update(pipes[-1])
        for argv, (_, write_end) in zip(argvs, pipes, strict=True):
            launchers.append(subprocess.Popen([sys.executable, "-I", "-S", "-c", _LAUNCHER, str(write_end), *argv],
                                              pass_fds=(write_end,), **kwargs))
        for _, write_end in pipes:  # each launcher holds its own: its report ends when it exits
            unclosed.discard(write_end)
            os.close(write_end)
        for read_end, _ in pipes:
            unclosed.discard(read_end)
            with os.fdopen(read_end, "rb") as report:
                reports.append(report.read().split())
    finally:
        for launcher in launchers:
            launcher.wait()
        for fd in unclosed:
            os.close(fd)
    for argv, figures, launcher in zip(argvs, reports, launchers, strict=True):
        if len(figures) != 4:
            raise RuntimeError(f"could not start {' '.join(argv)} (launcher exit status {launcher.returncode})")
    sample.wall.append(max(float(figures[0]) for figures in reports))
    sample.cpu.append(sum(float(figures[1]) for figures in reports))
    sample.peak_kib.append(max(int(figures[2]) for figures in reports))
    return [int(figures[3]) for figures in reports]


def spread(values: Sequence[float], unit: str = "s", scale: float = 1.0) -> str:
    if unit == "s" and scale == 1.0 and max(values) < 0.1:
        unit, scale = "ms", 1000.0  # three decimals of a second would say nothing of a 2 ms load
    return f"{min(values) * scale:.3f} / {statistics.median(values) * scale:.3f} / {max(values) * scale:.3f} {unit}"


def row(label: str, sample: Sample, floor: Sample | None = None) -> str:
    """One line: wall and CPU as min / median / max, and the medians' ratio (or difference) to the floor."""
    text = f"{label:<40} wall {spread(sample.wall)}   cpu {spread(sample.cpu)}"
    if sample.peak_kib:
        text += f"   peak RSS {spread([k / 1024 for k in sample.peak_kib], 'MiB')}"
    if floor is not None:
        text += (f"   vs floor: wall {sample.median_wall / floor.median_wall:.2f}x "
                 f"({sample.median_wall - floor.median_wall:+.3f} s), cpu {sample.median_cpu / floor.median_cpu:.2f}x")
    return text
