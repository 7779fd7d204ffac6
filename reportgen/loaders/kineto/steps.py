"""Step detection (HTA's mapping): each device event belongs to the step whose host range holds its launch, a
step lasts from its first device event to the next step's first one, the last step is partial; and the
step trace (computing / communication / overlapped / free per step) from those windows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import numpy as np
import pandas as pd

from reportgen import intervals as iv
from reportgen.i18n import N_
from reportgen.model import MODERN_PHASES, StepTrace
from reportgen.loaders.kineto.events import HOST_COMM_RE
from reportgen.loaders.kineto.launches import _launched_in_comm_op, launch_index

if TYPE_CHECKING:
    from reportgen.loaders.kineto.scan import _Acc


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


_NONE = object()


def _step_at(wins: list, ts: float):
    for step, a, b in wins:
        if a <= ts < b:
            return step
    return _NONE
