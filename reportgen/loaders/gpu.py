"""MindSpore GPU profiler output (the legacy flat `profiler/` folder written on GPU, MindSpore <= 2.2).

The step trace (`step_trace_raw_{r}_detail_time.csv`, 10 ns ticks: the GPU `DataSaver` divides its ns timestamps
by 10 "to keep the same with ascend"), the overlap files (`gpu_cluster_analyse_*`, ms) and the chip-side GetNext
queue (`minddata_getnext_profiling_{r}.txt`, ns) are read by the MindInsight-layout readers. This module reads what
only GPU runs have, with the units MindSpore's C++ `DataSaver` writes:

* `gpu_op_detail_info_{r}.csv`: `op_side,op_type,op_name,op_full_name,op_occurrences,op_total_time(us),
  op_avg_time(us),total_proportion|proportion,cuda_activity_cost_time(us),cuda_activity_call_count`:
  op_total_time is the operator's time measured on the host around its launch, cuda_activity_cost_time the
  time of its kernels on the GPU;
* `gpu_op_type_info_{r}.csv`: `op_type,type_occurrences,total_time(us),total_proportion|proportion,avg_time(us)`
  (host-measured, per type);
* `gpu_activity_data_{r}.csv`: `name,type,op_full_name,stream_id,block_dim,grid_dim,occurrences,
  total_duration(us),avg_duration(us),max_duration(us),min_duration(us)` (one row per kernel name);
* `gpu_timeline_display_{r}.json`: a Chrome-trace array (µs; pid = device, tid `Ops` for operator ranges, the
  stream id for kernels, whose `args.op_full_name` names the operator).

Operators: side `gpu` = device time of the kernels (per kernel in the detail table, per operator type in the type
table: Σ cuda_activity_cost_time); collectives (AllReduce, AllGather, ... by operator type) go to side
`communication`. When only the host-measured files exist, their times are used and the basis says so.
"""

from __future__ import annotations

import math
from array import array
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from reportgen import intervals as iv
from reportgen.dataquality import dq
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.tables import read_csv_rows
from reportgen.loaders.traces import note_unusable_events, trace_cut, TRACE_ERRORS, trace_events
from reportgen.numbers import to_float
from reportgen.loaders.operators import op_type_from_name, types_from_detail
from reportgen.loaders.schema import GPU_TIMELINE, TraceDoor
from reportgen.collectives import op_class
from reportgen.model import OP_DETAIL_COLUMNS, OP_TYPE_COLUMNS, TimelineSummary

GPU_FILES = ("gpu_op_detail_info.csv", "gpu_op_type_info.csv", "gpu_activity_data.csv", "gpu_timeline_display.json")


def is_gpu(rf) -> bool:
    """MindInsight's device-type test: any gpu_op_detail_info / gpu_activity_data / gpu_op_type_info file."""
    return any(rf.first(f) is not None for f in GPU_FILES[:3])


def _side(op_type: str) -> str:
    return "communication" if op_class(str(op_type)) != "compute" else "gpu"


def _cols(header: list[str]) -> dict[str, int]:
    """Column index by name without its unit suffix (`op_total_time(us)` -> `op_total_time`)."""
    return {h.split("(", 1)[0].strip(): i for i, h in enumerate(header)}


def _finish(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=list(OP_DETAIL_COLUMNS))
    for c in OP_DETAIL_COLUMNS[3:]:
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    for side, idx in df.groupby("side").groups.items():
        tot = df.loc[idx, "total_ms"].sum()
        df.loc[idx, "share"] = df.loc[idx, "total_ms"] / tot if tot > 0 else math.nan
    return df.sort_values("total_ms", ascending=False, kind="stable").reset_index(drop=True)


