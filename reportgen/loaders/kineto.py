"""PyTorch profiler (Kineto) traces, `*.pt.trace.json[.gz]`, one per rank: everything the report needs in one

Over 500 lines: one streamed pass fills every per-rank summary from shared interval arrays; its split waits
until the issue-30 edits to its body have landed (issue 31).
streamed pass (ijson; bounded by compact arrays of interval ends, never a list of event dicts).

What is read (Kineto's Chrome-trace export, as `torch.profiler` writes it; the 2021 schema's capitalised
categories `Operator` / `Runtime` / `Kernel` / `Memcpy` / `Memset` too):

* the header before `traceEvents`: `distributedInfo` (backend, rank, world_size, `pg_config`: process groups
  with their ranks), `deviceProperties` (device model, `totalGlobalMem` in bytes), `host_name`;
* the host's `ProfilerStep#N` ranges (`user_annotation` / `cpu_op`, host clock, µs). ROCm and recent CUDA traces
  repeat them on the GPU lane (`gpu_user_annotation`, a few µs at the step's first kernel): annotations, never
  steps (used, with a warning, only when the host has none);
* device activity of every accelerator Kineto records (`kernel`, `gpu_memcpy` / `gpu_memset` and the other
  backends' copies and sets; µs) and the host launches (`cuda_runtime` / `cuda_driver` / `xpu_runtime` /
  `privateuse1_runtime` / ...) whose `correlation` id names the kernel they launched;
* communication: a collective library's kernel by name (NCCL `ncclKernel_*`, NCCL >= 2.19 and RCCL
  `ncclDevKernel_*`, MSCCL, HCCL, NVSHMEM, expert-parallel libraries: DeepEP `deep_ep::` / `dpsk::ep::`, pplx,
  UCCL-EP), or a kernel launched inside a collective's host op on the same thread (`record_param_comms`,
  `nccl:*`, `c10d::*`, functional collectives): custom all-to-all kernels. Copies and sets stay computation.
  NCCL kernels of PyTorch >= 2.1 carry `Collective name`, `Process Group Name` and, later, `Seq`;
* host operators (`cpu_op`): per-operator self time (nesting per thread), and, for a run without any device
  activity (CPU training with gloo), the device *is* the CPU: computation is the time covered by operators of the
  step's thread, communication the `gloo:*` work slices of gloo's worker threads (one union over the threads);
* `[memory]` instant events (`Total Allocated` / `Total Reserved`, bytes -> MB of 2^20 bytes; `Device Type` 1 =
  CUDA, 0 = CPU, others = other accelerators).

Steps (HTA's mapping): each device event belongs to the step whose host range holds its launch; a step lasts from
its first device event to the next step's first one (the device's period, which a host running ahead of the GPU
does not shorten). The last step, which no next step ends, is *partial*: kept in `StepTrace.partial_steps`, left
out of `steps` (so of averages, spreads and the slowest step), named in data quality. One step alone, or device
events that cannot be mapped, use the host ranges; a trace without ProfilerStep is one window (step id empty).

Per step (HTA's temporal and overlap breakdowns, written as Ascend's step_trace_time.csv columns): computing =
union of the step's computation events; communication = union of its communication events; overlapped = their
intersection; communication not overlapped = communication − overlapped; free = step − computing − communication
not overlapped (never below 0). Operator totals count the complete steps' events only (the site divides them by
the number of steps).

Communication wait needs every rank: `match_collectives` pairs each collective instance across ranks (by process
group and `Seq` when written, else by step and order within the step and group, checking the kind) and sets
wait = elapsed − the shortest elapsed of that instance on any rank (all leave together; the last to arrive waits
least), transit = the shortest elapsed.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from reportgen import intervals as iv
from reportgen.i18n import N_
from reportgen.loaders.files import open_binary as open_maybe_gzip
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.traces import note_unusable_events, trace_cut, TRACE_ERRORS, trace_events
from reportgen.numbers import to_float
from reportgen.loaders import op_flops
from reportgen.loaders.memory import _downsample
from reportgen.model import (COMM_LINK_COLUMNS, COMM_OP_COLUMNS, COMM_TIME_COLUMNS, DataIssue, MODERN_PHASES,
                             Communication, Memory, OP_DETAIL_COLUMNS, OP_FLOPS_COLUMNS, OpFlops, Operators,
                             RankData, StepTrace, TimelineSummary)

STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
# Device activity by Kineto category (libkineto ActivityType names; the 2021 schema wrote `Kernel`, `Memcpy`,
# `Memset`, `Runtime`, `Operator`, compared in lower case). Kernels of every accelerator Kineto records (CUDA,
# ROCm, XPU, MTIA, privateuse1 backends) are `kernel`; copies and sets carry the backend's prefix.
DEVICE_CATS = frozenset(("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset", "mtia_ccp_events", "hpu_op",
                         "gcu_memcpy", "gcu_memset", "mlu_memcpy", "mlu_memset"))
HOST_OP_CATS = frozenset(("cpu_op", "operator"))  # `Operator`: the 2021 schema's cpu_op
# Communication kernels by name: NCCL (`ncclKernel_*`, NCCL >= 2.19 `ncclDevKernel_*`), RCCL (same names,
# `ncclDevKernel_Generic`), MSCCL/MSCCL++, HCCL, NVSHMEM; expert-parallel all-to-all libraries (DeepEP
# `deep_ep::...::dispatch|combine`, its `dpsk::ep` fork, pplx-kernels, UCCL-EP).
COMM_KERNEL_RE = re.compile(
    r"^(?:void\s+)?(?:\w+::)*(?:nccl|rccl|msccl|hccl|hcom_|nvshmem|c10d::)"
    r"|ncclDevKernel|ncclKernel|(?:^|[\s:<(])(?:deep_ep|dpsk::ep|pplx|uccl_ep|uccl::ep)::", re.I)
EP_KERNEL_RE = re.compile(r"(?:deep_ep|dpsk::ep|pplx|uccl_ep|uccl::ep)::", re.I)
# Host ops of a process group's collective (the kernels launched inside them are its communication): c10d's
# `record_param_comms`, the backend's `nccl:*` / `gloo:*` / `hccl:*` ranges, `c10d::` and functional collectives.
HOST_COMM_RE = re.compile(r"^(?:gloo:|nccl:|rccl:|hccl:|ucc:|mpi:|c10d::|_?c10d_functional::|record_param_comms|"
                          r"torch\.distributed)", re.I)
KIND_RE = re.compile(r"(all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|broadcast|send_?recv|barrier|"
                     r"reduce|send|recv|gather|scatter)", re.I)
HEADER_BYTES = 1 << 20
MIB = float(2 ** 20)  # the report's MB (memory) are 2^20 bytes; Kineto writes bytes
READ_NOTE = ("Kineto traces: read distributedInfo (world size, process groups), deviceProperties, the host's "
             "ProfilerStep#N ranges (the GPU lane's copies are annotations), device kernels / copies / sets of "
             "every accelerator (2021 schema categories included), runtime launches (to map each kernel to the "
             "step that launched it, and to find the kernels a collective's host op launched), cpu_op operators "
             "(self time), gloo:* work slices, [memory] events, the input shapes of matrix multiplications, "
             "convolutions and attention and the with_flops counts (FLOPs); not read: python_function events, "
             "flow (ac2g) events, other operators' shapes and stacks")
# What the step trace of a Kineto trace is (the overview's "Step trace" fact), one per way of measuring the steps
STEP_LABELS = {
    "mapped": N_("computed from the Kineto trace (device kernels, steps mapped through their launches: a step lasts "
                 "from its first kernel to the next step's first kernel; the last step is partial): computing / "
                 "communication / overlapped / free per step, as HTA's temporal and overlap breakdowns"),
    "cut": N_("computed from the Kineto trace (device kernels cut at the host's ProfilerStep windows): computing / "
              "communication / overlapped / free per step, as HTA's temporal and overlap breakdowns"),
    "whole": N_("computed from the Kineto trace (device kernels; no ProfilerStep: one window over the whole trace): "
                "computing / communication / overlapped / free"),
    "cpu": N_("computed from the Kineto trace (CPU operators and gloo slices in the host's ProfilerStep windows): "
              "computing / communication / overlapped / free per step"),
    "cpu_whole": N_("computed from the Kineto trace (CPU operators and gloo slices; no ProfilerStep: one window over "
                    "the whole trace): computing / communication / overlapped / free"),
}
KERNEL_NAME_CAP = 160
MAX_NAMED = 5  # kernel names listed in one data-quality line


def is_device_cat(cat: str) -> bool:
    return cat in DEVICE_CATS


def is_runtime_cat(cat: str) -> bool:
    """Host-side launch APIs (`cuda_runtime`, `cuda_driver`, `xpu_runtime`, `privateuse1_runtime`, 2021 `Runtime`)."""
    return cat == "runtime" or cat.endswith("_runtime") or cat.endswith("_driver")


def is_comm_kernel(name: str) -> bool:
    """A device event that is communication by its name alone (collective and expert-parallel libraries)."""
    return bool(COMM_KERNEL_RE.search(name))


def collective_kind(name: str) -> str:
    """`ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)` / `gloo:all_reduce` -> `allreduce`; an expert-parallel
    library's dispatch / combine kernel -> `alltoall`."""
    m = KIND_RE.search(name.replace("To", "to"))
    if m:
        return m.group(1).lower().replace("_", "")
    if EP_KERNEL_RE.search(name) and re.search(r"dispatch|combine", name, re.I):
        return "alltoall"
    return "collective"


