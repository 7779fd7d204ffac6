"""Cluster communication charts. Rows are plain dicts prepared by the page planner."""

from __future__ import annotations

import copy
import functools
import math

from reportgen import i18n
from reportgen.i18n import _

import altair as alt

from reportgen.charts.steps import step_rule, with_step_param
from reportgen.charts.theme import (
    OK_COLOR,
    PHASE_COLORS,
    SLOW_COLOR,
    Chart,
    finish,
    phase_scale,
)

PART_COLORS = {p: PHASE_COLORS[p] for p in ("Transit", "Wait", "Idle / other")}
TRANSPORT_COLORS = {"HCCS": "#4c78a8", "RDMA": "#e45756", "SDMA": "#54a24b", "PCIE": "#72b7b2", "SIO": "#b279a2",
                    "LOCAL": "#bab0ac", "UNKNOWN": "#9d755d"}


def comm_by_rank(rows: list[dict], x_title: str) -> dict:
    """Stacked transit / wait / idle per rank (or rank group). Rows: {label, order, part, value, href?}."""
    shown = {_(p): c for p, c in PART_COLORS.items()}  # the parts as the rows name them (report language)
    parts = [p for p in shown if any(r["part"] == p for r in rows)]
    chart = Chart(alt.NamedData(name="rows")).mark_bar().encode(
        x=alt.X("label:N", title=x_title, sort=alt.EncodingSortField(field="order", order="ascending"),
                axis=alt.Axis(labelOverlap=True)),
        y=alt.Y("sum(value):Q", title=_("Time per step (ms)")),
        color=alt.Color("part:N", title="", sort=parts,
                        scale=alt.Scale(domain=parts, range=[shown[p] for p in parts])),
        order=alt.Order("part_order:Q"),
        tooltip=[alt.Tooltip("label:N", title=_("Rank(s)")), alt.Tooltip("part:N", title=_("Part")),
                 alt.Tooltip("value:Q", title=_("ms"), format=",.3f")],
    )
    return finish(chart, datasets={"rows": rows})


def comm_per_step(rows: list[dict]) -> dict:
    """MindInsight's time view: per step, the mean over ranks of communication and wait time."""
    chart = Chart(alt.NamedData(name="rows")).mark_line(point=True).encode(
        x=alt.X("step:Q", title=_("Step"), axis=alt.Axis(tickMinStep=1, format="d")),
        y=alt.Y("value:Q", title=_("Mean over ranks (ms)")),
        color=alt.Color("series:N", title="", scale=phase_scale([_("Communication"), _("Wait")])),
        tooltip=[alt.Tooltip("step:Q", title=_("Step")), alt.Tooltip("series:N", title=""),
                 alt.Tooltip("value:Q", title=_("ms"), format=",.3f")],
    )
    return with_step_param(finish(alt.layer(chart, step_rule("Q")), height=220, datasets={"rows": rows}))


def link_bandwidth(rows: list[dict]) -> dict:
    """Every link: size against bandwidth, by transport; slow links in red. Rows: link table rows."""
    base = Chart(alt.NamedData(name="links"))
    tooltip = [alt.Tooltip("link:N", title=_("Link")), alt.Tooltip("group:N", title=_("Group")),
               alt.Tooltip("transport:N", title=_("Transport")),
               alt.Tooltip("bandwidth_gbps:Q", title=_("GB/s"), format=",.3f"),
               alt.Tooltip("size_mb:Q", title=_("MB per step"), format=",.3f"),
               alt.Tooltip("time_ms:Q", title=_("ms per step"), format=",.3f")]
    transports = sorted({r["transport"] for r in rows})
    pts = base.mark_circle(opacity=0.75).encode(
        x=alt.X("size_mb:Q", title=_("Data per step (MB, log)"), scale=alt.Scale(type="log")),
        y=alt.Y("bandwidth_gbps:Q", title=_("Bandwidth (GB/s)")),
        color=alt.Color("transport:N", title=_("Transport"), scale=alt.Scale(
            domain=transports, range=[TRANSPORT_COLORS.get(t, "#888") for t in transports])),
        size=alt.condition("datum.slow", alt.value(140), alt.value(40)),
        tooltip=tooltip,
    )
    ring = base.transform_filter("datum.slow").mark_point(color=SLOW_COLOR, size=260, strokeWidth=2).encode(
        x="size_mb:Q", y="bandwidth_gbps:Q", tooltip=tooltip)
    # the slow links named on the chart (src→dst): among thousands of points the ring alone is easy to miss
    name = base.transform_filter("datum.slow").mark_text(dx=14, align="left", color=SLOW_COLOR,
                                                         fontWeight="bold").encode(
        x="size_mb:Q", y="bandwidth_gbps:Q", text="link:N")
    return finish(alt.layer(pts, ring, name), height=300, datasets={"links": rows})


