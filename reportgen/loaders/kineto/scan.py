"""The one pass over a Kineto trace: compact accumulators (arrays of interval ends, never a list of event dicts)
filled a batch at a time -- the whole trace as msgspec's typed events when `trace_typed` reads it (up to
`trace_typed.TYPED_MAX_BYTES`), else the stream's batches -- each kind of event a column at a time where it can be,
and the duplicated events named after the pass.
"""

from __future__ import annotations

import math
from array import array
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from reportgen.dataquality import dq
from reportgen.loaders import op_flops
from reportgen.loaders.issuelog import IssueLog
from reportgen.pools import gc_paused
from reportgen.loaders.schema import KINETO_TRACE, TraceDoor
from reportgen.loaders.traces import TRACE_ERRORS, note_unusable_events, trace_batches, trace_cut
from reportgen.loaders.kineto.events import (DEVICE_CATS, HOST_COMM_RE, HOST_OP_CATS, STEP_RE, _corr, _num,
                                             collective_kind, is_comm_kernel)
from reportgen.loaders.kineto.flops import _flop_op


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
    cpu_ext: array = field(default_factory=lambda: array("q"))  # the op's External id (-1: none): tells copies apart
    names: dict = field(default_factory=dict)  # host op name -> id
    tids: dict = field(default_factory=dict)  # (pid, tid) -> id (host threads)
    mem: dict = field(default_factory=dict)  # (device type, device id) -> (ts array, allocated array, reserved)
    # operators with FLOPs (GEMMs with shapes, anything with a with_flops count): (start µs, end µs, thread, name,
    # profiler flops or NaN, flops from shapes or NaN, shapes text, dtype)
    fl: list = field(default_factory=list)
    n_events: int = 0
    # complete events without a category ("cat" absent, empty or not text: Kineto writes one on every event), which
    # are left out (their kind is unknown): [count, first]
    no_cat: list = field(default_factory=lambda: [0, ""])
    # per `[memory]` curve of `mem`: each sample's absent fields (bits of MEM_FIELDS); the fields some sample carries
    mem_miss: dict = field(default_factory=dict)
    mem_carried: int = 0

    @property
    def streams(self) -> set:
        return set(self.stream_ids)


def _scan(path: Path, acc: _Acc, log: IssueLog) -> bool:
    """One pass over the events (a batch at a time: the typed events of a trace msgspec reads whole, else the
    stream's), each event's fields read from the batch's columns; False when the file broke off (what was read is
    kept). The cyclic collector is paused until the events are gone: its first pass after the decode would walk
    every args object of the trace (~0.4 s for the A100 sample's 109k events, twice the decode), and the pass
    makes no cycle."""
    with gc_paused():
        return _pass(path, acc, log)


def _pass(path: Path, acc: _Acc, log: IssueLog) -> bool:
    unusable = 0
    door = TraceDoor(log, path, KINETO_TRACE)  # lane ids and the args read, by kind (loaders/schema.py TRACE_SCHEMAS)
    cut = False
    try:
        for b in trace_batches(path, log, typed=True):
            lanes = door.events(b)  # (pid, tid) as one lane: "7" and 7 are the same thread; None: skip
            acc.n_events += len(lanes)
            unusable += _complete_events(acc, b, lanes)
            _memory_events(acc, b, lanes)
        return True
    except TRACE_ERRORS as err:
        cut = True
        trace_cut(log, path, err, f"{acc.n_events} event(s) read before the error are used")
        return False
    finally:
        note_unusable_events(log, path, unusable)
        note_schema_gaps(acc, path, log)
        door.close(cut)


_DEVICE, _LAUNCH, _HOST = 1, 2, 3  # what a complete event is, by its category (`_kind`)


def _kind(cat: str) -> int:
    if cat in DEVICE_CATS:
        return _DEVICE
    if cat == "runtime" or cat.endswith("_runtime") or cat.endswith("_driver"):
        return _LAUNCH
    return _HOST if cat in HOST_OP_CATS or cat == "user_annotation" else 0


