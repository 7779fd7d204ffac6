"""Memory loaders. Sizes leave here in MB as the profilers write them (2^20 bytes; MindInsight's GB are 2^30 bytes).

* MindInsight `memory_usage_summary_{r}.json` (GB: capacity, peak_mem, static_mem) and
  `memory_usage_details_{r}.json` (per graph: `lines` = usage per node, `nodes`, `breakdowns` of tensors);
  `memory_usage_{r}.pb` is the producer's protobuf input and is reported as present but unread;
* torch_npu / MindSpore 2.3+ `memory_record.csv` (Component APP = whole process, PTA / GE / PTA+GE = allocators),
  `operator_memory.csv` (Size(KB), the largest allocations), `npu_module_mem.csv` (per CANN module);
* MindSpore CPU `cpu_ms_memory_record_{r}.txt` (ns, bytes).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from reportgen import framepack
from reportgen.dataquality import dq
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.jsonfile import check_json_numbers, read_json
from reportgen.loaders.tables import read_frame, read_typed
from reportgen.numbers import extreme_points, to_float
from reportgen.model import Memory

MB_PER_GB = 1024.0
MAX_CURVE_POINTS = 600  # points kept of a memory curve (it is drawn, never computed on: peaks come from every row)
TOP_ALLOCATIONS = 50


def _downsample(df: pd.DataFrame, value: str, n: int = MAX_CURVE_POINTS) -> pd.DataFrame:
    """Keep at most `n` points: in each of n / 2 buckets (in time order) the minimum and the maximum of `value`,
    so the peak and the troughs of a saw-tooth (allocated in forward, freed in backward) both survive. A page
    draws the curve 1,000 px wide: more points only make every rank page larger (2,000 points per series were
    three quarters of a rank page)."""
    idx = df.index
    if not (type(idx) is pd.RangeIndex and idx.start == 0 and idx.step == 1 and idx.name is None):
        df = df.reset_index(drop=True)  # positions = labels, in time order
    if len(df) <= n:
        return df
    v = df[value].to_numpy(dtype="float64")
    if not np.isnan(v).any():  # per bucket the first min and the first max (the rank page draws with the same)
        return df.iloc[extreme_points(v, n)].reset_index(drop=True)
    bucket = np.arange(len(df)) * max(1, n // 2) // len(df)
    g = df.groupby(bucket)[value]
    idx = np.unique(np.concatenate([g.idxmax().to_numpy(), g.idxmin().to_numpy()]))
    return df.loc[idx].reset_index(drop=True)


ALLOCATOR_COMPONENTS = ("PTA+GE", "PTA", "GE", "MindSpore", "MS")  # memory_record's framework allocator rows


def record_curve(ts: np.ndarray, alloc: np.ndarray, res: np.ndarray, comp) -> tuple:
    """memory_record.csv's columns (floats, NaN where missing; `comp` the Component column as codes) -> (peak
    reserved MB, peak allocated MB, curve). The curve is the device's reserved memory (the `APP` rows, else the
    framework allocator's) against ms since the first sample, with the allocator's allocated memory at or before
    each point, downsampled. All in numpy: per rank this runs a thousand times at scale."""
    def rows(name: Optional[str]) -> np.ndarray:
        if name is None or name not in comp.uniques:
            return np.zeros(len(ts), dtype=bool)
        return comp.codes == comp.uniques.index(name)

    def peak(v: np.ndarray) -> Optional[float]:
        return float(np.nanmax(v)) if (~np.isnan(v)).any() else None

    t0 = float(np.nanmin(ts)) if (~np.isnan(ts)).any() else math.nan
    app = rows("APP")
    alloc_comp = next((c for c in ALLOCATOR_COMPONENTS if c in comp.uniques), None)
    sel = rows(alloc_comp)
    if app.any() and (~np.isnan(res[app])).any():
        cx, cy, top = (ts[app] - t0) / 1e3, res[app], peak(res[app])
    elif alloc_comp is not None:
        cx, cy = (ts[sel] - t0) / 1e3, res[sel]
        top = peak(cy)
        top = math.nan if top is None else top  # (a max over no number: NaN, as before)
    else:
        cx, cy, top = (ts - t0) / 1e3, res, peak(res)
    cols = {"x": cx, "used_mb": cy}
    allocated_peak = None
    if alloc_comp is not None:
        allocated_peak = peak(alloc[sel])
        keep = ~np.isnan(cx) & ~np.isnan(cy)
        o = _order(cx[keep])
        cx, cy = cx[keep][o], cy[keep][o]
        ax, ay = (ts[sel] - t0) / 1e3, alloc[sel]
        keep = ~np.isnan(ax) & ~np.isnan(ay)
        o = _order(ax[keep])
        ax, ay = ax[keep][o], ay[keep][o]
        at = np.searchsorted(ax, cx, side="right") - 1  # the last allocated sample at or before each point
        cols = {"x": cx, "used_mb": cy, "allocated_mb": np.where(at >= 0, ay[np.maximum(at, 0)] if len(ay) else
                                                                  math.nan, math.nan)}
    keep = ~np.isnan(cols["used_mb"])
    cols = {k: v[keep] for k, v in cols.items()}
    o = _order(cols["x"])
    # `_downsample` of the curve on its arrays, before the frame is made (its way without NaN: there is none left)
    o = o[extreme_points(cols["used_mb"][o], MAX_CURVE_POINTS)]
    return top, allocated_peak, framepack.frame({k: v[o] for k, v in cols.items()})


def _order(x: np.ndarray) -> np.ndarray:
    """The order pandas' `sort_values` gives (numpy's quicksort of the numbers, then the NaNs in place order)."""
    nan = np.isnan(x)
    if not nan.any():
        return np.argsort(x, kind="quicksort")
    ok = np.flatnonzero(~nan)
    return np.concatenate([ok[np.argsort(x[ok], kind="quicksort")], np.flatnonzero(nan)])


def load_mindinsight_memory(summary: Optional[Path], details: Optional[Path], pb: Optional[Path],
                            log: IssueLog) -> Optional[Memory]:
    if summary is None and details is None:
        if pb is not None:
            log.add(pb, dq("memory.memory-usage-pb-profiler"), "info")
        return None
    out = Memory(source=log.rel(summary or details))  # type: ignore[arg-type]
    if summary is not None:
        data = read_json(summary, log)
        check_json_numbers(summary, log, data, ("peak_mem", "capacity", "static_mem"),
                           required=("peak_mem", "capacity"))
        if isinstance(data, dict):
            def gb(key: str) -> Optional[float]:
                v = to_float(data.get(key))
                return None if math.isnan(v) else v * MB_PER_GB
            out.peak_mb, out.capacity_mb, out.static_mb = gb("peak_mem"), gb("capacity"), gb("static_mem")
            if out.capacity_mb:
                out.capacity_source = log.rel(summary)
            out.sources.append(log.rel(summary))
        elif data is not None:
            log.add(summary, dq("memory.expected-json-object-memory"))
    if details is not None:
        data = read_json(details, log)
        if isinstance(data, dict):
            out.sources.append(log.rel(details))
            _details(out, data)
        elif data is not None:
            log.add(details, dq("memory.expected-json-object-keyed"))
    return out if out.sources else None


def _details(out: Memory, data: dict) -> None:
    """Usage curve of the biggest graph (MindInsight plots one graph at a time) and the largest tensors."""
    best = None
    for gid, g in data.items():
        if isinstance(g, dict) and isinstance(g.get("lines"), list) and g["lines"]:
            if best is None or max(map(to_float, g["lines"])) > max(map(to_float, best[1]["lines"])):
                best = (gid, g)
    if best is None:
        return
    gid, g = best
    lines = np.array([to_float(v) for v in g["lines"]], dtype="float64") * MB_PER_GB
    out.curve = pd.DataFrame({"x": np.arange(len(lines)), "used_mb": lines})
    out.curve_x = f"execution order (graph {gid})"
    if out.peak_mb is None:
        out.peak_mb = float(np.nanmax(lines))
    tensors = []
    for group in g.get("breakdowns") or []:
        for t in group if isinstance(group, list) else []:
            if isinstance(t, dict):
                tensors.append({"name": str(t.get("tensor_name", t.get("tensor_id", ""))),
                                "size_mb": to_float(t.get("size")) * MB_PER_GB,
                                "duration_ms": math.nan,
                                "detail": f"{t.get('type', '')} {t.get('shape', '')} {t.get('data_type', '')}".strip()})
    if tensors:
        top = pd.DataFrame(tensors).drop_duplicates("name").sort_values("size_mb", ascending=False)
        out.top = top.head(TOP_ALLOCATIONS).reset_index(drop=True)


def load_modern_memory(record: Optional[Path], operator: Optional[Path], module: Optional[Path],
                       log: IssueLog) -> Optional[Memory]:
    out: Optional[Memory] = None
    if record is not None:
        cols = read_typed(record, log, ("Component",), ("Timestamp(us)", "Total Allocated(MB)", "Total Reserved(MB)"))
        if cols is not None and len(cols["Component"].codes):
            out = Memory(source=log.rel(record), curve_x="ms since the first sample", sources=[log.rel(record)])
            out.peak_mb, out.allocated_peak_mb, out.curve = record_curve(
                cols["Timestamp(us)"], cols["Total Allocated(MB)"], cols["Total Reserved(MB)"], cols["Component"])
    if operator is not None:
        cols = read_typed(operator, log, ("Name",), ("Size(KB)", "Duration(us)"))
        if cols is not None and len(cols["Name"].codes):
            name, size_mb = cols["Name"], cols["Size(KB)"] / 1024.0
            known = np.flatnonzero(~np.isnan(size_mb))  # the largest first; equal sizes in file order
            rows = known[np.argsort(-size_mb[known], kind="stable")][:TOP_ALLOCATIONS]
            if out is None:
                out = Memory(source=log.rel(operator))
            out.top = framepack.frame({"name": np.asarray(name.uniques, dtype=object)[name.codes[rows]],
                                       "size_mb": size_mb[rows], "duration_ms": cols["Duration(us)"][rows] / 1e3,
                                       "detail": np.full(len(rows), "", dtype=object) if len(rows) else ""})
            out.sources.append(log.rel(operator))
    if module is not None:
        df = read_frame(module, log, ("Component", "Total Reserved(MB)"))
        if df is not None and len(df):
            res = pd.to_numeric(df["Total Reserved(MB)"].str.strip(), errors="coerce")
            comp = pd.DataFrame({"component": df["Component"].str.strip(), "peak_mb": res})
            comp = comp.groupby("component", as_index=False)["peak_mb"].max().sort_values("peak_mb", ascending=False)
            if out is None:
                out = Memory(source=log.rel(module))
            out.components = comp.reset_index(drop=True)
            out.sources.append(log.rel(module))
    return out


def load_cpu_memory(path: Path, log: IssueLog) -> Optional[Memory]:
    """`Timestamp(ns),Total Allocated(Byte),Total Reserved(Byte),Total Active(Byte)` (MindSpore CPU profiler)."""
    df = read_frame(path, log, ("Timestamp(ns)", "Total Allocated(Byte)", "Total Reserved(Byte)"))
    if df is None or not len(df):
        return None
    ts = pd.to_numeric(df["Timestamp(ns)"].str.strip(), errors="coerce")
    alloc = pd.to_numeric(df["Total Allocated(Byte)"].str.strip(), errors="coerce") / 2**20
    res = pd.to_numeric(df["Total Reserved(Byte)"].str.strip(), errors="coerce") / 2**20
    curve = pd.DataFrame({"x": (ts - ts.min()) / 1e6, "used_mb": res, "allocated_mb": alloc}).dropna(subset=["x"])
    return Memory(source=log.rel(path), peak_mb=float(res.max()) if res.notna().any() else None,
                  allocated_peak_mb=float(alloc.max()) if alloc.notna().any() else None,
                  curve=_downsample(curve.sort_values("x"), "allocated_mb"), curve_x="ms since the first sample",
                  sources=[log.rel(path)])
