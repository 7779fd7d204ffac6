"""Resource-utilisation and rank-detail charts. Inputs are plain lists of dicts prepared by the page planner."""

from __future__ import annotations

from reportgen.i18n import _

import altair as alt

from reportgen.charts.theme import PALETTE, SLOW_COLOR, Chart, finish

MEMORY_RAMP = ([0.0, 0.75, 0.9, 1.0], ["#eef3f8", "#fdd49e", "#fc8d59", "#b30000"])  # red only near capacity
FLOPS_RAMP = ([0.0, 1.0], ["#eef3f8", "#2f5fa7"])
# No recorded capacity: a neutral sequential ramp relative to the largest peak (nothing reads as pressure).
RELATIVE_RAMP = ([0.0, 1.0], ["#f2f0f7", "#54278f"])


MANY_HEAT_ROWS = 96  # hosts from which a heatmap's rows are too thin for cell borders and every host's label


def device_heatmap(rows: list[dict], value_title: str, ramp: tuple = MEMORY_RAMP, fmt: str = ".1%") -> dict:
    """One cell per device, a row per host (or per block of ranks), coloured by `value` (0..domain_max); the device
    with the largest value outlined in red (at 4,096 ranks, 512 rows of ~3 px, no colour told it from its peers).

    `rows`: {rank, group, slot, value, label, href, tip}. Cells link to rank pages.
    """
    n_groups = len({r["group"] for r in rows}) or 1
    n_slots = len({r["slot"] for r in rows}) or 1
    many = n_groups > MANY_HEAT_ROWS  # (thin rows: no white border to hide the colour, the host labels thinned)
    base = Chart(alt.NamedData(name="cells"))
    tip = [alt.Tooltip("rank:O", title=_("Rank")), alt.Tooltip("group:N", title=_("Host")),
           alt.Tooltip("value:Q", title=value_title, format=fmt), alt.Tooltip("tip:N", title=_("Detail"))]
    cells = base.mark_rect(stroke="#fff", strokeWidth=0 if many else 1).encode(
        x=alt.X("slot:O", title=_("Device in host"), axis=alt.Axis(labelAngle=0)),
        y=alt.Y("group:N", title=None, sort=None, axis=alt.Axis(labelOverlap="greedy") if many else alt.Undefined),
        color=alt.Color("value:Q", title=value_title, scale=alt.Scale(domain=ramp[0], range=ramp[1], clamp=True),
                        legend=alt.Legend(format=fmt)),
        href="href:N", tooltip=tip,
    )
    largest = base.transform_joinaggregate(top="max(value)").transform_filter(
        "isValid(datum.value) && datum.value == datum.top").mark_rect(
        fill=None, stroke=SLOW_COLOR, strokeWidth=3).encode(
        x="slot:O", y=alt.Y("group:N", sort=None), href="href:N", tooltip=tip)
    layers = [cells, largest]
    if n_groups * n_slots <= 256:
        layers.append(base.mark_text(fontSize=10).encode(
            x="slot:O", y=alt.Y("group:N", sort=None), text="label:N",
            color=alt.condition(f"datum.value > {0.92 if ramp is MEMORY_RAMP else 0.6}", alt.value("white"),
                                alt.value("black"))))
    height = max(60, min(1600, 22 * n_groups))
    return finish(alt.layer(*layers), height=height, datasets={"cells": rows})


def op_type_share(rows: list[dict]) -> dict:
    """Top operator types by total time, coloured by where they run. `rows`: {op_type, total_ms, share, side}."""
    chart = Chart(alt.NamedData(name="types")).mark_bar().encode(
        y=alt.Y("op_type:N", title=None, sort="-x"),
        x=alt.X("total_ms:Q", title=_("Total time (ms)")),
        color=alt.Color("side:N", title=_("Runs on")),
        tooltip=[alt.Tooltip("op_type:N", title=_("Type")), alt.Tooltip("side:N", title=_("Runs on")),
                 alt.Tooltip("total_ms:Q", title=_("Total (ms)"), format=",.3f"),
                 alt.Tooltip("share:Q", title=_("Share"), format=".1%"), alt.Tooltip("count:Q", title=_("Count"))],
    )
    return finish(chart, height=max(120, 18 * len(rows)), datasets={"types": rows})