def kernel_type(name: str) -> str:
    """A short operator type for a CUDA kernel name: the function name without return type, namespaces,
    template arguments and parameters (`void at::native::elementwise_kernel<128, 2, ...>(...)` ->
    `elementwise_kernel`); a generic `Kernel` / `Kernel2` wrapper (cutlass) is named by its first template
    argument."""
    s = name.strip()
    if s.startswith("void "):
        s = s[5:]
    depth, out, arg, args_open = 0, [], [], True
    for ch in s:  # drop template arguments and parameters
        if ch in "<(":
            depth += 1
            if ch == "(":
                args_open = False
        elif ch in ">)":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
        elif depth == 1 and args_open:
            if ch == ",":
                args_open = False
            else:
                arg.append(ch)
    s = "".join(out).strip()
    s = s.rsplit("::", 1)[-1].strip() or name
    first = "".join(arg).strip().rsplit("::", 1)[-1].strip()
    if re.fullmatch(r"(?i)(device_)?kernel\d*", s) and first:
        s = first
    return s[:80]


def read_header(path: Path) -> dict:
    """The top-level keys Kineto writes before `traceEvents` (distributedInfo, deviceProperties, host_name)."""
    try:
        with open_maybe_gzip(path) as f:
            head = f.read(HEADER_BYTES).decode("utf-8", errors="replace")
    except (OSError, EOFError):
        return {}
    cut = head.find('"traceEvents"')
    text = head if cut < 0 else head[:cut]
    out: dict = {}
    dec = json.JSONDecoder()
    for key in ("distributedInfo", "deviceProperties", "host_name", "schemaVersion", "baseTimeNanoseconds"):
        m = re.search(r'"%s"\s*:\s*' % key, text)
        if not m:
            continue
        try:
            out[key], _ = dec.raw_decode(text, m.end())
        except ValueError:
            pass
    return out


@dataclass
class _Acc:
    """Compact accumulators of one streamed pass (arrays, not event dicts)."""

    steps: dict = field(default_factory=dict)  # host ProfilerStep: step -> (start µs, end µs, (pid, tid))
    lane_steps: dict = field(default_factory=dict)  # ProfilerStep annotations on a device lane: step -> (start, end)
    # device activity, one entry per kernel / copy / set
    dev_s: array = field(default_factory=lambda: array("d"))
    dev_e: array = field(default_factory=lambda: array("d"))
    dev_named_comm: array = field(default_factory=lambda: array("b"))  # communication by its name
    dev_corr: array = field(default_factory=lambda: array("q"))  # launch correlation id (-1: none)
    dev_stream: array = field(default_factory=lambda: array("l"))  # index into `stream_ids`
    dev_nid: array = field(default_factory=lambda: array("l"))  # index into `dev_names`
    dev_args: dict = field(default_factory=dict)  # index -> (Collective name, Process Group Name, Seq) when written
    dev_names: dict = field(default_factory=dict)  # kernel name ("[cat] name" for copies and sets) -> id
    name_comm: list = field(default_factory=list)  # per kernel name id: communication by its name (1/0)
    stream_ids: dict = field(default_factory=dict)  # (pid, tid) -> id
    devices: dict = field(default_factory=dict)  # device id -> events
    # host launches (runtime / driver API calls): correlation id, start, thread
    rt_corr: array = field(default_factory=lambda: array("q"))
    rt_ts: array = field(default_factory=lambda: array("d"))
    rt_tid: array = field(default_factory=lambda: array("l"))
    # host ops of a collective (record_param_comms, nccl:*, c10d::*, ...): start, end, thread, name
    hc_s: array = field(default_factory=lambda: array("d"))
    hc_e: array = field(default_factory=lambda: array("d"))
    hc_tid: array = field(default_factory=lambda: array("l"))
    hc_name: list = field(default_factory=list)
    colls: list = field(default_factory=list)  # CPU collectives (gloo:*): (start µs, dur µs, kind, group, seq, name)
    cpu_s: array = field(default_factory=lambda: array("d"))
    cpu_e: array = field(default_factory=lambda: array("d"))
    cpu_tid: array = field(default_factory=lambda: array("l"))
    cpu_name: array = field(default_factory=lambda: array("l"))
    names: dict = field(default_factory=dict)  # host op name -> id
    tids: dict = field(default_factory=dict)  # (pid, tid) -> id (host threads)
    mem: dict = field(default_factory=dict)  # (device type, device id) -> (ts array, allocated array, reserved)
    # operators with FLOPs (GEMMs with shapes, anything with a with_flops count): (start µs, end µs, thread, name,
    # profiler flops or NaN, flops from shapes or NaN, shapes text, dtype)
    fl: list = field(default_factory=list)
    n_events: int = 0

    @property
    def streams(self) -> set:
        return set(self.stream_ids)


def _num(v) -> float:
    return float(v) if isinstance(v, (int, float)) else to_float(v)


def _scan(path: Path, acc: _Acc, log: IssueLog) -> bool:
    """One streamed pass over the events; False when the file broke off (what was read is kept)."""
    unusable = 0
    try:
        for e in trace_events(path, log):
            acc.n_events += 1
            ph = e.get("ph")
            if ph == "X":
                name = e.get("name")
                name = name if isinstance(name, str) else str(name or "")
                ts, dur = _num(e.get("ts")), _num(e.get("dur"))
                if math.isnan(ts) or math.isnan(dur) or dur < 0:
                    unusable += 1
                    continue
                cat = str(e.get("cat") or "").lower()
                if name.startswith("ProfilerStep#"):
                    m = STEP_RE.match(name)
                    if m:
                        if cat.endswith("user_annotation") and cat != "user_annotation":
                            # gpu_user_annotation: the step marker as the GPU lane shows it (a few µs), not a step
                            acc.lane_steps[int(m.group(1))] = (ts, ts + dur)
                        else:
                            acc.steps[int(m.group(1))] = (ts, ts + dur, (e.get("pid"), e.get("tid")))
                    continue
                if cat in DEVICE_CATS:
                    _device_event(acc, e, name, cat, ts, dur)
                elif cat == "runtime" or cat.endswith("_runtime") or cat.endswith("_driver"):
                    args = e.get("args")
                    c = _corr(args.get("correlation")) if isinstance(args, dict) else -1
                    if c >= 0:
                        acc.rt_corr.append(c)
                        acc.rt_ts.append(ts)
                        acc.rt_tid.append(acc.tids.setdefault((e.get("pid"), e.get("tid")), len(acc.tids)))
                elif cat in HOST_OP_CATS or cat == "user_annotation":
                    tid = acc.tids.setdefault((e.get("pid"), e.get("tid")), len(acc.tids))
                    if HOST_COMM_RE.match(name):
                        acc.hc_s.append(ts)
                        acc.hc_e.append(ts + dur)
                        acc.hc_tid.append(tid)
                        args = e.get("args")  # record_param_comms names its collective in its args
                        coll = args.get("Collective name") if isinstance(args, dict) else None
                        acc.hc_name.append(coll if isinstance(coll, str) and coll else name)
                    if cat == "user_annotation":
                        if name.startswith("gloo:"):  # gloo's work on its own threads: the CPU's collectives
                            acc.colls.append((ts, dur, collective_kind(name), None, None, name))
                        continue
                    nid = acc.names.setdefault(name, len(acc.names))
                    if name in op_flops.TORCH_FLOP_OPS or "flops" in (e.get("args") or {}):
                        _flop_op(acc, e, name, ts, dur, tid)
                    acc.cpu_s.append(ts)
                    acc.cpu_e.append(ts + dur)
                    acc.cpu_tid.append(tid)
                    acc.cpu_name.append(nid)
            elif ph in ("i", "I") and e.get("name") == "[memory]":
                a = e.get("args")
                if not isinstance(a, dict):
                    continue
                key = (int(_num(a.get("Device Type", -1)) if not math.isnan(_num(a.get("Device Type", -1))) else -1),
                       a.get("Device Id"))
                ts = _num(e.get("ts"))
                alloc, res = _num(a.get("Total Allocated")), _num(a.get("Total Reserved"))
                if math.isnan(ts) or math.isnan(alloc):
                    continue
                rec = acc.mem.get(key)
                if rec is None:
                    rec = acc.mem[key] = (array("d"), array("d"), array("d"))
                rec[0].append(ts)
                rec[1].append(alloc)
                rec[2].append(res)
        return True
    except TRACE_ERRORS as err:
        trace_cut(log, path, err, f"{acc.n_events} event(s) read before the error are used")
        return False
    finally:
        note_unusable_events(log, path, unusable)


def _device_event(acc: _Acc, e: dict, name: str, cat: str, ts: float, dur: float) -> None:
    args = e.get("args")
    args = args if isinstance(args, dict) else {}
    i = len(acc.dev_s)
    acc.dev_s.append(ts)
    acc.dev_e.append(ts + dur)
    key = name if cat == "kernel" else f"[{cat}] {name}"
    nid = acc.dev_names.get(key)
    if nid is None:  # the name test once per kernel name (names repeat thousands of times)
        nid = acc.dev_names[key] = len(acc.dev_names)
        acc.name_comm.append(1 if is_comm_kernel(name) else 0)
    acc.dev_named_comm.append(acc.name_comm[nid])
    acc.dev_corr.append(_corr(args.get("correlation")))
    acc.dev_stream.append(acc.stream_ids.setdefault((e.get("pid"), e.get("tid")), len(acc.stream_ids)))
    acc.dev_nid.append(nid)
    dev = args.get("device", e.get("pid"))
    dev = dev if isinstance(dev, (int, float, str)) else str(dev)
    acc.devices[dev] = acc.devices.get(dev, 0) + 1
    if "Collective name" in args or "Process Group Name" in args or "Seq" in args:
        acc.dev_args[i] = (args.get("Collective name"), args.get("Process Group Name"), args.get("Seq"))


