"""Plan the resource-utilisation page and the detail sections of rank pages (plain data only)."""

from __future__ import annotations

import re

from reportgen.i18n import N_, _, text

import math
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Optional

import numpy as np
import pandas as pd

from reportgen import fmt, urls
from reportgen.analysis import Analysis
from reportgen.analysis.resources import QUEUE_HIGH, QUEUE_LOW
from reportgen.charts import Chart
from reportgen.charts import column_codec as columnar
from reportgen.charts import resources as res_charts
from reportgen.model import SIDE_LABELS
from reportgen.site.views import timeline as timeline_view
from reportgen.site.plan.page import LazyRows, Page, PageContext, PageKind, PlanInput, column_rows, rank_csv, view
from reportgen.site.views.values import num, num_column, records

RESOURCES = "cluster/resources.html"
MEMORY_CSV = "cluster/memory.csv"
FLOPS_CSV = "cluster/flops.csv"
OPTYPES_CSV = "cluster/operator-types.csv"
TRACE_DIR = urls.TRACE_DIR  # the copied traces (one folder both language trees share)
MAX_TRACE_EXPORT_BYTES = 1024 * 1024 * 1024  # all ranks together; above it the report links the original files
MAX_TRACE_FILE_BYTES = 512 * 1024 * 1024
# Traces copied into the site: the ranks the findings name and the drawn devices first; at thousands of ranks a
# copy of every trace would be most of the report (57 of 118 MB at 1,024 ranks). The rest open from the run folder.
MAX_TRACE_COPIES = 32
TICKS_MAX_RANKS = 64
MAX_DETAIL_ROWS = 2000
# A rank page shows only the longest operators; the full per-operator table is a CSV next to the page (at 1,024 ranks
# 2,000-row HTML tables per rank were most of the site's size and of its rendering time).
RANK_TOP_OPS = 50  # operators on the page of a rank the findings name (every one is in the rank's CSV)
RANK_TOP_OPS_LEAN = 20  # on the other rank pages (a large run has thousands)
RANK_OP_COLUMNS = [{"key": "name", "label": N_("Operator")}, {"key": "op_type", "label": N_("Type")},
                   {"key": "side", "label": N_("Runs on")}, {"key": "count", "label": N_("Count")},
                   {"key": "total_ms", "label": N_("Total (ms)")}, {"key": "avg_ms", "label": N_("Average (ms)")},
                   {"key": "share", "label": N_("Share")}]


def _longest_first(rec: dict) -> tuple:
    """Sort key: `total_ms` descending, missing values last (pandas' `sort_values(ascending=False)`)."""
    v = rec["total_ms"]
    return (1, 0.0) if v is None or v != v else (0, -float(v))


def _detail_columns(detail, limit: Optional[int] = None) -> dict[str, list]:
    """A rank's operators, longest first (the first `limit`), column by column: the rank page's table and its CSV
    (`total_ms` descending, missing last, ties in the frame's order: `_longest_first`)."""
    total = detail["total_ms"].to_numpy(dtype=float)
    missing = np.isnan(total)
    order = np.lexsort((np.where(missing, 0.0, -total), missing))[:limit]  # (lexsort is stable)

    def col(k: str):  # the column's values in that order (as `records` reads them, numbers kept numeric)
        v = detail[k]
        return (v.to_numpy() if v.dtype.kind in "fiub" else v.to_numpy(dtype=object))[order]
    return {"side": [SIDE_LABELS.get(v, v) for v in col("side").tolist()],
            "name": col("name").tolist(), "op_type": col("op_type").tolist(),
            **{k: num_column(col(k)) for k in ("count", "total_ms", "avg_ms", "share")}}


def _detail_rows(detail, limit: Optional[int] = None) -> list[dict]:
    """`_detail_columns` as rows."""
    return column_rows(_detail_columns(detail, limit))


def rank_operators_csv(rank: int, n_ranks: int = 1) -> str:
    """The full operator table of a rank, beside its page (`ranks/rank-N.html`; gzip-compressed on a large run)."""
    return rank_csv(rank, "operators", n_ranks)
SLOTS_WITHOUT_HOSTS = 8


