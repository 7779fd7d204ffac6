"""Plan the strategy page (parallel layout, stage graphs, operator strategies, pipeline Send/Receive) and the
execution pages (time overview, Marey view of each chosen step). Plain data only."""

from __future__ import annotations

from reportgen.i18n import N_, _, text

import math
from typing import Any, Optional

from markupsafe import Markup

from reportgen import fmt, urls
from reportgen.analysis import Analysis
from reportgen.analysis.execution import MareyStep
from reportgen.charts import Chart
from reportgen.charts import column_codec as columnar
from reportgen.charts import execution as ex_charts
from reportgen.charts import marey_layout
from reportgen.charts.strategy_graph import stage_svg
from reportgen.charts.strategy_layout import OpRow, StageGraph, build_stage
from reportgen.site.views import timeline as timeline_view
from reportgen.site.plan.page import Page, PageContext, PageKind, PlanInput, multi_rank, view
from reportgen.fmt import compact_ranks
from reportgen.numbers import finite
from reportgen.site.views.values import num

MAX_PER_RANK_LINES = 64
MAX_PIPE_ROWS = 400
MAX_LIST = 8


def _lane_names(m, lay) -> dict[str, str]:
    """The Marey view's lane labels (analysis writes "rank 3 · stage 1", layout "stage 1 (mean of 2)") in the
    report's language."""
    many = len({d.stage for d in m.devices}) > 1
    out = {d.label: _("rank {rank}").format(rank=d.rank) + (" · " + _("stage {stage}").format(stage=d.stage)
                                                             if many else "") for d in m.devices}
    for s in lay.stages:
        out[s["label"]] = _("stage {stage} (mean of {n})").format(stage=s["stage"], n=len(s["ranks"]))
    return out


def step_label(step: int) -> str:
    """A drawn step's name; runs without step ids (MindSpore CPU) draw the whole profiled window (step -1)."""
    return _("step {step}").format(step=step) if step >= 0 else _("the profiled window")


def _reason_short(reason) -> str:
    """The first words of why a step is drawn ("representative", "slowest"), in English (a msgid)."""
    return text(reason, "en").split(":")[0]


VOCABULARY = (N_("representative"), N_("slowest"), N_("requested with --marey-step"), N_("Redistribution"),
              N_("GradientAggregation"))


def execution_page(step: int, first: bool) -> str:
    return urls.EXECUTION if first else urls.execution_step_page(step)


def _short_list(items: list[str]) -> dict:
    return {"items": items[:MAX_LIST], "more": max(0, len(items) - MAX_LIST)}


def _op_row(o: OpRow) -> dict:
    return {"name": o.name, "type": o.op_type, "scope": o.scope, "instance": o.instance, "strategy": o.strategy,
            "groups": " ".join(o.groups), "group_ranks": o.group_ranks, "inputs": _short_list(o.inputs),
            "outputs": _short_list(o.outputs), "output_type": o.output_type,
            "attrs": [f"{k}={v}" for k, v in o.attrs.items()]}


def _stage_layout(a: Analysis) -> list[dict]:
    by: dict[int, list[int]] = {}
    for r, s in a.run.info.stage_of_rank.items():
        by.setdefault(s, []).append(r)
    if not by and a.strategy is not None:
        by = {st.stage: st.expected_ranks or st.ranks for st in a.strategy.stages}
    if not by:
        by = {0: a.run.rank_ids}
    return [{"stage": s, "ranks": compact_ranks(sorted(rs)), "n": len(rs)} for s, rs in sorted(by.items())]