def load_op_detail(path: Path, log: IssueLog) -> Optional[tuple[pd.DataFrame, pd.DataFrame]]:
    """(device-time detail per operator, host-time detail per operator) from gpu_op_detail_info."""
    parsed = read_csv_rows(path, log)
    if parsed is None:
        return None
    header, rows = parsed
    c = _cols(header)
    need = ("op_type", "op_full_name", "op_occurrences", "op_total_time")
    if any(k not in c for k in need):
        log.add(path, dq("gpu.header-unexpected", need=", ".join(need)), "error")
        return None
    dev, host = [], []
    for _, cells in rows:
        typ, full = cells[c["op_type"]].strip(), cells[c["op_full_name"]].strip()
        n = to_float(cells[c["op_occurrences"]])
        h = to_float(cells[c["op_total_time"]]) / 1e3
        host.append({"side": _side(typ), "name": full, "op_type": typ, "count": n, "total_ms": h,
                     "avg_ms": h / n if n and n > 0 else math.nan, "share": math.nan})
        if "cuda_activity_cost_time" in c:
            d = to_float(cells[c["cuda_activity_cost_time"]]) / 1e3
            dev.append({"side": _side(typ), "name": full, "op_type": typ, "count": n, "total_ms": d,
                        "avg_ms": d / n if n and n > 0 else math.nan, "share": math.nan})
    return _finish(dev), _finish(host)


def load_activity(path: Path, log: IssueLog) -> Optional[pd.DataFrame]:
    """Kernel detail (device time) from gpu_activity_data, typed by the operator that launched each kernel."""
    parsed = read_csv_rows(path, log)
    if parsed is None:
        return None
    header, rows = parsed
    c = _cols(header)
    if "name" not in c or "total_duration" not in c:
        log.add(path, dq("gpu.header-unexpected", need="name, total_duration(us)"), "error")
        return None
    out = []
    for _, cells in rows:
        full = cells[c["op_full_name"]].strip() if "op_full_name" in c else ""
        typ = op_type_from_name(full) if full else "kernel"
        n = to_float(cells[c["occurrences"]]) if "occurrences" in c else math.nan
        t = to_float(cells[c["total_duration"]]) / 1e3
        out.append({"side": _side(typ), "name": cells[c["name"]].strip(), "op_type": typ, "count": n,
                    "total_ms": t, "avg_ms": t / n if n and n > 0 else math.nan, "share": math.nan})
    return _finish(out)


def load_op_type(path: Path, log: IssueLog) -> Optional[pd.DataFrame]:
    """Host-measured per-type totals (gpu_op_type_info), OP_TYPE_COLUMNS."""
    parsed = read_csv_rows(path, log)
    if parsed is None:
        return None
    header, rows = parsed
    c = _cols(header)
    if "op_type" not in c or "total_time" not in c:
        log.add(path, dq("gpu.header-unexpected", need="op_type, total_time(us)"), "error")
        return None
    recs = []
    for _, cells in rows:
        typ = cells[c["op_type"]].strip()
        n = to_float(cells[c["type_occurrences"]]) if "type_occurrences" in c else math.nan
        t = to_float(cells[c["total_time"]]) / 1e3
        recs.append({"side": _side(typ), "core": "GPU", "op_type": typ, "count": n, "total_ms": t,
                     "avg_ms": t / n if n and n > 0 else math.nan, "min_ms": math.nan, "max_ms": math.nan,
                     "share": math.nan})
    df = pd.DataFrame(recs, columns=list(OP_TYPE_COLUMNS))
    for side, idx in df.groupby("side").groups.items():
        tot = df.loc[idx, "total_ms"].sum()
        df.loc[idx, "share"] = df.loc[idx, "total_ms"] / tot if tot > 0 else math.nan
    return df