@dataclass
class TraceExport:
    """A rank's trace to copy into the report: `dest` inside the report, `source` relative to the run root."""

    dest: str
    source: str
    convert: bool


def _cells(a: Analysis, frame: pd.DataFrame, value: str, label_fmt: str, tip) -> list[dict]:
    """Heatmap cells: devices grouped by host (slot = position within the host), else by blocks of ranks."""
    info = {r: a.run.ranks[r].info for r in a.run.rank_ids}
    by_host = bool(len(frame)) and all(info[int(r)].host for r in frame["rank"])
    per_row = SLOTS_WITHOUT_HOSTS if len(frame) <= 256 else 16
    rows = []
    if by_host:
        hosts: dict[str, list[int]] = {}
        for r in frame["rank"]:
            hosts.setdefault(info[int(r)].host or "", []).append(int(r))
        slot_of = {}
        for h, rs in hosts.items():
            rs.sort(key=lambda x: (info[x].device if info[x].device is not None else x, x))
            for i, x in enumerate(rs):
                slot_of[x] = (h, i)
    for rec in frame.to_dict("records"):
        r = int(rec["rank"])
        v = num(rec[value])
        if by_host:
            group, slot = slot_of[r]
        else:
            base = r // per_row * per_row
            group, slot = f"ranks {base}–{base + per_row - 1}", r % per_row
        rows.append({"rank": r, "group": group, "slot": slot, "value": v, "href": urls.rank_page(r),
                     "label": "" if v is None else format(v, label_fmt), "tip": tip(rec)})
    return rows


@view
class ResourcesContext(PageContext):
    has_memory: bool
    has_flops: bool
    capacity_known: bool
    op_summary: list[dict]
    op_basis: str
    dataprep_rows: list[dict]
    memory_rows: list[dict] = field(default_factory=list)
    memory_stats: Optional[dict] = None
    flops_rows: list[dict] = field(default_factory=list)
    stage_flops: list[dict] = field(default_factory=list)


