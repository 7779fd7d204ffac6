"""Step-trace loaders, one per file family. Every duration leaves here in milliseconds.

* legacy `step_trace_raw_{rank}_detail_time.csv` (MindInsight): 10 ns system-counter ticks;
* modern `step_trace_time.csv` (torch_npu / MindSpore 2.3+) and its `analysis.db` twin: µs;
* msprof `step_trace_{dev}_{model}_{iter}.json`: µs timestamps, ns iteration times;
* msprof-analyze `cluster_step_trace_time.csv`: µs, one row per (step, rank).
"""

from __future__ import annotations

import math
import re
import sqlite3
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from reportgen import framepack
from reportgen.dataquality import dq
from reportgen.loaders.files import regular_file
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.jsonfile import read_json
from reportgen.loaders.tables import read_csv_rows
from reportgen.numbers import MAX_INT, to_float, to_int
from reportgen.loaders.schema import Door, whose
from reportgen.model import LEGACY_PHASES, MODERN_PHASES, StepTrace

TICKS_PER_MS = 1e5  # Ascend syscnt is 10 ns
US_PER_MS = 1e3

MODERN_COLUMNS = {
    "Computing": "computing",
    "Communication(Not Overlapped)": "communication_not_overlapped",
    "Overlapped": "overlapped",
    "Communication": "communication",
    "Free": "free",
    "Stage": "stage",
    "Bubble": "bubble",
    "Communication(Not Overlapped and Exclude Receive)": "communication_not_overlapped_exclude_receive",
    "Preparing": "preparing",
}
MODERN_REQUIRED = ("Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free",
                   "Stage", "Bubble")  # every generation (2024 writes neither Exclude Receive nor Preparing)
DB_COLUMNS = {
    "computing": "computing",
    "communication_not_overlapped": "communication_not_overlapped",
    "overlapped": "overlapped",
    "communication": "communication",
    "free": "free",
    "stage": "stage",
    "bubble": "bubble",
    "communication_not_overlapped_and_exclude_receive": "communication_not_overlapped_exclude_receive",
    "preparing": "preparing",
}


def _step_id(value: str) -> Optional[int]:
    s = str(value).strip()
    m = re.search(r"(\d+)$", s)
    return to_int(m.group(1)) if m else None


def _frame(records: list[dict], phases: tuple[str, ...]) -> pd.DataFrame:
    steps = [r["step"] for r in records]
    if set(map(type, steps)) <= {int} and (not steps or -MAX_INT <= min(steps) and max(steps) <= MAX_INT):
        # every step a whole number (the usual table): its nullable array made directly (none missing)
        step = pd.arrays.IntegerArray(np.array(steps, dtype=np.int64), np.zeros(len(steps), dtype=bool))
    else:
        step = pd.array(steps, dtype="Int64")
    data: dict = {"step": step}
    for p in phases:
        data[p] = np.array([r.get(p, math.nan) for r in records], dtype="float64")
    return framepack.frame(data)


# --- legacy --------------------------------------------------------------------------------------


