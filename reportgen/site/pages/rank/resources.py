"""The resource sections of rank pages: operators (the longest on the page, every one in a CSV beside it), FLOPs,
data preparation, CPU, memory and the timeline (and which ranks' traces are copied into the report)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import partial
from typing import Any, Optional

import numpy as np

from reportgen import sealed, urls
from reportgen.analysis import Analysis
from reportgen.analysis.resources import QUEUE_HIGH, QUEUE_LOW
from reportgen.charts import Chart
from reportgen.charts import column_codec as columnar
from reportgen.charts import resources as res_charts
from reportgen.framepack import column_arrays
from reportgen.i18n import N_, _, text
from reportgen.loaders.files import data_bytes
from reportgen.model import SIDE_LABELS
from reportgen.numbers import extreme_points
from reportgen.site.pages.resources import bottleneck_text
from reportgen.site.pages.rank.sections import (CpuSection, DataSection, FlopsSection, MemorySection, OperatorsSection,
                                                Part, TimelineSection, shown_rows)
from reportgen.site.plan.page import column_rows
from reportgen.site.render import csv_store
from reportgen.site.render.csv_text import SourcedRows
from reportgen.site.views import timeline as timeline_view
from reportgen.site.views.values import arrow_strings, column_names, num, num_column, records
from reportgen.urls import rank_csv

# The trace copies' bounds count what a trace holds (`loaders.files.data_bytes`: a gzipped Kineto trace by its
# trailer, ~20x its file), as the copies are written re-gzipped from that text (~5-7 % of it). All ranks together:
# 160 MB of trace text is ~10 MB of copies, a quarter of the site goal (40 MB, issue 33; 1 GiB let a 32-rank GPU
# run copy 45 of its 57.5 MB); above it the report links the original files. A real Kineto trace (100-500 MB of
# JSON) is never copied: it opens from the run folder.
MAX_TRACE_EXPORT_BYTES = 160_000_000
# One trace: at most 64 MB of text (~4 MB copied), so that one large trace cannot take the whole budget from the
# ranks after it (the A100 sample's 5 steps are 26 MB).
MAX_TRACE_FILE_BYTES = 64_000_000
# Traces copied into the site: the ranks the findings name and the drawn devices first; at thousands of ranks a
# copy of every trace would be most of the report (57 of 118 MB at 1,024 ranks). The rest open from the run folder.
MAX_TRACE_COPIES = 32
# On a large run (`urls.large_run`) half as many: 32 copies were 7 of a 1,024-rank site's 48 MB (issue 33); the
# ranks the findings name come first, the drawn devices (the timelines on the pages) fill the rest.
MAX_TRACE_COPIES_LARGE = 16


def max_trace_copies(n_ranks: int) -> int:
    """How many traces a report of `n_ranks` ranks copies (the rest are opened from the run folder)."""
    return MAX_TRACE_COPIES_LARGE if urls.large_run(n_ranks) else MAX_TRACE_COPIES
MAX_DETAIL_ROWS = 2000
# A rank page shows only the longest operators; the full per-operator table is a CSV next to the page (at 1,024 ranks
# 2,000-row HTML tables per rank were most of the site's size and of its rendering time).
RANK_TOP_OPS = 50  # operators on the page of a rank the findings name (every one is in the rank's CSV)
RANK_TOP_OPS_LEAN = 20  # on the other rank pages (a large run has thousands)
RANK_OP_COLUMNS = [{"key": "name", "label": N_("Operator")}, {"key": "op_type", "label": N_("Type")},
                   {"key": "side", "label": N_("Runs on")}, {"key": "count", "label": N_("Count")},
                   {"key": "total_ms", "label": N_("Total (ms)")}, {"key": "avg_ms", "label": N_("Average (ms)")},
                   {"key": "share", "label": N_("Share")}]


def longest_first(rec: dict) -> tuple:
    """Sort key: `total_ms` descending, missing values last (pandas' `sort_values(ascending=False)`)."""
    v = rec["total_ms"]
    return (1, 0.0) if v is None or v != v else (0, -float(v))


def detail_columns(detail, limit: Optional[int] = None) -> dict[str, list]:
    """A rank's operators, longest first (the first `limit`), column by column: the rank page's table and its CSV
    (`total_ms` descending, missing last, ties in the frame's order: `longest_first`)."""
    # each column's own array (a Series per column is ~10 us of pandas; `Series.to_numpy` gives the same values)
    names = column_names(detail)
    arrays = dict(zip(names, column_arrays(detail))) if len(set(names)) == len(names) else {}

    def values(k: str, dtype=None):  # `detail[k].to_numpy(dtype)`
        a = arrays.get(k)
        if a is None:
            return detail[k].to_numpy(dtype=dtype)
        if isinstance(a, np.ndarray):
            return np.asarray(a, dtype=dtype)
        got = arrow_strings(a) if dtype is object else None  # (pandas' own is ~35 us a column)
        if got is None:
            return a.to_numpy(dtype=dtype)
        out = np.empty(len(got), dtype=object)
        out[:] = got
        return out

    total = values("total_ms", float)
    missing = np.isnan(total)
    order = np.lexsort((np.where(missing, 0.0, -total), missing))[:limit]  # (lexsort is stable)

    def col(k: str):  # the column's values in that order (as `records` reads them, numbers kept numeric)
        kind = arrays[k].dtype.kind if k in arrays else detail[k].dtype.kind
        return values(k, None if kind in "fiub" else object)[order]
    return {"side": [SIDE_LABELS.get(v, v) for v in col("side").tolist()],
            "name": col("name").tolist(), "op_type": col("op_type").tolist(),
            **{k: num_column(col(k)) for k in ("count", "total_ms", "avg_ms", "share")}}


def detail_rows(detail, limit: Optional[int] = None) -> list[dict]:
    """`detail_columns` as rows."""
    return column_rows(detail_columns(detail, limit))


def rank_operators_csv(rank: int, n_ranks: int = 1) -> str:
    """The full operator table of a rank, beside its page (`ranks/rank-N.html`; gzip-compressed on a large run)."""
    return rank_csv(rank, "operators", n_ranks)

@dataclass
class TraceExport:
    """A rank's trace to copy into the report: `dest` inside the report, `source` relative to the run root."""

    dest: str
    source: str
    convert: bool


def curve_label(x: str) -> str:
    """The x axis of a memory curve ("execution order (graph 0)", "ms since the first sample") in the report language."""
    m = re.fullmatch(r"execution order \(graph (.+)\)", x or "")
    if m:
        return _("execution order (graph {graph})").format(graph=m[1])
    return _(x) if x else ""


def float_columns(frame):
    """`name -> frame[name].to_numpy(dtype="float64")` for a frame of numbers, its columns read from one array of
    the whole frame (a memory curve: a column of a frame costs ~10 us of pandas, a rank page read four); a frame
    of other columns column by column."""
    whole = frame.to_numpy()
    if whole.dtype != np.float64:
        return lambda name: frame[name].to_numpy(dtype="float64")
    at = {name: i for i, name in enumerate(column_names(frame))}
    return lambda name: whole[:, at[name]]


# the memory curve's points to the precision its tooltip prints (`charts.resources.memory_curve`: x ",.3f", MB ",.1f")
CURVE_X_DECIMALS, CURVE_MB_DECIMALS = 3, 1
# Points drawn of each series of a rank's memory curve: about as many as the chart has pixels across. A longer
# series (a curve no loader thinned, such as MindSpore's graph curve) keeps its extremes (`numbers.extreme_points`:
# the first maximum and minimum of each of 300 buckets, in order), each point with its exact values.
MAX_CURVE_POINTS_DRAWN = 600
CURVE_TERMS = (N_("execution order"), N_("ms since the first sample"))


# --- rank pages ----------------------------------------------------------------------------------


class RankDetail:
    """The operator, FLOPs, data, CPU, memory and timeline sections of rank pages."""

    def __init__(self, a: Analysis, priority: Optional[list[int]] = None, flagged: frozenset[int] = frozenset()) -> None:
        """`priority`: ranks whose traces are copied first (the ones the findings name, the drawn devices).
        `flagged`: ranks the findings name; their pages list more operators."""
        self.a = a
        self.flagged = flagged
        self.exports: list[TraceExport] = []
        budget = MAX_TRACE_EXPORT_BYTES
        self._export_of: dict[int, str] = {}
        self._skipped_export: set[int] = set()
        self._specs: dict[tuple, dict] = {}
        self._mem: Optional[tuple[dict, Optional[float]]] = None
        self._detail_cols: Optional[tuple] = None  # (rank, its operator frame, `detail_columns` of it): `_full_detail`
        self._text: dict[int, int] = {}  # rank -> what its trace holds (`_text_bytes`)
        with_trace = [r for r in a.run.rank_ids if a.run.ranks[r].timeline is not None]
        has_trace = set(with_trace)
        first = [r for r in dict.fromkeys(priority or []) if r in has_trace]
        order = first + [r for r in with_trace if r not in set(first)]
        self.max_copies = max_trace_copies(len(a.run.ranks))
        for r in order:
            t = a.run.ranks[r].timeline
            size = self._text_bytes(r) if len(self.exports) < self.max_copies else 0
            if len(self.exports) < self.max_copies and size <= MAX_TRACE_FILE_BYTES and size <= budget:
                budget -= size
                dest = urls.trace_copy(r)  # gzip-compressed (~7 % of the JSON)
                self.exports.append(TraceExport(dest, t.source, t.trace_needs_numbers))
                self._export_of[r] = dest
            else:
                self._skipped_export.add(r)
        self.n_copied = len(self.exports)

    def _text_bytes(self, r: int) -> int:
        """What rank `r`'s trace holds (`loaders.files.data_bytes`: a gzip by its trailer), read once: the copies'
        bounds count it and the rank page shows it."""
        got = self._text.get(r)
        if got is None:
            got = self._text[r] = data_bytes([self.a.run.root / self.a.run.ranks[r].timeline.source])
        return got

    def _chart(self, key: tuple, make, rows: list[dict], name: str) -> dict:
        """Build a chart's spec once per shape (Altair validation costs ~30 ms) and attach each rank's rows."""
        spec = self._specs.get(key)
        if spec is None:
            spec = self._specs[key] = {k: v for k, v in make().items() if k != "datasets"}
        out = dict(spec)
        out["datasets"] = {name: rows}
        return out

    def sections(self, r: int) -> list[Part]:
        return [self.operators(r), self.flops(r), self.dataprep(r), self.cpu(r), self.memory(r), self.timeline(r)]

    def operators(self, r: int) -> Part:
        data = self.a.run.ranks[r]
        box = sealed.held(data, "operators")  # (read before the operators: reading them opens them)
        ops = data.operators
        sec: dict[str, Any] = {"has_data": ops is not None, "charts": []}
        if ops is None:
            return Part(OperatorsSection(**sec))
        bt = sorted(records(ops.by_type), key=longest_first)
        sides: list[dict] = []
        by_side: dict[Any, dict] = {}
        for rec in bt:
            side = rec["side"]
            if side is None or side != side:  # pandas' groupby leaves out missing keys
                continue
            if side not in by_side:
                by_side[side] = {"side": side, "label": SIDE_LABELS.get(side, side), "total_ms": 0.0, "types": 0,
                                 "basis": ops.basis.get(side, "")}
                sides.append(by_side[side])
            v = rec["total_ms"]
            by_side[side]["total_ms"] += 0.0 if v is None or v != v else float(v)
            by_side[side]["types"] += 1
        total = sum(s["total_ms"] or 0 for s in sides)
        for s in sides:
            s["total_ms"] = num(s["total_ms"])
            s["share"] = (s["total_ms"] or 0) / total if total else None
        sec["sides"] = sides
        sec["types"] = [{"side": SIDE_LABELS.get(rec["side"], rec["side"]), "core": rec["core"],
                         "op_type": rec["op_type"], **{k: num(rec[k]) for k in
                                                       ("count", "total_ms", "avg_ms", "min_ms", "max_ms", "share")}}
                        for rec in bt]
        top = bt[:20]
        if len(top):
            rows = [{"op_type": rec["op_type"], "side": SIDE_LABELS.get(rec["side"], rec["side"]),
                     "total_ms": round(float(rec["total_ms"]), 4), "share": num(rec["share"]), "count": num(rec["count"])}
                    for rec in top]
            spec = self._chart(("optypes", len(rows)), lambda: res_charts.op_type_share(rows), [], "types")
            chart = Chart(f"rank-{r}-optypes", spec, N_("The 20 operator types with the most time on this rank, "
                                                        "coloured by where they run."))
            chart.columns = {"types": columnar.encode(rows, ["op_type", "side", "total_ms", "share", "count"],
                                                      dicts=("side",))}
            sec["charts"].append(chart)
        downloads = []
        sec["n_detail"] = int(len(ops.detail))
        shown = RANK_TOP_OPS if r in self.flagged else shown_rows(RANK_TOP_OPS_LEAN, len(self.a.run.ranks))
        if len(ops.detail) > shown:
            # the CSV's cells are made of the operators alone: found in the CSV store by them as sealed (a rebuild)
            source = b"rank operators: detail_columns\0" + box.digest() if box is not None else None
            if source is not None and csv_store.holds(RANK_OP_COLUMNS, source):
                sec["detail"] = detail_rows(ops.detail, shown)  # (the CSV is not made: only the page's rows)
                self._detail_cols = None
            else:
                # every operator in the CSV: its columns made once, the page's rows the first of them (the same
                # values: `detail_columns` converts value by value), kept for the CSV of this page only
                cols = detail_columns(ops.detail)
                self._detail_cols = (r, ops.detail, cols)
                sec["detail"] = column_rows({k: v[:shown] for k, v in cols.items()})
            sec["csv"] = rank_operators_csv(r, len(self.a.run.ranks))
            # every operator: rows built only when the CSV is written (thousands per rank, on thousands of ranks)
            downloads = [(sec["csv"], RANK_OP_COLUMNS, SourcedRows(partial(self._full_detail, r, ops.detail), source))]
        else:
            sec["detail"] = detail_rows(ops.detail, shown)
        sec["sources"] = sorted(set(ops.sources.values()))
        hot = [o for o in self.a.resources.operator_summary if o["slow_rank"] == r]
        sec["slow_types"] = [f"{o['op_type']} ({o['max_ms']:.3f} ms vs median {o['median_ms']:.3f} ms)" for o in hot]
        return Part(OperatorsSection(**sec), downloads)

    def _full_detail(self, r: int, detail) -> dict[str, list]:
        """`detail_columns(detail)` for rank `r`'s CSV: the columns its page was planned from, when that page was the
        last one planned (a page writer plans a page, then writes it), handed out once; else made again. (Only the
        last page's are kept: a thousand ranks' operators are never held at once.)"""
        got, self._detail_cols = self._detail_cols, None
        if got is not None and got[0] == r and got[1] is detail:
            return got[2]
        return detail_columns(detail)

    def flops(self, r: int) -> Part:
        f = self.a.run.ranks[r].flops
        sec: dict[str, Any] = {"has_data": f is not None, "charts": []}
        if f is None:
            return Part(FlopsSection(**sec))
        row = self.a.resources.flops
        row = row[row["rank"] == r]
        sec.update({"source": f.source, "flops_m": num(f.flops_m), "flops_per_s_g": num(f.flops_per_s_g),
                    "util_pct": num(f.utilization_pct), "cube_m": num(f.cube_m), "vector_m": num(f.vector_m),
                    "norm": num(row["flops_norm"].iloc[0]) if len(row) else None})
        ops = f.per_op
        if ops is not None and len(ops):
            top = ops.sort_values("mflops", ascending=False, kind="stable").head(MAX_DETAIL_ROWS)
            cube = "cube_mflops" in top
            sec["split"] = cube
            sec["ops"] = [{"name": rec["name"], "mflops": num(rec["mflops"]), "gflops": num(rec["gflops"]),
                           "util_pct": num(rec.get("util_pct")), "cube_mflops": num(rec.get("cube_mflops")),
                           "vector_mflops": num(rec.get("vector_mflops"))} for rec in top.to_dict("records")]
            sec["n_ops"] = int(len(ops))
        if f.per_step is not None:
            sec["per_step"] = [{"step": int(s), "util_pct": num(u)} for s, u in zip(f.per_step["step"],
                                                                                    f.per_step["util_pct"])]
        if f.scopes:
            sec["scopes"] = sorted(f.scopes, key=lambda x: -x["value"])[:30]
        return Part(FlopsSection(**sec))

    def dataprep(self, r: int) -> Part:
        dp = self.a.run.ranks[r].dataprep
        sec: dict[str, Any] = {"has_data": dp is not None and dp.has_data, "charts": []}
        if not sec["has_data"]:
            return Part(DataSection(**sec))
        q = self.a.resources.queues.get(r)
        ids, kind = self.a.resources.bottlenecks.get(r, ([], ""))
        sec.update({"sources": dp.sources, "mode": {"sink": N_("dataset sink mode (device_queue_profiling)"),
                                                     "feed": N_("feed mode (dataset_iterator_profiling)")}.get(dp.mode, ""),
                    "queue": q.__dict__ if q is not None else None,
                    "empty_rate": num(q.host_empty_rate) if q is not None else None,
                    "warn": q is not None and q.verdict in ("data_process", "data_transmission"),
                    "bottleneck": bottleneck_text(self.a, r, ids, kind), "bottleneck_ids": ids,
                    "bottleneck_kind": kind, "warnings": dp.warnings, "high": QUEUE_HIGH, "low": QUEUE_LOW})
        if dp.ops is not None and len(dp.ops):
            rows = []
            for rec in dp.ops.to_dict("records"):
                rows.append({"op_id": rec["op_id"], "op_type": rec["op_type"], "num_workers": num(rec["num_workers"]),
                             "queue_avg": num(rec["queue_avg"]), "queue_length": num(rec["queue_length"]),
                             "usage_rate": num(rec["usage_rate"]),
                             "parent_id": None if num(rec["parent_id"]) is None else int(rec["parent_id"]),
                             "children": ", ".join(str(int(c)) for c in rec["children"]),
                             "empty_pct": num(rec.get("empty_pct")), "cpu_pct": num(rec.get("cpu_pct")),
                             "flagged": rec["op_id"] in ids and kind in ("operator", "queue_drop", "source")})
            sec["ops"] = rows
            sec["has_empty"] = any(o["empty_pct"] is not None for o in rows)
        if dp.host_queue is not None and len(dp.host_queue):
            hq = dp.host_queue
            rows = [{"x": int(s), "size": num(z), "capacity": num(c), "empty": bool(z == 0)}
                    for s, z, c in zip(hq["step"], hq["size"], hq["capacity"])]
            spec = self._chart(("queue", "Step"), lambda: res_charts.queue_sizes(rows, "Step"), rows, "queue")
            sec["charts"].append(Chart(f"rank-{r}-hostq", spec, N_("Host queue size at each step (batches waiting to "
                                       "be sent to the device); red: empty.")))
        if dp.device_queue is not None and len(dp.device_queue):
            dq = dp.device_queue
            rows = [{"x": int(i), "size": num(z), "capacity": None, "empty": bool(z == 0)}
                    for i, z in zip(dq["index"], dq["size"])]
            spec = self._chart(("queue", "GetNext call"), lambda: res_charts.queue_sizes(rows, "GetNext call"), rows,
                               "queue")
            sec["charts"].append(Chart(f"rank-{r}-devq", spec, N_("Chip-side queue size at each GetNext call; red: "
                                       "empty (the device waited for data).")))
        if dp.stage_times is not None and len(dp.stage_times):
            sec["stage_times"] = [{k: (num(v) if k not in ("operation", "stage") else v) for k, v in rec.items()}
                                  for rec in dp.stage_times.to_dict("records")]
        return Part(DataSection(**sec))

    def cpu(self, r: int) -> Part:
        c = self.a.resources.cpu.get(r)
        raw = self.a.run.ranks[r].cpu
        sec: dict[str, Any] = {"has_data": c is not None, "charts": []}
        if c is None or raw is None:
            return Part(CpuSection(**sec))
        sec.update({"source": raw.source, "machine": c.machine, "busy": c.busy, "process": c.process,
                    "selection": text(getattr(c, "selection", "")),
                    "cpu_count": c.cpu_count, "ops": [{k: (num(v) if k not in ("op_type",) else v)
                                                       for k, v in o.items()} for o in c.ops]})
        rows = []
        for col in ("user", "sys", "io", "idle"):
            for s, v in zip(raw.machine["sample"], raw.machine[col]):
                if not math.isnan(v):
                    rows.append({"sample": int(s), "series": f"machine {col}", "pct": float(v)})
        for col in ("user", "sys"):
            for s, v in zip(raw.process["sample"], raw.process[col]):
                if not math.isnan(v):
                    rows.append({"sample": int(s), "series": f"process {col}", "pct": float(v)})
        if rows:
            sec["charts"].append(Chart(f"rank-{r}-cpu", self._chart(("cpu",), lambda: res_charts.cpu_usage(rows),
                                                                    rows, "cpu"),
                                       N_("CPU utilisation per sample: the machine and the training process.")))
        return Part(CpuSection(**sec))

    def memory(self, r: int) -> Part:
        m = self.a.run.ranks[r].memory
        sec: dict[str, Any] = {"has_data": m is not None, "charts": []}
        if m is None:
            return Part(MemorySection(**sec))
        if self._mem is None:  # the cluster memory table, indexed once for every rank page
            mem = self.a.resources.memory
            self._mem = ({int(k): v for k, v in zip(mem["rank"], mem[["capacity_mb", "capacity_source"]]
                                                    .to_dict("records"))} if len(mem) else {},
                         num(mem["peak_mb"].median()) if len(mem) > 1 else None)
        by_rank, median = self._mem
        row = by_rank.get(r)
        cap = num(row["capacity_mb"]) if row else num(m.capacity_mb)
        ratio = m.peak_mb / cap if m.peak_mb and cap else None
        sec.update({"sources": m.sources, "peak_mb": num(m.peak_mb), "capacity_mb": cap,
                    "ratio": num(ratio), "static_mb": num(m.static_mb), "allocated_peak_mb": num(m.allocated_peak_mb),
                    "cluster_median_mb": median,
                    "capacity_source": row["capacity_source"] if row else m.capacity_source})
        if m.curve is not None and len(m.curve):
            xs, mbs, runs = [], [], []  # runs: (series label, its points)
            column = float_columns(m.curve)
            for col, label in (("used_mb", N_("in use / reserved")), ("allocated_mb", N_("allocated"))):
                if col in m.curve:
                    v = column(col)
                    ok = ~np.isnan(v)
                    x, v = column("x")[ok], v[ok]
                    if len(v) > MAX_CURVE_POINTS_DRAWN:
                        keep = extreme_points(v, MAX_CURVE_POINTS_DRAWN)
                        x, v = x[keep], v[keep]
                    xs.append(x)
                    mbs.append(v)
                    runs.append((_(label), len(v)))
            x_all = np.concatenate(xs) if xs else np.zeros(0)
            mb_all = np.concatenate(mbs) if mbs else np.zeros(0)

            def rows() -> list[dict]:  # (only for the spec built once per shape)
                series = [label for label, n in runs for _i in range(n)]
                return [{"x": round(x, CURVE_X_DECIMALS), "series": n, "mb": round(y, CURVE_MB_DECIMALS)}
                        for x, n, y in zip(x_all.tolist(), series, mb_all.tolist())]
            # the curve (hundreds of points per series) goes to the page columnar and delta-coded; report.js
            # expands it into the spec's `mem` rows before drawing
            spec = self._chart(("mem", m.curve_x, cap),
                               lambda: res_charts.memory_curve(rows(), curve_label(m.curve_x), cap), [], "mem")
            chart = Chart(f"rank-{r}-mem", spec, (_("Memory over {x} (dashed: capacity)") if cap else
                                                  _("Memory over {x}")).format(x=curve_label(m.curve_x)))
            # (the columns of `rows()`, built without the rows: thousands of points on thousands of pages)
            chart.columns = {"mem": {"fields": ["x", "series", "mb"],
                                     "cols": [columnar.rounded_column(x_all, CURVE_X_DECIMALS), columnar.runs_of(runs),
                                              columnar.rounded_column(mb_all, CURVE_MB_DECIMALS)]}}
            sec["charts"].append(chart)
        if m.top is not None and len(m.top):
            sec["top"] = [{"name": rec["name"], "size_mb": num(rec["size_mb"]), "duration_ms": num(rec["duration_ms"]),
                           "detail": rec.get("detail", "")} for rec in records(m.top)]
        if m.components is not None and len(m.components):
            sec["components"] = [{"component": c, "peak_mb": num(v)} for c, v in
                                 zip(m.components["component"], m.components["peak_mb"])]
        return Part(MemorySection(**sec))

    def timeline(self, r: int) -> Part:
        t = self.a.run.ranks[r].timeline
        sec: dict[str, Any] = {"has_data": t is not None, "charts": []}
        if t is None:
            return Part(TimelineSection(**sec))
        sec.update({"source": t.source, "span_ms": num(t.span_ms), "n_ops": t.n_ops, "n_streams": t.n_streams,
                    "compute_ms": num(t.compute_ms), "communication_ms": num(t.communication_ms),
                    "pure_communication_ms": num(t.pure_communication_ms), "free_ms": num(t.free_ms),
                    "download": self._export_of.get(r), "converted": t.trace_needs_numbers,
                    "not_copied": r in self._skipped_export, "trace_mb": t.trace_bytes / 1e6,
                    "text_mb": self._text_bytes(r) / 1e6 if t.source.endswith(".gz") else None,
                    "n_copied": self.n_copied, "max_copies": self.max_copies,
                    "copies_mb": round(MAX_TRACE_EXPORT_BYTES / 1e6), "copy_mb": round(MAX_TRACE_FILE_BYTES / 1e6),
                    "truncated": t.truncated, "brief": urls.large_run(len(self.a.run.ranks))})
        chart = timeline_view.rank_chart(self.a.run.execution, r)
        if chart is not None:
            sec["charts"].append(chart)
        return Part(TimelineSection(**sec))