def plan_resources_context(a: Analysis, slow_ranks: frozenset = frozenset()) -> tuple[dict[str, Any], list[Chart], list]:
    """`slow_ranks`: the ranks a finding names slow (`Highlights.slow_ranks`): the operator spread paints them red
    in every type where they are above the median, as the finding's advice says."""
    res = a.resources
    ctx: dict[str, Any] = {"has_memory": res.has_memory, "has_flops": res.has_flops,
                           "capacity_known": bool(res.capacity_known)}
    charts: list[Chart] = []
    downloads: list = []
    if res.has_memory:
        m = res.memory.copy()
        if res.capacity_known:
            m["value"] = m["ratio"]
            title, caption = _("Peak / capacity"), N_("Peak device memory as a share of capacity, one cell per device, "
                                                      "a row per host. Click a cell to open the rank.")
        else:
            top = m["peak_mb"].max()
            m["value"] = m["peak_mb"] / top if top > 0 else math.nan
            title, caption = _("Peak / largest peak"), N_(
                "Peak device memory relative to the device with the largest peak (the profiler recorded no "
                "capacity; pass --device-memory-gb to compare with it). Click a cell to open the rank.")
        peak_tip = _("peak {mb} MB")
        cells = _cells(a, m, "value", ".0%", lambda rec: peak_tip.format(mb=f"{rec['peak_mb']:,.0f}"))
        ramp = res_charts.MEMORY_RAMP if res.capacity_known else res_charts.RELATIVE_RAMP
        charts.append(Chart("memory-heatmap", res_charts.device_heatmap(cells, title, ramp),
                            caption, renderer="canvas" if len(cells) > 2000 else "svg"))
        cols = [{"key": "rank", "label": N_("Rank")}, {"key": "host", "label": N_("Host")},
                {"key": "peak_mb", "label": N_("Peak (MB)")}, {"key": "capacity_mb", "label": N_("Capacity (MB)")},
                {"key": "ratio", "label": N_("Peak / capacity")}, {"key": "allocated_peak_mb", "label": N_("Allocated peak (MB)")}]
        rows = [{"rank": int(r["rank"]), "host": r["host"], "href": urls.rank_page(int(r["rank"])),
                 "peak_mb": num(r["peak_mb"]), "capacity_mb": num(r["capacity_mb"]), "ratio": num(r["ratio"]),
                 "allocated_peak_mb": num(r["allocated_peak_mb"])} for r in res.memory.to_dict("records")]
        ctx["memory_rows"] = rows
        peaks = res.memory["peak_mb"]
        ctx["memory_stats"] = {"max": num(peaks.max()), "median": num(peaks.median()), "min": num(peaks.min()),
                               "max_rank": int(res.memory.loc[peaks.idxmax(), "rank"]),
                               "max_ratio": num(res.memory["ratio"].max())}
        downloads.append((MEMORY_CSV, cols, rows))
    if res.has_flops:
        cells = _cells(a, res.flops, "flops_norm", ".0%",
                       lambda rec: f"{rec['flops_m']:,.1f} MFLOPs, {rec['flops_per_s_g']:,.1f} GFLOPS")
        charts.append(Chart("flops-heatmap", res_charts.device_heatmap(cells, "FLOPs / busiest device", res_charts.FLOPS_RAMP),
                            N_("FLOPs of each device relative to the busiest device (MindInsight's cluster FLOPs "
                            "heatmap). Click a cell to open the rank."),
                            renderer="canvas" if len(cells) > 2000 else "svg"))
        cols = [{"key": "rank", "label": N_("Rank")}, {"key": "host", "label": N_("Host")},
                {"key": "flops_m", "label": N_("FLOPs (MFLOPs)")}, {"key": "flops_per_s_g", "label": N_("FLOPS (GFLOPS)")},
                {"key": "util_pct", "label": N_("FLOPS utilisation (%)")}, {"key": "flops_norm", "label": N_("FLOPs / max")},
                {"key": "flops_per_s_norm", "label": N_("FLOPS / max")}]
        rows = [{"rank": int(r["rank"]), "host": r["host"], "href": urls.rank_page(int(r["rank"])),
                 **{k: num(r[k]) for k in ("flops_m", "flops_per_s_g", "util_pct", "flops_norm", "flops_per_s_norm")}}
                for r in res.flops.to_dict("records")]
        ctx["flops_rows"] = rows
        ctx["stage_flops"] = [{**s, "flops_m": num(s["flops_m"]), "vs_mean": num(s["vs_mean"])}
                              for s in res.stage_flops]
        downloads.append((FLOPS_CSV, cols, rows))
    ctx["op_summary"] = [{**o, "side_label": SIDE_LABELS.get(o["side"], o["side"]),
                          "max_href": urls.rank_page(o["max_rank"]), "min_href": urls.rank_page(o["min_rank"]),
                          **{k: num(o[k]) for k in ("total_ms", "mean_ms", "median_ms", "min_ms", "max_ms", "spread")}}
                         for o in res.operator_summary]
    ctx["op_basis"] = res.operator_basis
    if ctx["op_summary"]:  # the table links its CSV whatever the number of ranks
        op_cols = [{"key": k, "label": lab} for k, lab in (
            ("op_type", "Operator type"), ("side_label", "Runs on"), ("total_ms", "Total, all ranks (ms)"),
            ("median_ms", "Median per rank (ms)"), ("min_ms", "Min (ms)"), ("min_rank", "Min rank"),
            ("max_ms", "Max (ms)"), ("max_rank", "Max rank"), ("spread", "Max / median"))]
        downloads.append((OPTYPES_CSV, op_cols, ctx["op_summary"]))
    if res.operator_summary and len(a.run.rank_ids) > 1:
        types = [o["op_type"] for o in res.operator_summary]
        slow = {(o["op_type"], o["slow_rank"]) for o in res.operator_summary if o["slow_rank"] is not None}
        t = res.operator_types
        n_ranks = t["rank"].nunique()
        if slow_ranks:  # the ranks a finding names slow: red wherever they run a type longer than its median
            med = t.groupby("op_type")["total_ms"].median()
            named = t[t["rank"].isin(list(slow_ranks))]
            slow |= {(rec["op_type"], int(rec["rank"])) for rec in named.to_dict("records")
                     if rec["total_ms"] > med.get(rec["op_type"], math.inf)}
        spread = [{"op_type": rec["op_type"], "rank": int(rec["rank"]), "total_ms": round(float(rec["total_ms"]), 4),
                   "slow": (rec["op_type"], int(rec["rank"])) in slow, "href": urls.rank_page(int(rec["rank"]))}
                  for rec in t.to_dict("records")]
        red = sorted({r for _t, r in slow})
        if red:
            marked = _("Red: {ranks}, where a rank is at least 1.5x the median of a type{named}.").format(
                ranks=(_("rank {rank}").format(rank=red[0]) if len(red) == 1
                       else _("ranks {ranks}").format(ranks=fmt.compact_ranks(red))),
                named=_(", or a rank a slow-rank finding names runs a type above its median") if slow_ranks else "")
        else:
            marked = _("No mark is red: no rank is 1.5x the median of a type and no finding names a slow rank.")
        charts.append(Chart("op-spread", res_charts.op_type_spread(spread, types, boxes=n_ranks > TICKS_MAX_RANKS),
                            (_("Each rank's total time in the top operator types (one mark per rank; boxes span min "
                               "to max).") if n_ranks > TICKS_MAX_RANKS else
                             _("Each rank's total time in the top operator types (one mark per rank).")) + " " + marked
                            + " " + _("Click to open the rank."),
                            renderer="canvas" if len(spread) > 3000 else "svg"))
        # one mark per rank and type (10,000+ at 1,024 ranks): carried columnar, each href from its rank
        columnar.to_columns(charts[-1], "spread", ["op_type", "rank", "total_ms", "slow", "href"],
                            labels=("op_type", "slow"), href_of="rank")
    dq = []
    for r, q in sorted(res.queues.items()):
        ids, kind = res.bottlenecks.get(r, ([], ""))
        dq.append({"rank": r, "href": str(urls.rank(r, "data")), "host_total": q.host_total, "host_empty": q.host_empty,
                   "host_full": q.host_full, "empty_rate": num(q.host_empty_rate), "device_total": q.device_total,
                   "device_empty": q.device_empty, "verdict": q.verdict_text,
                   "warn": q.verdict in ("data_process", "data_transmission"),
                   "bottleneck": _bottleneck_text(a, r, ids, kind)})
    dq.sort(key=lambda row: (not row["warn"], row["rank"]))  # starving ranks first
    ctx["dataprep_rows"] = dq
    return ctx, charts, downloads