NODE_SIZE_RANGE = (40, 900)  # px² of the graph's circles
NODE_LABEL_DY = int(math.sqrt(NODE_SIZE_RANGE[1]) / 2) + 2  # a label's baseline this far above the centre


def metric_legend(spec: dict, options: list[str], labels: list[str]) -> dict:
    """The colour legend of a chart whose metric a drop-down (`metric`) picks is titled with the picked metric and
    its unit (report.js swaps the title with the choice; the spec's own title is the default's)."""
    spec.setdefault("usermeta", {})["msr_legend_titles"] = {"signal": "metric", "default": labels[0],
                                                           "titles": dict(zip(options, labels))}
    return spec


def comm_graph(nodes: list[dict], edges: list[dict], by: str) -> dict:
    """Node-link graph: node size = communication time, colour = comm/(comm+wait); edges coloured by bandwidth."""
    unit = _("Host") if by == "host" else _("Rank")
    axis = alt.Axis(labels=False, ticks=False, domain=False, grid=False, title=None)
    e = Chart(alt.NamedData(name="edges")).mark_rule(opacity=0.55).encode(
        x=alt.X("x:Q", axis=axis), y=alt.Y("y:Q", axis=axis), x2="x2:Q", y2="y2:Q",
        # no links read (a gloo run, a rank's matrix missing): no bandwidth legend (it would read "NaN")
        color=alt.Color("bandwidth_gbps:Q", title=_("Link GB/s"), scale=alt.Scale(scheme="redyellowblue"),
                        legend=alt.Legend() if edges else None),
        strokeWidth=alt.condition("datum.slow", alt.value(4), alt.value(1.2)),
        tooltip=[alt.Tooltip("src:N", title=_("From")), alt.Tooltip("dst:N", title=_("To")),
                 alt.Tooltip("transport:N", title=_("Transport")),
                 alt.Tooltip("bandwidth_gbps:Q", title=_("GB/s"), format=",.3f"),
                 alt.Tooltip("size_mb:Q", title=_("MB per step"), format=",.3f"),
                 alt.Tooltip("time_ms:Q", title=_("ms per step"), format=",.3f"), alt.Tooltip("slow:N", title=_("Slow"))])
    # padded scales: a node on the edge of the layout can still be brushed (a brush stays inside the plot)
    n = Chart(alt.NamedData(name="nodes")).mark_circle(stroke="#333", strokeWidth=0.6, opacity=0.95).encode(
        x=alt.X("x:Q", axis=axis, scale=alt.Scale(padding=28, zero=False)),
        y=alt.Y("y:Q", axis=axis, scale=alt.Scale(padding=28, zero=False)),
        size=alt.Size("comm_ms:Q", title=_("Communication ms"), scale=alt.Scale(range=list(NODE_SIZE_RANGE))),
        color=alt.Color("ratio:Q", title=_("comm/(comm+wait)"), scale=alt.Scale(scheme="blues", domain=[0, 1])),
        href="href:N",
        tooltip=[alt.Tooltip("label:N", title=unit), alt.Tooltip("comm_ms:Q", title=_("Transit ms"), format=",.3f"),
                 alt.Tooltip("wait_ms:Q", title=_("Wait ms"), format=",.3f"),
                 alt.Tooltip("ratio:Q", title=_("comm/(comm+wait)"), format=".3f")])
    # drag a rectangle over devices (or hosts: their devices) for the matrix and box plots below
    n = n.add_params(alt.selection_interval(name="devsel", encodings=["x", "y"], clear="dblclick",
                                            mark=alt.BrushConfig(fill="#888", fillOpacity=0.12, stroke="#333")))
    layers = [e, n]
    if by == "host" and any(x.get("slow") for x in nodes):  # hosts a slow link starts or ends on
        layers.append(Chart(alt.NamedData(name="nodes")).transform_filter("datum.slow").mark_point(
            color=SLOW_COLOR, size=700, strokeWidth=2.5).encode(x="x:Q", y="y:Q"))
    if len(nodes) <= 64:
        # above the circle: the largest (900 px², 30 px across) ends 15 px above its centre, so 17 px clears them all
        layers.append(Chart(alt.NamedData(name="nodes")).mark_text(dy=-NODE_LABEL_DY, baseline="bottom",
                                                                       fontSize=10, color="#333").encode(
            x="x:Q", y="y:Q", text="label:N"))
    elif any(x.get("slow") for x in nodes):  # too many to label: name the marked hosts (and the slow links on them)
        layers.append(Chart(alt.NamedData(name="nodes")).transform_filter("datum.slow").mark_text(
            dy=-22, fontSize=12, fontWeight="bold", color=SLOW_COLOR).encode(x="x:Q", y="y:Q", text="note:N"))
    return finish(alt.layer(*layers).resolve_scale(color="independent"), height=460,
                  datasets={"nodes": nodes, "edges": edges})