def _stage_ctx(g: StageGraph) -> dict:
    by_id = {o.id: o for o in g.all_rows}
    blocks = []
    for i, b in enumerate(g.blocks):
        blocks.append({"id": f"s{g.stage}-b{i}", "key": b.key, "n_ops": b.n_ops, "sharded": b.sharded,
                       "split": b.split, "redistribution": b.redistribution,
                       "gradient_aggregation": b.gradient_aggregation, "send": b.send, "receive": b.receive,
                       "ops": [_op_row(by_id[k]) for k in b.op_ids if k in by_id], "more": b.more_ops})
    missing = [r for r in g.expected_ranks if r not in g.ranks]
    return {"stage": g.stage, "ranks": compact_ranks(g.ranks), "missing": compact_ranks(missing) if missing else "", "source": g.source,
            "n_ops": g.n_ops, "n_sharded": g.n_sharded, "n_split": g.n_split, "n_redistribution": g.n_redistribution,
            "n_gradient_aggregation": g.n_gradient_aggregation, "n_edges": g.n_edges, "n_blocks": len(g.blocks),
            "n_layers": g.n_layers, "collapsed": text(g.collapsed_depth),
            "svg": Markup(stage_svg(g.stage, g.blocks, g.edges)), "blocks": blocks,
            "table": [_op_row(o) for o in g.table], "table_more": g.table_more, "csv": urls.strategy_csv(g.stage)}


@view
class StrategyContext(PageContext):
    has_data: bool
    mode: str
    mode_source: str
    raw_mode: str
    n_stages: int
    stage_source: str
    layout: list[dict]
    sizes: dict[str, int]
    stages: list[dict]
    pipeline: Optional[dict]
    sources: list[str]


@view
class ExecutionContext(PageContext):
    has_timeline: bool
    steps: list[dict]
    notes: list[str]
    skipped: str
    has_overview: bool
    marey: Optional[dict]
    current: str = ""  # the path of this page (one page per drawn step)


def plan_strategy_context(a: Analysis) -> tuple[dict, list[Chart], list]:
    info = a.run.info
    sv = a.strategy
    ctx: dict[str, Any] = {
        "has_data": sv is not None, "mode": info.parallel_mode, "mode_source": text(info.parallel_mode_source),
        "raw_mode": (sv.parallel_type if sv else "") or info.parallel_mode_raw,
        "n_stages": info.stages, "stage_source": text(info.stage_source), "layout": _stage_layout(a),
        "sizes": info.parallel_sizes, "stages": [], "pipeline": None, "sources": sv.sources if sv else [],
    }
    downloads = []
    if sv is None:
        return ctx, [], downloads
    cols = [{"key": k, "label": k} for k in ("operator", "type", "scope", "instance", "strategy", "groups",
                                             "group_ranks", "inputs", "outputs")]
    for g in map(build_stage, sv.stages):
        ctx["stages"].append(_stage_ctx(g))
        downloads.append((urls.strategy_csv(g.stage), cols, [o.csv_row() for o in g.all_rows]))
    if sv.pipeline_ops or len(sv.stages) > 1:
        ctx["pipeline"] = {
            "pairs": [{"src": p.src_stage, "dst": "?" if p.dst_stage is None else p.dst_stage, "sends": p.sends,
                       "receives": p.receives} for p in sv.pairs],
            "ops": [{"stage": o.stage, "kind": o.kind, "name": o.name, "tag": o.tag, "peer": o.peer,
                     "peer_stage": "" if o.peer_stage is None else o.peer_stage, "micro": o.micro}
                    for o in sv.pipeline_ops[:MAX_PIPE_ROWS]],
            "more": max(0, len(sv.pipeline_ops) - MAX_PIPE_ROWS), "micro": sv.micro_batches,
            "micro_source": sv.micro_source}
    return ctx, [], downloads


# --- execution -------------------------------------------------------------------------------------------------


