"""Plan the resource-utilisation page (plain data only); the rank pages' resource sections are in `pages.rank.resources`."""

from __future__ import annotations


from reportgen.i18n import N_, _

import math
from dataclasses import field
from typing import Any, Optional

import pandas as pd

from reportgen import fmt, urls
from reportgen.analysis import Analysis
from reportgen.charts import Chart
from reportgen.charts import column_codec as columnar
from reportgen.charts import resources as res_charts
from reportgen.model import SIDE_LABELS
from reportgen.site.plan.page import Page, PageContext, PageKind, PlanInput, view
from reportgen.site.views.values import num

TICKS_MAX_RANKS = 64
SLOTS_WITHOUT_HOSTS = 8


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
                                                      "a row per host; the device with the largest share outlined in "
                                                      "red. Click a cell to open the rank.")
        else:
            top = m["peak_mb"].max()
            m["value"] = m["peak_mb"] / top if top > 0 else math.nan
            title, caption = _("Peak / largest peak"), N_(
                "Peak device memory relative to the device with the largest peak (the profiler recorded no "
                "capacity; pass --device-memory-gb to compare with it), that device outlined in red. Click a cell to "
                "open the rank.")
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
        downloads.append((urls.MEMORY_CSV, cols, rows))
    if res.has_flops:
        cells = _cells(a, res.flops, "flops_norm", ".0%",
                       lambda rec: f"{rec['flops_m']:,.1f} MFLOPs, {rec['flops_per_s_g']:,.1f} GFLOPS")
        charts.append(Chart("flops-heatmap", res_charts.device_heatmap(cells, "FLOPs / busiest device", res_charts.FLOPS_RAMP),
                            N_("FLOPs of each device relative to the busiest device (MindInsight's cluster FLOPs "
                            "heatmap), the busiest outlined in red. Click a cell to open the rank."),
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
        downloads.append((urls.FLOPS_CSV, cols, rows))
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
        downloads.append((urls.OPTYPES_CSV, op_cols, ctx["op_summary"]))
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
                   "bottleneck": bottleneck_text(a, r, ids, kind)})
    dq.sort(key=lambda row: (not row["warn"], row["rank"]))  # starving ranks first
    ctx["dataprep_rows"] = dq
    return ctx, charts, downloads


def _op_label(ops: Optional[pd.DataFrame], oid: int) -> str:
    if ops is None:
        return str(oid)
    hit = ops[ops["op_id"] == oid]
    return f"{hit['op_type'].iloc[0]} (id {oid})" if len(hit) else str(oid)


def bottleneck_text(a: Analysis, r: int, ids: list[int], kind: str) -> str:
    dp = a.run.ranks[r].dataprep
    ops = dp.ops if dp is not None else None
    names = ", ".join(_op_label(ops, i) for i in ids)
    return {"operator": _("{names}: input queues full, output queue low").format(names=names),
            "queue_drop": _("{names}: input queue much fuller than its output queue").format(names=names),
            "source": _("the source operators ({names}): every queue is low").format(names=names),
            "consumer": _("none: every queue is high, the pipeline keeps up")}.get(kind, "")


def _plan(inp: PlanInput) -> list[Page]:
    from reportgen.rules import highlights
    ctx, charts, csv = plan_resources_context(inp.analysis, highlights.of(inp).slow_ranks)
    return [Page(urls.RESOURCES, N_("Resource utilisation"), PAGE.partial, ResourcesContext(**inp.common, **ctx),
                 charts=charts,
                 downloads=csv)]


PAGE = PageKind("resources", urls.RESOURCES, N_("Resources"), "_resources.html", _plan)