SEL_FILTER = "!length(sel) || (indexof(sel, datum.src) >= 0 && indexof(sel, datum.dst) >= 0)"


def comm_matrix(cells: list[dict], binned: int, groups: list[str]) -> dict:
    """Rank x rank heatmap; a drop-down picks the metric and another the communication group. Unbinned, the
    devices brushed in the graph (`sel`, set by the page) restrict it to the links among them; a cell shows the
    link's time and size and opens the sending rank's communication section.

    Binned (blocks of ranks), the default colour is each block's slowest link, so one slow link darkens its block
    instead of being averaged into it; the block's total bandwidth stays one choice away."""
    options, labels = ["bandwidth_gbps", "time_ms", "size_mb"], [_("Bandwidth (GB/s)"), _("Time (ms)"), _("Size (MB)")]
    if binned > 1:
        options, labels = ["min_bandwidth_gbps"] + options, [_("Slowest link (GB/s)"), _("Block bandwidth (GB/s)")] + labels[1:]
    metric = alt.param(name="metric", value=options[0], bind=alt.binding_select(
        options=options, labels=labels, name=_("Show:") + " "))
    group = alt.param(name="grp", value=groups[0], bind=alt.binding_select(options=groups, name=_("Group:") + " "))
    src_title = _("Source rank") if binned == 1 else _("Source ranks (blocks of {n})").format(n=binned)
    dst_title = _("Destination rank") if binned == 1 else _("Destination ranks (blocks of {n})").format(n=binned)
    chart = Chart(alt.NamedData(name="cells")).mark_rect().encode(
        x=alt.X("dst:O", title=dst_title, sort=alt.EncodingSortField(field="do"),
                axis=alt.Axis(labelOverlap=True)),
        y=alt.Y("src:O", title=src_title, sort=alt.EncodingSortField(field="so"),
                axis=alt.Axis(labelOverlap=True)),
        color=alt.Color("value:Q", title=labels[0], scale=alt.Scale(scheme="viridis")),
        stroke=alt.condition("datum.slow", alt.value(SLOW_COLOR), alt.value(None)),
        strokeWidth=alt.condition("datum.slow", alt.value(3 if binned > 1 else 2), alt.value(0)),
        tooltip=[alt.Tooltip("src:N", title=_("From")), alt.Tooltip("dst:N", title=_("To")),
                 alt.Tooltip("group:N", title=_("Group")), alt.Tooltip("transport:N", title=_("Transport")),
                 alt.Tooltip("bandwidth_gbps:Q", title=_("GB/s"), format=",.3f"),
                 alt.Tooltip("min_bandwidth_gbps:Q", title=_("Slowest link GB/s"), format=",.3f"),
                 alt.Tooltip("time_ms:Q", title=_("ms per step"), format=",.3f"),
                 alt.Tooltip("size_mb:Q", title=_("MB per step"), format=",.3f"), alt.Tooltip("slow:N", title=_("Slow"))],
    ).transform_filter("datum.group === grp").transform_calculate(value="datum[metric]").add_params(metric, group)
    if binned == 1:
        label = Chart(alt.NamedData(name="cells")).mark_text(fontSize=9, color="#111").encode(
            x=alt.X("dst:O", sort=alt.EncodingSortField(field="do")),
            y=alt.Y("src:O", sort=alt.EncodingSortField(field="so")), text="cell_label:N",
        ).transform_filter("datum.group === grp").transform_filter(SEL_FILTER).transform_filter("length(sel) > 0")
        chart = alt.layer(chart.encode(href="href:N").transform_filter(SEL_FILTER), label).add_params(
            alt.param(name="sel", value=[]))
        n = len({c["src"] for c in cells})
        spec = finish(chart, height=max(200, min(640, 16 * n)), datasets={"cells": cells})
        return metric_legend(_lift_params(spec), options, labels)
    n = len({c["src"] for c in cells})
    layers = [chart]
    if binned > 1 and any(c.get("slow") for c in cells):  # name the blocks that hold a slow link
        layers.append(Chart(alt.NamedData(name="cells")).transform_filter("datum.slow && datum.group === grp")
                      .mark_text(align="left", dx=8, color=SLOW_COLOR, fontWeight="bold", fontSize=11).encode(
                          x=alt.X("dst:O", sort=alt.EncodingSortField(field="do")),
                          y=alt.Y("src:O", sort=alt.EncodingSortField(field="so")), text="slow_links:N"))
    if len(layers) > 1:
        return metric_legend(finish(alt.layer(*layers), height=max(200, min(640, 16 * n)), datasets={"cells": cells}),
                             options, labels)
    return metric_legend(finish(chart, height=max(200, min(640, 16 * n)), datasets={"cells": cells}), options, labels)