def _complete_events(acc: _Acc, b, lanes: list) -> int:
    """The complete ("X") events of a batch with a lane and a usable start and duration into the accumulators, each
    kind a column at a time where it can be (launches) and in the batch's order (thread ids are numbered in the
    order the launches and host operators first use them); returns the count of unusable ones."""
    xs = [k for k in b.where("X") if lanes[k] is not None]
    if not xs:
        return 0

    def pick(key: str) -> list:
        col = b.col(key)
        return [col[k] for k in xs]

    names = pick("name")
    if not set(map(type, names)) <= _STR:
        names = [n if isinstance(n, str) else str(n or "") for n in names]
    tsl, durl = nums(pick("ts")), nums(pick("dur"))
    ok = (np.array(tsl, dtype="float64") >= 0) & (np.array(durl, dtype="float64") >= 0)  # (NaN: not usable; as
    good = np.flatnonzero(ok).tolist()  # trace_view.json's reader)
    raw_cats = pick("cat")
    cats, argsx = lower_col(raw_cats), pick("args")
    code = {c: _kind(c) for c in set(cats)}
    kinds = list(map(code.__getitem__, cats))
    for i in good:
        if names[i].startswith("ProfilerStep#"):
            kinds[i] = -1  # (a step's mark is nothing else)
            m = STEP_RE.match(names[i])
            if m:
                ts, dur, cat = tsl[i], durl[i], cats[i]
                if cat.endswith("user_annotation") and cat != "user_annotation":
                    # gpu_user_annotation: the step marker as the GPU lane shows it (a few µs), not a step
                    acc.lane_steps[int(m.group(1))] = (ts, ts + dur)
                else:
                    acc.steps[int(m.group(1))] = (ts, ts + dur, lanes[xs[i]])
    if "" in code or not set(map(type, raw_cats)) <= _STR:  # (an event without a category: rare)
        _no_category(acc, raw_cats, names, tsl, kinds, good)
    ev = b.events
    for i in good:
        if kinds[i] == _DEVICE:
            _device_event(acc, ev[xs[i]], names[i], cats[i], tsl[i], durl[i], lanes[xs[i]])
    launch = [i for i in good if kinds[i] == _LAUNCH]
    corr = [_corr(a.get("correlation")) if isinstance(a, dict) else -1 for a in map(argsx.__getitem__, launch)]
    launch = [(i, c) for i, c in zip(launch, corr) if c >= 0]
    host = [i for i in good if kinds[i] == _HOST]
    tids = acc.tids
    for i in sorted([i for i, _ in launch] + host) if launch and host else (host or [i for i, _ in launch]):
        tids.setdefault(lanes[xs[i]], len(tids))
    if launch:
        acc.rt_corr.extend([c for _, c in launch])
        acc.rt_ts.extend([tsl[i] for i, _ in launch])
        acc.rt_tid.extend([tids[lanes[xs[i]]] for i, _ in launch])
    if host:
        _host_ops(acc, ev, host, names, cats, tsl, durl, argsx, [tids[lanes[xs[i]]] for i in host], xs)
    return len(xs) - len(good)


_STR = frozenset((str,))


def _no_category(acc: _Acc, raw: list, names: list, tsl: list, kinds: list, good: list) -> None:
    """Count the usable complete events whose category is absent, empty or not text (a step's mark, known by its
    name, is read without one): Kineto writes `cat` on every complete event, so such an event is damaged and its
    kind unknown; it is left out (kind 0) and named after the pass (`note_schema_gaps`)."""
    for i in good:
        c = raw[i]
        if kinds[i] != -1 and (type(c) is not str or not c.strip()):
            if not acc.no_cat[0]:
                acc.no_cat[1] = f"{str(names[i])[:40]!r} at ts {tsl[i]}"
            acc.no_cat[0] += 1


