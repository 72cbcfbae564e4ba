"""A jax.profiler trace of a workload, and the table of where its time went, op by op.

    vitjax bench --config configs/fashion_mnist/vit.py --profile runs/profile --no_timm
    vitjax bench --config configs/bench/swin.py --profile runs/profile --profile_workload infer --no_timm

The trace directory opens in XProf for the timeline (not a dependency: `pip install xprof`, then
`xprof --logdir=runs/profile`). The table is read from the same trace here, without XProf: it sums, per
XLA op (fusion, dot, copy...: the names in the compiled HLO, numeric suffix dropped), the time that
op's events took on the threads that run XLA code, divided by the number of traced calls. A second
table (`scope_table`) sums the same events by where in the program each op came from: the name stack
JAX wrote into the compiled HLO's metadata (`op_name`), with layer indices dropped so that the twelve
blocks' attention adds up to one row, and split into forward, backward (the gradient's transpose)
and the rest of the step ('step': the optimiser, clipping, the update of extra state; a teacher's pass
inside the loss is traced with it and counts as forward). A fusion is attributed to its root's scope.

Read the table with one caveat: on CPU, matmuls that XLA hands to Eigen run asynchronously, so their
events ("dot", "dot_general") only cover the launch, not the product; their cost is the part of the
step's wall time the table does not account for. Ops run by libraries (YNNPACK and oneDNN fusions) and
XLA's own fusions run synchronously and are timed in full. Ops on different threads may overlap, so
the column can add up to more than the wall time. On GPUs the table reads XProf's "XLA Ops" lines;
that path has not yet run on a GPU here (experiments/bench/gpu.sh will be its first).
"""
import collections
import dataclasses
import functools
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


@functools.lru_cache(maxsize=1)  # the op, scope and part tables read one trace: parse it once
def _op_events(xplane_path: str) -> tuple:
    """(HLO instruction name, picoseconds) of every op event of a trace."""
    # TensorFlow (a dependency, for the input pipeline) ships the trace format's protobuf classes.
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    space = xplane_pb2.XSpace()
    with open(xplane_path, "rb") as f:
        space.ParseFromString(f.read())
    found = []
    for plane in space.planes:
        names = {key: metadata.name for key, metadata in plane.event_metadata.items()}
        for line in plane.lines:
            if not _OP_LINE.match(line.name):
                continue
            for event in line.events:
                name = names.get(event.metadata_id, "")
                if name and not _NOT_OPS.search(name):
                    found.append((name, event.duration_ps))
    return tuple(found)


def _table(keyed_events, calls: int) -> list[OpTime]:
    picoseconds, events = collections.Counter(), collections.Counter()
    for key, duration in keyed_events:
        picoseconds[key] += duration
        events[key] += 1
    return [OpTime(key, ps / 1e9 / calls, events[key] / calls) for key, ps in picoseconds.most_common()]


def op_table(xplane_path: str, calls: int) -> list[OpTime]:
    """Per-op time of a trace, most expensive first."""
    return _table(((_op_kind(name), ps) for name, ps in _op_events(xplane_path)), calls)


def _op_kind(instruction: str) -> str:
    """'fusion.12' -> 'fusion': what the instruction is, without its number."""
    return re.sub(r"\.\d+$", "", instruction)


# An HLO instruction and the name stack of the JAX operation it came from.
_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%?([\w.\-]+) = .*?metadata=\{[^}]*?op_name=\"([^\"]+)\"", re.M)


def instruction_scopes(hlo_text: str) -> dict[str, str]:
    """{instruction name: its scope} of a compiled program's HLO text (`compiled.as_text()`)."""
    return {name: scope(op_name) for name, op_name in _INSTRUCTION.findall(hlo_text)}


def scope(op_name: str) -> str:
    """'forward|backward|step: module/path/primitive' of a JAX name stack, e.g.
    'jit(train_step)/transpose(jvp(Swin))/stage_3/block_1/attention/gather' ->
    'backward: Swin/stage/block/attention/gather'. Indices go so that repeated layers share a row; a
    wrapper around a whole path keeps only its name, the levels of a lax.cond go, and ops XLA combined
    into one (the gradients' all-reduce: '(path:path:...)') read '(combined)'."""
    # jit(...) and the update's cond and branch levels name no part of the model or step.
    parts = [p for p in _top_level_parts(op_name)
             if p and not p.startswith("jit(") and not re.fullmatch(r"cond|branch_\d+_fun", p)]
    direction = ("backward" if any(p.startswith("transpose(") for p in parts)
                 else "forward" if any(p.startswith("jvp(") for p in parts) else "step")
    plain = []
    for part in parts:
        if part.startswith("("):
            part = "(combined)"
        while (wrapped := re.fullmatch(r"([\w\-]+)\((.*)\)", part)) is not None:
            part = wrapped.group(2) if "/" not in wrapped.group(2) else wrapped.group(1)
        plain.append(re.sub(r"_\d+$", "", part))
    return f"{direction}: {'/'.join(p for p in plain if p) or '(unnamed)'}"


def _top_level_parts(op_name: str) -> list[str]:
    """`op_name` split at the slashes outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, char in enumerate(op_name):
        depth += (char == "(") - (char == ")")
        if char == "/" and depth == 0:
            parts.append(op_name[start:i])
            start = i + 1
    return parts + [op_name[start:]]


def scope_table(xplane_path: str, calls: int, scopes: dict[str, str], depth: int | None = None) -> list[OpTime]:
    """Time per scope (`instruction_scopes` of the traced program), most expensive first; ops the
    program's metadata does not name count as 'unattributed: <op>'. `depth`: keep only the first
    `depth` names of each scope's path (2: 'backward: Swin/stage'), the parts of a step."""
    def key(name):
        found = scopes.get(name, f"unattributed: {_op_kind(name)}")
        if depth is None:
            return found
        direction, path = found.split(": ", 1)
        return f"{direction}: {'/'.join(path.split('/')[:depth])}"
    return _table(((key(name), ps) for name, ps in _op_events(xplane_path)), calls)


def format_table(rows: list[OpTime], seconds_per_call: float | None, top: int = 20, width: int = 36) -> str:
    total = sum(r.milliseconds_per_call for r in rows) or float("inf")
    lines = [f"{'op':{width}s} {'ms/call':>9s} {'share':>6s} {'events/call':>12s}"]
    lines += [f"{r.op[-width:]:{width}s} {r.milliseconds_per_call:9.2f} {r.milliseconds_per_call / total:6.1%} "
              f"{r.events_per_call:12.0f}" for r in rows[:top]]
    lines.append(f"{'all ops (timed on their threads)':{width}s} {sum(r.milliseconds_per_call for r in rows):9.2f}")
    if seconds_per_call:
        lines.append(f"{'wall time of one call, traced':{width}s} {1e3 * seconds_per_call:9.2f}")
    return "\n".join(lines)
