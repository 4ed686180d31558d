"""What every benchmark here prints: min / median / max over repeated runs, wall and CPU, and the
ratio of medians to a floor measured in the same run (the machine is shared, so only ratios taken
side by side mean anything). CPU includes child processes, so a subprocess is measured whole."""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
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


def measure(fn: Callable[[], Any], sample: Sample) -> Any:
    """Run `fn` once, adding its wall and CPU time to `sample`; returns what `fn` returned."""
    cpu, wall = _cpu(), time.perf_counter()
    value = fn()
    sample.wall.append(time.perf_counter() - wall)
    sample.cpu.append(_cpu() - cpu)
    return value


def measure_process(argv: Sequence[str], sample: Sample, **kwargs: Any) -> int:
    """Run a command once, output discarded, adding its wall, CPU and peak RSS; returns its exit status."""
    kwargs.setdefault("stdout", subprocess.DEVNULL)
    kwargs.setdefault("stderr", subprocess.DEVNULL)
    cpu, wall = _cpu(), time.perf_counter()
    process = subprocess.Popen(list(argv), **kwargs)
    # wait4 rather than wait: it gives this child's own peak RSS, not the maximum over all children.
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    sample.wall.append(time.perf_counter() - wall)
    sample.cpu.append(_cpu() - cpu)
    sample.peak_kib.append(usage.ru_maxrss)
    return process.returncode


def spread(values: Sequence[float], unit: str = "s", scale: float = 1.0) -> str:
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