DRILL_FILTER = "length(sel) > 0 && indexof(sel, '' + datum.src) >= 0 && indexof(sel, '' + datum.dst) >= 0"


def drill_matrix() -> dict:
    """The devices of the hosts picked in a host-level graph (`sel`, set by the page): their rank x rank matrix,
    a cell per link with its time and size (a click opens the sending rank's page), a drop-down for the colour's
    metric. The rows come columnar
    ({src, dst, time_ms, size_mb, bandwidth_gbps, transport, slow}); nothing is drawn until hosts are picked.
    The spec depends on the report language only: made once per language (a copy each call)."""
    return copy.deepcopy(_drill_matrix(i18n.current()))


@functools.lru_cache(maxsize=4)
def _drill_matrix(lang: str) -> dict:
    options, labels = ["bandwidth_gbps", "time_ms", "size_mb"], [_("Bandwidth (GB/s)"), _("Time (ms)"), _("Size (MB)")]
    metric = alt.param(name="metric", value=options[0], bind=alt.binding_select(
        options=options, labels=labels, name=_("Show:") + " "))
    base = Chart(alt.NamedData(name="cells")).transform_filter(DRILL_FILTER).transform_calculate(
        value="datum[metric]", src_s="'' + datum.src", dst_s="'' + datum.dst",
        cell_label="format(datum.time_ms, '.3g') + ' ms · ' + format(datum.size_mb, '.3g') + ' MB'")
    x = alt.X("dst_s:O", title=_("Destination rank"), sort=alt.EncodingSortField(field="dst"),
              axis=alt.Axis(labelOverlap=True))
    y = alt.Y("src_s:O", title=_("Source rank"), sort=alt.EncodingSortField(field="src"),
              axis=alt.Axis(labelOverlap=True))
    rect = base.mark_rect(cursor="pointer").encode(  # a click opens the sending rank (report.js)
        x=x, y=y, color=alt.Color("value:Q", title=labels[0], scale=alt.Scale(scheme="viridis")),
        stroke=alt.condition("datum.slow", alt.value(SLOW_COLOR), alt.value(None)),
        strokeWidth=alt.condition("datum.slow", alt.value(2), alt.value(0)),
        tooltip=[alt.Tooltip("src_s:N", title=_("From")), alt.Tooltip("dst_s:N", title=_("To")),
                 alt.Tooltip("transport:N", title=_("Transport")),
                 alt.Tooltip("bandwidth_gbps:Q", title=_("GB/s"), format=",.3f"),
                 alt.Tooltip("time_ms:Q", title=_("ms per step"), format=",.3f"),
                 alt.Tooltip("size_mb:Q", title=_("MB per step"), format=",.3f")])
    # white on the dark (low) end of viridis, black elsewhere: every label readable on its cell
    label = base.transform_joinaggregate(vmin="min(value)", vmax="max(value)").mark_text(fontSize=8).encode(
        x=x, y=y, text="cell_label:N", color=alt.condition(
            "datum.value < datum.vmin + 0.4 * (datum.vmax - datum.vmin)", alt.value("#fff"), alt.value("#111")))
    spec = _lift_params(finish(alt.layer(rect, label).add_params(metric, alt.param(name="sel", value=[])),
                               height=560))
    spec["datasets"] = {"cells": []}
    return metric_legend(spec, options, labels)


