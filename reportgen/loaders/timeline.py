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
from reportgen.loaders.files import open_binary as open_maybe_gzip
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.jsonfile import read_json
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
        log.add(path, f"trace is {out.trace_bytes / 1e6:.0f} MB; linked for download but not summarised here "
                "(the step trace carries the same computing/communication totals)", "info")
        out.trace_needs_numbers = _first_ts_is_string(path)
        return out
    proc: dict = {}  # pid -> process name (metadata may come anywhere in the file, so classify at the end)
    groups: dict = {}  # (pid, lane name or None) -> (starts, durations)
    tids: dict = {}  # pid -> set of tids
    string_ts = False
    unusable = 0
    seen: set[int] = set()  # hashes of the complete events read: an exact duplicate is counted once, and named
    dups = 0
    n_events = 0
    ts_kinds = [0, 0]  # complete events whose ts is written as text / as a number
    unnamed = 0  # process_name metadata without a name
    malformed = 0  # events without a phase, or complete events without a name
    pid_kinds = [0, 0]  # complete events whose pid is a number / text
    bad_ids = 0  # complete events whose pid / tid is missing, negative, fractional or not a number / name
    try:
        for e in trace_events(path, log):
            n_events += 1
            ph = e.get("ph")
            if not isinstance(ph, str) or (ph == "X" and not isinstance(e.get("name"), str)):
                malformed += 1
                if ph != "X":
                    continue
            if ph == "M":
                if e.get("name") == "process_name":
                    args = e.get("args")
                    if not isinstance(args, dict) or not isinstance(args.get("name"), str):
                        unnamed += 1
                    proc[e.get("pid")] = str((args if isinstance(args, dict) else {}).get("name", ""))
                continue
            if ph != "X":
                continue
            ts, dur = e.get("ts"), to_float(e.get("dur"))
            raw_ts, raw_dur = ts, e.get("dur")  # as written: µs with decimals beyond a float's precision
            string_ts = string_ts or isinstance(ts, str)
            ts_kinds[isinstance(ts, str)] += 1
            ts = to_float(ts)
            if math.isnan(ts) or math.isnan(dur) or dur < 0 or ts < 0:
                unusable += 1
                continue
            pid, name = e.get("pid"), e.get("name")
            pid_kinds[isinstance(pid, str)] += 1
            for idv in (pid, e.get("tid")):
                if idv is None or isinstance(idv, (bool, list, dict)) or \
                        (isinstance(idv, (int, float)) and (idv < 0 or idv != int(idv))):
                    bad_ids += 1  # (text ids are normal: MindSpore names its threads)
                    break
            h = hash((pid, e.get("tid"), str(name), str(raw_ts), str(raw_dur)))
            if h in seen:
                dups += 1
                continue
            seen.add(h)
            # [issue 16, h-numbers] a communication operator in a compute process (MindSpore CPU's "CPU OP"
            # AllReduce-opN) is communication, as the execution view classifies it (one classifier: op_class)
            key = name if name in LANE_KEYS else (COMM_OP if isinstance(name, str) and op_class(name) != "compute"
                                                 else None)
            g = groups.get((pid, key))
            if g is None:
                g = groups[(pid, key)] = (array("d"), array("d"))
            g[0].append(ts)
            g[1].append(dur)
            tids.setdefault(pid, set()).add(e.get("tid"))
    except TRACE_ERRORS as e:
        trace_cut(log, path, e, "timeline summary from the part read")
        out.truncated = True
    note_unusable_events(log, path, unusable)
    if not n_events and not out.truncated:
        log.add(path, "the trace holds no events: the rank's timeline is missing", "warning", "empty table")
    if ts_kinds[0] and ts_kinds[1]:
        log.add(path, f"'ts' written as text in {ts_kinds[1]} complete event(s) and as a number in "
                  f"{ts_kinds[0]}: one writer writes one or the other (read as numbers)", "warning", "schema drift")
    if proc:
        stray = {pid: len(g[0]) for (pid, _), g in groups.items() if pid not in proc}
        if stray:
            log.add(path, f"{sum(stray.values())} complete event(s) in process(es) the trace never names "
                      f"(pid {', '.join(repr(p) for p in list(stray)[:3])}; no process_name metadata): a damaged "
                      "pid? counted by their name alone", "warning", "schema drift")
    if pid_kinds[0] and pid_kinds[1]:
        log.add(path, f"'pid' written as text in {pid_kinds[1]} complete event(s) and as a number in "
                  f"{pid_kinds[0]}: the same process may be counted twice", "warning", "schema drift")
    if bad_ids:
        log.add(path, f"{bad_ids} complete event(s) whose pid or tid is missing, negative, fractional or "
                  "not a number / name "
                  "(kept: counted as a process / stream of their own)", "warning", "impossible value")
    if malformed:
        log.add(path, f"{malformed} trace event(s) without a phase ('ph') or a name (the former skipped)",
                  "warning", "schema drift")
    if unnamed:
        log.add(path, f"{unnamed} process_name metadata event(s) without a name (args.name): their "
                  "process is not classified", "warning", "schema drift")
    if dups:
        log.add(path, f"{dups} duplicated complete event(s) (same process, thread, name, start and duration "
                  "as an earlier one) counted once", "warning", "duplicate")
    del seen
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


def export_trace(src: Path, dst: IO[str], convert: bool) -> int:
    """Write `src` as a Chrome-trace JSON array to `dst`; with `convert`, string timestamps become JSON numbers
    (the decimal text is kept exactly, so no precision is lost). Returns the number of events written."""
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
