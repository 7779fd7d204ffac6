"""Device operators of chosen steps, for the Marey view. Two streamed passes over a rank's trace; only the
chosen steps' operators are kept.

* Pass 1 (`trace_layout`): process / thread names and the step windows. MindInsight
  `ascend_timeline_display_{r}.json`: the "Steps" lane (tid 100000; names "1", "2", ... or, in 2.x,
  "Model ID: m Iteration ID: i"). `trace_view.json`: host `ProfilerStep#N` slices mapped to the device through
  the host-to-device flows (the step's device range starts at its first launched task and ends where the next
  step's begins, as torch_npu does). Without either, the legacy step trace's windows, else the whole trace as one
  window.
* Pass 2 (`read_step_ops`): the operators that start inside a chosen window.

The passes parse the trace twice (for at most `analysis.execution.MAX_DEVICES` ranks; each pass of a rank is one
call, run in the local pool by `layouts.run._timeline_execution` when the traces are large): the steps pass 2
keeps are chosen from every rank's pass 1, so one parse would mean holding up to 32 ranks' events in between
(~16 MB of objects for a 3.6 MB trace: ~0.5 GB), or every rank's operators of every step with their windows
judged again (a window nested in another keeps an operator only when the outer one is not chosen); a parse of a
trace up to `traces.FAST_MAX_BYTES` costs ~25 ms. (A column-at-a-time pass 1 was measured slower than this
event-by-event one in place: ~22 against ~17 ms a 3.6 MB trace beyond the parse; seven passes over 20,000 fresh
dicts cost more than one.) (The load's `timeline.summarize_trace` reads the same file in a worker process.) Pass 2 skips, a
column at a time, the events outside the chosen windows, and holds each distinct name, lane and shape text once
(the pages' data and the entry cached for a rebuild: ~3x smaller).

Which events are operators (MindInsight's `TimelineService` keeps events whose name contains `-op`, dropping
`AtomicAddrClean`, `StreamSend`, `StreamReceive`): legacy AI Core (pid = device id) and AI CPU (9000) tasks,
communication (pid 10000); trace_view "Ascend Hardware" kernels (not the runtime's own tasks: event records,
notify waits, SDMA copies), the operator lane of "HCCL" ("Group N Communication"; the planes' tasks are skipped)
and MindSpore CPU "CPU OP". Classes: collective (`All*`, `ReduceScatter`, `Broadcast`, `hcom_all*`, ...), send,
receive, compute.
"""

from __future__ import annotations

from reportgen.i18n import N_

import math
import re
from bisect import bisect_right
from functools import partial
from itertools import compress
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Optional

import numpy as np

from reportgen.loaders.files import open_file
from reportgen.loaders.issuelog import IssueLog
from reportgen.pools import gc_paused
from reportgen.loaders.trace_batch import floats, num as _num
from reportgen.loaders.traces import trace_batches, trace_cut, TRACE_ERRORS
from reportgen.numbers import to_float, to_int
from reportgen.loaders.overlap import legacy_step_windows
from reportgen.loaders.trace_view import STEP_RE, FlowPairs, device_step_ranges

from reportgen.collectives import op_class
from reportgen.model import StepOps, StepTrace

STEPS_TID = 100000
STEPS_TID_TEXT = str(STEPS_TID)
LEGACY_SKIP_PIDS = (11000, 12000)
LEGACY_COMM_PID = 10000
MODEL_ITER_RE = re.compile(r"Iteration ID:\s*(\d+)")
DROPPED = ("AtomicAddrClean", "StreamSend", "StreamReceive")
RUNTIME_TASKS = {"Notify Wait", "Notify Record", "Write Value", "Notify_Wait", "Notify_Record"}
RUNTIME_TASK_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")  # EVENT_WAIT, SDMA, MEMCPY_ASYNC, PROFILING_ENABLE, ...
WHOLE = -1  # step key of "the whole trace" when no step windows exist


