"""PyTorch profiler (Kineto) traces, `*.pt.trace.json[.gz]`, one per rank: everything the report needs in one
streamed pass (ijson; bounded by compact arrays of interval ends, never a list of event dicts).

What is read (Kineto's Chrome-trace export, as `torch.profiler` writes it):

* the header before `traceEvents`: `distributedInfo` (backend, rank, world_size, `pg_config`: process groups
  with their ranks), `deviceProperties` (GPU name, `totalGlobalMem` in bytes), `host_name`;
* `ProfilerStep#N` slices (host clock, µs): the step windows. Kineto puts device events on the same clock;
* device activity (`cat` kernel / gpu_memcpy / gpu_memset; µs): communication kernels are NCCL's
  (`ncclDevKernel_*`, `ncclKernel_*`, `nccl:*`) and HCCL's (`hcom_*`, `hccl*`), everything else is computation.
  NCCL kernels of PyTorch >= 2.1 carry `Collective name`, `Process Group Name` and, later, `Seq`;
* host operators (`cat` cpu_op): per-operator self time (nesting per thread), and, for a run without any
  device activity (CPU training with gloo), the device *is* the CPU: computation is the time covered by operators
  of the step's thread, communication the `gloo:*` work slices of gloo's worker threads;
* `[memory]` instant events (`Total Allocated` / `Total Reserved`, bytes; `Device Type` 1 = CUDA, 0 = CPU).

Per step (HTA's temporal and overlap breakdowns, written as Ascend's step_trace_time.csv columns):
computing = union of computation inside the step window; communication = union of communication;
overlapped = their intersection; communication not overlapped = communication − overlapped; free = step −
computing − communication not overlapped.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from reportgen import intervals as iv
from reportgen.loaders.common import IssueLog, note_unusable_events, to_float
from reportgen.loaders.memory import _downsample
from reportgen.loaders.common import open_binary as open_maybe_gzip, TRACE_ERRORS, trace_cut, trace_events
from reportgen.model import (COMM_LINK_COLUMNS, COMM_OP_COLUMNS, COMM_TIME_COLUMNS, DataIssue, MODERN_PHASES,
                             Communication, Memory, OP_DETAIL_COLUMNS, Operators, RankData, StepTrace,
                             TimelineSummary)

STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")
RUNTIME_CATS = ("cuda_runtime", "cuda_driver", "runtime", "privateuse1_runtime")
COMM_KERNEL_RE = re.compile(r"^(?:void\s+)?(?:nccl|hcom_|hccl|c10d::|rccl)", re.I)
HOST_COMM_RE = re.compile(r"^(?:gloo:|nccl:|hccl:|c10d::|record_param_comms|torch\.distributed)", re.I)
KIND_RE = re.compile(r"(all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|broadcast|send_?recv|barrier|"
                     r"reduce|send|recv|gather|scatter)", re.I)
HEADER_BYTES = 1 << 20
READ_NOTE = ("Kineto traces: read distributedInfo (world size, process groups), deviceProperties, ProfilerStep#N "
             "windows, GPU kernels / memcpy / memset (NCCL and HCCL kernels as communication), cpu_op operators "
             "(self time), gloo:* work slices, [memory] events; not read: python_function and cuda_runtime/driver "
             "events, flow (ac2g) events, operator input shapes and stacks")
KERNEL_NAME_CAP = 160


def collective_kind(name: str) -> str:
    """`ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)` / `gloo:all_reduce` -> `allreduce`."""
    m = KIND_RE.search(name.replace("To", "to"))
    return m.group(1).lower().replace("_", "") if m else "collective"


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
    """Compact accumulators of one streamed pass."""

    steps: dict = field(default_factory=dict)  # step -> (start µs, end µs, (pid, tid))
    dev_s: array = field(default_factory=lambda: array("d"))
    dev_e: array = field(default_factory=lambda: array("d"))
    dev_comm: array = field(default_factory=lambda: array("b"))
    dev_corr: array = field(default_factory=lambda: array("q"))  # launch correlation id (-1: none)
    rt_corr: array = field(default_factory=lambda: array("q"))  # host runtime launches: correlation, ts
    rt_ts: array = field(default_factory=lambda: array("d"))
    dev_windows: Optional[list] = None  # [(step, start µs, end µs)] on the device, when launches map kernels
    streams: set = field(default_factory=set)
    devices: dict = field(default_factory=dict)  # device id -> kernels
    kernels: dict = field(default_factory=dict)  # (comm, name) -> [count, total µs, max µs]
    colls: list = field(default_factory=list)  # (start µs, dur µs, kind, group, seq, name)
    cpu_s: array = field(default_factory=lambda: array("d"))
    cpu_e: array = field(default_factory=lambda: array("d"))
    cpu_tid: array = field(default_factory=lambda: array("l"))
    cpu_name: array = field(default_factory=lambda: array("l"))
    names: dict = field(default_factory=dict)  # name -> id
    tids: dict = field(default_factory=dict)  # (pid, tid) -> id
    mem: dict = field(default_factory=dict)  # (device type, device id) -> (ts array, allocated array, reserved)
    n_events: int = 0


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
                if name.startswith("ProfilerStep#"):
                    m = STEP_RE.match(name)
                    if m:
                        acc.steps[int(m.group(1))] = (ts, ts + dur, (e.get("pid"), e.get("tid")))
                    continue
                cat = str(e.get("cat") or "").lower()
                if cat in DEVICE_CATS:
                    args = e.get("args")
                    args = args if isinstance(args, dict) else {}
                    comm = bool(COMM_KERNEL_RE.match(name))
                    acc.dev_s.append(ts)
                    acc.dev_e.append(ts + dur)
                    acc.dev_comm.append(1 if comm else 0)
                    acc.dev_corr.append(_corr(args.get("correlation")))
                    acc.streams.add((e.get("pid"), e.get("tid")))
                    dev = args.get("device", e.get("pid"))
                    acc.devices[dev] = acc.devices.get(dev, 0) + 1
                    key = (comm, name if cat == "kernel" else f"[{cat}] {name}")
                    k = acc.kernels.get(key)
                    if k is None:
                        acc.kernels[key] = [1, dur, dur]
                    else:
                        k[0] += 1
                        k[1] += dur
                        k[2] = max(k[2], dur)
                    if comm:
                        kind = collective_kind(str(args.get("Collective name") or name))
                        acc.colls.append((ts, dur, kind, args.get("Process Group Name"), args.get("Seq"), name))
                elif cat in RUNTIME_CATS:
                    args = e.get("args")
                    c = _corr(args.get("correlation")) if isinstance(args, dict) else -1
                    if c >= 0:
                        acc.rt_corr.append(c)
                        acc.rt_ts.append(ts)
                elif cat == "user_annotation" and name.startswith("gloo:"):
                    acc.colls.append((ts, dur, collective_kind(name), None, None, name))
                    acc.kernels[(True, name)] = _add(acc.kernels.get((True, name)), dur)
                elif cat == "cpu_op":
                    tid = acc.tids.setdefault((e.get("pid"), e.get("tid")), len(acc.tids))
                    nid = acc.names.setdefault(name, len(acc.names))
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


def _corr(v) -> int:
    try:
        c = int(v)
    except (TypeError, ValueError, OverflowError):
        return -1
    return c if 0 <= c < 2**62 else -1


def device_windows(cpu: list, rt_corr, rt_ts, k_corr, k_s, k_e) -> Optional[list]:
    """Step windows on the device, as torch_npu and HTA map them: a kernel belongs to the step whose
    ProfilerStep window holds its host launch (same correlation id); a step's device range starts at its first
    kernel and ends where the next step's first kernel starts (the last one at its last kernel's end).
    None when some step has no mapped kernel (then the host windows are used)."""
    rc, rt = np.asarray(rt_corr, dtype="int64"), np.asarray(rt_ts, dtype="float64")
    kc = np.asarray(k_corr, dtype="int64")
    ks, ke = np.asarray(k_s, dtype="float64"), np.asarray(k_e, dtype="float64")
    if not len(cpu) or not len(rc) or not len(kc):
        return None
    order = np.argsort(rc, kind="stable")
    rc, rt = rc[order], rt[order]
    pos = np.clip(np.searchsorted(rc, kc), 0, len(rc) - 1)
    found = (rc[pos] == kc) & (kc >= 0)
    launch = np.where(found, rt[pos], np.nan)
    starts = np.array([w[1] for w in cpu])
    ends = np.array([w[2] for w in cpu])
    idx = np.searchsorted(starts, launch, side="right") - 1
    ok = found & (idx >= 0)
    ok[ok] &= launch[ok] < ends[idx[ok]]
    if not ok.any():
        return None
    first = np.full(len(cpu), np.inf)
    last = np.full(len(cpu), -np.inf)
    np.minimum.at(first, idx[ok], ks[ok])
    np.maximum.at(last, idx[ok], ke[ok])
    if not np.isfinite(first).all():
        return None
    out = []
    for i, (step, _a, _b) in enumerate(cpu):
        end = first[i + 1] if i + 1 < len(cpu) else last[i]
        if not end > first[i]:
            return None
        out.append((step, float(first[i]), float(end)))
    return out


def _add(k, dur):
    if k is None:
        return [1, dur, dur]
    k[0] += 1
    k[1] += dur
    k[2] = max(k[2], dur)
    return k


@dataclass
class KinetoRank:
    step_trace: Optional[StepTrace] = None
    communication: Optional[Communication] = None
    operators: Optional[Operators] = None
    memory: Optional[Memory] = None
    idle: object = None  # analysis.idle.IdleBreakdown (`_idle_hook`, at the end of this module)
    timeline: Optional[TimelineSummary] = None
    device: str = "cpu"  # "gpu" (device activity) or "cpu"


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


def _build(acc: _Acc, head: dict, dist: dict, info, path: Path, log: IssueLog) -> KinetoRank:
    out = KinetoRank()
    rel = log.rel(path)
    out.device = "gpu" if len(acc.dev_s) else "cpu"
    if out.device == "gpu" and acc.devices and info.device is None:
        dev = max(acc.devices, key=acc.devices.get)
        info.device = int(dev) if isinstance(dev, (int, float)) else None
    if out.device == "gpu":
        acc.dev_windows = device_windows(sorted((k, v[0], v[1]) for k, v in acc.steps.items()), acc.rt_corr,
                                         acc.rt_ts, acc.dev_corr, acc.dev_s, acc.dev_e)
        if acc.steps and acc.dev_windows is None:
            log.add(path, "kernels could not be mapped to steps through their launches (no correlation ids, or a "
                    "step without kernels): the device time is cut at the host's ProfilerStep windows", "info")
    comp, comm = _intervals(acc, out.device)
    out.step_trace = _step_trace(acc, comp, comm, rel, out.device)
    if out.step_trace is None:
        log.add(path, "no ProfilerStep#N markers in the trace (profiled without a schedule?); no step times, "
                "no per-step breakdown or communication", "info")
    out.communication = _communication(acc, out.step_trace, rel, dist, out.device)
    out.operators = _operators(acc, rel, out.device)
    out.memory = _memory(acc, head, rel)
    out.idle = _idle_hook(acc, out, log, path)
    out.timeline = _timeline(acc, comp, comm, path, rel)
    if not acc.colls and (info.rank_size or 1) > 1:
        log.add(path, "no collective found in the trace (NCCL/HCCL kernels or gloo:* slices); no communication "
                "data for this rank", "warning")
    return out


def _intervals(acc: _Acc, device: str) -> tuple[iv.Intervals, iv.Intervals]:
    """Merged computation and communication intervals (µs) of the device."""
    if device == "gpu":
        s, e = np.frombuffer(acc.dev_s, dtype="float64"), np.frombuffer(acc.dev_e, dtype="float64")
        c = np.frombuffer(acc.dev_comm, dtype="int8").astype(bool)
        return iv.merge(s[~c], e[~c]), iv.merge(s[c], e[c])
    s, e = np.frombuffer(acc.cpu_s, dtype="float64"), np.frombuffer(acc.cpu_e, dtype="float64")
    tids = np.asarray(acc.cpu_tid, dtype="int64")
    main = {acc.tids[t] for _, _, t in acc.steps.values() if t in acc.tids}
    if not main and len(tids):
        main = {int(np.bincount(tids).argmax())}
    comm_names = np.array([bool(HOST_COMM_RE.match(n)) for n in acc.names], dtype=bool)
    nid = np.asarray(acc.cpu_name, dtype="int64")
    keep = np.isin(tids, list(main)) & ~(comm_names[nid] if len(nid) else np.zeros(0, bool))
    cs = np.array([c[0] for c in acc.colls], dtype="float64")
    ce = cs + np.array([c[1] for c in acc.colls], dtype="float64")
    return iv.merge(s[keep], e[keep]), iv.merge(cs, ce)


def _windows(acc: _Acc) -> list[tuple[int, float, float]]:
    if acc.dev_windows is not None:
        return acc.dev_windows
    return sorted((k, v[0], v[1]) for k, v in acc.steps.items())


def _step_trace(acc: _Acc, comp: iv.Intervals, comm: iv.Intervals, rel: str, device: str
                ) -> Optional[StepTrace]:
    device_label = ("GPU kernels, steps mapped through their launches" if acc.dev_windows is not None
                    else "GPU kernels, cut at the host step windows" if device == "gpu"
                    else "CPU operators and gloo slices")
    rows = []
    both = iv.intersect(comp, comm)
    for step, a, b in _windows(acc):
        w = (np.array([a]), np.array([b]))
        c = iv.total(iv.intersect(comp, w))
        m = iv.total(iv.intersect(comm, w))
        o = iv.total(iv.intersect(both, w))
        tot = b - a
        nov = m - o
        rows.append({"step": step, "computing": c / 1e3, "communication_not_overlapped": nov / 1e3,
                     "overlapped": o / 1e3, "communication": m / 1e3, "free": max(0.0, tot - c - nov) / 1e3,
                     "stage": tot / 1e3, "bubble": 0.0, "communication_not_overlapped_exclude_receive": nov / 1e3,
                     "preparing": math.nan, "total": tot / 1e3})
    if not rows:
        return None
    data: dict = {"step": pd.array([r["step"] for r in rows], dtype="Int64")}
    for p in MODERN_PHASES:
        data[p] = np.array([r[p] for r in rows], dtype="float64")
    return StepTrace(kind="modern", steps=pd.DataFrame(data), source=rel,
                     label=f"computed from the Kineto trace ({device_label}): computing / communication / "
                           "overlapped / free per ProfilerStep, as HTA's temporal and overlap breakdowns")


def _default_group(dist: dict) -> str:
    for pg in dist.get("pg_config") or []:
        if isinstance(pg, dict) and pg.get("pg_desc") == "default_pg":
            return str(pg.get("pg_name"))
    return "0"


def _communication(acc: _Acc, st: Optional[StepTrace], rel: str, dist: dict, device: str
                   ) -> Optional[Communication]:
    if not acc.colls or st is None:
        return None
    wins = _windows(acc)
    starts = np.array([w[1] for w in wins])
    ends = np.array([w[2] for w in wins])
    default = _default_group(dist)
    inst = []
    order: dict = {}
    for ts, dur, kind, group, seq, name in sorted(acc.colls, key=lambda c: c[0]):
        i = int(np.searchsorted(starts, ts, side="right")) - 1
        if i < 0 or ts >= ends[i]:
            continue  # outside the profiled steps
        step = wins[i][0]
        g = str(group) if group not in (None, "") else default
        k = order[(step, g, kind)] = order.get((step, g, kind), 0) + 1
        key = f"seq:{seq}" if seq not in (None, "") else f"{step}:{kind}:{k}"
        inst.append({"step": step, "op": f"{kind}#{k}", "group": g, "kind": kind, "key": key,
                     "start_ms": ts / 1e3, "dur_ms": dur / 1e3, "name": name})
    if not inst:
        return None
    instances = pd.DataFrame(inst)
    comm = Communication(source=rel, producer="kineto", steps=pd.DataFrame(), ops=pd.DataFrame(),
                         links=pd.DataFrame(columns=list(COMM_LINK_COLUMNS)),
                         unit_note=("Kineto traces: a collective's communication time is its elapsed time on the "
                                    + ("GPU (NCCL kernel)" if device == "gpu" else "CPU (the backend's work slice)")
                                    + ", wait included; wait = elapsed − the shortest elapsed of the same collective "
                                    "on any rank (the last rank to arrive waits least), transit = that shortest "
                                    "elapsed"))
    comm.instances = instances
    _fill_ops(comm, np.full(len(instances), math.nan))
    return comm


def _fill_ops(comm: Communication, wait: np.ndarray) -> None:
    """Per (step, op, group) rows and per-step totals from the instances and their waits (NaN: unknown)."""
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
    g = f.groupby("step", sort=True)
    steps = pd.DataFrame({"step": pd.array(list(g.groups), dtype="Int64")})
    for c in COMM_TIME_COLUMNS:
        steps[c] = g[c].sum(min_count=1).to_numpy(dtype="float64")
    comm.steps = steps


def run_note(ranks: dict[int, RankData]) -> str:
    """One data-quality line for the run: what was read, and which ranks had no device activity."""
    cpu = sorted(r for r, d in ranks.items() if d.step_trace is not None and "CPU operators" in d.step_trace.label)
    if cpu:
        which = "any rank" if len(cpu) == len(ranks) else f"rank(s) {', '.join(map(str, cpu[:10]))}"
        return (READ_NOTE + f". No GPU/NPU activity on {which}: the CPU is the device (computation = operators of "
                "the training thread, communication = the backend's collective work slices, gloo:*)")
    return READ_NOTE


def match_collectives(ranks: dict[int, RankData], issues: list[DataIssue]) -> None:
    """Pair every collective instance across the ranks that recorded it and set each rank's wait and transit."""
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


