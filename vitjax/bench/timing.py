"""Workloads and the alternating measurement loop, plus what the machine was doing meanwhile.

A workload is one repeatable unit (a train step, a forward pass, a matmul, a batch of input) that runs to
completion when called. `alternate` gives each workload a number of calls per round (calibrated to a
target duration), then runs round after round, each workload in turn. Wall time is what counts; the
process's CPU time is recorded too, because on a shared machine it shows how much of the wall time the
process actually got to run.
"""
import dataclasses
import os
import resource
import statistics
import time
from typing import Callable


@dataclasses.dataclass
class Workload:
    name: str
    call: Callable[[], object]  # runs one unit to completion (blocks until the result exists)
    images: int = 0  # images per call (0: not an image workload, e.g. the matmul)
    flops: float | None = None  # floating-point operations per call, when known
    calls_per_round: int = 1
    wall: list = dataclasses.field(default_factory=list)  # seconds per round
    cpu: list = dataclasses.field(default_factory=list)  # process CPU seconds per round

    def per_second(self, what: str = "images") -> list[float]:
        """Per-round rates: images/s ('images') or FLOP/s ('flops')."""
        amount = self.images if what == "images" else (self.flops or 0.0)
        return [self.calls_per_round * amount / seconds for seconds in self.wall]


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def calibrate(workload: Workload, target_seconds: float, max_calls: int = 1000) -> float:
    """Warms up (the first call may still compile or allocate), then sets calls_per_round so that a
    round takes about `target_seconds`. Returns the seconds of one call."""
    workload.call()
    start = time.perf_counter()
    workload.call()
    seconds = max(time.perf_counter() - start, 1e-6)
    workload.calls_per_round = int(min(max_calls, max(1, round(target_seconds / seconds))))
    return seconds


def alternate(workloads: list[Workload], rounds: int, on_round: Callable | None = None) -> None:
    """Runs `rounds` rounds; in each, every workload runs its calls_per_round calls, in turn."""
    for index in range(rounds):
        for workload in workloads:
            start_cpu, start = cpu_seconds(), time.perf_counter()
            for _ in range(workload.calls_per_round):
                workload.call()
            workload.wall.append(time.perf_counter() - start)
            workload.cpu.append(cpu_seconds() - start_cpu)
        if on_round is not None:
            on_round(index)


def median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def paired_ratio(numerator: list[float], denominator: list[float]):
    """Median over rounds of numerator[i] / denominator[i]: both sides of each ratio saw the same load."""
    return median([a / b for a, b in zip(numerator, denominator) if b])


def load_average() -> list[float]:
    """1, 5 and 15 minute load averages (runnable processes; 2 cores are saturated at 2.0)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return []


def memory_of_process() -> dict:
    """Resident memory now and at its peak (VmRSS, VmHWM), in bytes; empty where /proc is missing."""
    out = {}
    try:
        with open("/proc/self/status") as status:
            for line in status:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    out["rss_bytes" if key == "VmRSS" else "peak_rss_bytes"] = int(value.split()[0]) * 1024
    except OSError:
        pass
    return out