@dataclass
class TraceLayout:
    windows: dict[int, tuple[float, float]]  # step -> (start µs, end µs) on the device clock
    how: str
    processes: dict = field(default_factory=dict)  # pid -> name
    threads: dict = field(default_factory=dict)  # (pid, tid) -> name
    legacy: bool = True  # MindInsight numbering of pids
    host_windows: dict = field(default_factory=dict)  # step -> host ProfilerStep (start µs, end µs), torch_npu


def _finder(starts: np.ndarray):
    """`np.searchsorted(starts, x, side="right")` for one float at a time: `bisect` over a list where no start is
    NaN (the same index; ~10x faster a call)."""
    if np.isnan(starts).any():
        return lambda x: int(np.searchsorted(starts, x, side="right"))
    return partial(bisect_right, starts.tolist())


def _step_number(name) -> Optional[int]:
    s = str(name).strip()
    if s.isdigit():
        return to_int(s)
    m = MODEL_ITER_RE.search(s)
    return to_int(m.group(1)) if m else None


def _txt_offset(txt: Optional[Path], first_ts: dict[str, float]) -> Optional[float]:
    """µs to add to the trace's (relative) clock to reach the device clock of `output_timeline_data_{r}.txt`:
    the first operator of the text file found in the trace."""
    if txt is None or not first_ts:
        return None
    try:
        with open_file(txt, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f):
                if n > 5000:
                    break
                cells = line.split(",")
                if len(cells) < 4:
                    continue
                short = cells[0].strip().rsplit("/", 1)[-1]
                start = to_float(cells[2])
                if short in first_ts and not math.isnan(start):
                    return start * 1e3 - first_ts[short]
    except OSError:
        return None
    return None


def trace_layout(path: Path, log: IssueLog, step_trace: Optional[StepTrace] = None,
                 timeline_txt: Optional[Path] = None) -> Optional[TraceLayout]:
    first_ts: dict[str, float] = {}
    lo, hi = math.inf, -math.inf
    procs: dict = {}
    threads: dict = {}
    legacy_steps: dict[int, tuple[float, float]] = {}
    host_steps: dict[int, tuple[float, float]] = {}
    flows = FlowPairs()
    with gc_paused():  # (the events make no cycle)
        try:
            for b in trace_batches(path, typed=True):  # (the fields most events need as columns: no call an event)
                for e, ph, name, tsv, tid, cat, fid in zip(b.events, b.col("ph"), b.col("name"), b.col("ts"),
                                                            b.col("tid"), b.col("cat"), b.col("id")):
                    if ph == "X":
                        if not isinstance(name, str):
                            continue
                        ts = _num(tsv)
                        if ts == ts:  # (not NaN)
                            if ts < lo:
                                lo = ts
                            if ts > hi:
                                hi = ts
                            if "-op" in name and name not in first_ts and len(first_ts) < 2000:
                                first_ts[name] = ts
                        m = STEP_RE.match(name) if name.startswith("ProfilerStep#") else None
                        if m:
                            ts, dur = _num(tsv), _num(e.get("dur"))
                            if not (math.isnan(ts) or math.isnan(dur)) and to_int(m.group(1)) is not None:
                                host_steps[to_int(m.group(1))] = (ts, ts + dur)
                            continue
                        if (tid == STEPS_TID) if type(tid) is int else (str(tid) == STEPS_TID_TEXT):
                            s = _step_number(name)
                            ts, dur = _num(tsv), _num(e.get("dur"))
                            if s is not None and not (math.isnan(ts) or math.isnan(dur)):
                                legacy_steps[s] = (ts, ts + dur)
                    elif ph == "M":
                        args = e.get("args")
                        label = str(args.get("name", "")) if isinstance(args, dict) else ""  # broken metadata
                        if name == "process_name":
                            procs[e.get("pid")] = label
                        elif name == "thread_name":
                            threads[(e.get("pid"), tid)] = label
                    elif ph in ("s", "f"):
                        flows.add_fields(ph, cat, fid, tsv)
        except TRACE_ERRORS as e:
            trace_cut(log, path, e, "the execution view uses the part read")
    flows.note(log, path)
    legacy = not any(str(v).startswith(("Ascend Hardware", "HCCL", "CPU OP")) for v in procs.values())
    if legacy_steps:
        return TraceLayout(legacy_steps, N_("the trace's Steps lane"), procs, threads, legacy)
    if host_steps:
        pairs = flows.pairs()
        ranges = device_step_ranges(host_steps, pairs)
        how = (N_("host ProfilerStep ranges mapped to the device through the launch flows") if len(pairs)
               else N_("host ProfilerStep ranges (no launch flows in the trace)"))
        return TraceLayout({s: (a, b) for s, a, b in ranges}, how, procs, threads, legacy, host_steps)
    windows, _ = legacy_step_windows(step_trace)
    if windows and math.isfinite(lo):
        how = N_("the step trace's step windows")
        if not any(a <= hi and b >= lo for _, a, b in windows):  # MindInsight wrote the trace from time 0
            off = _txt_offset(timeline_txt, first_ts)
            if off is not None:
                how = N_("the step trace's step windows (clock matched to the trace through output_timeline_data)")
            else:
                off = windows[0][1] - lo
                how += " (approximate: the trace's clock starts at 0, its first event taken as step 1's start)"
            windows = [(s, a - off, b - off) for s, a, b in windows]
        return TraceLayout({int(s): (a, b) for s, a, b in windows}, how, procs, threads, legacy)
    return TraceLayout({WHOLE: (-math.inf, math.inf)}, "no step markers: the whole profiled window", procs,
                       threads, legacy)