def _flop_op(acc: _Acc, e: dict, name: str, ts: float, dur: float, tid: int) -> None:
    args = e.get("args")
    if not isinstance(args, dict):
        return
    prof = _num(args.get("flops")) if "flops" in args else math.nan
    dims = args.get("Input Dims")
    shaped = op_flops.torch_op_flops(name, dims, args.get("Concrete Inputs"))
    types = args.get("Input type")
    first = op_flops.TORCH_GEMM_OPS.get(name, 0) + (1 if name in op_flops.SDPA_OPS and name.endswith("_backward")
                                                    else 0)
    dtype = op_flops.dtype_of(types[first]) if isinstance(types, list) and len(types) > first else ""
    n_in = 3 if name in op_flops.CONV_OPS or name in op_flops.SDPA_OPS else 2
    shapes = "x".join(str(d) for d in dims[first:first + n_in]).replace(" ", "") if isinstance(dims, list) else ""
    acc.fl.append((ts, ts + dur, tid, name, prof if prof >= 0 else math.nan,
                   math.nan if shaped is None else shaped, shapes[:120], dtype))


def _op_flops(acc: _Acc, ev: Optional["DeviceEvents"], rel: str) -> Optional[OpFlops]:
    """The operators with FLOPs, per step: the device time of each is that of the kernels launched from its thread
    while it ran (runtime launches and kernels paired by correlation id); nested ones count once (the outermost)."""
    if not acc.fl:
        return None
    recs = sorted(acc.fl, key=lambda r: (r[2], r[0], -r[1]))
    kept, end_of = [], {}
    for r in recs:  # an operator inside another one of the list on the same thread is the outer one's work
        if r[0] < end_of.get(r[2], -math.inf):
            continue
        end_of[r[2]] = r[1]
        kept.append(r)
    dev_ms = np.full(len(kept), np.nan)
    if ev is not None and len(acc.rt_corr):
        ok = ev.corr >= 0  # device time per launch correlation id (several kernels may share one: graphs)
        order = np.argsort(ev.corr[ok], kind="stable")
        kc, kd = ev.corr[ok][order], (ev.end - ev.start)[ok][order]
        uniq, first = np.unique(kc, return_index=True)
        ksum = np.add.reduceat(kd, first) if len(first) else np.zeros(0)
        rt_tid = np.asarray(acc.rt_tid, dtype="int64")
        rt_ts = np.asarray(acc.rt_ts, dtype="float64")
        rt_corr = np.asarray(acc.rt_corr, dtype="int64")
        by_tid = {}
        for t in set(r[2] for r in kept):
            idx = np.flatnonzero(rt_tid == t)
            idx = idx[np.argsort(rt_ts[idx], kind="stable")]
            by_tid[t] = (rt_ts[idx], rt_corr[idx])
        for i, r in enumerate(kept):
            ts_, corr = by_tid[r[2]]
            lo, hi = np.searchsorted(ts_, r[0], side="left"), np.searchsorted(ts_, r[1], side="right")
            if hi > lo and len(uniq):
                c = corr[lo:hi]
                pos = np.clip(np.searchsorted(uniq, c), 0, len(uniq) - 1)
                dev_ms[i] = float(ksum[pos[uniq[pos] == c]].sum()) / 1000.0
    windows = ev.windows if ev is not None else sorted((k, v[0], v[1]) for k, v in acc.steps.items())
    host = sorted((k, v[0], v[1]) for k, v in acc.steps.items()) or windows
    idx = step_of_launch(host, np.array([r[0] for r in kept], dtype="float64"))
    partial = ev.partial if ev is not None else set()
    rows = []
    for i, r in enumerate(kept):
        step = host[idx[i]][0] if idx[i] >= 0 else None
        if step is not None and step in partial:
            step = None  # the partial last step is left out, as from the step times
        prof, shaped = r[4], r[5]
        flops, basis = (prof, "profiler") if not math.isnan(prof) else (shaped, "shapes")
        if math.isnan(flops):
            continue
        rows.append((step, r[3], r[6], r[7], basis, flops, dev_ms[i]))
    if not rows:
        return None
    df = pd.DataFrame(rows, columns=["step", "op", "shapes", "dtype", "basis", "flops", "device_ms"])
    df["step"] = df["step"].astype("Int64")
    g = df.groupby(["step", "op", "shapes", "dtype", "basis"], dropna=False, sort=False)
    out = g.agg(count=("flops", "size"), flops=("flops", "sum"),
                device_ms=("device_ms", lambda x: float(x.sum()) if x.notna().any() else math.nan)).reset_index()
    return OpFlops(source=rel, ops=out[list(OP_FLOPS_COLUMNS)],
                   with_flops=bool((df["basis"] == "profiler").any()))


def _corr(v) -> int:
    try:
        c = int(v)
    except (TypeError, ValueError, OverflowError):
        return -1
    return c if 0 <= c < 2**62 else -1


def launch_index(rt_corr, k_corr) -> np.ndarray:
    """For each device event, the index of its host launch (same correlation id) in `rt_corr`, -1 when none."""
    rc = np.asarray(rt_corr, dtype="int64")
    kc = np.asarray(k_corr, dtype="int64")
    if not len(rc) or not len(kc):
        return np.full(len(kc), -1, dtype="int64")
    order = np.argsort(rc, kind="stable")
    pos = np.clip(np.searchsorted(rc[order], kc), 0, len(rc) - 1)
    found = (rc[order][pos] == kc) & (kc >= 0)
    return np.where(found, order[pos], -1)


def step_of_launch(host: list, launch_ts: np.ndarray) -> np.ndarray:
    """Index into `host` (sorted [(step, start, end)]) of the host step holding each launch time, -1 when none."""
    if not len(host):
        return np.full(len(launch_ts), -1, dtype="int64")
    starts = np.array([w[1] for w in host])
    ends = np.array([w[2] for w in host])
    t = np.nan_to_num(launch_ts, nan=-np.inf)
    idx = np.searchsorted(starts, t, side="right") - 1
    ok = idx >= 0
    ok[ok] &= t[ok] < ends[idx[ok]]
    return np.where(ok, idx, -1)


def device_windows(host: list, kstep: np.ndarray, k_s, k_e) -> tuple[list, set, bool]:
    """Step windows on the device from the host steps and the step of each device event (HTA and torch_npu map
    kernels to steps through their launches): every step lasts from its first device event to the next step's
    first one. A step without a next step in the trace (the last one, or before a gap in the step numbers) has
    no measured end: its window ends with its own last event and it is *partial*.

    Returns (windows [(step, start µs, end µs)], partial steps, mapped); `mapped` is False, and the host
    windows come back, when some step has no device event mapped to it (no correlation ids, CPU-only steps).
    One step alone, or no complete step at all, keeps the host windows (its device work mapped)."""
    ks, ke = np.asarray(k_s, dtype="float64"), np.asarray(k_e, dtype="float64")
    n = len(host)
    if not n or not len(ks) or not (kstep >= 0).any():
        return list(host), set(), False
    ok = kstep >= 0
    first = np.full(n, np.inf)
    last = np.full(n, -np.inf)
    np.minimum.at(first, kstep[ok], ks[ok])
    np.maximum.at(last, kstep[ok], ke[ok])
    if not np.isfinite(first).all():
        return list(host), set(), False
    out, partial = [], set()
    for i, (step, _a, _b) in enumerate(host):
        if i + 1 < n and host[i + 1][0] == step + 1 and first[i + 1] > first[i]:
            out.append((step, float(first[i]), float(first[i + 1])))
        else:
            out.append((step, float(first[i]), float(max(last[i], first[i]))))
            partial.add(step)
    if len(partial) == n:
        return list(host), set(), True
    return out, partial, True


@dataclass
class DeviceEvents:
    """The device activity of one trace after the build (µs, host clock), one entry per kernel / copy / set, for
    the analyses that need the events themselves (idle time by cause, launch delays): start, end, stream (index
    into `streams`, (pid, tid) each), launch correlation id, host launch time (NaN: no launch recorded), whether it
    is communication, and the index of its step in `windows` (-1: launched outside the steps read)."""

    start: np.ndarray
    end: np.ndarray
    stream: np.ndarray
    streams: list
    corr: np.ndarray
    launch: np.ndarray
    comm: np.ndarray
    step: np.ndarray
    windows: list  # [(step, start µs, end µs)]
    partial: set


@dataclass
class KinetoRank:
    step_trace: Optional[StepTrace] = None
    communication: Optional[Communication] = None
    operators: Optional[Operators] = None
    memory: Optional[Memory] = None
    idle: object = None  # reportgen.idle.IdleBreakdown (`_idle_hook`, at the end of this module)
    timeline: Optional[TimelineSummary] = None
    device: str = "cpu"  # "gpu" (device activity, any accelerator) or "cpu"
    events: Optional[DeviceEvents] = None
    op_flops: Optional[OpFlops] = None


def load_kineto(path: Path, data: RankData, log: IssueLog) -> KinetoRank:
    """Read one rank's trace into `data` (info) and return the model objects."""
    info = data.info
    head = read_header(path)
    dist = head.get("distributedInfo")
    dist = dist if isinstance(dist, dict) else {}
    if dist:
        ws = dist.get("world_size")
        info.rank_size = int(ws) if isinstance(ws, (int, float)) else info.rank_size
        # not `distributed_args` (Megatron's tp/pp/dp sizes, which Kineto does not record): the run is then
        # "data-parallel assumed from the rank count" unless groups say more
        if dist.get("nccl_version"):
            info.versions["NCCL"] = str(dist["nccl_version"])
        for pg in dist.get("pg_config") or []:
            if isinstance(pg, dict) and "pg_name" in pg:
                info.parallel_groups[str(pg["pg_name"])] = {
                    "group_name": str(pg.get("pg_desc") or pg["pg_name"]),
                    "global_ranks": [int(x) for x in pg.get("ranks") or [] if isinstance(x, (int, float))],
                    "backend": str(pg.get("backend_config") or dist.get("backend") or "")}
    if head.get("host_name") and not info.host:
        info.host = str(head["host_name"])
    if info.framework is None:
        info.framework = "PyTorch"
    acc = _Acc()
    _scan(path, acc, log)
    try:
        return _build(acc, head, dist, info, path, log)
    except (ValueError, TypeError, KeyError, IndexError, OverflowError) as err:  # loaders never raise
        log.add(path, f"trace read but could not be summarised ({type(err).__name__}: {str(err)[:120]})", "error")
        return KinetoRank()


