"""Execution overview charts: the Marey view of one step and the time overview of all steps."""

from __future__ import annotations

from reportgen.i18n import _

import altair as alt

from reportgen.charts.theme import PHASE_COLORS, Chart, finish
from reportgen.collectives import OP_CLASSES

CLASS_COLORS = {"compute": "#4c78a8", "collective": "#e45756", "send": "#54a24b", "receive": "#f58518"}
ROW_PX = 20


def marey(bars: list[dict], joins: list[dict], rows: list[str]) -> dict:
    """One lane per device (and per stage mean), operators as bars coloured by class; the same operator on the
    devices of a stage joined by a line through its start times, so a device that runs late bends the line and
    an operator slow everywhere shows as wide bars on every lane.

    `bars`: {row, name, cls, start, end, dur}; `joins`: {key, row, order, cls, t, end}; `rows`: lane order.
    """
    classes = list(OP_CLASSES)
    # the legend in the report's language: the rows' classes translated, and the domain with them
    names = {c: _(c) for c in classes}
    bars = [dict(b, cls=names.get(b["cls"], b["cls"])) for b in bars]
    joins = [dict(j, cls=names.get(j["cls"], j["cls"])) for j in joins]
    color = alt.Color("cls:N", title=_("Operator class"), scale=alt.Scale(domain=[names[c] for c in classes],
                                                                        range=[CLASS_COLORS[c] for c in classes]))
    y = alt.Y("row:N", title=None, scale=alt.Scale(domain=rows), axis=alt.Axis(labelLimit=220))
    # each joined operator as a band from its start to its end across the devices (MindInsight's polygons)
    tip = [alt.Tooltip("name:N", title=_("Operator")), alt.Tooltip("row:N", title=_("Device")),
           alt.Tooltip("t:Q", title=_("Start (ms)"), format=",.3f"), alt.Tooltip("end:Q", title=_("End (ms)"), format=",.3f")]
    ybase = alt.Y("row:N", scale=alt.Scale(domain=rows))
    starts = Chart(alt.NamedData(name="joins")).mark_line(strokeWidth=1, opacity=0.6).encode(
        x=alt.X("t:Q"), y=ybase, detail="key:N", color=color, order="order:Q", tooltip=tip)
    ends = Chart(alt.NamedData(name="joins")).mark_line(strokeWidth=1, opacity=0.6, strokeDash=[3, 2]).encode(
        x=alt.X("end:Q"), y=ybase, detail="key:N", color=color, order="order:Q", tooltip=tip)
    rects = Chart(alt.NamedData(name="bars")).mark_bar(height={"band": 0.42}).encode(
        x=alt.X("start:Q", title=_("Time from the step start (ms, aligned)")), x2="end:Q", y=y, color=color,
        tooltip=[alt.Tooltip("name:N", title=_("Operator")), alt.Tooltip("row:N", title=_("Lane")),
                 alt.Tooltip("cls:N", title=_("Class")), alt.Tooltip("dur:Q", title=_("Duration (ms)"), format=",.3f"),
                 alt.Tooltip("start:Q", title=_("Start (ms)"), format=",.3f")])
    chart = alt.layer(rects, starts, ends).interactive(bind_y=False)
    return finish(chart, height=max(120, ROW_PX * len(rows)), datasets={"bars": bars, "joins": joins})


def time_overview(lines: list[dict], comm: list[dict], points: list[dict], per_rank: bool) -> dict:
    """Per step: the training time of each device (left axis) and the average communication and wait time
    (right axis). Steps drawn in the Marey view are marked; clicking one opens its view.

    `lines`: {step, series, ms}; `comm`: {step, metric, ms}; `points`: {step, ms, href, label}. A run with one
    step gets dots (a line through one point draws nothing).
    """
    one_step = len({d["step"] for d in lines}) <= 1
    left = Chart(alt.NamedData(name="lines")).mark_line(strokeWidth=1, opacity=0.7 if per_rank else 1,
                                                           point={"size": 90, "filled": True} if one_step else False).encode(
        x=alt.X("step:Q", title=_("Step"), axis=alt.Axis(tickMinStep=1, format="d")),
        y=alt.Y("ms:Q", title=_("Step time per device (ms)")),
        detail="series:N",
        color=alt.value("#4c78a8") if per_rank else alt.Color("series:N", title=_("Step time")),
        tooltip=[alt.Tooltip("step:Q", title=_("Step")), alt.Tooltip("series:N", title=_("Device")),
                 alt.Tooltip("ms:Q", title=_("ms"), format=",.2f")])
    # the steps with an execution view: black diamonds (red stays for what a finding names; the wait line is red)
    marks = Chart(alt.NamedData(name="points")).mark_point(size=150, filled=True, shape="diamond", color="#111",
                                                                stroke="#fff", strokeWidth=1, opacity=1,
                                                                cursor="pointer").encode(
        x="step:Q", y="ms:Q", href="href:N",
        tooltip=[alt.Tooltip("label:N", title=_("Marey view")), alt.Tooltip("step:Q", title=_("Step"))])
    right = Chart(alt.NamedData(name="comm")).mark_line(strokeDash=[5, 3], point=True).encode(
        x="step:Q", y=alt.Y("ms:Q", title=_("Average communication / wait (ms)")),
        color=alt.Color("metric:N", title=_("Average per device"),
                        scale=alt.Scale(domain=[_("communication"), _("wait")],
                                        range=[PHASE_COLORS["Communication"], PHASE_COLORS["Wait"]])),
        tooltip=[alt.Tooltip("step:Q", title=_("Step")), alt.Tooltip("metric:N", title=_("Metric")),
                 alt.Tooltip("ms:Q", title=_("ms"), format=",.2f")])
    chart = alt.layer(alt.layer(left, marks), right).resolve_scale(y="independent", color="independent")
    return finish(chart, height=260, datasets={"lines": lines, "comm": comm, "points": points})
