"""Timeline files: a summary of what each rank's Chrome trace holds, and its export for Perfetto.

* MindInsight `ascend_timeline_display_{r}.json` (µs numbers; AI Core pid = device, AI CPU 9000, communication
  10000, host 11000, overlap lanes 12000) with `ascend_timeline_summary_{r}.json` (`total_time` ms,
  `num_of_streams`, `num_of_ops`); older `timeline_display/summary_{r}.json`;
* torch_npu / MindSpore 2.3+ `trace_view.json` (string µs timestamps; processes named by metadata:
  "Ascend Hardware" device tasks, "HCCL" communication, "Overlap Analysis" lanes; MindSpore CPU: "CPU OP").

Merged computation / communication, pure communication (communication not hidden by computation) and free time
are computed over the trace's span with `reportgen.intervals` (the profiler's own lanes are used when present).
Traces are streamed; files above `MAX_SUMMARY_BYTES` are linked but not summarised.
"""

from __future__ import annotations

import json
import math
from array import array
from pathlib import Path
from typing import IO, Optional

import numpy as np

from reportgen import intervals
from reportgen.dataquality import dq
from reportgen.loaders.files import open_binary as open_maybe_gzip, run_root
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.jsonfile import read_json
from reportgen.loaders.schema import TraceDoor
from reportgen.loaders.traces import note_unusable_events, trace_cut, TRACE_ERRORS, trace_events
from reportgen.numbers import to_float
from reportgen.model import TimelineSummary, op_class

MAX_SUMMARY_BYTES = 64 * 1024 * 1024
LEGACY_COMM_PID, LEGACY_AICPU_PID, LEGACY_HOST_PID, LEGACY_LANE_PID = 10000, 9000, 11000, 12000
LANE_KEYS = {"Computing": "compute", "Merged Computation": "compute", "Communication": "communication",
             "Merged Communication": "communication", "Communication(Not Overlapped)": "pure_communication",
             "Pure Communication": "pure_communication", "Free": "free", "Free Time": "free"}
COMPUTE_PROCESSES = ("Ascend Hardware", "CPU OP", "AI Core")
COMM_PROCESSES = ("HCCL", "Communication")
SKIP_PROCESSES = ("Overlap Analysis", "Op Overlap Analyse", "Steps", "Scope Layer", "Python", "CANN", "Step")
_PLACEHOLDER = "\u0000ts\u0000"
COMM_OP = "\u0000comm\u0000"  # group key of communication operators found in a compute process


def summarize_trace(path: Path, log: IssueLog, summary: Optional[Path] = None) -> TimelineSummary:
    out = TimelineSummary(source=log.rel(path))
    try:
        out.trace_bytes = path.stat().st_size
    except OSError:
        pass
    if summary is not None:
        data = read_json(summary, log)
        if isinstance(data, dict):
            out.n_streams = int(to_float(data.get("num_of_streams")) or 0) if data.get("num_of_streams") else 0
            out.n_ops = int(to_float(data.get("num_of_ops")) or 0) if data.get("num_of_ops") else 0
    if out.trace_bytes > MAX_SUMMARY_BYTES:
        log.add(path, dq("timeline.trace-too-large", out=format(out.trace_bytes / 1e6, ".0f")), "info")
        out.trace_needs_numbers = _first_ts_is_string(path)
        return out
    proc: dict = {}  # pid -> process name (metadata may come anywhere in the file, so classify at the end)
    groups: dict = {}  # (pid, lane name or None) -> (starts, durations)
    tids: dict = {}  # pid -> set of tids
    string_ts = False
    unusable = 0
    ts_kinds = [0, 0]  # complete events whose ts is written as text / as a number
    door = TraceDoor(log, path)  # lane ids, args, duplicates, malformed and unnamed events (loaders/schema.py)
    try:
        for e in trace_events(path, log):
            lane = door.event(e)
            if lane is None:
                continue
            ph = e.get("ph")
            if ph == "M":
                if e.get("name") == "process_name":
                    args = e.get("args")
                    proc[lane[0]] = str((args if isinstance(args, dict) else {}).get("name", ""))
                continue
            if ph != "X":
                continue
            ts, dur = e.get("ts"), to_float(e.get("dur"))
            string_ts = string_ts or isinstance(ts, str)
            ts_kinds[isinstance(ts, str)] += 1
            ts = to_float(ts)
            if math.isnan(ts) or math.isnan(dur) or dur < 0 or ts < 0:
                unusable += 1
                continue
            pid, name = lane[0], e.get("name")
            # [issue 16, h-numbers] a communication operator in a compute process (MindSpore CPU's "CPU OP"
            # AllReduce-opN) is communication, as the execution view classifies it (one classifier: op_class)
            key = name if name in LANE_KEYS else (COMM_OP if isinstance(name, str) and op_class(name) != "compute"
                                                 else None)
            g = groups.get((pid, key))
            if g is None:
                g = groups[(pid, key)] = (array("d"), array("d"))
            g[0].append(ts)
            g[1].append(dur)
            tids.setdefault(pid, set()).add(lane[1])
    except TRACE_ERRORS as e:
        trace_cut(log, path, e, "timeline summary from the part read")
        out.truncated = True
    note_unusable_events(log, path, unusable)
    door.close(out.truncated)
    if ts_kinds[0] and ts_kinds[1]:
        log.add(path, dq("timeline.ts-text-and-number", ts_kinds=ts_kinds[1], ts_kinds2=ts_kinds[0]), "warning",
                "schema drift")
    if proc:
        stray = {pid: len(g[0]) for (pid, _), g in groups.items() if pid not in proc}
        if stray:
            log.add(path, dq("timeline.unnamed-process", stray=sum(stray.values()),
                                  p=", ".join(repr(p) for p in list(stray)[:3])), "warning", "schema drift")
    out.trace_needs_numbers = string_ts
    lanes: dict[str, float] = {}
    sets: dict[str, list] = {"compute": [], "comm": []}
    n_ops, streams = 0, 0
    for (pid, lane), (st, du) in groups.items():
        st_a, du_a = np.frombuffer(st), np.frombuffer(du)
        cls = _classify(pid, "" if lane == COMM_OP else lane or "", proc)
        if cls == "compute" and lane == COMM_OP:
            cls = "comm"
        if cls == "lane":
            lanes[LANE_KEYS[lane]] = lanes.get(LANE_KEYS[lane], 0.0) + float(du_a.sum())
        elif cls in sets:
            sets[cls].append((st_a, du_a))
            n_ops += len(st_a)
    for pid, ts_ in tids.items():
        if _classify(pid, "", proc) in sets:
            streams += len(ts_)
    if n_ops == 0 and not lanes:
        return out
    merged = {}
    for cls, parts in sets.items():
        if parts:
            starts = np.concatenate([p[0] for p in parts])
            merged[cls] = intervals.merge(starts, starts + np.concatenate([p[1] for p in parts]))
        else:
            merged[cls] = intervals.empty()
    c, m = merged["compute"], merged["comm"]
    busy = intervals.merge(np.concatenate([c[0], m[0]]), np.concatenate([c[1], m[1]]))
    if len(busy[0]):
        out.span_ms = float(busy[1][-1] - busy[0][0]) / 1e3
    out.n_ops = out.n_ops or n_ops
    out.n_streams = out.n_streams or streams
    if lanes:  # the profiler's own overlap lanes
        out.compute_ms = lanes.get("compute", 0.0) / 1e3
        out.communication_ms = lanes.get("communication", 0.0) / 1e3
        out.pure_communication_ms = lanes.get("pure_communication", 0.0) / 1e3
        out.free_ms = lanes.get("free", 0.0) / 1e3
        return out
    out.compute_ms = intervals.total(c) / 1e3
    out.communication_ms = intervals.total(m) / 1e3
    out.pure_communication_ms = intervals.total(intervals.subtract(m, c)) / 1e3
    if len(busy[0]):
        out.free_ms = (float(busy[1][-1] - busy[0][0]) - intervals.total(busy)) / 1e3
    return out