def _host_ops(acc: _Acc, ev: list, host: list, names: list, cats: list, tsl: list, durl: list, argsx: list,
              tid: list, xs: list) -> None:
    """The host operators and annotations of a batch (positions `host` of its complete events, in order, on threads
    `tid`): a collective's host ops and gloo's slices one by one (a few), the operators' arrays a column at a
    time."""
    comm = {n: bool(HOST_COMM_RE.match(n)) for n in set(map(names.__getitem__, host))}
    for j, i in enumerate(host):
        name, cat = names[i], cats[i]
        if comm[name]:
            ts, args = tsl[i], argsx[i]
            acc.hc_s.append(ts)
            acc.hc_e.append(ts + durl[i])
            acc.hc_tid.append(tid[j])
            # record_param_comms names its collective in its args
            coll = args.get("Collective name") if isinstance(args, dict) else None
            acc.hc_name.append(coll if isinstance(coll, str) and coll else name)
        if cat == "user_annotation" and name.startswith("gloo:"):  # gloo's work on its own threads: the CPU's
            acc.colls.append((tsl[i], durl[i], collective_kind(name), None, None, name))  # collectives
    ops = [j for j, i in enumerate(host) if cats[i] != "user_annotation"]
    if not ops:
        return
    at = [host[j] for j in ops]
    known = acc.names
    nid = [known.setdefault(names[i], len(known)) for i in at]
    for j, i in zip(ops, at):
        args = argsx[i]
        if names[i] in op_flops.TORCH_FLOP_OPS or "flops" in (args or {}):
            _flop_op(acc, ev[xs[i]], names[i], tsl[i], durl[i], tid[j])
    acc.cpu_s.extend([tsl[i] for i in at])
    acc.cpu_e.extend([tsl[i] + durl[i] for i in at])
    acc.cpu_tid.extend([tid[j] for j in ops])
    acc.cpu_name.extend(nid)
    acc.cpu_ext.extend([_ext(argsx[i]) for i in at])


def _ext(args) -> int:
    """An operator's External id (-1: none or unusable)."""
    x = args.get("External id") if type(args) is dict else None
    return x if type(x) is int and -2 ** 62 < x < 2 ** 62 else -1


def _memory_events(acc: _Acc, b, lanes: list) -> None:
    """The batch's `[memory]` instant events with a lane, in order, into the memory curves."""
    at = sorted(b.where("i") + b.where("I"))
    if not at:
        return
    names = b.col("name")
    at = [k for k in at if names[k] == "[memory]" and lanes[k] is not None]
    ts_col, args_col = b.col("ts"), b.col("args")
    for k, ts in zip(at, nums([ts_col[k] for k in at])):
        _memory_event(acc, args_col[k], ts)


def nums(col: list) -> list:
    """`_num` of every value of a column: plain numbers and nulls at C speed (float() of each, NaN for null), any
    other column value by value."""
    if set(map(type, col)) <= _NUMERIC:
        return np.array(col, dtype="float64").tolist()
    return list(map(_num, col))


_NUMERIC = frozenset((float, int, type(None)))


def lower_col(col: list) -> list:
    """`str(cat or "").lower()` of every value of a column: once per distinct value when every value is text or
    null (the usual column; 1, 1.0 and True are one key in a dict but three texts), else value by value."""
    if set(map(type, col)) <= _TEXT:
        low = {c: str(c or "").lower() for c in set(col)}
        return list(map(low.__getitem__, col))
    return [str(c or "").lower() for c in col]


_TEXT = frozenset((str, type(None)))


MEM_FIELDS = ("Total Allocated", "Total Reserved", "Device Type", "Device Id")  # what a `[memory]` sample needs


def _memory_event(acc: _Acc, a, ts: float) -> None:
    """A `[memory]` instant event (its start `ts` read as `_num` reads it) into the memory curves, with the fields of
    MEM_FIELDS it lacks (absent or null: `note_schema_gaps` leaves it out when another sample of the trace carries
    one of them)."""
    if not isinstance(a, dict):
        a = {}
    miss = 0
    for j, k in enumerate(MEM_FIELDS):
        if a.get(k) is None:
            miss |= 1 << j
    acc.mem_carried |= ~miss & 15
    key = (int(_num(a.get("Device Type", -1)) if not math.isnan(_num(a.get("Device Type", -1))) else -1),
           a.get("Device Id"))
    alloc, res = _num(a.get("Total Allocated")), _num(a.get("Total Reserved"))
    if math.isnan(ts) or (math.isnan(alloc) and not miss & 1):  # (a value the door names: left out as before)
        return
    rec = acc.mem.get(key)
    if rec is None:
        rec = acc.mem[key] = (array("d"), array("d"), array("d"))
        acc.mem_miss[key] = array("b")
    rec[0].append(ts)
    rec[1].append(alloc)
    rec[2].append(res)
    acc.mem_miss[key].append(miss)


