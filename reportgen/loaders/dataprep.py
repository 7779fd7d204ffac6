"""Data-preparation (MindData) loaders. Times leave here in ms, queue usage as a fraction (0..1).

* `minddata_pipeline_raw_{r}.csv` (else `pipeline_profiling_{r}.json`, the producer's input): pipeline operators;
* `minddata_pipeline_summary_{r}.json|.csv` (MindSpore >= 2.0): empty-queue frequency, CPU, bottleneck warnings;
* `device_queue_profiling_{r}.txt` (dataset sink) / `dataset_iterator_profiling_{r}.txt` (feed mode): the host
  queue per step (`1 capacity step size [ts]`) and the get/push/total times (`0 sub step ms [ts]`);
* `minddata_aicpu_{r}.txt`: the chip-side GetNext queue (`GetNext_dequeue_wait start end size`, µs);
* `dataset.csv` (MindSpore 2.3+): dataset operator timings.
"""

from __future__ import annotations

import ast
import math
from pathlib import Path
from typing import Optional

import pandas as pd

from reportgen.dataquality import dq
from reportgen.loaders.files import read_text
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.jsonfile import read_json
from reportgen.loaders.tables import read_csv_rows
from reportgen.numbers import to_float
from reportgen.loaders.schema import Door, whose
from reportgen.model import DataPrep


def _ids(value) -> list[int]:
    if isinstance(value, list):
        return [int(v) for v in value if isinstance(v, (int, float))]
    s = str(value).strip()
    if not s:
        return []
    try:
        v = ast.literal_eval(s)
    except (ValueError, SyntaxError):
        return []
    if isinstance(v, (list, tuple)):
        return [int(x) for x in v if isinstance(x, (int, float))]
    return [int(v)] if isinstance(v, (int, float)) else []


def _pipeline_raw(path: Path, log: IssueLog) -> Optional[pd.DataFrame]:
    parsed = read_csv_rows(path, log)
    if parsed is None:
        return None
    header, rows = parsed
    col = {h: i for i, h in enumerate(header)}
    need = ("op_id", "op_type", "num_workers", "output_queue_average_size", "output_queue_length",
            "output_queue_usage_rate")
    missing = [c for c in need if c not in col]
    if missing:
        log.add(path, dq("dataprep.pipeline-columns-missing", missing=", ".join(missing)), "error")
        return None
    recs = []
    for _, c in rows:
        parent = to_float(c[col["parent_id"]]) if "parent_id" in col else math.nan
        recs.append({"op_id": int(to_float(c[col["op_id"]])) if not math.isnan(to_float(c[col["op_id"]])) else -1,
                     "op_type": c[col["op_type"]].strip(), "num_workers": to_float(c[col["num_workers"]]),
                     "queue_avg": to_float(c[col["output_queue_average_size"]]),
                     "queue_length": to_float(c[col["output_queue_length"]]),
                     "usage_rate": to_float(c[col["output_queue_usage_rate"]]),
                     "parent_id": None if math.isnan(parent) else int(parent),
                     "children": _ids(c[col["children_id"]]) if "children_id" in col else []})
    _check_tree(Door(log, path), [r["parent_id"] for r in recs], "parent_id")
    return pd.DataFrame(recs)


def _check_tree(door: Door, parents: list, where: str) -> None:
    """A pipeline is a tree: one root (parent -1 or none), every other parent an operator id >= 0."""
    roots = [p for p in parents if p is None or to_float(p) == -1]
    bad = [p for p in parents if p is not None and not math.isnan(to_float(p)) and to_float(p) < -1]
    if len(roots) > 1 or bad:
        door.note(dq("dataprep.pipeline-roots"),
                  f"{where}: {len(roots)} root(s)" + (f", {bad[0]!r}" if bad else ""), "warning", "impossible value")
    door.close()


