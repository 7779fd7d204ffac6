"""Charts of the comparison and trend pages (Altair specs with named data, like `reportgen.charts`)."""

from __future__ import annotations

import altair as alt

from reportgen.charts.theme import PALETTE, finish

STATUS = ["slower", "faster", "within noise", "unchanged", "new", "vanished"]
STATUS_COLORS = ["#d62728", "#2ca02c", "#9e9e9e", "#cfcfcf", "#f58518", "#b279a2"]
MAX_BARS = 64


def _status_color() -> alt.Color:
    return alt.Color("status:N", title=None, scale=alt.Scale(domain=STATUS, range=STATUS_COLORS))


def delta_bars(rows: list[dict], x_title: str = "Change (%)", field: str = "delta_pct") -> dict:
    """Horizontal bars of the change per item. `rows`: {label, order, delta_pct, delta, base, new, status}."""
    chart = alt.Chart(alt.NamedData(name="deltas")).mark_bar().encode(
        y=alt.Y("label:N", title=None, sort=alt.EncodingSortField(field="order", order="ascending")),
        x=alt.X(f"{field}:Q", title=x_title),
        color=_status_color(),
        tooltip=[alt.Tooltip("label:N", title="Item"), alt.Tooltip("base:Q", title="Base", format=",.3f"),
                 alt.Tooltip("new:Q", title="New", format=",.3f"), alt.Tooltip("delta:Q", title="Δ", format="+,.3f"),
                 alt.Tooltip("delta_pct:Q", title="Δ %", format="+.1f"), alt.Tooltip("status:N", title="Status")],
    )
    zero = alt.Chart(alt.NamedData(name="zero")).mark_rule(color="#333").encode(x="x:Q")
    return finish(alt.layer(chart, zero), height=max(120, 22 * len(rows)),
                  datasets={"deltas": rows, "zero": [{"x": 0}]})


def rank_phase_deltas(rows: list[dict], order: list[str]) -> dict:
    """Grouped bars per rank: the change of each phase (ms per step). `rows`: {rank, phase, delta, base, new,
    status, noise}."""
    bars = alt.Chart(alt.NamedData(name="ranks")).mark_bar().encode(
        x=alt.X("rank:O", title="Rank", sort="ascending"),
        xOffset=alt.XOffset("phase:N", sort=order),
        y=alt.Y("delta:Q", title="Change (ms per step)"),
        color=alt.Color("phase:N", title="Phase", sort=order,
                        scale=alt.Scale(domain=order, range=PALETTE[: len(order)])),
        opacity=alt.condition("datum.status == 'within noise' || datum.status == 'unchanged'",
                              alt.value(0.35), alt.value(1.0)),
        tooltip=[alt.Tooltip("rank:O", title="Rank"), alt.Tooltip("phase:N", title="Phase"),
                 alt.Tooltip("base:Q", title="Base (ms)", format=",.3f"),
                 alt.Tooltip("new:Q", title="New (ms)", format=",.3f"),
                 alt.Tooltip("delta:Q", title="Δ (ms)", format="+,.3f"),
                 alt.Tooltip("noise:Q", title="Noise (ms)", format=",.3f"), alt.Tooltip("status:N", title="Status")],
    )
    return finish(bars, height=260, datasets={"ranks": rows})


def base_vs_new(rows: list[dict], y_title: str, x_title: str = "Rank") -> dict:
    """Side-by-side bars per item for both runs. `rows`: {label, order, run: base|new, value}."""
    bars = alt.Chart(alt.NamedData(name="pairs")).mark_bar().encode(
        x=alt.X("label:N", title=x_title, sort=alt.EncodingSortField(field="order", order="ascending")),
        xOffset=alt.XOffset("run:N", sort=["base", "new"]),
        y=alt.Y("value:Q", title=y_title),
        color=alt.Color("run:N", title=None, sort=["base", "new"],
                        scale=alt.Scale(domain=["base", "new"], range=[PALETTE[0], PALETTE[1]])),
        tooltip=[alt.Tooltip("label:N", title=x_title), alt.Tooltip("run:N", title="Run"),
                 alt.Tooltip("value:Q", title=y_title, format=",.3f")],
    )
    return finish(bars, height=240, datasets={"pairs": rows})


def trend_lines(rows: list[dict], order: list[str], y_title: str = "Time per step (ms)") -> dict:
    """Lines over runs. `rows`: {run, index, series, value}; `order`: the series names."""
    base = alt.Chart(alt.NamedData(name="trend")).encode(
        x=alt.X("run:N", title="Run (date order)", sort=alt.EncodingSortField(field="index", order="ascending")),
        y=alt.Y("value:Q", title=y_title),
        color=alt.Color("series:N", title=None, sort=order,
                        scale=alt.Scale(domain=order, range=(PALETTE * 3)[: len(order)])),
        tooltip=[alt.Tooltip("run:N", title="Run"), alt.Tooltip("series:N", title="Series"),
                 alt.Tooltip("value:Q", title="ms", format=",.3f")],
    )
    return finish(alt.layer(base.mark_line(), base.mark_point(filled=True)), height=300, datasets={"trend": rows})