def load_legacy_step_trace(path: Path, log: IssueLog) -> Optional[StepTrace]:
    """MindInsight `step_trace_raw_{rank}_detail_time.csv` (training and inference variants)."""
    parsed = read_csv_rows(path, log)
    if parsed is None:
        return None
    header, rows = parsed
    col = {h: i for i, h in enumerate(header)}
    if "step_num" not in col:
        log.add(path, dq("step-trace.no-step-num"), "error")
        return None
    inference = "bp_point" not in col and "fp" in col
    fpbp_col = "fp" if inference else "fp_and_bp"
    missing = [c for c in ("iteration_interval", fpbp_col) if c not in col]
    if missing:
        log.add(path, dq("step-trace.columns-missing", missing=", ".join(missing)), "error")
        return None

    def val(cells: list[str], name: str) -> float:
        return to_float(cells[col[name]]) / TICKS_PER_MS if name in col else math.nan

    door = Door(log, path)
    lost = [c for c in ("start_point", "end_point", "total") + (() if inference else ("tail",)) if c not in col]
    if lost:
        door.note(dq("step-trace.expected-columns-missing", c=", ".join(repr(c) for c in lost)),
                  f"header: {', '.join(header)[:120]}", "warning", "schema drift")
    points = all(c in col for c in ("start_point", "end_point", "fp_point", "bp_point")) and not inference
    starts = {h[: -len("_start_point")] for h in header if h.endswith("_start_point") and h != "start_point"}
    ends = {h[: -len("_end_point")] for h in header if h.endswith("_end_point") and h != "end_point"}
    if starts ^ ends:
        door.note(dq("step-trace.comm-column-unpaired"),
                  ", ".join(sorted(starts ^ ends))[:120], "warning", "schema drift")

    reduce_cols = [h[: -len("_start_point")] for h in header if h.endswith("_start_point")
                   and h != "start_point" and h[: -len("_start_point")] + "_end_point" in col]
    windows: list[tuple[int, float, float]] = []
    events: list[tuple[int, str, float, float]] = []
    records: list[dict] = []
    stored: Optional[dict[str, float]] = None
    note = ""
    for i, (line, cells) in enumerate(rows):
        label = cells[col["step_num"]].strip()
        total = val(cells, "total")
        if math.isnan(total) and "start_point" in col and "end_point" in col:
            total = val(cells, "end_point") - val(cells, "start_point")
        rec = {
            "iteration_interval": val(cells, "iteration_interval"),
            "fp_and_bp": val(cells, fpbp_col),
            "tail": math.nan if inference else val(cells, "tail"),
            "total": total,
        }
        is_last = i == len(rows) - 1
        if label == "-":
            stored = rec
            note = "the profiler's own average row ('-')"
            continue
        step = _step_id(label)
        if is_last and records and step is not None and step <= (records[-1]["step"] or 0) and step == 0:
            # MindInsight reads the last line as the average whatever its label; some writers put '0'.
            stored = rec
            note = "the profiler's average row (last line, labelled '0')"
            log.add(path, dq("step-trace.average-row-labelled-0"), "info")
            continue
        if step is None:
            log.add(path, dq("step-trace.step-not-number", line=line, label=repr(label)))
            continue
        if any(math.isnan(v) for k, v in rec.items() if k != "tail" or not inference):
            log.add(path, dq("step-trace.line-non-numeric", line=line))
            continue
        records.append({"step": step, **rec})
        if points:  # each phase is the gap between two of the row's own time points (10 ns ticks)
            sp, ep, fp, bp = (val(cells, c) for c in ("start_point", "end_point", "fp_point", "bp_point"))
            want = {"iteration_interval": fp - sp, "fp_and_bp": bp - fp, "tail": ep - bp, "total": ep - sp}
            # (writers round each figure on its own: a few ticks, up to 1e-4 of the step, is not a disagreement)
            tol = max(2e-5, 1e-4 * abs(ep - sp)) if not math.isnan(ep - sp) else 2e-5
            off = [k for k, w in want.items() if not math.isnan(w) and w > 0 and abs(rec[k] - w) > tol]
            if off:
                door.note(dq("step-trace.phases-disagree-points"),
                          f"line {line}, {off[0]!r}: {rec[off[0]] * TICKS_PER_MS:.0f} ticks, the points give "
                          f"{want[off[0]] * TICKS_PER_MS:.0f}", "warning", "impossible value")
        a, b = val(cells, "start_point"), val(cells, "end_point")
        if step > 0 and b > a:  # MindSpore's '-' / '0' average rows have no window
            windows.append((step, a, b))
            for name in reduce_cols:
                a, b = val(cells, name + "_start_point"), val(cells, name + "_end_point")
                if b >= a > 0:
                    events.append((step, name, a, b))
    if stored is not None and records and not (stored["total"] > 0 and stored["total"] >= stored["iteration_interval"]):
        log.add(path, dq("step-trace.average-row-inconsistent"), "warning")
        stored, note = None, ""
    door.close()
    if not records and stored is None:
        log.add(path, dq("step-trace.no-rows"), "error")
        return None
    if inference:
        log.add(path, dq("step-trace.inference"), "info")
    return StepTrace(kind="legacy", steps=_frame(records, LEGACY_PHASES), source=log.rel(path),
                     stored_average=stored, stored_average_note=note,
                     windows=pd.DataFrame(windows, columns=["step", "start_ms", "end_ms"]),
                     comm_events=pd.DataFrame(events, columns=["step", "name", "start_ms", "end_ms"]))


# --- modern --------------------------------------------------------------------------------------


