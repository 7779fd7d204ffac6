"""Operator-statistics loaders, one per file family. Every time leaves here in milliseconds.

Over 500 lines: every operator-statistics family (MindInsight, modern, host CPU) is normalised into one table
shape by shared helpers.

MindInsight (ms): `aicore_intermediate_{r}_type.csv` / `_detail.csv` (all header generations; percent 0-100 or a
fraction), `framework_raw_{r}.csv` (operator types), `aicpu_intermediate_{r}.csv` (one row per execution),
`output_op_compute_time[_detail]_{r}.txt` (the older text twins), `cpu_op_type_info_{r}.csv` /
`cpu_op_detail_info_{r}.csv` (host CPU operators). Modern (µs): `kernel_details.csv` (every device task) and
`op_statistic.csv` (the profiler's own per-type totals).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from reportgen import framepack
from reportgen.dataquality import dq
from reportgen.loaders.arrow_csv import Coded
from reportgen.loaders.files import read_text
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.tables import read_csv_rows, read_typed
from reportgen.numbers import to_float
from reportgen.model import OP_DETAIL_COLUMNS, OP_TYPE_COLUMNS, Operators

US_PER_MS = 1e3
OP_SUFFIX_RE = re.compile(r"-op\d+$")


CORE_OF_SIDE = {"aicore": "AI_CORE", "aicpu": "AI_CPU", "hostcpu": "HOST_CPU", "communication": "COMMUNICATION"}


def op_type_from_name(full_name: str) -> str:
    """`Default/network/conv1-Conv2d/Conv2D-op91` -> `Conv2D` (MindSpore full operator names)."""
    last = str(full_name).rsplit("/", 1)[-1]
    return OP_SUFFIX_RE.sub("", last) or last


_HCOM_TYPE_RE = re.compile(r"^(hcom_[A-Za-z]+_)_")
MISSING_TYPES = frozenset(("", "N/A", "NA", "NAN", "NONE", "NULL", "-", "--"))


def kernel_type_from_name(name: str) -> str:
    """The operator type a kernel name carries, for exports that record none (torch_npu Level0 writes N/A):
    `aclnnMm_MatMulCommon_MatMulV2` -> `MatMulV2` (the part after the last underscore), `trans_TransData_12` ->
    `TransData` (index parts dropped), `Conv2D1` -> `Conv2D` (a graph node's index), `hcom_allReduce__576_0_1` ->
    `hcom_allReduce_` and `atomic_memset-1_68_...` -> `MemSet` (as the profiler types them at Level1)."""
    name = str(name).strip()
    m = _HCOM_TYPE_RE.match(name)
    if m:
        return m.group(1)
    if name.lower().startswith("atomic_memset"):
        return "MemSet"
    parts = [p for p in name.split("_") if p and not p.isdigit()]
    if not parts:
        return name
    if len(parts) == 1 and "_" not in name:
        return re.sub(r"(?<=[A-Za-z])\d+$", "", parts[0]) or parts[0]
    return parts[-1]


def note_types_from_names(log: IssueLog, path: Path) -> None:
    log.add(path, dq("operators.types-from-names"), "info")


def type_missing(value) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or \
        str(value).strip().upper() in MISSING_TYPES


def fill_missing_types(op_type: Coded, name: Coded) -> tuple[Coded, bool]:
    """Rows whose type is missing (N/A, empty) get the type their name carries (`kernel_type_from_name`); True when
    any did. Works on the distinct values: one derivation per distinct name."""
    missing = np.array([type_missing(u) for u in op_type.uniques], dtype=bool)
    if not len(op_type.codes) or not missing.any():
        return op_type, False
    rows = missing[op_type.codes]
    uniques = list(op_type.uniques)
    index = {u: i for i, u in enumerate(uniques)}
    derived = np.empty(len(name.uniques), dtype=np.int64)
    for i, n in enumerate(name.uniques):
        t = kernel_type_from_name(n)
        if t not in index:
            index[t] = len(uniques)
            uniques.append(t)
        derived[i] = index[t]
    codes = op_type.codes.copy()
    codes[rows] = derived[name.codes[rows]]
    return Coded(codes, uniques), True


def side_of_core(core: str) -> str:
    """Map kernel_details' `Accelerator Core` / op_statistic's `Core Type` to a side."""
    c = str(core).strip().upper()
    if c in ("AI_CPU", "AICPU"):
        return "aicpu"
    if c in ("HCCL", "COMMUNICATION"):
        return "communication"
    if c.startswith(("AI_CORE", "AI_VECTOR", "MIX_", "AIC", "AIV", "CUBE", "VECTOR")):
        return "aicore"
    return "other"


def _type_frame(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=list(OP_TYPE_COLUMNS))
    for c in OP_TYPE_COLUMNS[3:]:
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    return df


def _detail_frame(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=list(OP_DETAIL_COLUMNS))
    for c in OP_DETAIL_COLUMNS[3:]:
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("float64")
    return df


def _fraction(df: pd.DataFrame) -> pd.DataFrame:
    """`share` written as 0-100 (MindSpore <= 2.0) or as a fraction (later): a column summing past 1.5 is percent."""
    if len(df) and df["share"].sum() > 1.5:
        df["share"] = df["share"] / 100.0
    return df


def _shares(df: pd.DataFrame) -> pd.DataFrame:
    total = df["total_ms"].sum()
    df["share"] = df["total_ms"] / total if total > 0 else math.nan
    return df


# --- MindInsight AI Core ------------------------------------------------------------------------


def load_aicore_type(path: Path, log: IssueLog) -> Optional[pd.DataFrame]:
    """`op_type|kernel_type, execution_time|total_time, execution_frequency, percent` (read by header name).

    The time is the sum of the average execution times of the type's operators (ms, one step); percent is
    0-100 in MindSpore <= 2.0 and a fraction later: a column summing to more than 1.5 is read as percent.
    """
    parsed = read_csv_rows(path, log)
    if parsed is None:
        return None
    header, rows = parsed
    col = {h: i for i, h in enumerate(header)}
    idx = [_pick(col, "op_type", "kernel_type"), _pick(col, "execution_time", "total_time"),
           _pick(col, "execution_frequency"), _pick(col, "percent")]
    if any(i is None for i in idx):
        log.add(path, dq("operators.type-header", header=", ".join(header)[:200]), "error")
        return None
    ti, xi, fi, pi = idx  # type: ignore[misc]
    recs = []
    for _, cells in rows:
        t, n, pct = to_float(cells[xi]), to_float(cells[fi]), to_float(cells[pi])
        if not cells[ti].strip() or math.isnan(t):
            continue
        recs.append({"side": "aicore", "core": "AI_CORE", "op_type": cells[ti].strip(), "count": n, "total_ms": t,
                     "avg_ms": t / n if n else math.nan, "min_ms": math.nan, "max_ms": math.nan, "share": pct})
    return _fraction(_type_frame(recs))


def _framework_types(path: Optional[Path], log: IssueLog) -> dict[str, str]:
    """full operator name -> operator type, from `framework_raw_{r}.csv` (both column generations)."""
    if path is None:
        return {}
    parsed = read_csv_rows(path, log)
    if parsed is None:
        return {}
    header, rows = parsed
    col = {h: i for i, h in enumerate(header)}
    name_i = _pick(col, "full_op_name", "full_kernel_name")
    type_i = _pick(col, "op_type", "kernel_type")
    if name_i is None or type_i is None:
        log.add(path, dq("operators.detail-type-header", header=", ".join(header)[:200]), "warning")
        return {}
    out = {}
    for _, cells in rows:
        if max(name_i, type_i) < len(cells):
            out[cells[name_i].strip()] = cells[type_i].strip()
    return out


def load_aicore_detail(path: Path, log: IssueLog, framework: Optional[Path]) -> Optional[pd.DataFrame]:
    """`full_op_name|full_kernel_name, execution_time|task_duration[, execution_frequency[, task_type]]`.

    The time is the average of one execution (ms). The type comes from framework_raw, else from the name.
    """
    parsed = read_csv_rows(path, log)
    if parsed is None:
        return None
    header, rows = parsed
    col = {h: i for i, h in enumerate(header)}
    name_i = _pick(col, "full_op_name", "full_kernel_name", "full_kernel_time", "op_name")
    time_i = _pick(col, "execution_time", "task_duration", "avg_execution_time")
    if name_i is None or time_i is None:
        log.add(path, dq("operators.detail-header", header=", ".join(header)[:200]), "error")
        return None
    freq_i = _pick(col, "execution_frequency")
    type_i = _pick(col, "task_type")
    types = _framework_types(framework, log)
    recs = []
    for _, cells in rows:
        name, avg = cells[name_i].strip(), to_float(cells[time_i])
        if not name or math.isnan(avg):
            continue
        n = to_float(cells[freq_i]) if freq_i is not None else math.nan
        op_type = types.get(name) or op_type_from_name(name)
        recs.append({"side": "aicore", "name": name, "op_type": op_type, "count": n,
                     "total_ms": avg * n if not math.isnan(n) else avg, "avg_ms": avg, "share": math.nan,
                     "task_type": cells[type_i].strip() if type_i is not None else ""})
    df = _detail_frame(recs)
    return _shares(df)


def load_compute_time_detail(path: Path, log: IssueLog) -> Optional[pd.DataFrame]:
    """`output_op_compute_time_detail_{r}.txt`: banner, header, `type time_ms count percent(0-100)` lines."""
    lines = _text_lines(path, log)
    if lines is None:
        return None
    recs = []
    for line in lines:
        parts = line.split()
        if len(parts) != 4 or parts[0].startswith(("=", "-")):
            continue
        t, n, pct = to_float(parts[1]), to_float(parts[2]), to_float(parts[3])
        if math.isnan(t) or math.isnan(n):
            continue  # the header line
        recs.append({"side": "aicore", "core": "AI_CORE", "op_type": parts[0], "count": n, "total_ms": t,
                     "avg_ms": t / n if n else math.nan, "min_ms": math.nan, "max_ms": math.nan,
                     "share": pct / 100.0})
    if not recs:
        log.add(path, dq("operators.no-rows"), "warning")
        return None
    return _type_frame(recs)


def load_compute_time(path: Path, log: IssueLog) -> Optional[pd.DataFrame]:
    """`output_op_compute_time_{r}.txt`: `name avg_ms stream [count]` lines, then `total op ...`."""
    lines = _text_lines(path, log)
    if lines is None:
        return None
    recs = []
    for line in lines:
        parts = line.split()
        if len(parts) < 2 or parts[0].startswith(("=", "-")) or parts[0] in ("op_name", "total"):
            continue
        avg = to_float(parts[1])
        if math.isnan(avg):
            continue
        n = to_float(parts[3]) if len(parts) > 3 else math.nan
        recs.append({"side": "aicore", "name": parts[0], "op_type": op_type_from_name(parts[0]), "count": n,
                     "total_ms": avg * n if not math.isnan(n) else avg, "avg_ms": avg, "share": math.nan})
    if not recs:
        return None
    return _shares(_detail_frame(recs))


def _text_lines(path: Path, log: IssueLog) -> Optional[list[str]]:
    text = read_text(path, log)
    return None if text is None else text.splitlines()


def types_from_detail(detail: pd.DataFrame, side: str) -> pd.DataFrame:
    """Per-type totals from a per-operator table (count = executions when known, else operators)."""
    d = detail[detail["side"] == side]
    if not len(d):
        return _type_frame([])
    g = d.groupby("op_type", sort=False)
    counts = g["count"].sum(min_count=1).fillna(g.size())
    out = pd.DataFrame({"side": side, "core": CORE_OF_SIDE.get(side, side.upper()), "op_type": list(g.groups),
                        "count": counts.to_numpy(),
                        "total_ms": g["total_ms"].sum().to_numpy(), "min_ms": g["avg_ms"].min().to_numpy(),
                        "max_ms": g["avg_ms"].max().to_numpy()})
    out["avg_ms"] = out["total_ms"] / out["count"].where(out["count"] > 0)
    out["share"] = math.nan
    return _shares(out[list(OP_TYPE_COLUMNS)].astype({c: "float64" for c in OP_TYPE_COLUMNS[3:]}))


# --- MindInsight AI CPU --------------------------------------------------------------------------


def load_aicpu(path: Path, log: IssueLog) -> Optional[tuple[pd.DataFrame, pd.DataFrame]]:
    """`serial_number, op_type|kernel_type, total_time, dispatch_time, execution_time, run_start, run_end` (ms).

    As MindInsight: by type = group by `op_type.split('-')[0]`, total = sum of total_time, count = rows,
    percent of the sum; detail = per operator name, average total_time and count.
    """
    parsed = read_csv_rows(path, log)
    if parsed is None:
        return None
    header, rows = parsed
    col = {h: i for i, h in enumerate(header)}
    type_i, total_i = _pick(col, "op_type", "kernel_type"), _pick(col, "total_time")
    if type_i is None or total_i is None:
        log.add(path, dq("operators.aicpu-header", header=", ".join(header)[:200]), "error")
        return None
    names, totals = [], []
    for _, cells in rows:
        t = to_float(cells[total_i])
        if cells[type_i].strip() and not math.isnan(t):
            names.append(cells[type_i].strip())
            totals.append(t)
    if not names:
        return _type_frame([]), _detail_frame([])
    df = pd.DataFrame({"name": names, "total_ms": np.array(totals, dtype="float64")})
    df["op_type"] = df["name"].str.split("-").str[0]
    g = df.groupby("op_type", sort=False)["total_ms"]
    by_type = pd.DataFrame({"side": "aicpu", "core": "AI_CPU", "op_type": list(g.groups),
                            "count": g.size().to_numpy(),
                            "total_ms": g.sum().to_numpy(), "min_ms": g.min().to_numpy(),
                            "max_ms": g.max().to_numpy()})
    by_type["avg_ms"] = by_type["total_ms"] / by_type["count"]
    by_type = _shares(by_type.assign(share=math.nan)[list(OP_TYPE_COLUMNS)])
    gd = df.groupby("name", sort=False)
    detail = pd.DataFrame({"side": "aicpu", "name": list(gd.groups), "op_type": gd["op_type"].first().to_numpy(),
                           "count": gd.size().to_numpy(), "total_ms": gd["total_ms"].sum().to_numpy()})
    detail["avg_ms"] = detail["total_ms"] / detail["count"]
    detail = _shares(detail.assign(share=math.nan)[list(OP_DETAIL_COLUMNS)])
    return by_type.astype({c: "float64" for c in OP_TYPE_COLUMNS[3:]}), \
        detail.astype({c: "float64" for c in OP_DETAIL_COLUMNS[3:]})


# --- host CPU (MindSpore CPU profiler) -----------------------------------------------------------


def _pick(col: dict[str, int], *prefixes: str) -> Optional[int]:
    for p in prefixes:
        for h, i in col.items():
            if h == p or h.startswith(p + "("):
                return i
    return None


def load_cpu_type(path: Path, log: IssueLog) -> Optional[pd.DataFrame]:
    """`op_type, type_occurrences, execution_frequency, total_compute_time, avg_time(ms), percent` (ms, fraction)."""
    parsed = read_csv_rows(path, log)
    if parsed is None:
        return None
    header, rows = parsed
    col = {h: i for i, h in enumerate(header)}
    idx = [_pick(col, "op_type"), _pick(col, "type_occurrences"), _pick(col, "total_compute_time", "total_time"),
           _pick(col, "avg_time"), _pick(col, "percent", "total_time_proportion")]
    if any(i is None for i in idx):
        log.add(path, dq("operators.host-cpu-type-header", header=", ".join(header)), "error")
        return None
    ti, ni, tt, at, pi = idx  # type: ignore[misc]
    recs = [{"side": "hostcpu", "core": "HOST_CPU", "op_type": c[ti].strip(), "count": to_float(c[ni]),
             "total_ms": to_float(c[tt]),
             "avg_ms": to_float(c[at]), "min_ms": math.nan, "max_ms": math.nan, "share": to_float(c[pi])}
            for _, c in rows if c[ti].strip()]
    return _fraction(_type_frame(recs))


def load_cpu_detail(path: Path, log: IssueLog) -> Optional[pd.DataFrame]:
    """`op_side, op_type, op_name, full_op_name, op_occurrences, op_total_time(ms), op_avg_time(ms), total_proportion`."""
    parsed = read_csv_rows(path, log)
    if parsed is None:
        return None
    header, rows = parsed
    col = {h: i for i, h in enumerate(header)}
    idx = [_pick(col, "full_op_name", "op_name"), _pick(col, "op_type"), _pick(col, "op_occurrences"),
           _pick(col, "op_total_time"), _pick(col, "op_avg_time"), _pick(col, "total_proportion")]
    if any(i is None for i in idx):
        log.add(path, dq("operators.host-cpu-detail-header", header=", ".join(header)), "error")
        return None
    fi, ti, ni, tt, at, pi = idx  # type: ignore[misc]
    recs = [{"side": "hostcpu", "name": c[fi].strip(), "op_type": c[ti].strip(), "count": to_float(c[ni]),
             "total_ms": to_float(c[tt]), "avg_ms": to_float(c[at]), "share": to_float(c[pi])}
            for _, c in rows if c[fi].strip()]
    return _detail_frame(recs)


# --- modern: kernel_details.csv and op_statistic.csv ---------------------------------------------

KERNEL_COLUMNS = ("Name", "Type", "Accelerator Core", "Duration(us)")


def load_kernel_details(path: Path, log: IssueLog) -> Optional[tuple[pd.DataFrame, pd.DataFrame]]:
    """Every device task: per (side, Type) and per (side, Name) totals over the profiled window (ms).

    The share is of all computing (non-communication) kernel time, as op_statistic.csv's Ratio(%), which leaves
    communication kernels out; communication kernels get their share of the communication time. The file is read
    as typed columns (`read_typed`: codes per distinct name, durations as floats), so the grouping below works on
    integer codes, never on the strings of every row.
    """
    tables = _kernel_tables(path, log)
    return None if tables is None else (framepack.frame(tables[0]), framepack.frame(tables[1]))


def _kernel_tables(path: Path, log: IssueLog) -> Optional[tuple[dict, dict]]:
    """`load_kernel_details`' two tables as columns (`OP_TYPE_COLUMNS`, `OP_DETAIL_COLUMNS`; texts as object
    arrays), not yet frames."""
    cols = read_typed(path, log, ("Name", "Type", "Accelerator Core"), ("Duration(us)",),
                      optional=("Accelerator Core",))
    if cols is None:
        return None
    name, op_type, dur = cols["Name"], cols["Type"], cols["Duration(us)"]
    op_type, derived = fill_missing_types(op_type, name)
    if derived:
        note_types_from_names(log, path)
    core = cols.get("Accelerator Core") or Coded(np.zeros(len(dur), dtype=np.int64), ["AI_CORE"])
    side_names = [side_of_core(c) for c in core.uniques]
    distinct_sides = list(dict.fromkeys(side_names))
    side_of = np.array([distinct_sides.index(x) for x in side_names], dtype=np.int64)
    side = Coded(side_of[core.codes] if len(core.uniques) else core.codes, distinct_sides)
    ms = dur / US_PER_MS
    keep = ~np.isnan(ms)
    bad = int(len(ms) - keep.sum())
    if bad:
        log.add(path, dq("operators.kernel-rows-no-duration", bad=bad))
        ms = ms[keep]
        side, core, name, op_type = (Coded(c.codes[keep], c.uniques) for c in (side, core, name, op_type))
    comm_side = distinct_sides.index("communication") if "communication" in distinct_sides else -1
    comm = side.codes == comm_side
    totals = {True: float(ms[comm].sum()), False: float(ms[~comm].sum())}

    def agg(keys: dict[str, Coded], order: tuple[str, ...]) -> dict:
        """Count, sum, min and max of the durations per key (combined integer codes + bincount), columns `order`."""
        codes, first_row = _group_codes([c.codes for c in keys.values()])
        n = len(first_row)
        cols: dict = {k: np.asarray(c.uniques, dtype=object)[c.codes[first_row]] if n else np.zeros(0, dtype=object)
                      for k, c in keys.items()}
        count = np.bincount(codes, minlength=n).astype("float64")
        total = np.bincount(codes, weights=ms, minlength=n)
        lo, hi = np.full(n, np.inf), np.full(n, -np.inf)
        np.minimum.at(lo, codes, ms)
        np.maximum.at(hi, codes, ms)
        is_comm = cols["side"] == "communication"
        denom = np.where(is_comm, totals[True], totals[False])
        cols.update({"count": count, "total_ms": total, "min_ms": lo, "max_ms": hi, "avg_ms": total / count,
                     "share": np.where(denom > 0, total / np.where(denom > 0, denom, 1.0), np.nan)})
        if "name" in keys:  # the first operator type of each name
            cols["op_type"] = np.asarray(op_type.uniques, dtype=object)[op_type.codes[first_row]] if n else \
                np.zeros(0, dtype=object)
        return {c: cols[c] for c in order}  # in the final column order

    return (agg({"side": side, "core": core, "op_type": op_type}, OP_TYPE_COLUMNS),
            agg({"side": side, "name": name}, OP_DETAIL_COLUMNS))


def _group_codes(parts: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Codes of the distinct tuples of per-column codes in order of first appearance (as MultiIndex.factorize
    numbers them), and the row where each first appears. The codes are combined into one number per row (mixed
    radix) and factorised once; past 2^62 combinations, one column at a time (the key kept small)."""
    n = len(parts[0]) if parts else 0
    combined = np.zeros(n, dtype=np.int64)
    radix = [int(c.max()) + 1 if len(c) else 1 for c in parts]
    size = math.prod(radix)
    if n and size <= max(1 << 16, 4 * n):  # few combinations (the usual table): a dense table, no hashing
        for c, r in zip(parts, radix):
            combined = combined * r + c
        first = np.full(size, n, dtype=np.int64)
        np.minimum.at(first, combined, np.arange(n, dtype=np.int64))  # the row where each combination first comes
        seen = np.flatnonzero(first < n)
        order = seen[np.argsort(first[seen], kind="stable")]  # the combinations in order of first appearance
        renumber = np.empty(size, dtype=np.int64)
        renumber[order] = np.arange(len(order), dtype=np.int64)
        return renumber[combined], first[order]
    if size < 1 << 62:
        for c, r in zip(parts, radix):
            combined = combined * r + c
        combined, _ = pd.factorize(combined)
    else:
        for c, r in zip(parts, radix):
            combined = combined * r + c
            combined, _ = pd.factorize(combined)  # keep the key small: codes in order of first appearance
    codes = np.asarray(combined, dtype=np.int64)
    return codes, first_rows(codes)