def _operators(acc: _Acc, rel: str, device: str) -> Optional[Operators]:
    rows = []
    for (comm, name), (cnt, tot, _mx) in acc.kernels.items():
        side = "communication" if comm else "gpu"
        rows.append({"side": side, "name": name[:KERNEL_NAME_CAP],
                     "op_type": collective_kind(name) if comm else kernel_type(name.split("] ", 1)[-1]),
                     "count": float(cnt), "total_ms": tot / 1e3, "avg_ms": tot / 1e3 / cnt, "share": math.nan})
    if len(acc.cpu_s):
        self_us = _self_times(acc)
        counts = np.bincount(np.asarray(acc.cpu_name, dtype="int64"), minlength=len(acc.names))
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


def _self_times(acc: _Acc) -> np.ndarray:
    """Self time (µs) per operator name: its duration minus its direct children's, per thread."""
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
    return np.bincount(nid, weights=self_t, minlength=len(acc.names))


def _memory(acc: _Acc, head: dict, rel: str) -> Optional[Memory]:
    if not acc.mem:
        return None
    # the accelerator's allocator when there is one (Device Type 1 = CUDA), else the CPU's
    gpu = [k for k in acc.mem if k[0] not in (0, -1)]
    key = max(gpu or list(acc.mem), key=lambda k: len(acc.mem[k][0]))
    ts, alloc, res = (np.frombuffer(a, dtype="float64") for a in acc.mem[key])
    order = np.argsort(ts, kind="stable")
    ts, alloc, res = ts[order], alloc[order], res[order]
    where = "CPU" if key[0] == 0 else f"device {key[1]}"
    out = Memory(source=rel, curve_x="ms since the first sample", sources=[rel])
    has_res = bool(np.nanmax(res) > 0) if len(res) else False
    out.allocated_peak_mb = float(np.nanmax(alloc)) / 1e6
    out.peak_mb = float(np.nanmax(res)) / 1e6 if has_res else out.allocated_peak_mb
    curve = pd.DataFrame({"x": (ts - ts[0]) / 1e3, "used_mb": (res if has_res else alloc) / 1e6,
                          "allocated_mb": alloc / 1e6})
    out.curve = _downsample(curve, "used_mb")  # at most MAX_CURVE_POINTS, index reset
    props = head.get("deviceProperties") or []
    if key[0] not in (0, -1) and isinstance(props, list):
        for p in props:
            if isinstance(p, dict) and p.get("id") == key[1] and isinstance(p.get("totalGlobalMem"), (int, float)):
                out.capacity_mb = float(p["totalGlobalMem"]) / 1e6
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
        n_streams=len(acc.streams) or len({t for t in acc.tids}), compute_ms=iv.total(comp) / 1e3,
        communication_ms=iv.total(comm) / 1e3, pure_communication_ms=iv.total(iv.subtract(comm, comp)) / 1e3,
        free_ms=(span - iv.total(union) / 1e3) if span is not None else None, trace_bytes=size)