def complete_modern(rec: dict) -> dict:
    """Derive the columns older writers leave out, and the step total (stage + bubble)."""
    for k in MODERN_PHASES:
        rec.setdefault(k, math.nan)
    if math.isnan(rec["bubble"]):
        rec["bubble"] = 0.0
    if math.isnan(rec["communication_not_overlapped_exclude_receive"]):
        rec["communication_not_overlapped_exclude_receive"] = rec["communication_not_overlapped"] - rec["bubble"]
    if math.isnan(rec["overlapped"]):
        rec["overlapped"] = rec["communication"] - rec["communication_not_overlapped"]
    if not math.isnan(rec["stage"]):
        rec["total"] = rec["stage"] + rec["bubble"]
    else:
        rec["total"] = rec["computing"] + rec["communication_not_overlapped"] + rec["free"]
    return rec


def modern_frame(records: list[dict]) -> pd.DataFrame:
    """Complete modern records (ms) -> the StepTrace frame."""
    return _frame(records, MODERN_PHASES)


def _modern_record(step: Optional[int], raw: dict, names: dict[str, str]) -> dict:
    """One step_trace_time row (µs values under the file's own column `names`) -> complete record in ms."""
    rec = {"step": step}
    for name, key in names.items():
        if name in raw:
            rec[key] = to_float(raw[name]) / US_PER_MS
    return complete_modern(rec)


def load_modern_step_trace(path: Path, log: IssueLog) -> Optional[StepTrace]:
    """`step_trace_time.csv`, every header generation (with/without Device_id and Preparing)."""
    parsed = read_csv_rows(path, log, numeric=MODERN_COLUMNS)  # by name: a one-row file gives no majority
    if parsed is None:
        return None
    header, rows = parsed
    col = {h: i for i, h in enumerate(header)}
    if "Computing" not in col:
        log.add(path, dq("step-trace.no-computing-column"), "error")
        return None
    unknown = [h for h in header if h not in MODERN_COLUMNS and h not in ("Step", "Device_id")]
    if unknown:
        log.add(path, dq("step-trace.unknown-columns", unknown=", ".join(unknown)), "info")
    lost = [c for c in MODERN_REQUIRED if c not in col]  # see MODERN_REQUIRED
    if lost:
        log.add(path, dq("step-trace.phase-columns-missing", lost=", ".join(lost), whose=whose(log)), "warning",
                "schema drift")
    records = []
    device = None
    for line, cells in rows:
        if device is None and "Device_id" in col:
            d = to_float(cells[col["Device_id"]])
            device = None if math.isnan(d) or d < 0 else int(d)
        step = _step_id(cells[col["Step"]]) if "Step" in col else None
        raw = dict(zip(header, cells))
        rec = _modern_record(step, raw, MODERN_COLUMNS)
        if math.isnan(rec["computing"]):
            log.add(path, dq("step-trace.computing-not-number", line=line))
            continue
        # every column of the file is a time: a negative one cannot be measured (its header names no duration, so
        # the door's negative-duration screen does not see it)
        negative = [name for name, key in MODERN_COLUMNS.items() if name in raw and rec[key] < 0]
        if negative:
            log.add(path, dq("step-trace.negative-time", line=line, negative=", ".join(negative)))
            continue
        records.append(rec)
    if not records:
        log.add(path, dq("step-trace.no-rows"), "error")
        return None
    return StepTrace(kind="modern", steps=_frame(records, MODERN_PHASES), source=log.rel(path), device=device)


def load_db_step_trace(path: Path, log: IssueLog) -> Optional[StepTrace]:
    """`analysis.db` table StepTraceTime (same numbers as step_trace_time.csv)."""
    if not regular_file(path, log):
        return None
    try:
        # immutable: a WAL-mode database is read without creating -shm / -wal files in the run folder
        con = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro&immutable=1", uri=True)
        try:
            cur = con.execute("SELECT * FROM StepTraceTime")
            names = [d[0] for d in cur.description]
            rows = cur.fetchall()
        finally:
            con.close()
    except sqlite3.Error as e:
        log.add(path, dq("step-trace.db-table-unreadable", value=e), "warning")
        return None
    records = []
    for row in rows:
        d = dict(zip(names, row))
        step = _step_id(d["step"]) if d.get("step") not in (None, "") else None
        rec = _modern_record(step, d, DB_COLUMNS)
        if not math.isnan(rec["computing"]):
            records.append(rec)
    if not records:
        log.add(path, dq("step-trace.db-table-empty"), "warning")
        return None
    return StepTrace(kind="modern", steps=_frame(records, MODERN_PHASES), source=log.rel(path))