def first_rows(codes: np.ndarray) -> np.ndarray:
    """The row where each code first appears, for codes numbered 0..n-1 in order of first appearance (a new code is
    exactly where the running maximum grows)."""
    if not len(codes):
        return np.zeros(0, dtype=np.int64)
    grows = np.empty(len(codes), dtype=bool)
    grows[0] = True
    run = np.maximum.accumulate(codes)
    np.greater(run[1:], run[:-1], out=grows[1:])
    return np.flatnonzero(grows)


OP_STAT_COLUMNS = ("OP Type", "Core Type", "Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)",
                   "Max Time(us)", "Ratio(%)")


def load_op_statistic(path: Path, log: IssueLog) -> Optional[pd.DataFrame]:
    """`[Device_id,]OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%)`."""
    cols = _op_statistic_table(path, log)
    return None if cols is None else framepack.frame(cols)


def _op_statistic_table(path: Path, log: IssueLog) -> Optional[dict]:
    """`load_op_statistic`'s table as columns (`OP_TYPE_COLUMNS`; texts as object arrays), not yet a frame."""
    cols = read_typed(path, log, OP_STAT_COLUMNS[:2], OP_STAT_COLUMNS[2:])
    if cols is None:
        return None
    op_type, core = cols["OP Type"], cols["Core Type"]

    def texts(c: Coded, values: list) -> np.ndarray:
        return np.asarray(values, dtype=object)[c.codes] if len(c.codes) else np.zeros(0, object)

    return {"side": texts(core, [side_of_core(c) for c in core.uniques]), "core": texts(core, core.uniques),
            "op_type": texts(op_type, op_type.uniques),
            "count": cols["Count"], "total_ms": cols["Total Time(us)"] / US_PER_MS,
            "avg_ms": cols["Avg Time(us)"] / US_PER_MS, "min_ms": cols["Min Time(us)"] / US_PER_MS,
            "max_ms": cols["Max Time(us)"] / US_PER_MS, "share": cols["Ratio(%)"] / 100.0}