def _op_label(ops: Optional[pd.DataFrame], oid: int) -> str:
    if ops is None:
        return str(oid)
    hit = ops[ops["op_id"] == oid]
    return f"{hit['op_type'].iloc[0]} (id {oid})" if len(hit) else str(oid)


def _bottleneck_text(a: Analysis, r: int, ids: list[int], kind: str) -> str:
    dp = a.run.ranks[r].dataprep
    ops = dp.ops if dp is not None else None
    names = ", ".join(_op_label(ops, i) for i in ids)
    return {"operator": _("{names}: input queues full, output queue low").format(names=names),
            "queue_drop": _("{names}: input queue much fuller than its output queue").format(names=names),
            "source": _("the source operators ({names}): every queue is low").format(names=names),
            "consumer": _("none: every queue is high, the pipeline keeps up")}.get(kind, "")


def curve_label(x: str) -> str:
    """The x axis of a memory curve ("execution order (graph 0)", "ms since the first sample") in the report language."""
    m = re.fullmatch(r"execution order \(graph (.+)\)", x or "")
    if m:
        return _("execution order (graph {graph})").format(graph=m[1])
    return _(x) if x else ""


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
        with_trace = [r for r in a.run.rank_ids if a.run.ranks[r].timeline is not None]
        first = [r for r in dict.fromkeys(priority or []) if r in set(with_trace)]
        order = first + [r for r in with_trace if r not in set(first)]
        for r in order:
            t = a.run.ranks[r].timeline
            if (len(self.exports) < MAX_TRACE_COPIES and t.trace_bytes <= MAX_TRACE_FILE_BYTES
                    and t.trace_bytes <= budget):
                budget -= t.trace_bytes
                dest = f"{TRACE_DIR}/rank-{r}.trace.json"
                self.exports.append(TraceExport(dest, t.source, t.trace_needs_numbers))
                self._export_of[r] = dest
            else:
                self._skipped_export.add(r)
        self.n_copied = len(self.exports)

    def _chart(self, key: tuple, make, rows: list[dict], name: str) -> dict:
        """Build a chart's spec once per shape (Altair validation costs ~30 ms) and attach each rank's rows."""
        spec = self._specs.get(key)
        if spec is None:
            spec = self._specs[key] = {k: v for k, v in make().items() if k != "datasets"}
        out = dict(spec)
        out["datasets"] = {name: rows}
        return out

    def sections(self, r: int) -> list[dict]:
        return [self.operators(r), self.flops(r), self.dataprep(r), self.cpu(r), self.memory(r), self.timeline(r)]

    def operators(self, r: int) -> dict:
        ops = self.a.run.ranks[r].operators
        sec: dict[str, Any] = {"id": "operators", "title": N_("Operators"), "template": "_rank_ops.html",
                               "has_data": ops is not None, "charts": []}
        if ops is None:
            return sec
        bt = sorted(records(ops.by_type), key=_longest_first)
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
            spec = self._chart(("optypes", len(rows)), lambda: res_charts.op_type_share(rows), rows, "types")
            sec["charts"].append(Chart(f"rank-{r}-optypes", spec,
                                       N_("The 20 operator types with the most time on this rank, coloured by where "
                                          "they run.")))
        sec["n_detail"] = int(len(ops.detail))
        shown = RANK_TOP_OPS if r in self.flagged else RANK_TOP_OPS_LEAN
        sec["detail"] = _detail_rows(ops.detail, shown)
        if len(ops.detail) > shown:
            sec["csv"] = rank_operators_csv(r, len(self.a.run.rank_ids))
            # every operator: rows built only when the CSV is written (thousands per rank, on thousands of ranks)
            sec["downloads"] = [(sec["csv"], RANK_OP_COLUMNS, LazyRows(partial(_detail_columns, ops.detail), columns=True))]
        sec["sources"] = sorted(set(ops.sources.values()))
        hot = [o for o in self.a.resources.operator_summary if o["slow_rank"] == r]
        sec["slow_types"] = [f"{o['op_type']} ({o['max_ms']:.3f} ms vs median {o['median_ms']:.3f} ms)" for o in hot]
        return sec

    def flops(self, r: int) -> dict:
        f = self.a.run.ranks[r].flops
        sec: dict[str, Any] = {"id": "flops", "title": N_("FLOPs"), "template": "_rank_flops.html",
                               "has_data": f is not None, "charts": []}
        if f is None:
            return sec
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
        return sec

    def dataprep(self, r: int) -> dict:
        dp = self.a.run.ranks[r].dataprep
        sec: dict[str, Any] = {"id": "data", "title": N_("Data preparation"), "template": "_rank_data.html",
                               "has_data": dp is not None and dp.has_data, "charts": []}
        if not sec["has_data"]:
            return sec
        q = self.a.resources.queues.get(r)
        ids, kind = self.a.resources.bottlenecks.get(r, ([], ""))
        sec.update({"sources": dp.sources, "mode": {"sink": N_("dataset sink mode (device_queue_profiling)"),
                                                     "feed": N_("feed mode (dataset_iterator_profiling)")}.get(dp.mode, ""),
                    "queue": q.__dict__ if q is not None else None,
                    "empty_rate": num(q.host_empty_rate) if q is not None else None,
                    "warn": q is not None and q.verdict in ("data_process", "data_transmission"),
                    "bottleneck": _bottleneck_text(self.a, r, ids, kind), "bottleneck_ids": ids,
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
        return sec

    def cpu(self, r: int) -> dict:
        c = self.a.resources.cpu.get(r)
        raw = self.a.run.ranks[r].cpu
        sec: dict[str, Any] = {"id": "cpu", "title": N_("CPU utilisation"), "template": "_rank_cpu.html",
                               "has_data": c is not None, "charts": []}
        if c is None or raw is None:
            return sec
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
        return sec

    def memory(self, r: int) -> dict:
        m = self.a.run.ranks[r].memory
        sec: dict[str, Any] = {"id": "memory", "title": N_("Memory"), "template": "_rank_memory.html",
                               "has_data": m is not None, "charts": []}
        if m is None:
            return sec
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
            for col, label in (("used_mb", N_("in use / reserved")), ("allocated_mb", N_("allocated"))):
                if col in m.curve:
                    v = m.curve[col].to_numpy(dtype="float64")
                    ok = ~np.isnan(v)
                    xs.append(m.curve["x"].to_numpy(dtype="float64")[ok])
                    mbs.append(v[ok])
                    runs.append((_(label), int(ok.sum())))
            x_all = np.concatenate(xs) if xs else np.zeros(0)
            mb_all = np.concatenate(mbs) if mbs else np.zeros(0)

            def rows() -> list[dict]:  # (only for the spec built once per shape)
                series = [label for label, n in runs for _i in range(n)]
                return [{"x": round(x, 4), "series": n, "mb": round(y, 3)}
                        for x, n, y in zip(x_all.tolist(), series, mb_all.tolist())]
            # the curve (hundreds of points per series) goes to the page columnar and delta-coded; report.js
            # expands it into the spec's `mem` rows before drawing
            spec = self._chart(("mem", m.curve_x, cap),
                               lambda: res_charts.memory_curve(rows(), curve_label(m.curve_x), cap), [], "mem")
            chart = Chart(f"rank-{r}-mem", spec, (_("Memory over {x} (dashed: capacity)") if cap else
                                                  _("Memory over {x}")).format(x=curve_label(m.curve_x)))
            # (the columns of `rows()`, built without the rows: thousands of points on thousands of pages)
            chart.columns = {"mem": {"fields": ["x", "series", "mb"],
                                     "cols": [columnar.rounded_column(x_all, 4), columnar.runs_of(runs),
                                              columnar.rounded_column(mb_all, 3)]}}
            sec["charts"].append(chart)
        if m.top is not None and len(m.top):
            sec["top"] = [{"name": rec["name"], "size_mb": num(rec["size_mb"]), "duration_ms": num(rec["duration_ms"]),
                           "detail": rec.get("detail", "")} for rec in records(m.top)]
        if m.components is not None and len(m.components):
            sec["components"] = [{"component": c, "peak_mb": num(v)} for c, v in
                                 zip(m.components["component"], m.components["peak_mb"])]
        return sec

    def timeline(self, r: int) -> dict:
        t = self.a.run.ranks[r].timeline
        sec: dict[str, Any] = {"id": "timeline", "title": N_("Timeline"), "template": "_rank_timeline.html",
                               "has_data": t is not None, "charts": []}
        if t is None:
            return sec
        sec.update({"source": t.source, "span_ms": num(t.span_ms), "n_ops": t.n_ops, "n_streams": t.n_streams,
                    "compute_ms": num(t.compute_ms), "communication_ms": num(t.communication_ms),
                    "pure_communication_ms": num(t.pure_communication_ms), "free_ms": num(t.free_ms),
                    "download": self._export_of.get(r), "converted": t.trace_needs_numbers,
                    "not_copied": r in self._skipped_export, "trace_mb": t.trace_bytes / 1e6,
                    "n_copied": self.n_copied, "max_copies": MAX_TRACE_COPIES,
                    "truncated": t.truncated})
        chart = timeline_view.rank_chart(self.a.run.execution, r)
        if chart is not None:
            sec["charts"].append(chart)
        return sec


def _plan(inp: PlanInput) -> list[Page]:
    from reportgen.rules import highlights
    ctx, charts, csv = plan_resources_context(inp.analysis, highlights.of(inp).slow_ranks)
    return [Page(RESOURCES, N_("Resource utilisation"), PAGE.partial, ResourcesContext(**inp.common, **ctx),
                 charts=charts,
                 downloads=csv)]


PAGE = PageKind("resources", RESOURCES, N_("Resources"), "_resources.html", _plan)