def _kind(e: dict, lay: TraceLayout) -> Optional[str]:
    """The operator class of a trace event, or None when it is not a device operator."""
    name = e.get("name")
    if not isinstance(name, str) or not name or name.startswith(DROPPED):
        return None
    pid = e.get("pid")
    pname = lay.processes.get(pid, "")
    if pname:
        if pname.startswith("Ascend Hardware"):
            if name in RUNTIME_TASKS or RUNTIME_TASK_RE.match(name):
                return None
            return op_class(name)
        if pname.startswith("HCCL"):
            tname = lay.threads.get((pid, e.get("tid")), "")
            if "Communication" not in tname:
                return None
            return op_class(name)
        if pname.startswith("CPU OP"):
            return op_class(name)
        if not lay.legacy:
            return None
    if not isinstance(pid, int) and not str(pid).isdigit():
        return None
    pid = int(pid)
    tid = str(e.get("tid"))
    if pid in LEGACY_SKIP_PIDS or tid in (str(STEPS_TID), "100001"):
        return None
    if pid == LEGACY_COMM_PID:
        cls = op_class(name)
        return cls if cls != "compute" else "collective"
    return op_class(name)


MAX_SHAPES_CHARS = 160
MAX_HOST_EVENTS = 4000  # host dispatch events kept per step (the longest), before the timeline's own cap
HOST_QUEUE_CATS = ("enqueue", "dequeue")  # torch_npu's task queue on the Python process


def _host_event(e: dict, lay: TraceLayout) -> bool:
    """torch_npu's host dispatch: the CANN process's AscendCL / runtime calls and the Python process's task-queue
    enqueue / dequeue slices (how torch_npu hands an operator to the launch thread)."""
    if lay.legacy:
        return False
    pname = lay.processes.get(e.get("pid"), "")
    if pname.startswith("CANN"):
        return True
    return pname.startswith("Python") and str(e.get("cat") or "").lower() in HOST_QUEUE_CATS


def _host_name(name: str, args) -> str:
    """A CANN slice's name with the operator it handles when the trace says ("Node@launch (Conv2D1)")."""
    item = args.get("item_id") if isinstance(args, dict) else None
    if isinstance(item, str) and item not in ("", "0") and item not in name:
        return f"{name} ({item})"[:MAX_SHAPES_CHARS]
    return name[:MAX_SHAPES_CHARS]


def _connection(args) -> Optional[str]:
    """The id pairing a CANN launch with the device task it launched (`connection_id` in both events' args)."""
    if not isinstance(args, dict):
        return None
    c = args.get("connection_id")
    return None if c is None or isinstance(c, (dict, list)) else str(c)