def _overview_chart(a: Analysis, marey_pages: list[tuple[MareyStep, str]]) -> Optional[Chart]:
    ev = a.execution
    if ev is None or not ev.overview:
        return None
    ranks = sorted({d["rank"] for d in ev.overview})
    per_rank = len(ranks) <= MAX_PER_RANK_LINES
    by_step: dict[int, list[float]] = {}
    for d in ev.overview:
        by_step.setdefault(d["step"], []).append(d["total_ms"])
    if per_rank:
        lines = [{"step": d["step"], "series": _("rank {rank}").format(rank=d["rank"]), "ms": d["total_ms"]}
                 for d in ev.overview]
    else:
        lines = []
        for s, vals in sorted(by_step.items()):
            vals = sorted(vals)
            for name, v in ((_("max"), vals[-1]), (_("median"), vals[len(vals) // 2]), (_("min"), vals[0])):
                lines.append({"step": s, "series": name, "ms": v})
    comm = []
    for d in ev.overview_comm:
        comm.append({"step": d["step"], "metric": _("communication"), "ms": d["communication_ms"]})
        if d["wait_ms"] is not None:
            comm.append({"step": d["step"], "metric": _("wait"), "ms": d["wait_ms"]})
    points = []
    for m, href in marey_pages:
        vals = by_step.get(m.step)
        if vals:
            points.append({"step": m.step, "ms": round(sum(vals) / len(vals), 4), "href": href,
                           "label": f"{step_label(m.step)}: {_(_reason_short(m.reason))}"})
    spec = ex_charts.time_overview(lines, comm, points, per_rank)
    cap = (_("Training time of every device per step (left axis) and the average communication and wait time per "
             "device (right axis, dashed).")
           if per_rank else
           _("Training time of every device per step (left axis; min / median / max over {n} devices) and the average "
             "communication and wait time per device (right axis, dashed).").format(n=len(ranks)))
    if points:  # said only where drawn
        cap += " " + _("Black diamonds are the steps with an execution view; click one to open it.")
    return Chart("time-overview", spec, cap)


def _device_cells(a: Analysis, ranks: list[int]) -> dict[int, dict]:
    """rank -> the FLOPs and memory cells of the device table (from the resources analysis)."""
    res = a.resources
    out: dict[int, dict] = {r: {"flops_m": None, "flops_rel": None, "memory_ratio": None, "peak_mb": None,
                                "capacity_mb": None} for r in ranks}
    if res.flops is not None and len(res.flops):
        for rec in res.flops[res.flops["rank"].isin(ranks)].drop_duplicates("rank").to_dict("records"):
            out[int(rec["rank"])].update(flops_m=finite(rec["flops_m"]), flops_rel=finite(rec["flops_per_s_norm"]))
    if res.memory is not None and len(res.memory):
        for rec in res.memory[res.memory["rank"].isin(ranks)].drop_duplicates("rank").to_dict("records"):
            out[int(rec["rank"])].update(memory_ratio=finite(rec["ratio"]), peak_mb=finite(rec["peak_mb"]),
                                         capacity_mb=finite(rec["capacity_mb"]))
    return out


def _device_rows(a: Analysis, m: MareyStep, drawn: dict[int, int]) -> list[dict]:
    rows = []
    cells = _device_cells(a, [d.rank for d in m.devices])
    fl = [c["flops_m"] for c in cells.values() if c["flops_m"]]
    for d in m.devices:
        c = cells[d.rank]
        rows.append({"rank": d.rank, "stage": d.stage, "href": urls.rank_page(d.rank),
                     "step_ms": num(d.step_ms), "shift_ms": num(d.shift_ms), "n_ops": d.n_ops, "drawn": drawn.get(d.rank, 0),
                     "compute_ms": num(d.busy_ms.get("compute", 0.0)),
                     "comm_ms": num(sum(v for k, v in d.busy_ms.items() if k != "compute")),
                     "flops_m": num(c["flops_m"]),
                     "flops_share": (c["flops_m"] / max(fl)) if c["flops_m"] and fl else None,
                     "flops_rel": c["flops_rel"], "memory_ratio": c["memory_ratio"], "peak_mb": num(c["peak_mb"]),
                     "capacity_mb": num(c["capacity_mb"]), "source": d.source,
                     "memory_tip": memory_tip(c["peak_mb"], c["capacity_mb"])})
    return rows


def memory_tip(peak_mb: Optional[float], capacity_mb: Optional[float]) -> str:
    """The peak-memory cell's tooltip: "peak of capacity MB", or "peak MB, capacity unknown" when the profiler did
    not record the device's capacity (torch_npu, MindSpore 2.3+; see --device-memory-gb); "" without a peak."""
    peak, cap = num(peak_mb), num(capacity_mb)
    if peak is None:
        return ""
    if cap is None:
        return _("{peak} MB, capacity unknown").format(peak=fmt.number(peak))
    return _("{peak} of {capacity} MB").format(peak=fmt.number(peak), capacity=fmt.number(cap))


MIN_REL_DEFAULT = 0.15  # operator-spread's `min_rel` (the threshold in force is passed in)


def occurrence(key: str) -> int:
    """The occurrence of an operator in its step (1 for the first), from its join key ("stage:name#k")."""
    head, sep, k = key.rpartition("#")
    return int(k) + 1 if sep and k.isdigit() else 1


def _stands_out(s, min_rel: float) -> bool:
    """Computation: the longest device at least 1 + `min_rel` times the median. A collective or a receive (every
    member leaves together, the last to arrive waits least): the shortest device at most the median / (1 +
    `min_rel`)."""
    if s.cls in ("collective", "receive") and s.min_rank >= 0:
        return s.median_ms > 0 and (s.min_ms <= 0 or s.median_ms / s.min_ms - 1 >= min_rel - 1e-9)
    return math.isfinite(s.ratio) and s.ratio - 1 >= min_rel - 1e-9


def _spread_rows(items: list, limit: int, min_rel: float = MIN_REL_DEFAULT) -> list[dict]:
    """Table rows. The culprit device is named only where one stands out: max / median at least 1 + `min_rel`
    (operator-spread's slow-operator threshold in force), not a device 1 % above the median. Operators that
    occur several times in the step carry their occurrence ("#2"), so identical rows can be told apart."""
    out = []
    repeated = {(s.stage, s.name) for s in items if occurrence(s.key) > 1}
    for s in items[:limit]:
        stands_out = _stands_out(s, min_rel)
        out.append({"name": s.name, "cls": s.cls, "stage": s.stage, "n": s.n, "median_ms": num(s.median_ms),
                    "occurrence": occurrence(s.key) if (s.stage, s.name) in repeated else None,
                    "min_ms": num(s.min_ms), "max_ms": num(s.max_ms), "max_rank": s.culprit_rank,
                    "culprit": stands_out, "arrived_last": s.culprit_rank != s.max_rank,
                    "ratio": None if not math.isfinite(s.ratio) else round(s.ratio, 3), "share": s.share,
                    "href": urls.rank_page(s.culprit_rank)})
    return out


MAREY_BAR_FIELDS = ["rank", "row", "name", "cls", "start", "end", "dur"]
MAREY_JOIN_FIELDS = ["key", "name", "cls", "order", "row", "t", "end"]


def plan_execution_pages(a: Analysis, min_rel: float = MIN_REL_DEFAULT) -> list[tuple[str, str, dict, list[Chart], list]]:
    """(path, title, context, charts, downloads) of every execution page: the first chosen step on
    `EXECUTION`, the others on their own page."""
    ev = a.execution
    marey = ev.marey if ev is not None else []
    pages_for = [(m, execution_page(m.step, i == 0)) for i, m in enumerate(marey)]
    overview = _overview_chart(a, pages_for)
    steps_nav = [{"step": m.step, "step_label": step_label(m.step), "reason": text(m.reason),
                  "reason_short": _reason_short(m.reason), "href": p}
                 for m, p in pages_for]
    base = {"has_timeline": bool(marey), "steps": steps_nav, "notes": [text(n) for n in ev.notes] if ev else [],
            "skipped": compact_ranks(ev.skipped_ranks) if ev and ev.skipped_ranks else "",
            "has_overview": overview is not None}
    downloads = []
    if marey:
        cols = [{"key": k, "label": k} for k in ("step", "stage", "operator", "occurrence", "class", "devices",
                                                 "median_ms", "min_ms", "max_ms", "slowest_rank", "max_over_median")]
        rows = [{"step": m.step, "stage": s.stage, "operator": s.name, "occurrence": occurrence(s.key),
                 "class": s.cls, "devices": s.n,
                 "median_ms": round(s.median_ms, 6), "min_ms": round(s.min_ms, 6), "max_ms": round(s.max_ms, 6),
                 "slowest_rank": s.max_rank, "max_over_median": round(s.ratio, 4) if math.isfinite(s.ratio) else ""}
                for m in marey for s in m.spread]
        downloads.append((urls.EXECUTION_OPS_CSV, cols, rows))
    out = []
    if not marey:
        charts = [overview] if overview else []
        out.append((urls.EXECUTION, _("Execution overview"), {**base, "marey": None}, charts, downloads))
        return out
    for i, (m, path) in enumerate(pages_for):
        lay = marey_layout.layout(m)
        names = _lane_names(m, lay)  # the lanes in the report's language
        lane_rows = []
        bars = [dict(b, row=names.get(b["row"], b["row"])) for b in lay.bars]
        joins = [dict(j, row=names.get(j["row"], j["row"])) for j in lay.joins]
        stages = {s["stage"]: s for s in lay.stages}
        for st in sorted(stages):
            members = [names[d.label] for d in m.devices if d.stage == st]
            lane_rows += members
            if len(members) > 1:  # a stage mean lane
                label = names[stages[st]["label"]]
                lane_rows.append(label)
                for b in stages[st]["bars"]:
                    if b["n"] > 1:
                        bars.append({"rank": -1, "row": label, "name": b["name"], "cls": b["cls"],
                                     "start": round(b["st_avg"], 4), "end": round(b["ed_avg"], 4),
                                     "dur": round(b["ed_avg"] - b["st_avg"], 4)})
        spec = ex_charts.marey(bars, joins, lane_rows)
        marey_chart = Chart(f"marey-{m.step}", spec,
                            _("One lane per device (and the mean of each stage): operators as bars; the longest "
                              "operators and the communication are also joined across a stage's devices by a "
                              "line through their starts and a dashed one through their ends (lines that bend mark a "
                              "device running late; a start and end line far apart on every lane, an operator slow "
                              "everywhere). Drag to pan, scroll to zoom along time."))
        # tens of thousands of bars at a thousand devices: columnar beside the spec (an object per bar, its keys
        # repeated, was 4 of the page's 4.5 MB at 1,024 ranks; a device's bars are consecutive: its rank and lane
        # as runs); report.js expands them into the same rows
        columnar.to_columns(marey_chart, "bars", MAREY_BAR_FIELDS, labels=("rank", "row"), dicts=("name", "cls"),
                            decimals={"start": 4, "end": 4, "dur": 4})  # (`marey_layout` rounds them so)
        columnar.to_columns(marey_chart, "joins", MAREY_JOIN_FIELDS, dicts=("key", "name", "cls", "row"),
                            decimals={"t": 4, "end": 4})
        lanes = timeline_view.execution_chart(a.run.execution, m.step, {d.rank: d.shift_ms for d in m.devices},
                                              {d.rank: names[d.label] for d in m.devices})
        charts = ([overview] if overview else []) + [marey_chart] + ([lanes] if lanes else [])
        ctx = {**base, "marey": {
            "step": m.step, "step_label": step_label(m.step), "reason": text(m.reason), "window": text(m.window),
            "alignment": [text(n) for n in m.alignment],
            "span_ms": num(lay.span_ms), "devices": _device_rows(a, m, lay.drawn), "not_drawn": lay.not_drawn,
            "n_devices": len(m.devices), "spread": _spread_rows(m.spread, 40, min_rel),
            "types": _spread_rows(m.type_spread, 25, min_rel), "min_rel": min_rel, "n_types": len(m.type_spread), "n_spread": len(m.spread),
            "csv": urls.EXECUTION_OPS_CSV}, "current": path}
        out.append((path, _("Execution overview: {step}").format(step=step_label(m.step)), ctx, charts, downloads if i == 0 else []))
    return out


def _plan_execution(inp: PlanInput) -> list[Page]:
    return [Page(path, title, EXECUTION_PAGE.partial, ExecutionContext(**inp.common, **ctx), charts=charts,
                 downloads=csv)
            for path, title, ctx, charts, csv in plan_execution_pages(
                inp.analysis, (inp.thresholds.get("operator-spread") or {}).get("min_rel", MIN_REL_DEFAULT))]


def _plan_strategy(inp: PlanInput) -> list[Page]:
    ctx, charts, csv = plan_strategy_context(inp.analysis)
    return [Page(urls.STRATEGY, N_("Parallel strategy"), STRATEGY_PAGE.partial, StrategyContext(**inp.common, **ctx),
                 charts=charts,
                 downloads=csv)]


EXECUTION_PAGE = PageKind("execution", urls.EXECUTION, N_("Execution"), "_execution.html", _plan_execution)
STRATEGY_PAGE = PageKind("strategy", urls.STRATEGY, N_("Strategy"), "_strategy.html", _plan_strategy,
                         applies=multi_rank)