def device_properties(head: dict, device) -> tuple[Optional[str], Optional[float]]:
    """(model name, memory in MB = 2^20 bytes) of the trace's device from `deviceProperties` (the entry whose id is
    the device the kernels ran on, else the first)."""
    props = [p for p in head.get("deviceProperties") or [] if isinstance(p, dict)] \
        if isinstance(head.get("deviceProperties"), list) else []
    if not props:
        return None, None
    p = next((p for p in props if p.get("id") == device), props[0])
    name = p.get("name")
    mem = p.get("totalGlobalMem")
    return (str(name).strip()[:120] if isinstance(name, str) and name.strip() else None,
            float(mem) / MIB if isinstance(mem, (int, float)) and mem > 0 else None)


def _build(acc: _Acc, head: dict, dist: dict, info, path: Path, log: IssueLog) -> KinetoRank:
    out = KinetoRank()
    rel = log.rel(path)
    out.device = "gpu" if len(acc.dev_s) else "cpu"
    if out.device == "gpu" and acc.devices and info.device is None:
        dev = max(acc.devices, key=acc.devices.get)
        info.device = int(dev) if isinstance(dev, (int, float)) else None
    if out.device == "gpu":
        model, mem = device_properties(head, info.device)
        if model and not getattr(info, "device_model", None):
            info.device_model = model
        if mem and not getattr(info, "device_memory_mb", None):
            info.device_memory_mb = mem
    host = sorted((k, v[0], v[1]) for k, v in acc.steps.items())
    if not host and acc.lane_steps:
        host = sorted((k, v[0], v[1]) for k, v in acc.lane_steps.items())
        log.add(path, "ProfilerStep#N marks only the device lane (gpu_user_annotation), not the host: the step "
                "windows are those marks, and device work is cut at them", "warning")
    ev = _device_events(acc, host) if out.device == "gpu" else None
    out.events = ev
    if ev is not None:
        _note_comm(acc, ev, path, log)
        if host and not (ev.step >= 0).any():
            log.add(path, "kernels could not be mapped to steps through their launches (no correlation ids, or a "
                    "step without kernels): the device time is cut at the host's ProfilerStep windows", "info")
    comp, comm = _intervals(acc, ev)
    out.step_trace = _step_trace(acc, ev, comp, comm, host, rel, out.device)
    if not host:
        log.add(path, "no ProfilerStep#N markers in the trace (profiled without a schedule?): one window over the "
                "whole trace stands for the step (step id shown empty)", "info")
    elif ev is not None and ev.partial:
        last = sorted(ev.partial)
        log.add(path, f"step(s) {', '.join(map(str, last[:8]))} partial: no next step in the trace marks where the "
                "step ends on the device (its kernels may run past the trace's end); left out of the averages, "
                "spreads and the slowest step", "info")
    out.communication = _communication(acc, ev, out.step_trace, host, rel, dist, out.device)
    out.operators = _operators(acc, ev, host, rel, out.device)
    out.memory = _memory(acc, head, rel)
    out.idle = _idle_hook(acc, out, log, path)
    out.timeline = _timeline(acc, comp, comm, path, rel)
    out.op_flops = _op_flops(acc, ev, rel)
    if not acc.colls and not (ev is not None and ev.comm.any()) and (info.rank_size or 1) > 1:
        log.add(path, "no collective found in the trace (NCCL/RCCL/HCCL kernels, kernels launched by a collective's "
                "host op, or gloo:* slices); no communication data for this rank", "warning")
    return out


def _device_events(acc: _Acc, host: list) -> DeviceEvents:
    """Launch, step and communication of every device event: the step is the host step that launched it, and an
    event is communication by its name or when its launch happened inside a collective's host op on the same
    thread (record_param_comms, nccl:*, c10d::*): custom all-to-all kernels, copies of a collective."""
    s = np.frombuffer(acc.dev_s, dtype="float64") if len(acc.dev_s) else np.zeros(0)
    e = np.frombuffer(acc.dev_e, dtype="float64") if len(acc.dev_e) else np.zeros(0)
    li = launch_index(acc.rt_corr, acc.dev_corr)
    rt_ts = np.frombuffer(acc.rt_ts, dtype="float64") if len(acc.rt_ts) else np.zeros(0)
    launch = np.where(li >= 0, rt_ts[np.clip(li, 0, max(len(rt_ts) - 1, 0))] if len(rt_ts) else np.nan, np.nan)
    comm = np.frombuffer(acc.dev_named_comm, dtype="int8").astype(bool) if len(acc.dev_named_comm) \
        else np.zeros(0, bool)
    # kernels only: a copy or set inside a collective's host op (flattening into its buffer) stays local work
    is_kernel = np.array([not n.startswith("[") for n in acc.dev_names], dtype=bool)
    nid = np.asarray(acc.dev_nid, dtype="int64")
    in_op = _launched_in_comm_op(acc, li) & (is_kernel[nid] if len(nid) else np.zeros(0, bool))
    comm = comm | in_op
    kstep = step_of_launch(host, launch)
    windows, partial, mapped = device_windows(host, kstep, s, e)
    if not mapped:
        windows = host  # `windows is host`: the device time is cut at the host windows
        kstep = np.full(len(s), -1, dtype="int64")
    return DeviceEvents(start=s, end=e, stream=np.asarray(acc.dev_stream, dtype="int64"),
                        streams=list(acc.stream_ids), corr=np.asarray(acc.dev_corr, dtype="int64"), launch=launch,
                        comm=comm, step=kstep, windows=windows, partial=partial)


def _launched_in_comm_op(acc: _Acc, li: np.ndarray) -> np.ndarray:
    """Whether each device event's launch lies inside a collective's host op on the launching thread."""
    out = np.zeros(len(li), dtype=bool)
    if not len(acc.hc_s) or not (li >= 0).any():
        return out
    hs, he = np.frombuffer(acc.hc_s, dtype="float64"), np.frombuffer(acc.hc_e, dtype="float64")
    ht = np.asarray(acc.hc_tid, dtype="int64")
    rt_ts = np.frombuffer(acc.rt_ts, dtype="float64")
    rt_tid = np.asarray(acc.rt_tid, dtype="int64")
    has = li >= 0
    lt, ltid = rt_ts[li[has]], rt_tid[li[has]]
    hit = np.zeros(len(lt), dtype=bool)
    for t in np.unique(ht):
        u = iv.merge(hs[ht == t], he[ht == t])
        sel = ltid == t
        if not sel.any() or not len(u[0]):
            continue
        x = lt[sel]
        j = np.searchsorted(u[0], x, side="right") - 1
        ok = j >= 0
        ok[ok] &= x[ok] <= u[1][j[ok]]
        hit[sel] = ok
    out[has] = hit
    return out


def _note_comm(acc: _Acc, ev: DeviceEvents, path: Path, log: IssueLog) -> None:
    """Name what was found as communication without a library's name, and what runs beside collectives on their
    streams yet is counted as computation."""
    named = np.frombuffer(acc.dev_named_comm, dtype="int8").astype(bool) if len(acc.dev_named_comm) \
        else np.zeros(0, bool)
    names = list(acc.dev_names)
    nid = np.asarray(acc.dev_nid, dtype="int64")
    by_op = ev.comm & ~named
    if by_op.any():
        got = sorted({names[i] for i in np.unique(nid[by_op])})
        log.add(path, f"{int(by_op.sum())} device event(s) launched inside a collective's host op "
                f"(record_param_comms / nccl:* / c10d::*) counted as communication although their names are not a "
                f"collective library's (kernels only; copies and sets there stay computation): {', '.join(n[:80] for n in got[:MAX_NAMED])}"
                + (f" and {len(got) - MAX_NAMED} more" if len(got) > MAX_NAMED else ""), "info")
    # the streams that are mostly communication (NCCL's own streams; not a compute stream that also runs
    # collectives, as on ROCm): what else runs there is likely communication under a name we do not know
    n_all = np.bincount(ev.stream, minlength=len(ev.streams))
    n_comm = np.bincount(ev.stream[ev.comm], minlength=len(ev.streams))
    comm_streams = np.flatnonzero((n_comm > 0) & (2 * n_comm >= n_all))
    beside = ~ev.comm & np.isin(ev.stream, comm_streams)
    if beside.any():
        got = sorted({names[i] for i in np.unique(nid[beside])})
        log.add(path, f"{int(beside.sum())} device event(s) of {len(got)} unrecognised kind(s) run on the streams of "
                f"the collectives and are counted as computation: {', '.join(n[:80] for n in got[:MAX_NAMED])}"
                + (f" and {len(got) - MAX_NAMED} more" if len(got) > MAX_NAMED else ""), "info")


def _cpu_main(acc: _Acc) -> set:
    tids = np.asarray(acc.cpu_tid, dtype="int64")
    main = {acc.tids[t] for _, _, t in acc.steps.values() if t in acc.tids}
    if not main and len(tids):
        main = {int(np.bincount(tids).argmax())}
    return main


def _intervals(acc: _Acc, ev: Optional[DeviceEvents]) -> tuple[iv.Intervals, iv.Intervals]:
    """Merged computation and communication intervals (µs) of the device over the whole trace."""
    if ev is not None:
        return iv.merge(ev.start[~ev.comm], ev.end[~ev.comm]), iv.merge(ev.start[ev.comm], ev.end[ev.comm])
    s, e = np.frombuffer(acc.cpu_s, dtype="float64"), np.frombuffer(acc.cpu_e, dtype="float64")
    tids = np.asarray(acc.cpu_tid, dtype="int64")
    main = _cpu_main(acc)
    comm_names = np.array([bool(HOST_COMM_RE.match(n)) for n in acc.names], dtype=bool)
    nid = np.asarray(acc.cpu_name, dtype="int64")
    keep = np.isin(tids, list(main)) & ~(comm_names[nid] if len(nid) else np.zeros(0, bool))
    cs = np.array([c[0] for c in acc.colls], dtype="float64")
    ce = cs + np.array([c[1] for c in acc.colls], dtype="float64")
    return iv.merge(s[keep], e[keep]), iv.merge(cs, ce)