def _lane(e: dict, lay: TraceLayout) -> str:
    """The process / thread an operator ran on, as a timeline lane label."""
    pid, tid = e.get("pid"), e.get("tid")
    pname = lay.processes.get(pid, "")
    if pname and not lay.legacy:
        tname = lay.threads.get((pid, tid), "") or f"thread {tid}"
        return f"{pname} · {tname}"[:80]
    if str(pid) == str(LEGACY_COMM_PID):
        return f"Communication · {lay.threads.get((pid, tid), '') or f'plane {tid}'}"[:80]
    if str(pid) == "9000":
        return "AI CPU"
    return f"AI Core · stream {tid}"[:80]


def _shapes(args) -> str:
    """Input shapes from a trace event's args: torch_npu "Input Dims", MindSpore input_N.shape."""
    if not isinstance(args, dict):
        return ""
    dims = args.get("Input Dims") or args.get("Input Shapes")
    if isinstance(dims, str):
        return dims[:MAX_SHAPES_CHARS]
    parts = []
    for k in sorted(k for k in args if isinstance(k, str) and k.startswith("input_")):
        v = args[k]
        if isinstance(v, dict) and v.get("shape") not in (None, ""):
            parts.append(f"[{v.get('shape')}]")
    return ";".join(parts)[:MAX_SHAPES_CHARS]


def read_step_ops(path: Path, rank: int, lay: TraceLayout, steps: list[int], log: IssueLog
                  ) -> dict[int, StepOps]:
    """Operators starting inside the windows of `steps` (those the trace has), times in ms from the window start."""
    wins = sorted((lay.windows[s][0], lay.windows[s][1], s) for s in steps if s in lay.windows)
    if not wins:
        return {}
    starts = np.array([w[0] for w in wins])
    cols = {s: ([], [], array("d"), array("d"), [], [], []) for _, _, s in wins}
    # host dispatch: by the host ProfilerStep windows when the trace has them (the host runs ahead of the device)
    hwins = sorted((lay.host_windows[s][0], lay.host_windows[s][1], s) for _, _, s in wins if s in lay.host_windows)
    hstarts = np.array([w[0] for w in hwins]) if hwins else starts
    hwins = hwins or wins
    host: dict = {s: [] for _, _, s in wins}
    # the window an operator starts in: bisect over the sorted starts (numpy's searchsorted where one is NaN)
    find = _finder(starts)
    hfind = _finder(hstarts)
    texts: dict = {}  # each distinct name, lane and shape text once: the entry cached for a rebuild and the
    one = _interner(texts)  # pages' data repeat ~60 names and 2 lanes over 1,000 operators (~1/6 the pickle)
    memo = _Memo(lay)
    with gc_paused():  # (the events make no cycle)
        try:
            for e, ts in _in_windows(path, (starts, np.array([w[1] for w in wins])),
                                     (hstarts, np.array([w[1] for w in hwins]))):
                if memo.host_event(e):
                    i = hfind(ts) - 1
                    dur = _num(e.get("dur"))
                    name = e.get("name")
                    if i >= 0 and ts < hwins[i][1] and not math.isnan(dur) and isinstance(name, str):
                        host[hwins[i][2]].append((ts, dur, one(_host_name(name, e.get("args"))), one(memo.lane(e)),
                                                  _connection(e.get("args"))))
                    continue
                i = find(ts) - 1
                if i < 0 or ts >= wins[i][1]:
                    continue
                cls = memo.kind(e)
                if cls is None:
                    continue
                dur = _num(e.get("dur"))
                if math.isnan(dur):
                    continue
                c = cols[wins[i][2]]
                c[0].append(one(e.get("name")))  # (text: `_kind` tells)
                c[1].append(cls)
                c[2].append(ts)
                c[3].append(dur)
                c[4].append(one(memo.lane(e)))
                c[5].append(one(_shapes(e.get("args"))))
                c[6].append(_connection(e.get("args")))
        except TRACE_ERRORS:
            pass  # reported by pass 1
    out = {}
    rel = log.rel(path)
    for a, b, s in wins:
        names, classes, ts, dur, lanes, shapes, conns = cols[s]
        if not names:
            continue
        t = np.frombuffer(ts)
        base = a if math.isfinite(a) else float(t.min())
        end = b if math.isfinite(b) else float((t + np.frombuffer(dur)).max())
        order = np.argsort(t, kind="stable")
        o = StepOps(rank=rank, step=s, source=rel, step_ms=(end - base) / 1e3,
                    names=[names[k] for k in order], classes=[classes[k] for k in order],
                    start=(t[order] - base) / 1e3, dur=np.frombuffer(dur)[order] / 1e3, window=lay.how,
                    lanes=[lanes[k] for k in order], shapes=[shapes[k] for k in order])
        _add_host(o, host[s], {conns[k]: i for i, k in enumerate(order) if conns[k] is not None}, base)
        out[s] = o
    return out