def note_schema_gaps(acc: _Acc, path: Path, log: IssueLog) -> None:
    """After the pass: the complete events left out for want of a category, and the `[memory]` samples that lack a
    field of MEM_FIELDS which another sample of the trace carries (a field no sample carries is the writer's schema:
    the samples are read without it, as before; one without `Total Allocated` has no point on the curve), left out
    of the curves and named. A healthy trace names nothing."""
    if acc.no_cat[0]:
        log.add(path, dq("kineto.events-without-category", n=acc.no_cat[0], example=acc.no_cat[1]), "warning",
                "schema drift")
    need = acc.mem_carried | 1  # (a sample without Total Allocated is never a point)
    gone, lacking, first = 0, 0, None  # first: (ts, fields it lacks) of the earliest sample left out
    for key in list(acc.mem):
        miss = np.frombuffer(acc.mem_miss[key], dtype="int8")
        bad = (miss & need) != 0
        if not bad.any():
            continue
        hole = np.flatnonzero(bad & ((miss & acc.mem_carried) != 0))  # (damage: fields other samples carry)
        if len(hole):
            ts = np.frombuffer(acc.mem[key][0], dtype="float64")
            k = int(hole[np.argmin(ts[hole])])
            if first is None or ts[k] < first[0]:
                first = (float(ts[k]), int(miss[k] & acc.mem_carried))
            gone += len(hole)
            lacking |= int(np.bitwise_or.reduce(miss[hole] & acc.mem_carried))
        keep = np.flatnonzero(~bad)
        if not len(keep):
            del acc.mem[key], acc.mem_miss[key]
            continue
        acc.mem[key] = tuple(array("d", np.frombuffer(a, dtype="float64")[keep].tobytes()) for a in acc.mem[key])
        acc.mem_miss[key] = array("b", miss[keep].tobytes())
    if first is not None:
        fields = [", ".join(repr(f) for j, f in enumerate(MEM_FIELDS) if bits >> j & 1) for bits in (lacking, first[1])]
        log.add(path, dq("kineto.memory-events-incomplete", n=gone, fields=fields[0],
                         example=f"ts {first[0]}, without {fields[1]}"), "warning", "schema drift")


def _note_duplicates(acc: _Acc, path: Path, log: IssueLog) -> None:
    """Host operators and device events identical to an earlier one (same thread or stream, name, start, duration
    and External id / correlation id: a duplicated event -- nested calls of one name at one time differ in their
    External id) are named; counted as written. (On the arrays, after the pass: no set of every event.)"""
    for code, cols in (("kineto.duplicate-host-ops", (acc.cpu_s, acc.cpu_e, acc.cpu_tid, acc.cpu_name, acc.cpu_ext)),
                       ("kineto.duplicate-device-events", (acc.dev_s, acc.dev_e, acc.dev_stream, acc.dev_nid,
                                                           acc.dev_corr))):
        if len(cols[0]) < 2:
            continue
        a = np.column_stack([np.asarray(c, dtype="float64") for c in cols])
        s = a[np.lexsort(a.T[::-1])]
        k = int(np.all(s[1:] == s[:-1], axis=1).sum())
        if k:
            log.add(path, dq(code, k=k), "warning", "duplicate")


def _device_event(acc: _Acc, e, name: str, cat: str, ts: float, dur: float, lane: tuple) -> None:
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
    acc.dev_stream.append(acc.stream_ids.setdefault(lane, len(acc.stream_ids)))
    acc.dev_nid.append(nid)
    dev = args.get("device", e.get("pid"))
    dev = dev if isinstance(dev, (int, float, str)) else str(dev)
    acc.devices[dev] = acc.devices.get(dev, 0) + 1
    if "Collective name" in args or "Process Group Name" in args or "Seq" in args:
        acc.dev_args[i] = (args.get("Collective name"), args.get("Process Group Name"), args.get("Seq"))