def _classify(pid, name: str, proc: dict) -> str:
    pname = proc.get(pid, "")
    if name in LANE_KEYS and (pname in ("Overlap Analysis", "Op Overlap Analyse") or pid == LEGACY_LANE_PID):
        return "lane"
    if pname:
        if pname.startswith(SKIP_PROCESSES):
            return "skip"
        if pname.startswith(COMM_PROCESSES):
            return "comm"
        if pname.startswith(COMPUTE_PROCESSES):
            return "compute"
        return "skip"
    if pid == LEGACY_COMM_PID:
        return "comm"
    if pid in (LEGACY_AICPU_PID, LEGACY_HOST_PID, LEGACY_LANE_PID):
        return "skip"
    return "compute" if isinstance(pid, int) and pid < LEGACY_AICPU_PID else "skip"


def _first_ts_is_string(path: Path) -> bool:
    try:
        for e in trace_events(path):
            if "ts" in e:
                return isinstance(e["ts"], str)
    except TRACE_ERRORS:
        pass
    return False


def export_trace(src: Path, dst: IO[str], convert: bool, root: Optional[Path] = None) -> int:
    """Write `src` as a Chrome-trace JSON array to `dst`; with `convert`, string timestamps become JSON numbers
    (the decimal text is kept exactly, so no precision is lost). Returns the number of events written.
    `root`: the run folder (a symbolic link out of it is not followed: an empty trace is written)."""
    if root is not None:
        with run_root(root):
            return export_trace(src, dst, convert)
    if not convert:
        try:
            with open_maybe_gzip(src) as f:
                while True:
                    chunk = f.read(1 << 20)
                    if not chunk:
                        break
                    dst.write(chunk.decode("utf-8", errors="replace"))
        except (OSError, EOFError):  # not a regular file, or unreadable: the loader named it; an empty trace
            dst.write("[]\n")
            return 0
        return -1
    n = 0
    dst.write("[")
    try:
        for e in trace_events(src):
            raw = {}
            for k in ("ts", "dur"):
                v = e.get(k)
                if isinstance(v, str) and not math.isnan(to_float(v)):
                    raw[k] = v.strip()
                    e[k] = _PLACEHOLDER + k
            text = json.dumps(e, ensure_ascii=False, separators=(",", ":"))
            for k, v in raw.items():
                text = text.replace(json.dumps(_PLACEHOLDER + k), v, 1)
            dst.write(("," if n else "") + "\n" + text)
            n += 1
    except TRACE_ERRORS:
        pass  # the part that was read is written; the loader reported the broken file
    dst.write("\n]\n")
    return n
