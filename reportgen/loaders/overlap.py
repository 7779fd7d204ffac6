"""Communication/computation overlap loaders. Everything leaves here in milliseconds.

* `ascend_cluster_analyse_{mode}_{stages}_{size}_{rank}.csv` (MindInsight): the profiler's own per-step
  overlap values; read by position, as MindInsight does, whatever the header says;
* `output_timeline_data_{rank}.txt` + the reduce columns of `step_trace_raw_{rank}_detail_time.csv`: the
  inputs of that file; the metrics are recomputed with the profiler's algorithm (`reportgen.intervals`);
* `trace_view.json` (torch_npu / MindSpore 2.3+): read by `loaders/trace_view.py` (the Chrome-trace step reader).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from reportgen import intervals as iv
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.tables import read_csv_rows
from reportgen.numbers import to_float
from reportgen.loaders.schema import whose
from reportgen.loaders.trace_view import load_trace_view_step_trace
from reportgen.model import OVERLAP_COLUMNS, Overlap, StepTrace

PIPELINE_WIDTH = 5
STEP_TRACE_HEADER = re.compile(r"iteration_interval|fp_and_bp", re.I)
# computation + pure communication is the step's duration; a file whose sum is far from the step time
# does not belong to this step trace (hand-made fixtures, mixed runs): reported, values kept.
UNIT_RATIO_LIMITS = (0.5, 2.0)
RECEIVE_RE = re.compile(r"Receive-op", re.I)


def _frame(steps: list[int], rows: list[dict]) -> pd.DataFrame:
    data: dict = {"step": pd.array(steps, dtype="Int64")}
    for c in (*OVERLAP_COLUMNS, "step_duration"):
        data[c] = np.array([r.get(c, math.nan) for r in rows], dtype="float64")
    return pd.DataFrame(data)


def load_cluster_analyse(path: Path, log: IssueLog, step_ids: Optional[list[int]] = None,
                         step_totals: Optional[dict] = None) -> Optional[Overlap]:
    """One rank's `ascend_cluster_analyse_*.csv`: one row per step, then the average row (no marker).

    `step_ids` are the rank's step numbers from its step trace (rows are matched to them in order);
    `step_totals` maps step -> step time in ms, used to check the file really holds milliseconds.
    """
    parsed = read_csv_rows(path, log)
    if parsed is None:
        return None
    header, rows = parsed
    if STEP_TRACE_HEADER.search(",".join(header)):
        log.add(path, f"header {','.join(header)!r} holds step-trace columns, not overlap values "
                "(a hand-made file); not used for the overlap view", "warning")
        return None
    all_names = ("computation", "communication_alone", "stage", "receive_alone", "collective_alone")
    by_name = {h.lower().removesuffix("(ms)").strip().removesuffix("_time").replace("collective_communication",
                                                                                   "collective"): i
               for i, h in enumerate(header)}
    named = [n for n in all_names if n in by_name]
    if set(all_names[:2]) <= set(named) and named in (list(all_names[:2]), list(all_names)):
        # the profiler's own header: read by name (columns may be reordered; other columns are not ours)
        pipeline = len(named) == PIPELINE_WIDTH
        names = tuple(named)
        index = {n: by_name[n] for n in names}
        extra = [h for h in header if h.lower().removesuffix("(ms)").strip().removesuffix("_time").replace(
            "collective_communication", "collective") not in names]
        if extra:
            log.add(path, f"column(s) {', '.join(map(repr, extra[:5]))} not part of the overlap file; ignored", "info")
    else:
        width = len(header)
        if width < 2:
            log.add(path, f"{width} column(s); the overlap file has 2 (model-parallel) or 5 (pipeline)", "error")
            return None
        if width not in (2, PIPELINE_WIDTH):
            log.add(path, f"{width} columns where 2 or 5 are expected; read by position", "warning")
        pipeline = width >= PIPELINE_WIDTH
        names = all_names[:min(width, 5)]
        index = {n: i for i, n in enumerate(names)}
    values: list[dict] = []
    for line, cells in rows:
        rec = {n: to_float(cells[index[n]]) for n in names}
        if any(math.isnan(v) for v in rec.values()):
            log.add(path, f"line {line}: non-numeric value(s); row skipped")
            continue
        values.append(rec)
    if not values:
        log.add(path, "no data rows", "error")
        return None
    stored = values[-1]  # the profiler's average row (a one-row file: both the step and the average)
    body = values[:-1] if len(values) > 1 else values
    if step_ids and len(step_ids) == len(body):
        steps = list(step_ids)
    else:
        steps = list(range(1, len(body) + 1))
        if step_ids:
            log.add(path, f"{len(body)} step row(s) but the step trace has {len(step_ids)} step(s); rows are "
                    "numbered 1..N", "info")
    for rec, s in zip(body, steps):
        if step_totals and s in step_totals:
            rec["step_duration"] = step_totals[s]
    ref = (step_totals or {}).get("average")
    if ref is not None and ref > 0:
        ratio = (stored["computation"] + stored["communication_alone"]) / ref
        if not UNIT_RATIO_LIMITS[0] <= ratio <= UNIT_RATIO_LIMITS[1]:
            log.add(path, f"computation + pure communication is {ratio:.3g}x the step time from the step "
                    "trace (it should be about 1x): the file does not match this run's step trace; its values "
                    "are shown as written", "warning")
    return Overlap(source=log.rel(path), producer="cluster_analyse", steps=_frame(steps, body), pipeline=pipeline,
                   stored_average=stored)


# --- legacy timeline recomputation -----------------------------------------------------------------


def legacy_step_windows(trace: Optional[StepTrace]) -> tuple[list[tuple[int, float, float]],
                                                         list[tuple[int, str, float, float]]]:
    """(step, start µs, end µs) and (step, reduce op name, start µs, end µs) of a legacy step trace."""
    if trace is None or trace.windows is None:
        return [], []
    w, e = trace.windows, trace.comm_events
    windows = list(zip(w["step"].astype(int), w["start_ms"] * 1e3, w["end_ms"] * 1e3))
    ops = [] if e is None else list(zip(e["step"].astype(int), e["name"], e["start_ms"] * 1e3, e["end_ms"] * 1e3))
    return windows, ops


def _read_timeline_txt(path: Path, log: IssueLog) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """`output_timeline_data_{rank}.txt`: op_name, stream_id, start_time(ms), duration(ms)."""
    parsed = read_csv_rows(path, log)
    if parsed is None:
        return None
    header, rows = parsed
    col = {h.strip().lower(): i for i, h in enumerate(header)}
    si = next((i for h, i in col.items() if h.startswith("start_time")), None)
    di = next((i for h, i in col.items() if h.startswith("duration")), None)
    if si is None or di is None:
        if len(header) < 4 or any(h.strip().lower().startswith(("start", "dur")) for h in header):
            log.add(path, "expected op_name, stream_id, start_time, duration columns", "error")
            return None
        si, di = 2, 3  # no recognisable header names: the profiler's column order
    st = np.array([to_float(c[si]) for _, c in rows], dtype="float64")
    du = np.array([to_float(c[di]) for _, c in rows], dtype="float64")
    ok = ~(np.isnan(st) | np.isnan(du))
    if (~ok).any():
        log.add(path, f"{int((~ok).sum())} row(s) with non-numeric times skipped")
    return st[ok], st[ok] + du[ok]


def load_timeline_overlap(timeline: Path, trace: Optional[StepTrace], log: IssueLog) -> Optional[Overlap]:
    """Recompute the cluster-analyse values from the operator timeline and the step trace's reduce events.

    Compute set = the AI Core operators of `output_timeline_data` (what MindSpore 1.x uses); communication =
    the reduce/communication events of `step_trace_raw` (`trace.comm_events`); receives = those named
    `*Receive-op*`; steps = the step trace's [start, end] windows (the same 10 ns clock). Only steps that lie
    inside the timeline's span are kept: the profiler truncates long timelines, and a step the timeline does
    not cover has no values.
    """
    comp = _read_timeline_txt(timeline, log)
    if comp is None or comp[0].size == 0:
        if comp is not None:
            log.add(timeline, "no operators in the timeline", "warning")
        return None
    if trace is None or trace.windows is None or trace.windows.empty:
        log.add(timeline, "no step windows in the step trace; overlap cannot be recomputed per step", "info")
        return None
    ev = trace.comm_events
    if ev is None or ev.empty:
        log.add(timeline, "the step trace has no communication (reduce) columns; no overlap to compute", "info")
        return None
    w_steps = trace.windows["step"].astype(int).tolist()
    w_start = trace.windows["start_ms"].to_numpy(dtype="float64")
    w_end = trace.windows["end_ms"].to_numpy(dtype="float64")
    m_s = ev["start_ms"].to_numpy(dtype="float64")
    m_e = ev["end_ms"].to_numpy(dtype="float64")
    is_recv = ev["name"].str.contains(RECEIVE_RE).to_numpy()
    res = iv.overlap_per_step(comp, (m_s, m_e), (m_s[is_recv], m_e[is_recv]), (m_s[~is_recv], m_e[~is_recv]),
                              w_start, w_end)
    c_lo, c_hi = float(comp[0].min()), float(comp[1].max())
    inside = (np.minimum(w_end, c_hi) - np.maximum(w_start, c_lo)) >= 0.9 * (w_end - w_start)
    if not inside.any():
        log.add(timeline, "the timeline does not cover any whole step of the step trace (different clocks or a "
                "truncated timeline); overlap not recomputed", "warning")
        return None
    rows, steps = [], []
    for i in np.flatnonzero(inside):
        steps.append(w_steps[i])
        rows.append({"computation": res.computation[i], "communication_alone": res.communication_alone[i],
                     "stage": res.stage[i] if res.pipeline else math.nan,
                     "receive_alone": res.receive_alone[i] if res.pipeline else math.nan,
                     "collective_alone": res.collective_alone[i] if res.pipeline else math.nan,
                     "free": res.free[i], "step_duration": res.step_duration[i]})
    note = ""
    if not inside.all():
        note = (f"the timeline covers {len(steps)} of {len(w_steps)} steps (steps "
                f"{_ranges(steps)}); the others have no overlap values")
    return Overlap(source=log.rel(timeline), producer="timeline", steps=_frame(steps, rows), pipeline=res.pipeline,
                   coverage_note=note)


def _ranges(steps: list[int]) -> str:
    from reportgen.fmt import compact_ranks  # (here: the loaders' imports are being split, issue 31)

    return compact_ranks(steps, None, empty="")


# --- msprof raw timelines (MindSpore 2.0-2.2 PROF_* folders) ------------------------------------------------

MSPROF_RE = re.compile(r"^msprof_(\d+)_(\d+)_(\d+)\.json$")


def load_msprof_overlap(device_dir: Path, log: IssueLog, step_totals: Optional[dict] = None) -> Optional[Overlap]:
    """MindInsight's model-parallel columns from msprof's per-iteration `msprof_{dev}_{model}_{iter}.json`.

    msprof writes an "Overlap Analysis" process (Computing, Communication, Communication(Not Overlapped),
    Free) into each iteration's timeline; pure communication = Σ Communication(Not Overlapped), computation =
    the iteration's time minus it (MindInsight's definition), free = Σ Free. Receive-only time is not separated
    in these lanes, so the pipeline columns stay empty.
    """
    files: dict[str, list[tuple[int, Path]]] = {}
    for p in sorted((device_dir / "timeline").glob("msprof_*.json")):
        m = MSPROF_RE.match(p.name)
        if m:
            files.setdefault(m.group(2), []).append((int(m.group(3)), p))
    if not files:
        return None
    model = max(files, key=lambda k: len(files[k]))
    steps, rows = [], []
    for it, p in sorted(files[model]):
        st = load_trace_view_step_trace(p, log)
        if st is None or not len(st.steps):
            log.add(p, f"no Overlap Analysis lanes in this iteration's timeline: {whose(log)} overlap for "
                      f"iteration {it} is missing", "warning", "empty table")
            continue
        rec = st.steps.iloc[0]
        span = float(rec["stage"]) + float(rec["bubble"])
        dur = float(step_totals[it]) if step_totals and it in step_totals else span
        alone = float(rec["communication_not_overlapped"])
        steps.append(it)
        rows.append({"computation": dur - alone, "communication_alone": alone, "free": float(rec["free"]),
                     "step_duration": dur})
    if not rows:
        return None
    return Overlap(source=log.rel(device_dir / "timeline"), producer="msprof_timeline", steps=_frame(steps, rows))