def _whole(acc: _Acc, ev: Optional[DeviceEvents]) -> list:
    """The one window of a trace without ProfilerStep: its device activity's span (the CPU's when none)."""
    if ev is not None and len(ev.start):
        return [(None, float(ev.start.min()), float(ev.end.max()))]
    s, e = np.frombuffer(acc.cpu_s, dtype="float64"), np.frombuffer(acc.cpu_e, dtype="float64")
    lo = min(([float(s.min())] if len(s) else []) + [c[0] for c in acc.colls], default=None)
    hi = max(([float(e.max())] if len(e) else []) + [c[0] + c[1] for c in acc.colls], default=None)
    return [] if lo is None or hi is None or not hi > lo else [(None, lo, hi)]


def _per_window(ev: Optional[DeviceEvents], comp: iv.Intervals, comm: iv.Intervals, windows: list
                ) -> list[tuple[float, float, float]]:
    """(computation, communication, overlap) µs per window: unions of the events each step launched when the
    device work is mapped to steps, else of everything inside the window."""
    out = []
    mapped = ev is not None and (ev.step >= 0).any()
    both = iv.intersect(comp, comm)
    for i, (_step, a, b) in enumerate(windows):
        if mapped:
            sel = ev.step == i
            c = iv.merge(ev.start[sel & ~ev.comm], ev.end[sel & ~ev.comm])
            m = iv.merge(ev.start[sel & ev.comm], ev.end[sel & ev.comm])
            out.append((iv.total(c), iv.total(m), iv.total(iv.intersect(c, m))))
        else:
            w = (np.array([a]), np.array([b]))
            out.append((iv.total(iv.intersect(comp, w)), iv.total(iv.intersect(comm, w)),
                        iv.total(iv.intersect(both, w))))
    return out


def _step_trace(acc: _Acc, ev: Optional[DeviceEvents], comp: iv.Intervals, comm: iv.Intervals, host: list,
                rel: str, device: str) -> Optional[StepTrace]:
    mapped = ev is not None and (ev.step >= 0).any()
    if not host:
        windows = _whole(acc, ev)
        how = "whole" if ev is not None else "cpu_whole"
        if ev is not None and windows:  # every event belongs to the one window
            ev.step = np.zeros(len(ev.start), dtype="int64")
            ev.windows, mapped = windows, True
    elif ev is not None:
        windows = ev.windows
        how = "mapped" if mapped else "cut"
    else:
        windows = host
        how = "cpu"
    if not windows:
        return None
    partial = ev.partial if ev is not None else set()
    rows, prows = [], []
    for (step, a, b), (c, m, o) in zip(windows, _per_window(ev if mapped else None, comp, comm, windows)):
        tot = b - a
        nov = m - o
        row = {"step": step, "computing": c / 1e3, "communication_not_overlapped": nov / 1e3,
               "overlapped": o / 1e3, "communication": m / 1e3, "free": max(0.0, tot - c - nov) / 1e3,
               "stage": tot / 1e3, "bubble": 0.0, "communication_not_overlapped_exclude_receive": nov / 1e3,
               "preparing": math.nan, "total": tot / 1e3}
        (prows if step in partial else rows).append(row)

    def frame(rs):
        data: dict = {"step": pd.array([r["step"] for r in rs], dtype="Int64")}
        for p in MODERN_PHASES:
            data[p] = np.array([r[p] for r in rs], dtype="float64")
        return pd.DataFrame(data)

    st = StepTrace(kind="modern", steps=frame(rows), source=rel, label=STEP_LABELS[how])
    if prows and hasattr(st, "partial_steps"):
        st.partial_steps = frame(prows)
    return st


def _default_group(dist: dict) -> str:
    for pg in dist.get("pg_config") or []:
        if isinstance(pg, dict) and pg.get("pg_desc") == "default_pg":
            return str(pg.get("pg_name"))
    return "0"


def _communication(acc: _Acc, ev: Optional[DeviceEvents], st: Optional[StepTrace], host: list, rel: str,
                   dist: dict, device: str) -> Optional[Communication]:
    """One instance per collective of the complete steps (device: its communication events, stepped by their
    launch; CPU: gloo slices starting in a host step)."""
    if st is None or not len(st.steps):
        return None
    default = _default_group(dist)
    keep = set(st.steps["step"].dropna().astype(int)) if st.steps["step"].notna().any() else None
    cands = []  # (start, dur, step, kind, group, seq, name)
    if ev is not None:
        names = list(acc.dev_names)
        nid = np.asarray(acc.dev_nid, dtype="int64")
        kinds = _comm_kinds(acc, ev)
        wins = ev.windows
        mapped = bool((ev.step >= 0).any())
        for i in np.flatnonzero(ev.comm):
            if ev.step[i] >= 0:
                step = wins[ev.step[i]][0]
            elif mapped:
                continue  # launched outside the steps read
            else:
                step = _step_at(wins, ev.start[i])
                if step is _NONE:
                    continue
            name = names[nid[i]]
            _coll, group, seq = acc.dev_args.get(int(i), (None, None, None))
            kind = kinds[int(i)]
            cands.append((float(ev.start[i]), float(ev.end[i] - ev.start[i]), step, kind, group, seq, name))
    else:
        wins = host or _whole(acc, None)
        for ts, dur, kind, group, seq, name in acc.colls:
            step = _step_at(wins, ts)
            if step is _NONE:
                continue
            cands.append((ts, dur, step, kind, group, seq, name))
    inst = []
    order: dict = {}
    for ts, dur, step, kind, group, seq, name in sorted(cands, key=lambda c: c[0]):
        if keep is not None and step not in keep:
            continue  # partial steps and steps outside the windows
        g = str(group) if group not in (None, "") else default
        k = order[(step, g, kind)] = order.get((step, g, kind), 0) + 1
        key = f"seq:{seq}" if seq not in (None, "") else f"{step}:{kind}:{k}"
        inst.append({"step": step, "op": f"{kind}#{k}", "group": g, "kind": kind, "key": key,
                     "start_ms": ts / 1e3, "dur_ms": dur / 1e3, "name": name})
    if not inst:
        return None
    instances = pd.DataFrame(inst)
    instances["step"] = instances["step"].astype("Int64")
    comm = Communication(source=rel, producer="kineto", steps=pd.DataFrame(), ops=pd.DataFrame(),
                         links=pd.DataFrame(columns=list(COMM_LINK_COLUMNS)),
                         unit_note=("Kineto traces: a collective's communication time is its elapsed time on the "
                                    + ("device (its kernels)" if device == "gpu" else "CPU (the backend's work slice)")
                                    + ", wait included; wait = elapsed − the shortest elapsed of the same collective "
                                    "on any rank (the last rank to arrive waits least), transit = that shortest "
                                    "elapsed; per step, the union of the collectives' time (concurrent streams and "
                                    "threads counted once)"))
    comm.instances = instances
    _fill_ops(comm, np.full(len(instances), math.nan))
    return comm


_NONE = object()


def _step_at(wins: list, ts: float):
    for step, a, b in wins:
        if a <= ts < b:
            return step
    return _NONE


def _comm_kinds(acc: _Acc, ev: DeviceEvents) -> dict:
    """Device event index -> collective kind of every communication event: from its `Collective name` arg, else
    its name, else the collective host op that launched it (RCCL's `ncclDevKernel_Generic`, custom kernels)."""
    names = list(acc.dev_names)
    nid = np.asarray(acc.dev_nid, dtype="int64")
    hc = None
    out = {}
    for i in np.flatnonzero(ev.comm).tolist():
        coll = acc.dev_args.get(i, (None, None, None))[0]
        kind = collective_kind(str(coll)) if isinstance(coll, str) and coll else "collective"
        if kind == "collective":
            kind = collective_kind(names[nid[i]])
        if kind == "collective":
            hc = _host_op_kind(acc, ev) if hc is None else hc
            kind = collective_kind(hc[i]) if i in hc else kind
        out[i] = kind
    return out


def _host_op_kind(acc: _Acc, ev: DeviceEvents) -> dict:
    """Device event index -> the name (or `Collective name`) of the collective host op its launch lies in, for
    the communication events without a library's name."""
    named = np.frombuffer(acc.dev_named_comm, dtype="int8").astype(bool) if len(acc.dev_named_comm) \
        else np.zeros(0, bool)
    want = np.flatnonzero(ev.comm & ~named)
    if not len(want) or not len(acc.hc_s):
        return {}
    return _containing_op(acc.rt_corr, acc.rt_ts, acc.rt_tid, (acc.hc_s, acc.hc_e, acc.hc_tid, acc.hc_name),
                          ev.corr[want], want.tolist())


def _containing_op(rt_corr, rt_ts, rt_tid, hc: tuple, corrs, keys: list, look_back: int = 16) -> dict:
    """key -> the name of a host op (`hc` = starts, ends, threads, names) holding the launch of correlation id
    `corrs[i]` on the launching thread; a kind-bearing name is preferred among nested ops. Per thread, the ops
    sorted by start and at most `look_back` of them before the launch looked at (nesting is shallow)."""
    li = launch_index(rt_corr, corrs)
    hs, he = np.asarray(hc[0], dtype="float64"), np.asarray(hc[1], dtype="float64")
    ht = np.asarray(hc[2], dtype="int64")
    by_thread = {}
    for t in np.unique(ht).tolist():
        idx = np.flatnonzero(ht == t)
        idx = idx[np.argsort(hs[idx], kind="stable")]
        by_thread[t] = (idx, hs[idx])
    out = {}
    for key, l in zip(keys, li.tolist()):
        if l < 0:
            continue
        t, tid = rt_ts[l], rt_tid[l]
        got = by_thread.get(tid)
        if got is None:
            continue
        idx, starts = got
        j = int(np.searchsorted(starts, t, side="right"))
        names = [hc[3][k] for k in idx[max(0, j - look_back):j][::-1] if he[k] >= t]
        if names:
            out[key] = next((n for n in names if collective_kind(n) != "collective"), names[0])
    return out