def assemble(parts: list[tuple[str, str, Optional[pd.DataFrame], Optional[pd.DataFrame], str]]
             ) -> Optional[Operators]:
    """Join the per-side tables: (side, source, by_type, detail, basis)."""
    types, details, basis, sources = [], [], {}, {}
    for side, source, t, d, b in parts:
        if t is None and d is None:
            continue
        if t is None and d is not None:
            t = types_from_detail(d, side)
        if t is not None and len(t):
            types.append(t)
        if d is not None and len(d):
            details.append(d[list(OP_DETAIL_COLUMNS)])
        basis[side] = b
        sources[side] = source
    if not types and not details:
        return None
    by_type = pd.concat(types, ignore_index=True) if types else _type_frame([])
    detail = pd.concat(details, ignore_index=True) if details else _detail_frame([])
    return Operators(by_type=by_type, detail=detail, basis=basis, sources=sources)


def load_modern(kernels: Optional[Path], statistic: Optional[Path], log: IssueLog) -> Optional[Operators]:
    """Per-type totals from op_statistic.csv (with kernel_details' communication kernels, which it leaves out),
    else from kernel_details.csv; per-operator rows from kernel_details.csv. Totals cover the profiled window."""
    k = _kernel_tables(kernels, log) if kernels is not None else None
    s = _op_statistic_table(statistic, log) if statistic is not None else None
    if k is None and s is None:
        return None
    if s is None:
        by_type = k[0]
    elif k is None:
        by_type = s
    else:  # op_statistic's rows, then kernel_details' communication rows (column by column, one frame at the end)
        comm = k[0]["side"] == "communication"
        by_type = s if not comm.any() else {c: np.concatenate([s[c], k[0][c][comm]]) for c in OP_TYPE_COLUMNS}
    sources = {"device": log.rel(statistic if s is not None else kernels)}
    if k is not None:
        sources["kernels"] = log.rel(kernels)
    return Operators(by_type=framepack.frame(by_type), detail=framepack.frame(k[1]) if k is not None else
                     _detail_frame([]),
                     basis={side: "profiled window" for side in dict.fromkeys(by_type["side"].tolist())},
                     sources=sources)