def _pipeline_profiling(path: Path, log: IssueLog) -> Optional[pd.DataFrame]:
    """The producer's input, turned into the raw CSV's rows as MindSpore's parser does (avg and usage rate)."""
    data = read_json(path, log)
    if not isinstance(data, dict) or not isinstance(data.get("op_info"), list):
        if data is not None:
            log.add(path, dq("dataprep.no-op-info"))
        return None
    ops = {o.get("op_id"): o for o in data["op_info"] if isinstance(o, dict)}
    parent = {c: oid for oid, o in ops.items() for c in (o.get("children") or [])}
    recs = []
    for oid, o in sorted(ops.items(), key=lambda kv: (kv[0] is None, kv[0])):
        q = (o.get("metrics") or {}).get("output_queue") or {}
        sizes = [to_float(x) for x in (q.get("size") or [])]
        sizes = [x for x in sizes if not math.isnan(x)]
        length = to_float(q.get("length"))
        avg = sum(sizes) / len(sizes) if sizes else math.nan
        recs.append({"op_id": int(oid) if oid is not None else -1, "op_type": str(o.get("op_type", "")),
                     "num_workers": to_float(o.get("num_workers")), "queue_avg": avg, "queue_length": length,
                     "usage_rate": avg / length if length and not math.isnan(avg) else math.nan,
                     "parent_id": parent.get(oid), "children": list(o.get("children") or [])})
    return pd.DataFrame(recs) if recs else None


def _summary(path: Path, log: IssueLog) -> Optional[dict]:
    if path.suffix == ".json":
        data = read_json(path, log)
        return data if isinstance(data, dict) else None
    parsed = read_csv_rows(path, log)  # transposed: one row per key
    if parsed is None:
        return None
    header, rows = parsed
    out: dict = {header[0]: header[1:]}
    for _, c in rows:
        out[c[0].strip()] = c[1:]
    return out


def _queue_file(path: Path, log: IssueLog) -> tuple[Optional[pd.DataFrame], Optional[pd.DataFrame]]:
    """Host queue sizes per step and get/push/total times per step (MindInsight's analyse_device_queue_info)."""
    text = read_text(path, log)
    if text is None:
        return None, None
    lines = text.splitlines()
    door = Door(log, path)
    _note_cut(door, text)
    door.close()
    if not text.strip():
        log.add(path, dq("dataprep.host-queue-empty", whose=whose(log)), "warning", "empty table")
    queue, times, bad = [], {}, 0
    for line in lines:
        p = line.split()
        if not p:
            continue
        if p[0] == "1" and len(p) >= 4:
            cap, step, size = to_float(p[1]), to_float(p[2]), to_float(p[3])
            if math.isnan(step) or math.isnan(size):
                bad += 1
                continue
            queue.append({"step": int(step), "size": size, "capacity": cap})
        elif p[0] == "0" and len(p) >= 4:
            step, ms = to_float(p[2]), to_float(p[3])
            key = {"0": "get_ms", "1": "push_ms", "2": "total_ms"}.get(p[1])
            if key is None or math.isnan(step):
                bad += 1
                continue
            times.setdefault(int(step), {"step": int(step)})[key] = ms
        else:
            bad += 1
    if bad:
        log.add(path, dq("dataprep.host-queue-bad-lines", bad=bad))
    q = pd.DataFrame(queue).sort_values("step", kind="stable").reset_index(drop=True) if queue else None
    t = pd.DataFrame(sorted(times.values(), key=lambda r: r["step"])) if times else None
    return q, t


