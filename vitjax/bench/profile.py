"""A jax.profiler trace of a workload, and the table of where its time went, op by op.

    vitjax bench --config configs/fashion_mnist/vit.py --profile runs/profile --no_timm

The trace directory opens in XProf for the timeline (not a dependency: `pip install xprof`, then
`xprof --logdir=runs/profile`). The table is read from the same trace here, without XProf: it sums, per
XLA op (fusion, dot, copy...: the names in the compiled HLO, numeric suffix dropped), the time that
op's events took on the threads that run XLA code, divided by the number of traced calls.

Read the table with one caveat: on CPU, matmuls that XLA hands to Eigen run asynchronously, so their
events ("dot", "dot_general") only cover the launch, not the product; their cost is the part of the
step's wall time the table does not account for. Ops run by libraries (YNNPACK and oneDNN fusions) and
XLA's own fusions run synchronously and are timed in full. Ops on different threads may overlap, so
the column can add up to more than the wall time. On GPUs the table reads XProf's "XLA Ops" lines;
that path has not yet run on a GPU here (experiments/bench/gpu.sh will be its first).
"""
import collections
import dataclasses
import glob
import os
import re
import time

import jax

# Lines of the trace whose events are XLA ops: the CPU runtime's worker threads, and GPU op lines.
_OP_LINE = re.compile(r"^(tf_XLA|XLA Ops)")
# Events on those lines that are the runtime's bookkeeping (C++ names: ThunkExecutor::Execute,
# ThreadpoolListener::Record...) or the end markers of asynchronous ops, not ops.
_NOT_OPS = re.compile(r"::|^end: ")


@dataclasses.dataclass
class OpTime:
    op: str
    milliseconds_per_call: float
    events_per_call: float


def trace(call, calls: int, logdir: str) -> tuple[str, float]:
    """Runs `call` once to warm up, then `calls` times under the profiler; returns the .xplane.pb file
    it wrote and the traced calls' wall seconds per call (the profiler slows them somewhat)."""
    call()
    before = set(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True))
    with jax.profiler.trace(logdir):
        start = time.perf_counter()
        for _ in range(calls):
            call()
        seconds_per_call = (time.perf_counter() - start) / calls
    written = set(glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True)) - before
    if not written:
        raise RuntimeError(f"the profiler wrote no .xplane.pb under {logdir}")
    return max(written, key=os.path.getmtime), seconds_per_call


def op_table(xplane_path: str, calls: int) -> list[OpTime]:
    """Per-op time of a trace, most expensive first."""
    # TensorFlow (a dependency, for the input pipeline) ships the trace format's protobuf classes.
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    with open(xplane_path, "rb") as f:
        space.ParseFromString(f.read())
    picoseconds, events = collections.Counter(), collections.Counter()
    for plane in space.planes:
        names = {key: metadata.name for key, metadata in plane.event_metadata.items()}
        for line in plane.lines:
            if not _OP_LINE.match(line.name):
                continue
            for event in line.events:
                name = names.get(event.metadata_id, "")
                if not name or _NOT_OPS.search(name):
                    continue
                op = re.sub(r"\.\d+$", "", name)
                picoseconds[op] += event.duration_ps
                events[op] += 1
    return [OpTime(op, ps / 1e9 / calls, events[op] / calls) for op, ps in picoseconds.most_common()]


def format_table(rows: list[OpTime], seconds_per_call: float | None, top: int = 20) -> str:
    total = sum(r.milliseconds_per_call for r in rows)
    lines = [f"{'op':36s} {'ms/call':>9s} {'events/call':>12s}"]
    lines += [f"{r.op[:36]:36s} {r.milliseconds_per_call:9.2f} {r.events_per_call:12.0f}" for r in rows[:top]]
    lines.append(f"{'all ops (timed on their threads)':36s} {total:9.2f}")
    if seconds_per_call:
        lines.append(f"{'wall time of one call, traced':36s} {1e3 * seconds_per_call:9.2f}")
    return "\n".join(lines)