# --- execution view (Marey): the device operators of chosen steps --------------------------------------------


def step_windows(path: Path) -> dict[int, tuple]:
    """Step windows (µs), the (pid, tid) of the thread recording ProfilerStep and the host ProfilerStep window
    (first streamed pass): (start, end, thread, host start, host end); start and end on the device when kernels
    map to steps through their launches (as the loader does), else the host window."""
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
            if isinstance(name, str) and name.startswith("ProfilerStep#"):
                m = STEP_RE.match(name)
                if m:
                    out[int(m.group(1))] = (ts, ts + dur, (e.get("pid"), e.get("tid")), ts, ts + dur)
                continue
            cat = str(e.get("cat") or "").lower()
            if cat in DEVICE_CATS or cat in RUNTIME_CATS:
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
    dev = device_windows(sorted((k, v[0], v[1]) for k, v in out.items()), rc, rt, kc, ks, ke) if len(ks) else None
    if dev is not None:  # the host window stays beside the device one (the launches happen in it)
        out = {step: (a, b, out[step][2], out[step][3], out[step][4]) for step, a, b in dev}
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
            if cat in RUNTIME_CATS and hwins:
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
                comm = bool(COMM_KERNEL_RE.match(name))
                args = e.get("args")
                dev[s].append((ts, dur, collective_kind(name) if comm else kernel_type(name),
                               _exec_class(name) if comm else "compute", (e.get("pid"), e.get("tid")),
                               _corr(args.get("correlation")) if isinstance(args, dict) else -1))
            elif cat == "user_annotation" and name.startswith("gloo:"):
                cpu[s].append((ts, dur, name, _exec_class(name), True, (e.get("pid"), e.get("tid"))))
            elif cat == "cpu_op" and (e.get("pid"), e.get("tid")) in main and not HOST_COMM_RE.match(name):
                cpu[s].append((ts, dur, name, "compute", False, (e.get("pid"), e.get("tid"))))
    except TRACE_ERRORS:
        pass
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