def _union_ms(starts: np.ndarray, lengths: np.ndarray) -> float:
    ok = ~np.isnan(lengths)
    if not ok.any():
        return math.nan
    return iv.total(iv.merge(starts[ok], starts[ok] + lengths[ok]))


def _fill_ops(comm: Communication, wait: np.ndarray) -> None:
    """Per (step, op, group) rows and per-step totals from the instances and their waits (NaN: unknown). A step's
    communication is the union of its collectives' spans (concurrent streams and gloo threads count once), its
    wait the union of their waiting parts (a collective waits from its start), transit the rest."""
    f = comm.instances.copy()
    f["communication_ms"] = f["dur_ms"]
    f["wait_ms"] = wait
    f["transit_ms"] = f["dur_ms"] - np.nan_to_num(wait)
    f["transit_ms"] = f["transit_ms"].where(~np.isnan(wait), math.nan)
    for c in ("sync_ms", "idle_ms", "sdma_mb", "sdma_ms", "rdma_mb", "rdma_ms"):
        f[c] = math.nan
    ops = f[list(COMM_OP_COLUMNS)].copy()
    ops["step"] = ops["step"].astype("Int64")
    comm.ops = ops.reset_index(drop=True)
    rows = []
    for step, g in f.groupby("step", sort=True, dropna=False):
        s = g["start_ms"].to_numpy(dtype="float64")
        tot = _union_ms(s, g["dur_ms"].to_numpy(dtype="float64"))
        w = _union_ms(s, g["wait_ms"].to_numpy(dtype="float64"))
        rows.append({"step": step, "communication_ms": tot, "transit_ms": tot - w if w == w else math.nan,
                     "wait_ms": w, "sync_ms": math.nan, "idle_ms": math.nan})
    steps = pd.DataFrame(rows, columns=["step", *COMM_TIME_COLUMNS])
    steps["step"] = pd.array([None if pd.isna(x) else int(x) for x in steps["step"]], dtype="Int64")
    for c in COMM_TIME_COLUMNS:
        steps[c] = steps[c].astype("float64")
    comm.steps = steps


def run_note(ranks: dict[int, RankData]) -> str:
    """One data-quality line for the run: what was read, and which ranks had no device activity."""
    cpu = sorted(r for r, d in ranks.items() if d.step_trace is not None and "CPU operators" in d.step_trace.label)
    if cpu:
        which = "any rank" if len(cpu) == len(ranks) else f"rank(s) {', '.join(map(str, cpu[:10]))}"
        return (READ_NOTE + f". No GPU/NPU activity on {which}: the CPU is the device (computation = operators of "
                "the training thread, communication = the backend's collective work slices, gloo:*)")
    return READ_NOTE


def check_step_ranges(ranks: dict[int, RankData], issues: list[DataIssue]) -> None:
    """Ranks whose traces share no step (one recorded steps 550-554, another 15-17) were not profiled together:
    their steps are not comparable, whatever the folder says."""
    sets = {r: {int(s) for s in d.step_trace.steps["step"].dropna()} for r, d in ranks.items()
            if d.step_trace is not None and len(d.step_trace.steps) and d.step_trace.steps["step"].notna().any()}
    if len(sets) < 2:
        return
    groups: list[tuple[set, list]] = []  # ranks joined while their steps overlap
    for r in sorted(sets):
        hit = [g for g in groups if g[0] & sets[r]]
        merged = (set(sets[r]), [r])
        for g in hit:
            merged[0].update(g[0])
            merged[1].extend(g[1])
            groups.remove(g)
        groups.append(merged)
    if len(groups) < 2:
        return
    parts = "; ".join(f"rank(s) {', '.join(map(str, sorted(rs)[:8]))}: steps {min(st)}-{max(st)}"
                      for st, rs in sorted(groups, key=lambda g: min(g[1]))[:4])
    issues.append(DataIssue("", f"the ranks' traces share no step ({parts}): they were not profiled together (other "
                                "jobs or other profiling windows), so comparing the ranks step by step is not "
                                "meaningful; profile the ranks over the same steps", "warning"))


def match_collectives(ranks: dict[int, RankData], issues: list[DataIssue]) -> None:
    """Pair every collective instance across the ranks that recorded it and set each rank's wait and transit."""
    check_step_ranges(ranks, issues)
    frames = []
    for r, d in ranks.items():
        c = d.communication
        inst = getattr(c, "instances", None) if c is not None else None
        if inst is not None and len(inst):
            frames.append(inst.assign(rank=r, _i=np.arange(len(inst))))
    if not frames:
        return
    allf = pd.concat(frames, ignore_index=True)
    keyed = allf.groupby(["group", "key"])
    n = keyed["rank"].transform("nunique")
    kinds = keyed["kind"].transform("nunique")
    shortest = keyed["dur_ms"].transform("min")
    ok = (n >= 2) & (kinds == 1)
    allf["wait"] = np.where(ok, allf["dur_ms"] - shortest, math.nan)
    mism = allf.loc[kinds > 1, ["group", "key"]].drop_duplicates()
    if len(mism):
        issues.append(DataIssue("", f"{len(mism)} collective instance(s) have different kinds on different ranks "
                                    "(the ranks' traces do not record the same collectives in the same order); "
                                    "their wait is unknown", "warning"))
    counts = allf.groupby(["group", "rank"]).size()
    uneven = [g for g, c in counts.groupby(level=0) if c.nunique() > 1]
    if uneven:
        issues.append(DataIssue("", "ranks recorded different numbers of collectives in process group(s) "
                                    f"{', '.join(map(str, uneven[:5]))}; only instances found on two or more ranks "
                                    "get a wait time", "info"))
    for r, f in allf.groupby("rank"):
        c = ranks[int(r)].communication
        w = np.full(len(c.instances), math.nan)
        w[f["_i"].to_numpy()] = f["wait"].to_numpy()
        _fill_ops(c, w)


def _complete_mask(ev: DeviceEvents) -> np.ndarray:
    """The device events that count per step: those of the complete steps (all when the trace has no steps)."""
    if (ev.step >= 0).any():
        bad = np.array([w[0] in ev.partial for w in ev.windows] + [True], dtype=bool)
        return (ev.step >= 0) & ~bad[ev.step]
    if ev.windows:
        s = np.array([w[1] for w in ev.windows])
        e = np.array([w[2] for w in ev.windows])
        j = np.searchsorted(s, ev.start, side="right") - 1
        ok = j >= 0
        ok[ok] &= ev.start[ok] < e[j[ok]]
        return ok
    return np.ones(len(ev.start), dtype=bool)


def _host_mask(starts: np.ndarray, host: list, partial: set) -> np.ndarray:
    """Host slices starting inside a complete host step (all when the trace has no steps)."""
    wins = [(a, b) for s, a, b in host if s not in partial]
    if not host:
        return np.ones(len(starts), dtype=bool)
    if not wins:
        return np.zeros(len(starts), dtype=bool)
    s = np.array([w[0] for w in wins])
    e = np.array([w[1] for w in wins])
    j = np.searchsorted(s, starts, side="right") - 1
    ok = j >= 0
    ok[ok] &= starts[ok] < e[j[ok]]
    return ok


def _operators(acc: _Acc, ev: Optional[DeviceEvents], host: list, rel: str, device: str) -> Optional[Operators]:
    """Operator totals of the complete steps only (the site divides them by the number of steps): device events
    mapped to those steps, host operators and gloo slices starting in them."""
    rows = []
    partial = ev.partial if ev is not None else set()
    if ev is not None and len(ev.start):
        sel = _complete_mask(ev)
        nid = np.asarray(acc.dev_nid, dtype="int64")
        dur = ev.end - ev.start
        names = list(acc.dev_names)
        comp = sel & ~ev.comm
        n = len(names)
        cnt = np.bincount(nid[comp], minlength=n)
        tot = np.bincount(nid[comp], weights=dur[comp], minlength=n)
        for c in np.flatnonzero(cnt):
            rows.append({"side": "gpu", "name": names[c][:KERNEL_NAME_CAP],
                         "op_type": kernel_type(names[c].split("] ", 1)[-1]), "count": float(cnt[c]),
                         "total_ms": tot[c] / 1e3, "avg_ms": tot[c] / 1e3 / cnt[c], "share": math.nan})
        # communication: one row per kernel name and collective kind (RCCL's ncclDevKernel_Generic runs them all)
        agg: dict = {}
        for i, k in _comm_kinds(acc, ev).items():
            if sel[i]:
                agg[(int(nid[i]), k)] = _add(agg.get((int(nid[i]), k)), float(dur[i]))
        kinds_of = Counter(c for c, _k in agg)
        for (c, k), (cn, tt, _mx) in agg.items():
            name = names[c][:KERNEL_NAME_CAP] if kinds_of[c] == 1 else f"{names[c][:KERNEL_NAME_CAP]} [{k}]"
            rows.append({"side": "communication", "name": name, "op_type": k, "count": float(cn),
                         "total_ms": tt / 1e3, "avg_ms": tt / 1e3 / cn, "share": math.nan})
    elif acc.colls:
        cs = np.array([c[0] for c in acc.colls], dtype="float64")
        keep = _host_mask(cs, host, partial)
        agg: dict = {}
        for (ts, dur, _k, _g, _s, name), k in zip(acc.colls, keep):
            if k:
                agg[name] = _add(agg.get(name), dur)
        for name, (cnt, tot, _mx) in agg.items():
            rows.append({"side": "communication", "name": name[:KERNEL_NAME_CAP], "op_type": collective_kind(name),
                         "count": float(cnt), "total_ms": tot / 1e3, "avg_ms": tot / 1e3 / cnt, "share": math.nan})
    if len(acc.cpu_s):
        self_us = _self_times(acc, _host_mask(np.frombuffer(acc.cpu_s, dtype="float64"), host, partial))
        counts = np.bincount(np.asarray(acc.cpu_name, dtype="int64")[
            _host_mask(np.frombuffer(acc.cpu_s, dtype="float64"), host, partial)], minlength=len(acc.names))
        names = list(acc.names)
        for i, nm in enumerate(names):
            if counts[i]:
                rows.append({"side": "hostcpu", "name": nm, "op_type": nm, "count": float(counts[i]),
                             "total_ms": self_us[i] / 1e3, "avg_ms": self_us[i] / 1e3 / counts[i],
                             "share": math.nan})
    if not rows:
        return None
    from reportgen.loaders.operators import assemble, types_from_detail

    detail = pd.DataFrame(rows, columns=list(OP_DETAIL_COLUMNS))
    parts = []
    for side, basis in (("gpu", "profiled window"), ("communication", "profiled window"),
                        ("hostcpu", "profiled window (self time)")):
        d = detail[detail["side"] == side].copy()
        if not len(d):
            continue
        tot = d["total_ms"].sum()
        d["share"] = d["total_ms"] / tot if tot > 0 else math.nan
        d = d.sort_values("total_ms", ascending=False)
        parts.append((side, rel, types_from_detail(d, side), d, basis))
    return assemble(parts)