class _Memo:
    """`_kind`, `_lane` and `_host_event` of a layout, each answered once per distinct (name, pid, tid) / (pid,
    tid) / (pid, category) when the lane ids are whole numbers (a trace repeats ~60 names on a few lanes in every
    step); any other event is judged as it comes (1 and 1.0 are one dict key, but not one lane label)."""

    def __init__(self, lay: TraceLayout) -> None:
        self.lay = lay
        self._kinds: dict = {}
        self._lanes: dict = {}
        self._hosts: dict = {}

    def kind(self, e) -> Optional[str]:
        name, pid, tid = e.get("name"), e.get("pid"), e.get("tid")
        if type(name) is not str or type(pid) is not int or type(tid) is not int:
            return _kind(e, self.lay)
        key = (name, pid, tid)
        got = self._kinds.get(key, self)
        if got is self:
            got = self._kinds[key] = _kind(e, self.lay)
        return got

    def lane(self, e) -> str:
        pid, tid = e.get("pid"), e.get("tid")
        if type(pid) is not int or type(tid) is not int:
            return _lane(e, self.lay)
        got = self._lanes.get((pid, tid))
        if got is None:
            got = self._lanes[(pid, tid)] = _lane(e, self.lay)
        return got

    def host_event(self, e) -> bool:
        pid, cat = e.get("pid"), e.get("cat")
        if type(pid) is not int or (cat is not None and type(cat) is not str):
            return _host_event(e, self.lay)
        got = self._hosts.get((pid, cat))
        if got is None:
            got = self._hosts[(pid, cat)] = _host_event(e, self.lay)
        return got


def _in_windows(path: Path, *spans: tuple) -> Iterator[tuple[dict, float]]:
    """(event, its ts read as a number) of the trace's complete events, in order, that start inside one of the
    windows of `spans` ((sorted starts, ends) pairs), the window found as `read_step_ops` finds it (searchsorted:
    the others are skipped by it, a column at a time: ~half a trace's events lie outside the chosen steps)."""
    for b in trace_batches(path, typed=True):
        idx = list(compress(range(len(b)), b.phase("X")))
        if not idx:
            continue
        ts = floats(list(compress(b.col("ts"), b.phase("X"))))
        keep = np.zeros(len(ts), dtype=bool)
        for starts, ends in spans:
            if len(starts):
                i = np.searchsorted(starts, ts, side="right") - 1
                keep |= (i >= 0) & (ts < ends[np.clip(i, 0, None)])
        ev = b.events
        for k in np.flatnonzero(keep).tolist():
            yield ev[idx[k]], float(ts[k])


def _interner(texts: dict):
    """`one(t)`: the first text equal to `t` seen (one object for equal texts: pickled once, held once)."""
    get = texts.setdefault

    def one(t):
        return get(t, t) if type(t) is str else t
    return one


def _add_host(o: StepOps, events: list[tuple], launched: dict, base: float) -> None:
    """Host dispatch events (µs) into `o`, in ms from the step start `base`; the longest MAX_HOST_EVENTS kept."""
    if len(events) > MAX_HOST_EVENTS:
        events = sorted(events, key=lambda x: -x[1])[:MAX_HOST_EVENTS]
    events = sorted(events)
    o.host_names = [x[2] for x in events]
    o.host_lanes = [x[3] for x in events]
    o.host_start = [(x[0] - base) / 1e3 for x in events]
    o.host_dur = [x[1] / 1e3 for x in events]
    o.host_launch = [launched.get(x[4], -1) if x[4] is not None else -1 for x in events]
