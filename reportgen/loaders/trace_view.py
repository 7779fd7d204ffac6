"""The Chrome-trace step reader: `trace_view.json` (torch_npu / MindSpore 2.3+) summed per step.

The "Overlap Analysis" lanes are summed per step the way torch_npu writes `step_trace_time.csv`, for ranks that
have the trace but not the CSV (read with `traces.trace_batches`). The step windows (`ProfilerStep#N` on the
host, moved to the device through the host-to-device launch flows) are shared with the execution view's reader
(`loaders/step_ops.py`). Everything leaves here in milliseconds.
"""

from __future__ import annotations

import math
import re
from array import array
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from reportgen.dataquality import dq
from reportgen.loaders.issuelog import IssueLog
from reportgen.pools import gc_paused
from reportgen.loaders.traces import note_unusable_events, trace_batches, trace_cut, TRACE_ERRORS
from reportgen.numbers import to_float, to_int
from reportgen.loaders.step_trace import complete_modern, modern_frame
from reportgen.model import StepTrace

LANES = {"Computing": "computing", "Communication": "communication",
         "Communication(Not Overlapped)": "communication_not_overlapped", "Free": "free"}
STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
FLOW_CATS = ("async_npu", "HostToDevice")
SLICE_LANES = ("computing", "communication", "communication_not_overlapped", "free", "bubble")


class FlowPairs:
    """Host-to-device launch flows (`s` on the host, `f` on the device, matched by category and id)."""

    def __init__(self) -> None:
        self._pending: dict[tuple, float] = {}
        self._host, self._dev = array("d"), array("d")
        self.unusable = 0  # launch flow events whose ts is missing, text or negative: left out (`note`)

    def add(self, e: dict) -> None:
        self.add_fields(e.get("ph"), e.get("cat"), e.get("id"), e.get("ts"))

    def add_fields(self, ph, cat, fid, ts) -> None:
        """`add` of an event whose phase, category, id and ts are these (read from a batch's columns)."""
        if ph not in ("s", "f") or cat not in FLOW_CATS:
            return
        key = (cat, fid)
        ts = to_float(ts)
        if not ts >= 0:  # (NaN too) a launch at no time would move its step's device window: left out, named
            self.unusable += 1
            return
        other = self._pending.pop(key, None)
        if other is None:
            self._pending[key] = ts if ph == "s" else -ts - 1.0  # sign marks which half is stored
        elif ph == "f" and other >= 0:
            self._host.append(other)
            self._dev.append(ts)
        elif ph == "s" and other < 0:
            self._host.append(ts)
            self._dev.append(-other - 1.0)

    def note(self, log: IssueLog, path: Path) -> None:
        """The one entry for the launch flows left out (none when every one was usable)."""
        if self.unusable:
            log.add(path, dq("trace-view.flow-ts-unusable", n=self.unusable))

    def pairs(self) -> np.ndarray:
        """(host ts, device ts) rows."""
        if not len(self._host):
            return np.empty((0, 2))
        return np.column_stack([np.frombuffer(self._host), np.frombuffer(self._dev)])


def load_trace_view_step_trace(path: Path, log: IssueLog) -> Optional[StepTrace]:
    """step_trace_time.csv's columns from a `trace_view.json`, streamed (bounded memory).

    Sums the "Overlap Analysis" slices (Computing, Communication, Communication(Not Overlapped), Free) and the
    `hcom_receive*` operators (Bubble) of each step, as torch_npu's TraceStepTimeParser does. A step's device
    range starts at the first device task launched inside its host `ProfilerStep#N` (matched through the
    host-to-device flow events) and ends where the next step's starts; without flows the host range is used.
    """
    # Compact columns (17 bytes a slice) so traces with millions of slices stay small in memory.
    lane_ix = {name: i for i, name in enumerate(SLICE_LANES)}
    s_lane, s_ts, s_dur = array("b"), array("d"), array("d")
    steps: dict[int, tuple[float, float]] = {}
    flows = FlowPairs()
    unusable = 0
    with gc_paused():  # (the events make no cycle)
        try:
            for b in trace_batches(path, log, typed=True):  # (the fields as the batch's columns: no call an event)
                for ph, name, tsv, durv, cat, fid in zip(b.col("ph"), b.col("name"), b.col("ts"), b.col("dur"),
                                                         b.col("cat"), b.col("id")):
                    if ph == "X" and isinstance(name, str):
                        lane = LANES.get(name)
                        if lane is None and name.startswith("hcom_receive"):
                            lane = "bubble"
                        if lane is not None:
                            ts, dur = to_float(tsv), to_float(durv)
                            if not (math.isnan(ts) or math.isnan(dur) or dur < 0 or ts < 0):
                                s_lane.append(lane_ix[lane])
                                s_ts.append(ts)
                                s_dur.append(dur)
                            else:
                                unusable += 1
                            continue
                        m = STEP_RE.match(name)
                        if m:
                            ts, dur = to_float(tsv), to_float(durv)
                            if not (math.isnan(ts) or math.isnan(dur)) and to_int(m.group(1)) is not None:
                                steps[to_int(m.group(1))] = (ts, ts + dur)
                    elif ph in ("s", "f"):
                        flows.add_fields(ph, cat, fid, tsv)
        except TRACE_ERRORS as e:
            trace_cut(log, path, e, "overlap computed from the part read")
    note_unusable_events(log, path, unusable)
    flows.note(log, path)
    lanes = np.frombuffer(s_lane, dtype=np.int8) if len(s_lane) else np.empty(0, dtype=np.int8)
    if not (lanes != lane_ix["bubble"]).any():
        return None
    ts, dur = np.frombuffer(s_ts), np.frombuffer(s_dur)
    key = np.column_stack([lanes.astype("float64"), ts, dur])
    _, first = np.unique(key, axis=0, return_index=True)
    if len(first) < len(lanes):  # the same lane slice twice (same start and duration): counted once, named
        log.add(path, dq("trace-view.duplicated-overlap-lane-slice", lanes=len(lanes) - len(first)), "warning",
                "duplicate")
        keep = np.sort(first)
        lanes, ts, dur = lanes[keep], ts[keep], dur[keep]
    return modern_from_slices(lanes, ts, dur, steps, flows.pairs(), source=log.rel(path))


