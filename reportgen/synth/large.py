"""The realistic size of a torch_npu rank (``generate_run(..., kernels_per_step=N)`` or ``shape="torch_npu_large"``).

A production torch_npu run writes thousands of device kernels per step into `kernel_details.csv` (level-1 columns:
task ids, shapes, data types, formats) and a dense `memory_record.csv`. Writing 1,000+ such ranks with Python
string formatting per cell takes minutes, so the text is built column-wise: the kernel sequence (names, types,
shapes: the same on every rank, as on a real run) is formatted once per run, and per rank only the numbers
(start, duration) are formatted, vectorised with pyarrow compute, and the rows are joined in C.

The numbers obey the same identities as the small generator: per step, the kernel durations sum to the rank's
computing time (so a slow rank is slow in every kernel type), `op_statistic.csv` holds the same kernels' totals.
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

# the columns torch_npu writes at profiler level 0 (level 1/2 add shapes and PMU counters; msreport reads 4)
KERNEL_HEADER = "Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Dim"
STEP_GAP_US = 200_000.0  # start of step s = t0 + s * (compute + this): steps do not overlap


@functools.lru_cache(maxsize=4)
def kernel_template(mix: tuple, kernels: int) -> tuple[np.ndarray, np.ndarray, tuple, tuple]:
    """(type index per kernel, weight per kernel, per-kernel text before the start time, per-kernel text after
    the duration) for one step of `kernels` kernels drawn from the operator mix `mix` ((type, core, share, n))."""
    rng = np.random.default_rng(12345)
    n = np.array([m[3] for m in mix], dtype=float)
    counts = np.maximum(1, np.floor(kernels * n / n.sum())).astype(int)
    counts[int(np.argmax(counts))] += kernels - int(counts.sum())
    types = np.repeat(np.arange(len(mix)), counts)
    rng.shuffle(types)
    spread = rng.lognormal(0.0, 0.6, kernels)  # kernels of one type differ in size (shapes)
    weight = np.empty(kernels)
    for t, (_, _, share, _) in enumerate(mix):
        sel = types == t
        weight[sel] = share * spread[sel] / spread[sel].sum()
    before, after = [], []
    for k, t in enumerate(types):
        name, core = mix[t][0], mix[t][1]
        variant = k % max(1, min(24, counts[t] // 16))  # a few hundred distinct names, as in a real model
        before.append(f",aclnn{name}_{name}Kernel_{name}_{variant},{name},{core},")
        after.append(f",{(k % 5) * 0.02:.2f},{24 if core != 'AI_CPU' else 1}\n")
    return types, weight, tuple(before), tuple(after)


def fixed3(values: np.ndarray, offset_us: float = 0.0) -> pa.Array:
    """Non-negative numbers (+ `offset_us`, added exactly in integer ns: timestamps near 1.7e15 us lose their
    decimals in float64) as text with three decimals ("12.345"), formatted in C (pyarrow)."""
    ns = np.rint(np.asarray(values, dtype=float) * 1000.0).astype(np.int64) + int(round(offset_us * 1000.0))
    s = pc.utf8_lpad(pc.cast(pa.array(ns), pa.string()), width=4, padding="0")
    return pc.binary_join_element_wise(pc.utf8_slice_codeunits(s, 0, -3), pc.utf8_slice_codeunits(s, -3, 2**31),
                                       ".")


def _text(*columns) -> bytes:
    """Row-wise concatenation of string arrays / scalars, as one bytes object (every row ends with its own \\n)."""
    arr = pc.binary_join_element_wise(*columns, "")
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=len(arr) + 1, offset=arr.offset * 4)
    return arr.buffers()[2].to_pybytes()[offsets[0]:offsets[-1]]


def write_large_kernels(out: Path, r: int, comp_ms: np.ndarray, first_step: int, mix: tuple, kernels: int,
                        seed: int) -> None:
    """kernel_details.csv (level-1 columns, `kernels` rows per step) and op_statistic.csv of the same kernels."""
    rng = np.random.default_rng(seed * 7919 + r)
    types, weight, before, after = kernel_template(mix, kernels)
    steps = len(comp_ms)
    dur = np.asarray(comp_ms, dtype=float)[:, None] * 1000.0 * weight[None, :] * (1 + rng.normal(0, 0.02,
                                                                                                 (steps, kernels)))
    dur = np.maximum(np.rint(dur * 1000.0) / 1000.0, 0.001)
    gap = 0.5
    t0 = 1_763_717_400_000_000.0 + r * 37.5
    step_start = np.concatenate([[0.0], np.cumsum(np.asarray(comp_ms) * 1000.0 + STEP_GAP_US)[:-1]])
    start = step_start[:, None] + np.concatenate([np.zeros((steps, 1)), np.cumsum(dur + gap, axis=1)[:, :-1]],
                                                 axis=1)
    step_ids = pa.array(np.repeat(np.arange(first_step, first_step + steps), kernels).astype(np.int64))
    body = _text(pc.cast(step_ids, pa.string()), pa.array(before * steps), fixed3(start.ravel(), t0), "\t,",
                 fixed3(dur.ravel()), pa.array(after * steps))
    with open(out / "kernel_details.csv", "wb") as f:
        f.write(KERNEL_HEADER.encode() + b"\n")
        f.write(body)
    flat_t = np.tile(types, steps)
    flat = dur.ravel()
    n = len(mix)
    cnt = np.bincount(flat_t, minlength=n)
    tot = np.bincount(flat_t, weights=flat, minlength=n)
    lo = np.full(n, np.inf)
    hi = np.zeros(n)
    np.minimum.at(lo, flat_t, flat)
    np.maximum.at(hi, flat_t, flat)
    total = tot.sum()
    lines = ["OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%)"]
    for t in sorted(range(n), key=lambda i: -tot[i]):
        if cnt[t]:
            lines.append(f"{mix[t][0]},{mix[t][1]},{cnt[t]},{tot[t]:.3f},{lo[t]:.3f},{tot[t] / cnt[t]:.3f},"
                         f"{hi[t]:.3f},{tot[t] / total * 100:.3f}")
    (out / "op_statistic.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_large_memory(out: Path, r: int, peak: float, samples: int) -> None:
    """memory_record.csv with `samples` APP + PTA sample pairs (the curve the small generator draws, denser)."""
    t0 = 1_763_717_400_000_000.0 + r * 37.5
    i = np.arange(samples)
    frac = 0.55 + 0.45 * np.sin(np.pi * i / max(1, samples - 1)) ** 2
    ts = i * 500.0
    dev = f",NPU:{r % 8}\n"
    app = _text("APP,", fixed3(ts, t0), "\t,,", fixed3(peak * (0.9 + 0.1 * frac)), ",,", dev)
    alloc = fixed3(peak * 0.85 * frac)
    pta = _text("PTA,", fixed3(ts + 1, t0), "\t,", alloc, ",", f"{peak * 0.92:.3f}", ",", alloc, ",2", dev)
    # interleave the two lanes as the profiler does (one APP sample, then the allocator's)
    a, p = app.split(b"\n")[:-1], pta.split(b"\n")[:-1]
    rows = b"\n".join(x for pair in zip(a, p) for x in pair)
    with open(out / "memory_record.csv", "wb") as f:
        f.write(b"Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),Stream Ptr,"
                b"Device Type\n" + rows + b"\n")


# --- trace_view.json of realistic size (shape "torch_npu_trace") -------------------------------------------------

# torch_npu level 1 writes, per device kernel: the kernel on the Ascend Hardware lane, its AscendCL launch on the CANN
# thread, the aten operator around the launch on the Python thread and a HostToDevice flow pair (launch -> kernel).
# On the real 2-rank level-1 sample (samples/ascend/msinsight_pytorch_2rank_level1_text) trace_view.json is 77 % of a
# rank's files and 33x its kernel_details.csv (it also holds PMU/QoS counters, which msreport does not read and this
# generator leaves out); here it is about 8x kernel_details.csv and 70-80 % of the rank (see scripts/benchmark.py).
PID_HW, PID_CANN, PID_HOST, LAUNCH_TID, HOST_TID = 3170820512, 3170820320, 4242, 4243, 1
HOST_OP_US = 16.0  # the aten operator around a launch
LAUNCH_DUR_US = 12.0


@functools.lru_cache(maxsize=4)
def trace_template(mix: tuple, kernels: int) -> tuple:
    """Per-kernel JSON text pieces (the kernel's name, type and core are the same on every rank and step)."""
    types, _, _, _ = kernel_template(mix, kernels)
    counts = np.bincount(types, minlength=len(mix))
    hw, launch, host = [], [], []
    for k, t in enumerate(types):
        name = mix[t][0]
        variant = k % max(1, min(24, counts[t] // 16))
        kname = f"aclnn{name}_{name}Kernel_{name}_{variant}"
        hw.append(f',{{"ph":"X","name":"{kname}","pid":{PID_HW},"tid":2,"ts":"')
        launch.append(f',{{"ph":"X","name":"AscendCL@aclnn{name}","pid":{PID_CANN},"tid":{LAUNCH_TID},"ts":"')
        host.append(f',{{"ph":"X","name":"aten::{name.lower()}","pid":{PID_HOST},"tid":{HOST_TID},"ts":"')
    return (tuple(hw), tuple(launch), tuple(host),
            tuple(f'"args":{{"Model Id":4294967295,"Task Id":{k},"Stream Id":2,"Task Type":"{mix[t][1]}",'
                  f'"Physic Stream Id":2,"connection_id":' for k, t in enumerate(types)))


def trace_kernel_events(mix: tuple, kernels: int, comp_us: float, c0: float, host0: float, t0: float,
                        first_id: int, rng: np.random.Generator) -> bytes:
    """One step's device kernels tiling the computing window [c0, c0 + comp_us] (µs; their durations sum to
    comp_us less a 0.5 µs gap each), with launches, host operators and flows, as JSON text (each event preceded by
    a comma). `c0` and `host0` are relative to `t0` (added exactly: near 1.7e15 µs a float64 keeps no decimals)."""
    types, weight, _, _ = kernel_template(mix, kernels)
    hw, launch, host, hw_args = trace_template(mix, kernels)
    gap = 0.5
    w = weight * (1 + rng.normal(0, 0.02, kernels))
    dur = np.maximum(np.floor(w / w.sum() * max(comp_us - gap * kernels, kernels * 0.01) * 1000.0) / 1000.0, 0.001)
    start = c0 + np.concatenate([[0.0], np.cumsum(dur + gap)[:-1]])
    # the host dispatches ahead of the device: one launch every h µs from the step's start, never after its kernel
    h = min(20.0, 0.5 * comp_us / kernels)
    lts = np.minimum(host0 + 4.0 + np.arange(kernels) * h, start - LAUNCH_DUR_US - 2.0)
    cid = pa.array(np.arange(first_id, first_id + kernels, dtype=np.int64)).cast(pa.string())
    kts, lt = fixed3(start, t0), fixed3(lts, t0)
    parts = [
        _text(pa.array(hw), kts, '","dur":', fixed3(dur), ",", pa.array(hw_args), cid, "}}"),
        _text(pa.array(host), fixed3(lts - 2.0, t0), f'","dur":{HOST_OP_US},"args":{{"Sequence number":', cid,
              ',"Fwd thread id":0,"Input Dims":"[[4096, 8192], [8192, 4096]]",'
              '"Input type":"[\'c10::BFloat16\', \'c10::BFloat16\']"}}'),
        _text(pa.array(launch), lt, f'","dur":{LAUNCH_DUR_US},"args":{{"connection_id":', cid, "}}"),
        _text(',{"ph":"s","name":"HostToDevice', cid, '","cat":"HostToDevice","id":"', cid,
              f'","pid":{PID_CANN},"tid":{LAUNCH_TID},"ts":"', lt, '"}'),
        _text(',{"ph":"f","bp":"e","name":"HostToDevice', cid, '","cat":"HostToDevice","id":"', cid,
              f'","pid":{PID_HW},"tid":2,"ts":"', kts, '"}'),
    ]
    return b"".join(parts)


def trace_meta() -> list[dict]:
    return [{"ph": "M", "name": "process_name", "pid": PID_HW, "tid": 0, "args": {"name": "Ascend Hardware"}},
            {"ph": "M", "name": "thread_name", "pid": PID_HW, "tid": 2, "args": {"name": "Stream 2"}},
            {"ph": "M", "name": "process_name", "pid": PID_CANN, "tid": 0, "args": {"name": "CANN"}},
            {"ph": "M", "name": "process_labels", "pid": PID_CANN, "tid": 0, "args": {"labels": "CPU"}},
            {"ph": "M", "name": "thread_name", "pid": PID_CANN, "tid": LAUNCH_TID,
             "args": {"name": f"Thread {LAUNCH_TID}"}}]