def operator_parts(rf, log: IssueLog) -> list:
    """Parts for `operators.assemble`: (side, source, by_type, detail, basis)."""
    f = rf.first
    det_p, typ_p, act_p = f("gpu_op_detail_info.csv"), f("gpu_op_type_info.csv"), f("gpu_activity_data.csv")
    det = load_op_detail(det_p, log) if det_p is not None else None
    act = load_activity(act_p, log) if act_p is not None else None
    parts = []
    for side in ("gpu", "communication"):
        by_type, detail, basis, src = None, None, "", None
        if det is not None and len(det[0]):
            d = det[0][det[0]["side"] == side]
            if len(d):
                by_type = types_from_detail(d, side).assign(core="GPU")
                detail, basis, src = d, "profiled window (GPU kernel time per operator)", det_p
        if act is not None and len(act):
            k = act[act["side"] == side]
            if len(k):
                detail, src = k, act_p
                basis = "profiled window (GPU kernel time)"
                if by_type is None:
                    by_type = types_from_detail(k, side).assign(core="GPU")
        if by_type is None and detail is None and typ_p is not None:
            t = load_op_type(typ_p, log)
            if t is not None and len(t[t["side"] == side]):
                by_type, src = t[t["side"] == side], typ_p
                basis = "profiled window (operator time measured on the host)"
        if by_type is not None or detail is not None:
            parts.append((side, log.rel(src), by_type, detail, basis))
    return parts


def summarize_gpu_timeline(path: Path, log: IssueLog, summary: Optional[Path]) -> TimelineSummary:
    """Kernels of `gpu_timeline_display` (the stream lanes; the `Ops` lane repeats the operators on the host clock):
    computation, communication (collective operators' kernels), pure communication and free time, µs -> ms."""
    out = TimelineSummary(source=log.rel(path))
    try:
        out.trace_bytes = path.stat().st_size
    except OSError:
        pass
    cs, ce, ms_, me = array("d"), array("d"), array("d"), array("d")
    streams: set = set()
    unusable = 0
    door = TraceDoor(log, path, GPU_TIMELINE)  # lane ids, duplicates, malformed events (loaders/schema.py)
    try:
        for e in trace_events(path, log):
            lane = door.event(e)
            if lane is None or e.get("ph") != "X" or lane[1] == "Ops":
                continue
            ts, dur = to_float(e.get("ts")), to_float(e.get("dur"))
            if math.isnan(ts) or math.isnan(dur) or dur < 0:
                unusable += 1
                continue
            full = str((e.get("args") or {}).get("op_full_name") or e.get("name") or "")
            name = str(e.get("name") or "")
            comm = op_class(op_type_from_name(full)) != "compute" or name.lower().startswith("nccl")
            (ms_ if comm else cs).append(ts)
            (me if comm else ce).append(ts + dur)
            streams.add(lane)
    except TRACE_ERRORS as err:
        trace_cut(log, path, err, "timeline summary from the part read")
        out.truncated = True
    note_unusable_events(log, path, unusable)
    door.close(out.truncated)
    c = iv.merge(np.frombuffer(cs), np.frombuffer(ce))
    m = iv.merge(np.frombuffer(ms_), np.frombuffer(me))
    busy = iv.merge(np.concatenate([c[0], m[0]]), np.concatenate([c[1], m[1]]))
    out.n_ops = len(cs) + len(ms_)
    out.n_streams = len(streams)
    if len(busy[0]):
        span = float(busy[1][-1] - busy[0][0])
        out.span_ms = span / 1e3
        out.compute_ms = iv.total(c) / 1e3
        out.communication_ms = iv.total(m) / 1e3
        out.pure_communication_ms = iv.total(iv.subtract(m, c)) / 1e3
        out.free_ms = (span - iv.total(busy)) / 1e3
    return out


def operator_lane(got: dict) -> dict:
    """Execution view of a GPU timeline: keep the operators (MindSpore full names, `-op` in the name: the `Ops`
    lane, host-measured), not their kernels, and class them by operator type (collectives, send, receive)."""
    out = {}
    for s, o in got.items():
        keep = [i for i, n in enumerate(o.names) if "-op" in n]
        if not keep:
            continue
        o.names = [o.names[i] for i in keep]
        o.classes = [op_class(n) for n in o.names]
        o.start, o.dur = o.start[keep], o.dur[keep]
        o.window += " (GPU timeline: operators)"
        out[s] = o
    return out