def device_step_ranges(steps: dict[int, tuple[float, float]], pairs: np.ndarray) -> list[tuple]:
    """(step, device start, device end): first device task launched in the step, up to the next step's start."""
    order = sorted(steps)
    if not order:
        return []
    host = np.array([steps[s] for s in order])
    first_dev = {s: math.inf for s in order}
    if len(pairs):
        idx = np.searchsorted(host[:, 0], pairs[:, 0], side="right") - 1
        ok = (idx >= 0) & (pairs[:, 0] < host[np.clip(idx, 0, None), 1])
        if ok.any():
            firsts = pd.Series(pairs[ok, 1]).groupby(idx[ok]).min()
            for i, d in firsts.items():
                first_dev[order[int(i)]] = float(d)
    starts = [first_dev[s] if math.isfinite(first_dev[s]) else host[i, 0] for i, s in enumerate(order)]
    out = []
    for i, s in enumerate(order):
        end = starts[i + 1] if i + 1 < len(order) else math.inf
        out.append((s, starts[i], end))
    return out


def modern_from_slices(lanes: np.ndarray, ts: np.ndarray, dur: np.ndarray, steps: dict[int, tuple[float, float]],
                       pairs: np.ndarray, source: str) -> StepTrace:
    """Per-step sums of lane slices (µs in, ms out), torch_npu's step_trace_time.csv semantics.

    `lanes` indexes `SLICE_LANES`. A slice belongs to the step whose device range holds its start.
    """
    ranges = device_step_ranges(steps, pairs)
    if not ranges:
        ranges = [(None, -math.inf, math.inf)]
    keys = [r[0] for r in ranges]
    starts = np.array([r[1] for r in ranges])
    ends = np.array([r[2] for r in ranges])
    n, nl = len(keys), len(SLICE_LANES)
    i = np.searchsorted(starts, ts, side="right") - 1
    ok = (i >= 0) & (ts < ends[np.clip(i, 0, None)])
    i, lanes, ts, dur = i[ok], lanes[ok], ts[ok], dur[ok]
    # numpy reductions, no frame: the slice arrays are the only thing that grows with the trace
    sums = np.bincount(i * nl + lanes, weights=dur, minlength=n * nl).reshape(n, nl)
    lo = np.full(n, np.inf)
    hi = np.full(n, -np.inf)
    np.minimum.at(lo, i, ts)
    np.maximum.at(hi, i, ts + dur)
    first = np.full(n, np.inf)
    task = lanes <= SLICE_LANES.index("communication")  # Computing or Communication slices
    np.minimum.at(first, i[task], ts[task])
    records = []
    for k in range(n):
        if not np.isfinite(lo[k]):
            continue
        key = keys[k]
        rec = {lane: float(sums[k, j]) / 1e3 for j, lane in enumerate(SLICE_LANES)}
        rec["stage"] = float(hi[k] - lo[k]) / 1e3 - rec["bubble"]
        rec["overlapped"] = rec["communication"] - rec["communication_not_overlapped"]
        rec["communication_not_overlapped_exclude_receive"] = rec["communication_not_overlapped"] - rec["bubble"]
        rec["preparing"] = ((float(first[k]) - steps[key][0]) / 1e3
                            if key is not None and key in steps and np.isfinite(first[k]) else math.nan)
        records.append(complete_modern({"step": key, **rec}))
    return StepTrace(kind="modern", steps=modern_frame(records), source=source)