# --- idle hook (analysis.idle owns the method; this only hands it the device events the build already has) -------


def _idle_hook(acc: _Acc, out: KinetoRank, log: IssueLog, path: Path):
    """The device's idle time by cause per step window and the launch statistics (`analysis.idle.breakdown`), from
    the build's device events (`out.events`: start, end, stream, launch, communication, windows; partial steps left
    out) or, without them, from the pass's arrays."""
    if out.device != "gpu" or not len(acc.dev_s):
        return None
    from reportgen.analysis import idle

    try:
        ev = getattr(out, "events", None)
        if ev is not None:
            wins = [w for w in ev.windows if w[0] not in ev.partial] or list(ev.windows)
            names = np.array([str(t[1]) if isinstance(t, tuple) and len(t) > 1 else str(t) for t in ev.streams]
                             or [""], dtype=object)
            stream = names[np.clip(np.asarray(ev.stream, dtype="int64"), 0, len(names) - 1)] if len(ev.streams) \
                else None
            return idle.breakdown(ev.start, ev.end, ev.comm, stream, ev.launch, wins)
        launch = idle.launch_times(acc.rt_corr, acc.rt_ts, acc.dev_corr)
        comm = getattr(acc, "dev_comm", None)
        return idle.breakdown(np.frombuffer(acc.dev_s, dtype="float64"), np.frombuffer(acc.dev_e, dtype="float64"),
                              np.frombuffer(comm, dtype="int8").astype(bool), None, launch, _windows(acc))
    except (ValueError, TypeError, IndexError, AttributeError, NameError) as err:
        log.add(path, f"idle time by cause not computed ({type(err).__name__}: {str(err)[:120]})", "info")
        return None