def _aicpu_queue(path: Path, log: IssueLog) -> Optional[pd.DataFrame]:
    """`GetNext_dequeue_wait start end size` (µs on Ascend; GPU's `minddata_getnext_profiling` is ns)."""
    text = read_text(path, log)
    if text is None:
        return None
    lines = text.splitlines()
    scale = 1e6 if "getnext_profiling" in path.name else 1e3
    rows = []
    door = Door(log, path)
    _note_cut(door, text)
    if not text.strip():
        log.add(path, dq("dataprep.device-queue-empty", whose=whose(log)), "warning",
                  "empty table")
    seen: set[str] = set()
    for n, line in enumerate(lines, 1):
        p = line.split()
        if p and p[0].startswith("GetNext"):
            if line.strip() in seen:  # the same dequeue (same start and end) twice
                door.note(dq("dataprep.queue-line-repeated"), f"line {n}", "warning", "duplicate")
            seen.add(line.strip())
            if len(p) < 4:
                door.note(dq("dataprep.queue-line-short"), f"line {n}", "warning",
                          "truncation")
            for x in p[1:4]:
                if math.isnan(to_float(x)):
                    door.note(dq("dataprep.queue-not-number"), f"line {n}: {x[:30]!r}")
                elif to_float(x) < 0:
                    door.note(dq("dataprep.queue-negative"), f"line {n}: {x[:30]!r}")
            start, end = (to_float(p[1]), to_float(p[2])) if len(p) > 2 else (math.nan, math.nan)
            if end < start:
                door.note(dq("dataprep.queue-end-before-start"), f"line {n}", "warning")
            get_ms = (end - start) / scale
            rows.append({"index": len(rows) + 1, "size": to_float(p[3]) if len(p) > 3 else math.nan,
                         "get_ms": get_ms})
    door.close()
    return pd.DataFrame(rows) if rows else None


def _note_cut(door: Door, text: str) -> None:
    """A text file that does not end with a line break: its last line was cut (these writers end every line)."""
    if text and not text.endswith(("\n", "\r")):
        door.note(dq("dataprep.file-ends-mid-line"),
                  f"line {text.count(chr(10)) + 1}: {text.splitlines()[-1][:40]!r}", "warning", "truncation")


def _dataset_csv(path: Path, log: IssueLog) -> Optional[pd.DataFrame]:
    """`Operation,Stage,Occurrences,Avg. time(us),Custom Info`."""
    parsed = read_csv_rows(path, log)
    if parsed is None:
        return None
    header, rows = parsed
    col = {h: i for i, h in enumerate(header)}
    t = next((i for h, i in col.items() if h.lower().startswith("avg")), None)
    if "Operation" not in col or t is None:
        log.add(path, dq("dataprep.summary-columns-missing"), "error")
        return None
    recs = [{"operation": c[col["Operation"]].strip(), "stage": c[col["Stage"]].strip() if "Stage" in col else "",
             "occurrences": to_float(c[col["Occurrences"]]) if "Occurrences" in col else math.nan,
             "avg_ms": to_float(c[t]) / 1e3} for _, c in rows]
    df = pd.DataFrame(recs)
    df["total_ms"] = df["avg_ms"] * df["occurrences"]
    return df


def load_dataprep(files: dict[str, Optional[Path]], log: IssueLog) -> Optional[DataPrep]:
    """`files`: pipeline_raw, pipeline_profiling, summary, device_queue, dataset_iterator, aicpu, dataset_csv."""
    out = DataPrep()
    raw, prof = files.get("pipeline_raw"), files.get("pipeline_profiling")
    if raw is not None:
        out.ops = _pipeline_raw(raw, log)
        out.sources.append(log.rel(raw))
    if out.ops is None and prof is not None:
        out.ops = _pipeline_profiling(prof, log)
        out.sources.append(log.rel(prof))
    summ = files.get("summary")
    if summ is not None:
        data = _summary(summ, log)
        out.sources.append(log.rel(summ))
        if data:
            _check_summary(Door(log, summ), data)
            if isinstance(data.get("parent_id"), list):
                _check_tree(Door(log, summ), data["parent_id"], "parent_id")
            _join_summary(out, data)
        if data is not None and not data.get("op_ids"):
            log.add(summ, dq("dataprep.summary-no-operators", whose=whose(log)), "warning", "empty table")
    dev_queue, it = files.get("device_queue"), files.get("dataset_iterator")
    qfile = dev_queue or it
    if qfile is not None:
        out.host_queue, out.host_times = _queue_file(qfile, log)
        out.mode = "sink" if dev_queue is not None else "feed"
        out.sources.append(log.rel(qfile))
    ac = files.get("aicpu")
    if ac is not None:
        out.device_queue = _aicpu_queue(ac, log)
        out.sources.append(log.rel(ac))
    ds = files.get("dataset_csv")
    if ds is not None:
        out.stage_times = _dataset_csv(ds, log)
        out.sources.append(log.rel(ds))
    return out if out.sources else None