def _add(k, dur):
    if k is None:
        return [1, dur, dur]
    k[0] += 1
    k[1] += dur
    k[2] = max(k[2], dur)
    return k


def _self_times(acc: _Acc, keep: Optional[np.ndarray] = None) -> np.ndarray:
    """Self time (µs) per operator name: its duration minus its direct children's, per thread; only the
    operators in `keep` are counted (their children are still subtracted)."""
    s = np.frombuffer(acc.cpu_s, dtype="float64")
    e = np.frombuffer(acc.cpu_e, dtype="float64")
    t = np.asarray(acc.cpu_tid, dtype="int64")
    nid = np.asarray(acc.cpu_name, dtype="int64")
    order = np.lexsort((-e, s, t))
    child = np.zeros(len(s))
    stack: list[int] = []
    cur_t = None
    sl, el, tl = s[order].tolist(), e[order].tolist(), t[order].tolist()
    for pos, i in enumerate(order.tolist()):
        if tl[pos] != cur_t:
            stack = []
            cur_t = tl[pos]
        st = sl[pos]
        while stack and el[stack[-1][1]] <= st:
            stack.pop()
        if stack:
            child[stack[-1][0]] += min(el[pos], el[stack[-1][1]]) - st
        stack.append((i, pos))
    self_t = np.maximum(e - s - child, 0.0)
    if keep is not None:
        self_t = np.where(keep, self_t, 0.0)
    return np.bincount(nid, weights=self_t, minlength=len(acc.names))


def _memory(acc: _Acc, head: dict, rel: str) -> Optional[Memory]:
    """The allocator's curve and peaks, bytes -> MB of 2^20 bytes (the report's memory unit)."""
    if not acc.mem:
        return None
    # the accelerator's allocator when there is one (Device Type 1 = CUDA, others = other accelerators), else the CPU's
    gpu = [k for k in acc.mem if k[0] not in (0, -1)]
    key = max(gpu or list(acc.mem), key=lambda k: len(acc.mem[k][0]))
    ts, alloc, res = (np.frombuffer(a, dtype="float64") for a in acc.mem[key])
    order = np.argsort(ts, kind="stable")
    ts, alloc, res = ts[order], alloc[order], res[order]
    where = "CPU" if key[0] == 0 else f"device {key[1]}"
    out = Memory(source=rel, curve_x="ms since the first sample", sources=[rel])
    has_res = bool(np.nanmax(res) > 0) if len(res) else False
    out.allocated_peak_mb = float(np.nanmax(alloc)) / MIB
    out.peak_mb = float(np.nanmax(res)) / MIB if has_res else out.allocated_peak_mb
    curve = pd.DataFrame({"x": (ts - ts[0]) / 1e3, "used_mb": (res if has_res else alloc) / MIB,
                          "allocated_mb": alloc / MIB})
    out.curve = _downsample(curve, "used_mb")  # at most MAX_CURVE_POINTS, index reset
    props = head.get("deviceProperties") or []
    if key[0] not in (0, -1) and isinstance(props, list):
        for p in props:
            if isinstance(p, dict) and p.get("id") == key[1] and isinstance(p.get("totalGlobalMem"), (int, float)):
                out.capacity_mb = float(p["totalGlobalMem"]) / MIB
                out.capacity_source = f"deviceProperties totalGlobalMem of {p.get('name', 'the GPU')}"
    out.capacity_source = out.capacity_source or f"({where} allocator; the trace records no capacity)"
    return out


def _timeline(acc: _Acc, comp: iv.Intervals, comm: iv.Intervals, path: Path, rel: str) -> TimelineSummary:
    s, e = (acc.dev_s, acc.dev_e) if len(acc.dev_s) else (acc.cpu_s, acc.cpu_e)
    span = (max(e) - min(s)) / 1e3 if len(s) else None
    union = iv.merge(np.concatenate([comp[0], comm[0]]), np.concatenate([comp[1], comm[1]]))
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    return TimelineSummary(
        source=rel, span_ms=span, n_ops=len(acc.dev_s) or len(acc.cpu_s),
        n_streams=len(acc.stream_ids) or len({t for t in acc.tids}), compute_ms=iv.total(comp) / 1e3,
        communication_ms=iv.total(comm) / 1e3, pure_communication_ms=iv.total(iv.subtract(comm, comp)) / 1e3,
        free_ms=(span - iv.total(union) / 1e3) if span is not None else None, trace_bytes=size)


# --- execution view (Marey): the device operators of chosen steps --------------------------------------------


def step_windows(path: Path) -> dict[int, tuple]:
    """Step windows (µs), the (pid, tid) of the thread recording ProfilerStep and the host ProfilerStep window
    (first streamed pass): (start, end, thread, host start, host end); start and end on the device when kernels
    map to steps through their launches (`device_windows`, as the loader measures them), else the host window.
    Only the host's ProfilerStep ranges are steps (the GPU lane's are annotations)."""
    out: dict = {}
    rc, rt, kc, ks, ke = array("q"), array("d"), array("q"), array("d"), array("d")
    try:
        for e in trace_events(path):
            if e.get("ph") != "X":
                continue
            name = e.get("name")
            ts, dur = _num(e.get("ts")), _num(e.get("dur"))
            if math.isnan(ts) or math.isnan(dur):
                continue
            cat = str(e.get("cat") or "").lower()
            if isinstance(name, str) and name.startswith("ProfilerStep#"):
                m = STEP_RE.match(name)
                if m and not (cat.endswith("user_annotation") and cat != "user_annotation"):
                    out[int(m.group(1))] = (ts, ts + dur, (e.get("pid"), e.get("tid")), ts, ts + dur)
                continue
            if cat in DEVICE_CATS or is_runtime_cat(cat):
                args = e.get("args")
                c = _corr(args.get("correlation")) if isinstance(args, dict) else -1
                if cat in DEVICE_CATS:
                    kc.append(c)
                    ks.append(ts)
                    ke.append(ts + dur)
                elif c >= 0:
                    rc.append(c)
                    rt.append(ts)
    except TRACE_ERRORS:
        pass  # the loader reported the broken file; the windows read are used
    if not len(ks) or not out:
        return out
    host = sorted((k, v[0], v[1]) for k, v in out.items())
    li = launch_index(rc, kc)
    rts = np.asarray(rt, dtype="float64")
    launch = np.where(li >= 0, rts[np.clip(li, 0, max(len(rts) - 1, 0))] if len(rts) else np.nan, np.nan)
    wins, _partial, mapped = device_windows(host, step_of_launch(host, launch), ks, ke)
    if mapped:  # the host window stays beside the device one (the launches happen in it)
        out = {step: (a, b, out[step][2], out[step][3], out[step][4]) for step, a, b in wins}
    return out


def _exec_class(name: str) -> str:
    kind = collective_kind(name)
    if kind in ("send", "recv"):
        return "send" if kind == "send" else "receive"
    return "collective"