def _lift_params(spec: dict) -> dict:
    """Move params of a layer's first child to the top level (Vega-Lite wants bound params there)."""
    layer = spec.get("layer") or []
    params = [p for child in layer for p in child.pop("params", [])]
    if params:
        spec["params"] = spec.get("params", []) + params
    return spec


def link_op_boxplot(rows: list[dict]) -> dict:
    """Per-operator time, size or bandwidth on each shown link (a drop-down picks which): a box (quartiles,
    whiskers min-max) and every operator as a dot on it, so a link whose operators barely differ still shows.
    Rows: {link, order, src, dst, time_ms, size_mb, bandwidth_gbps, slow}; `sel` (devices brushed in the graph)
    keeps the links that start or end on them."""
    metric = alt.param(name="opmetric", value="bandwidth_gbps", bind=alt.binding_select(
        options=["bandwidth_gbps", "time_ms", "size_mb"],
        labels=[_("Bandwidth (GB/s)"), _("Time (ms)"), _("Size (MB)")], name=_("Show: ")))
    base = Chart(alt.NamedData(name="ops")).transform_filter(
        "!length(sel) || indexof(sel, datum.src) >= 0 || indexof(sel, datum.dst) >= 0").transform_calculate(
        value="datum[opmetric]")
    x = alt.X("link:N", title=_("Link (source-destination, transport)"), sort=alt.EncodingSortField(field="order"),
              axis=alt.Axis(labelAngle=-40))
    y = alt.Y("value:Q", title=_("Per operator (the metric picked)"), scale=alt.Scale(zero=False, padding=8))
    color = alt.condition("datum.slow", alt.value(SLOW_COLOR), alt.value(OK_COLOR))
    box = base.mark_boxplot(extent="min-max", size=16, median={"color": "#111", "strokeWidth": 2}).encode(
        x=x, y=y, color=color)
    dots = base.mark_circle(size=22, opacity=0.8, color="#333").encode(
        x=x, y=y, tooltip=[alt.Tooltip("link:N", title=_("Link")), alt.Tooltip("op:N", title=_("Operator")),
                           alt.Tooltip("time_ms:Q", title=_("ms"), format=",.4f"),
                           alt.Tooltip("size_mb:Q", title=_("MB"), format=",.4f"),
                           alt.Tooltip("bandwidth_gbps:Q", title=_("GB/s"), format=",.3f")])
    chart = alt.layer(box, dots).add_params(metric, alt.param(name="sel", value=[]))
    return finish(chart, height=280, datasets={"ops": rows})