SUMMARY_LISTS = {"op_ids": "rank", "queue_empty_freq_pct": "percent", "avg_cpu_pct": "size",
                 "queue_utilization_pct": "percent", "num_workers": "count", "queue_average_size": "size",
                 "avg_cpu_pct_per_worker": "size"}  # per-operator lists and their kinds
SUMMARY_TIMES = ("per_pipeline_time", "per_push_queue_time", "per_batch_time")  # one value each (ms)


def _check_summary(door: Door, data: dict) -> None:
    """The summary's per-operator lists at the door: numbers of their kind, one per operator (as op_ids)."""
    ids = data.get("op_ids")
    n = len(ids) if isinstance(ids, list) else None
    for key, kind in [*SUMMARY_LISTS.items(), *((k, "duration") for k in SUMMARY_TIMES)]:
        vals = data.get(key)
        if vals is None:
            continue
        if not isinstance(vals, list):
            door.note(dq("dataprep.summary-value-not-list"), f"{key}: {str(vals)[:30]!r}",
                      "warning", "schema drift")
            continue
        if n is not None and key in SUMMARY_LISTS and key != "op_ids" and len(vals) != n:
            door.note(dq("dataprep.summary-list-length"),
                      f"{key}: {len(vals)} value(s), op_ids {n}", "warning", "schema drift")
        for i, v in enumerate(vals):
            if v is None:
                door.note(dq("dataprep.summary-value-null"), f"{key}[{i}]", "warning",
                          "impossible value")
                continue
            if isinstance(v, str) and not v.strip():
                continue
            door.number(kind, v, f"{key}[{i}]", "missing")
    door.close()


def _join_summary(out: DataPrep, data: dict) -> None:
    ids = [int(to_float(x)) for x in data.get("op_ids", []) if not math.isnan(to_float(x))]
    for key in ("queue_analysis_details", "bottleneck_suggestion"):
        warn = data.get(key) or []
        out.warnings += [str(w) for w in (warn if isinstance(warn, list) else [warn]) if str(w).strip()]
    if not ids:
        return
    extra = {}
    for key, col in (("queue_empty_freq_pct", "empty_pct"), ("avg_cpu_pct", "cpu_pct"),
                     ("queue_utilization_pct", "usage_pct")):
        vals = data.get(key) or []
        if len(vals) == len(ids):
            extra[col] = [to_float(v) for v in vals]
    if out.ops is None:
        names = data.get("op_names") or [""] * len(ids)
        workers = data.get("num_workers") or [math.nan] * len(ids)
        parents = data.get("parent_id") or [None] * len(ids)
        out.ops = pd.DataFrame({"op_id": ids, "op_type": [str(n) for n in names][:len(ids)],
                                "num_workers": [to_float(w) for w in workers][:len(ids)],
                                "queue_avg": math.nan, "queue_length": math.nan,
                                "usage_rate": [v / 100.0 for v in extra.get("usage_pct", [math.nan] * len(ids))],
                                "parent_id": [None if p is None or to_float(p) < 0 else int(to_float(p))
                                              for p in parents][:len(ids)],
                                "children": [_ids(c) for c in (data.get("children_ids") or [[]] * len(ids))]})
    by_id = {i: n for n, i in enumerate(ids)}
    for col, vals in extra.items():
        if col == "usage_pct":
            continue
        out.ops[col] = [vals[by_id[i]] if i in by_id else math.nan for i in out.ops["op_id"]]