def op_type_spread(rows: list[dict], types: list[str], boxes: bool) -> dict:
    """Each rank's total for the top operator types: ticks per rank (or a box per type for many ranks), the rank
    furthest above the median in red. `rows`: {op_type, rank, total_ms, slow, href}."""
    base = Chart(alt.NamedData(name="spread"))
    y = alt.Y("op_type:N", title=None, sort=types)
    tip = [alt.Tooltip("op_type:N", title=_("Type")), alt.Tooltip("rank:O", title=_("Rank")),
           alt.Tooltip("total_ms:Q", title=_("Total (ms)"), format=",.3f")]
    if boxes:
        main = base.mark_boxplot(extent="min-max", size=12).encode(y=y, x=alt.X("total_ms:Q", title=_("Time per rank (ms)")))
        hot = base.transform_filter("datum.slow").mark_point(color=SLOW_COLOR, filled=True, size=60).encode(
            y=y, x="total_ms:Q", href="href:N", tooltip=tip)
        layers = [main, hot]
    else:
        layers = [base.mark_tick(thickness=2, size=14).encode(
            y=y, x=alt.X("total_ms:Q", title=_("Time per rank (ms)")),
            color=alt.condition("datum.slow", alt.value(SLOW_COLOR), alt.value(PALETTE[0])),
            href="href:N", tooltip=tip)]
    return finish(alt.layer(*layers), height=max(120, 22 * len(types)), datasets={"spread": rows})


def memory_curve(rows: list[dict], x_title: str, capacity_mb: float | None) -> dict:
    """Memory in use over execution order or time. `rows`: {x, series, mb}."""
    base = Chart(alt.NamedData(name="mem"))
    line = base.mark_line(interpolate="step-after").encode(
        x=alt.X("x:Q", title=x_title), y=alt.Y("mb:Q", title=_("Memory (MB)")),
        color=alt.Color("series:N", title=None),
        tooltip=[alt.Tooltip("x:Q", title=x_title, format=",.3f"), alt.Tooltip("series:N", title=_("Series")),
                 alt.Tooltip("mb:Q", title=_("MB"), format=",.1f")])
    layers = [line]
    if capacity_mb:
        layers.append(Chart(alt.Data(values=[{"cap": capacity_mb}])).mark_rule(
            color=SLOW_COLOR, strokeDash=[6, 3]).encode(y="cap:Q", tooltip=[alt.Tooltip("cap:Q", title=_("Capacity (MB)"))]))
    return finish(alt.layer(*layers), height=240, datasets={"mem": rows})


def queue_sizes(rows: list[dict], x_title: str) -> dict:
    """Queue size per step (or batch), empty entries marked red on the axis. `rows`: {x, size, capacity, empty}."""
    base = Chart(alt.NamedData(name="queue"))
    bars = base.mark_bar().encode(
        x=alt.X("x:O", title=x_title, axis=alt.Axis(labelOverlap=True)),
        y=alt.Y("size:Q", title=_("Queue size (batches)")),
        color=alt.condition("datum.empty", alt.value(SLOW_COLOR), alt.value(PALETTE[0])),
        tooltip=[alt.Tooltip("x:O", title=x_title), alt.Tooltip("size:Q", title=_("Size")),
                 alt.Tooltip("capacity:Q", title=_("Capacity"))])
    empties = base.transform_filter("datum.empty").mark_tick(color=SLOW_COLOR, thickness=3).encode(
        x="x:O", y=alt.datum(0))
    return finish(alt.layer(bars, empties), height=140, datasets={"queue": rows})


def cpu_usage(rows: list[dict]) -> dict:
    """CPU utilisation per sample. `rows`: {sample, series, pct}."""
    chart = Chart(alt.NamedData(name="cpu")).mark_line(point=True).encode(
        x=alt.X("sample:Q", title=_("Sample")), y=alt.Y("pct:Q", title=_("Utilisation (%)")),
        color=alt.Color("series:N", title=None),
        tooltip=[alt.Tooltip("sample:Q"), alt.Tooltip("series:N"), alt.Tooltip("pct:Q", format=".1f")])
    return finish(chart, height=200, datasets={"cpu": rows})