# --- msprof raw ----------------------------------------------------------------------------------


def load_msprof_step_trace(device_dir: Path, log: IssueLog) -> Optional[StepTrace]:
    """msprof `timeline/step_trace_{dev}_{model}_{iter}.json`: one file per iteration and model."""
    files = sorted((device_dir / "timeline").glob("step_trace_*.json"))
    by_model: dict[str, list[Path]] = {}
    for p in files:
        m = re.match(r"^step_trace_(\d+)_(\d+)_(\d+)\.json$", p.name)
        if m:
            by_model.setdefault(m.group(2), []).append(p)
    if not by_model:
        return None
    model = max(by_model, key=lambda k: len(by_model[k]))
    if len(by_model) > 1:
        log.add(device_dir, dq("step-trace.several-models", by_model=len(by_model), model=model), "info")
    records = {}
    for p in by_model[model]:
        events = read_json(p, log)
        if not isinstance(events, list):
            continue
        for e in events:
            if not isinstance(e, dict) or e.get("cat") != "Iteration Time":
                continue
            a = e.get("args") or {}
            step = _step_id(a.get("Iteration ID", ""))
            ts, fp, bp, end = (to_float(x) for x in (e.get("ts"), a.get("FP Start"), a.get("BP End"),
                                                      a.get("Iteration End")))
            total = to_float(a.get("Iteration Time(ns)")) / 1e6
            if step is None or math.isnan(total):
                continue
            records[step] = {"step": step, "iteration_interval": (fp - ts) / US_PER_MS,
                             "fp_and_bp": (bp - fp) / US_PER_MS, "tail": (end - bp) / US_PER_MS, "total": total}
    if not records:
        log.add(device_dir, dq("step-trace.msprof-no-iteration-time"), "warning")
        return None
    recs = [records[k] for k in sorted(records)]
    return StepTrace(kind="legacy", steps=_frame(recs, LEGACY_PHASES), source=log.rel(device_dir / "timeline"))


# --- msprof-analyze cluster output ---------------------------------------------------------------


def load_cluster_step_trace(path: Path, log: IssueLog) -> dict[int, StepTrace]:
    """Split msprof-analyze's `cluster_step_trace_time.csv` into per-rank step traces (rank rows only)."""
    parsed = read_csv_rows(path, log, numeric=MODERN_COLUMNS)
    if parsed is None:
        return {}
    header, rows = parsed
    col = {h: i for i, h in enumerate(header)}
    if not {"Type", "Index", "Computing"} <= col.keys():
        log.add(path, dq("step-trace.cluster-columns-missing"), "error")
        return {}
    per_rank: dict[int, list[dict]] = {}
    for line, cells in rows:
        if cells[col["Type"]].strip() != "rank":
            continue
        rank = _step_id(cells[col["Index"]])
        if rank is None:
            log.add(path, dq("step-trace.rank-index-not-number", line=line, cells=repr(cells[col["Index"]])))
            continue
        step = _step_id(cells[col["Step"]]) if "Step" in col else None
        per_rank.setdefault(rank, []).append(_modern_record(step, dict(zip(header, cells)), MODERN_COLUMNS))
    rel = log.rel(path)
    return {r: StepTrace(kind="modern", steps=_frame(recs, MODERN_PHASES), source=rel)
            for r, recs in per_rank.items()}


def cluster_stage_sets(path: Path, log: IssueLog) -> list[list[int]]:
    """The rank sets of the `stage` rows of `cluster_step_trace_time.csv` (msprof-analyze's stage detection)."""
    parsed = read_csv_rows(path, IssueLog(log.root), numeric=MODERN_COLUMNS)  # reported by load_cluster_step_trace
    if parsed is None:
        return []
    header, rows = parsed
    col = {h: i for i, h in enumerate(header)}
    if not {"Type", "Index"} <= col.keys():
        return []
    seen: list[list[int]] = []
    for _, cells in rows:
        if cells[col["Type"]].strip() != "stage":
            continue
        members = sorted({int(x) for x in re.findall(r"\d+", cells[col["Index"]])})
        if members and members not in seen:
            seen.append(members)
    return seen