def read_step_ops(path: Path, rank: int, windows: dict, steps: list[int], log: IssueLog) -> dict:
    """Operators starting inside the chosen steps' windows (second streamed pass), ms from the window start:
    GPU kernels when the trace has device activity, else the top-level operators of the training thread and
    the backend's collective slices (gloo:*)."""
    from reportgen.model import StepOps

    wins = sorted((windows[s][0], windows[s][1], s) for s in steps if s in windows)
    if not wins:
        return {}
    main = {windows[s][2] for s in windows}
    starts = np.array([w[0] for w in wins])
    dev: dict = {s: [] for _, _, s in wins}
    cpu: dict = {s: [] for _, _, s in wins}
    procs: dict = {}  # pid -> its label ("GPU 0") or name; (pid, tid) -> thread name ("stream 7")
    # the launches (cudaLaunchKernel, ...) of a step happen in its host ProfilerStep window
    hwins = sorted((windows[s][3], windows[s][4], s) for _, _, s in wins if len(windows[s]) > 4)
    hstarts = np.array([w[0] for w in hwins])
    launches: dict = {s: [] for _, _, s in wins}
    maybe: list = []  # correlation ids of kernels without a collective's name
    # every launch and every collective host op, to find the kernels a collective launched (custom all-to-all)
    rt = (array("q"), array("d"), array("l"))
    hc = (array("d"), array("d"), array("l"), [])
    threads: dict = {}
    try:
        for e in trace_events(path):
            if e.get("ph") == "M":
                _name_meta(e, procs)
                continue
            if e.get("ph") != "X":
                continue
            ts, dur = _num(e.get("ts")), _num(e.get("dur"))
            if math.isnan(ts) or math.isnan(dur):
                continue
            cat = (e.get("cat") or "").lower() if isinstance(e.get("cat"), str) else ""
            if is_runtime_cat(cat) or ((cat in HOST_OP_CATS or cat == "user_annotation")
                                       and HOST_COMM_RE.match(str(e.get("name") or ""))):
                args = e.get("args")
                tid = threads.setdefault((e.get("pid"), e.get("tid")), len(threads))
                if is_runtime_cat(cat):
                    c = _corr(args.get("correlation")) if isinstance(args, dict) else -1
                    if c >= 0:
                        rt[0].append(c)
                        rt[1].append(ts)
                        rt[2].append(tid)
                else:
                    coll = args.get("Collective name") if isinstance(args, dict) else None
                    hc[0].append(ts)
                    hc[1].append(ts + dur)
                    hc[2].append(tid)
                    hc[3].append(coll if isinstance(coll, str) and coll else str(e.get("name")))
            if is_runtime_cat(cat) and hwins:
                j = int(np.searchsorted(hstarts, ts, side="right")) - 1
                if j >= 0 and ts < hwins[j][1] and isinstance(e.get("name"), str):
                    args = e.get("args")
                    launches[hwins[j][2]].append((ts, dur, e["name"], (e.get("pid"), e.get("tid")),
                                                  _corr(args.get("correlation")) if isinstance(args, dict) else -1))
                continue
            i = int(np.searchsorted(starts, ts, side="right")) - 1
            if i < 0 or ts >= wins[i][1]:
                continue
            s = wins[i][2]
            name = e.get("name") or ""
            if cat in DEVICE_CATS:
                comm = is_comm_kernel(name)
                args = e.get("args")
                c = _corr(args.get("correlation")) if isinstance(args, dict) else -1
                dev[s].append((ts, dur, collective_kind(name) if comm else kernel_type(name),
                               _exec_class(name) if comm else "compute", (e.get("pid"), e.get("tid")), c))
                if not comm and cat == "kernel" and c >= 0:
                    maybe.append(c)
            elif cat == "user_annotation" and name.startswith("gloo:"):
                cpu[s].append((ts, dur, name, _exec_class(name), True, (e.get("pid"), e.get("tid"))))
            elif cat in HOST_OP_CATS and (e.get("pid"), e.get("tid")) in main and not HOST_COMM_RE.match(name):
                cpu[s].append((ts, dur, name, "compute", False, (e.get("pid"), e.get("tid"))))
    except TRACE_ERRORS:
        pass
    by_op = _kernels_of_collectives(rt, hc, maybe)
    if by_op:  # kernels launched inside a collective's host op are communication, as the loader counts them
        for s_, rows_ in dev.items():
            dev[s_] = [(r[0], r[1], collective_kind(by_op[r[5]]), _exec_class(by_op[r[5]]), r[4], r[5])
                       if r[3] == "compute" and r[5] in by_op else r for r in rows_]
    out = {}
    use_dev = any(dev.values())
    for a, b, s in wins:
        if use_dev:
            rows = sorted(dev[s], key=lambda r: r[:4])
        else:  # top-level operators only (a nested operator is inside its parent's span)
            rows, end = [], -math.inf
            for ts, dur, name, cls, coll, where in sorted(cpu[s], key=lambda x: (x[0], -x[1])):
                if coll:
                    rows.append((ts, dur, name, cls, where))
                elif ts >= end:
                    rows.append((ts, dur, name, cls, where))
                    end = ts + dur
            rows.sort(key=lambda r: r[:4])
        if not rows:
            continue
        o = StepOps(rank=rank, step=s, source=log.rel(path), step_ms=(b - a) / 1e3,
                    names=[r[2] for r in rows], classes=[r[3] for r in rows],
                    start=np.array([(r[0] - a) / 1e3 for r in rows]),
                    dur=np.array([r[1] / 1e3 for r in rows]),
                    window=f"ProfilerStep#{s} ({'device kernels' if use_dev else 'CPU operators'})",
                    # CPU-only traces: the operators are the "device" (lanes by class as before)
                    lanes=[_lane_name(procs, r[4], True) for r in rows] if use_dev else [])
        if use_dev and launches[s]:  # the host dispatch: each launch with the kernel of its correlation id
            ev = sorted(launches[s], key=lambda x: -x[1])[:MAX_LAUNCHES]
            ev.sort(key=lambda x: x[0])
            by_corr = {r[5]: i for i, r in enumerate(rows) if r[5] >= 0}
            o.host_names = [x[2] for x in ev]
            o.host_lanes = [_lane_name(procs, x[3], False) for x in ev]
            o.host_start = [(x[0] - a) / 1e3 for x in ev]
            o.host_dur = [x[1] / 1e3 for x in ev]
            o.host_launch = [by_corr.get(x[4], -1) if x[4] >= 0 else -1 for x in ev]
        out[s] = o
    return out


def _kernels_of_collectives(rt: tuple, hc: tuple, corrs: list) -> dict:
    """Correlation id -> the collective's name, for the kernels (`corrs`) launched inside a collective's host op on
    the same thread; `rt` = (correlation, ts, thread) arrays of the launches, `hc` = (start, end, thread, name) of
    the host ops."""
    if not corrs or not len(hc[0]) or not len(rt[0]):
        return {}
    return _containing_op(rt[0], rt[1], rt[2], hc, np.asarray(corrs, dtype="int64"), list(corrs))


MAX_LAUNCHES = 4000  # host launch slices kept per step (the longest), before the timeline's own cap


MAX_LANE_CHARS = 80


def _name_meta(e: dict, names: dict) -> None:
    """Kineto's metadata events: `process_name` / `process_labels` ("GPU 0") of a pid, `thread_name` ("stream 7")
    of a (pid, tid). A label wins over the process name (a GPU's process is named after the Python process)."""
    args = e.get("args")
    if not isinstance(args, dict):
        return
    kind = e.get("name")
    if kind == "process_labels" and isinstance(args.get("labels"), str):
        names[("label", e.get("pid"))] = args["labels"].strip()
    elif kind == "process_name" and isinstance(args.get("name"), str):
        names[("name", e.get("pid"))] = args["name"].strip()
    elif kind == "thread_name" and isinstance(args.get("name"), str):
        names[(e.get("pid"), e.get("tid"))] = args["name"].strip()


def _lane_name(names: dict, where: tuple, device: bool) -> str:
    """"GPU 0 · stream 7" from the trace's metadata; without it the stream (or thread) number."""
    pid, tid = where
    proc = names.get(("label", pid)) or names.get(("name", pid)) or ""
    thread = names.get((pid, tid)) or (f"stream {tid}" if device else f"thread {tid}")
    return f"{proc} · {thread}"[:MAX_LANE_CHARS] if proc else thread[:MAX_LANE_CHARS]


def load_execution(layout, run, data, ranks: list[int], log: IssueLog) -> bool:
    """Fill `data` (ExecutionData) from the ranks' Kineto traces; False when no trace has step windows."""
    wins = {}
    for r in ranks:
        p = layout.ranks[r].first("kineto_trace")
        if p is not None:
            w = step_windows(p)
            if w:
                wins[r] = (p, w)
    if not wins:
        return False
    wanted = [s for s in data.steps if any(s in w for _, w in wins.values())]
    if not wanted:
        common = sorted(set.intersection(*(set(w) for _, w in wins.values())))
        pool = common or sorted(next(iter(wins.values()))[1])
        pick = pool[len(pool) // 2]
        if data.steps:
            data.notes.append(f"steps {', '.join(map(str, data.steps))} are not in the traces; step {pick} is shown")
        wanted = [pick]
        data.reasons[pick] = "the middle step of the traces"
    data.steps = wanted
    for r, (p, w) in wins.items():
        got = read_step_ops(p, r, w, wanted, log)
        for s, o in got.items():
            data.ops.setdefault(s, {})[r] = o
        missing = [s for s in wanted if s not in got]
        if missing:
            data.notes.append(f"rank {r}: no operators in step(s) {', '.join(map(str, missing))} of its trace")
    return True


# --- idle hook (reportgen.idle owns the method; this only hands it the device events the build already has) -------


def _idle_hook(acc: _Acc, out: KinetoRank, log: IssueLog, path: Path):
    """The device's idle time by cause per step window and the launch statistics (`reportgen.idle.breakdown`), from
    the build's device events (`out.events`: start, end, stream, launch, communication, windows; partial steps left
    out) or, without them, from the pass's arrays."""
    if out.device != "gpu" or not len(acc.dev_s):
        return None
    from reportgen import idle

    try:
        # the host's collective calls: a CPU backend (gloo) blocks the calling thread until every peer arrived
        hcomm = (np.frombuffer(acc.hc_s, dtype="float64"), np.frombuffer(acc.hc_e, dtype="float64")) \
            if len(acc.hc_s) else None
        ev = getattr(out, "events", None)
        if ev is not None:
            wins = [w for w in ev.windows if w[0] not in ev.partial] or list(ev.windows)
            names = np.array([str(t[1]) if isinstance(t, tuple) and len(t) > 1 else str(t) for t in ev.streams]
                             or [""], dtype=object)
            stream = names[np.clip(np.asarray(ev.stream, dtype="int64"), 0, len(names) - 1)] if len(ev.streams) \
                else None
            return idle.breakdown(ev.start, ev.end, ev.comm, stream, ev.launch, wins, host_comm=hcomm)
        launch = idle.launch_times(acc.rt_corr, acc.rt_ts, acc.dev_corr)
        comm = getattr(acc, "dev_comm", None)
        return idle.breakdown(np.frombuffer(acc.dev_s, dtype="float64"), np.frombuffer(acc.dev_e, dtype="float64"),
                              np.frombuffer(comm, dtype="int8").astype(bool), None, launch, _windows(acc),
                              host_comm=hcomm)
    except (ValueError, TypeError, IndexError, AttributeError, NameError) as err:
        log.add(path, f"idle time by cause not computed ({type(err).__name__}: {str(err)[:120]})", "info")
        return None
