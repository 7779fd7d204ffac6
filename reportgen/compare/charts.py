"""Charts of the comparison and trend pages (Altair specs with named data, like `reportgen.charts`)."""

from __future__ import annotations

import altair as alt

from reportgen.charts.theme import PALETTE, Chart, finish
from reportgen.i18n import _

STATUS = ["slower", "faster", "within noise", "unchanged", "new", "vanished"]
STATUS_COLORS = ["#d62728", "#2ca02c", "#9e9e9e", "#cfcfcf", "#f58518", "#b279a2"]
MAX_BARS = 64


def _status_color() -> alt.Color:
    """Colour by status; the rows carry the status in the report's language (`localize`)."""
    return alt.Color("status:N", title=None, scale=alt.Scale(domain=[_(s) for s in STATUS], range=STATUS_COLORS))


def localize(rows: list[dict], *fields: str) -> list[dict]:
    """The rows with their status (and the named fields) in the report's language; `faint` marks the changes a
    chart draws pale (within noise, unchanged)."""
    out = []
    for r in rows:
        r = dict(r)
        if "status" in r:
            r["faint"] = r["status"] in ("within noise", "unchanged")
            status = r["status"]
            r["status"] = _(status)
        for f in fields:
            if isinstance(r.get(f), str):
                r[f] = _(r[f])
        out.append(r)
    return out


def delta_bars(rows: list[dict], x_title: str = "", field: str = "delta_pct") -> dict:
    """Horizontal bars of the change per item. `rows`: {label, order, delta_pct, delta, base, new, status}."""
    x_title = x_title or _("Change (%)")
    rows = localize(rows)
    chart = Chart(alt.NamedData(name="deltas")).mark_bar().encode(
        y=alt.Y("label:N", title=None, sort=alt.EncodingSortField(field="order", order="ascending")),
        x=alt.X(f"{field}:Q", title=x_title),
        color=_status_color(),
        tooltip=[alt.Tooltip("label:N", title=_("Item")), alt.Tooltip("base:Q", title=_("Base"), format=",.3f"),
                 alt.Tooltip("new:Q", title=_("New"), format=",.3f"),
                 alt.Tooltip("delta:Q", title="Δ", format="+,.3f"),
                 alt.Tooltip("delta_pct:Q", title="Δ %", format="+.1f"), alt.Tooltip("status:N", title=_("Status"))],
    )
    zero = Chart(alt.NamedData(name="zero")).mark_rule(color="#333").encode(x="x:Q")
    return finish(alt.layer(chart, zero), height=max(120, 22 * len(rows)),
                  datasets={"deltas": rows, "zero": [{"x": 0}]})


def rank_phase_deltas(rows: list[dict], order: list[str]) -> dict:
    """Grouped bars per rank: the change of each phase (ms per step). `rows`: {rank, phase, delta, base, new,
    status, noise}."""
    rows = localize(rows)
    bars = Chart(alt.NamedData(name="ranks")).mark_bar().encode(
        x=alt.X("rank:O", title=_("Rank"), sort="ascending"),
        xOffset=alt.XOffset("phase:N", sort=order),
        y=alt.Y("delta:Q", title=_("Change (ms per step)")),
        color=alt.Color("phase:N", title=_("Phase"), sort=order,
                        scale=alt.Scale(domain=order, range=PALETTE[: len(order)])),
        opacity=alt.condition("datum.faint", alt.value(0.35), alt.value(1.0)),
        tooltip=[alt.Tooltip("rank:O", title=_("Rank")), alt.Tooltip("phase:N", title=_("Phase")),
                 alt.Tooltip("base:Q", title=_("Base (ms)"), format=",.3f"),
                 alt.Tooltip("new:Q", title=_("New (ms)"), format=",.3f"),
                 alt.Tooltip("delta:Q", title="Δ (ms)", format="+,.3f"),
                 alt.Tooltip("noise:Q", title=_("Noise (ms)"), format=",.3f"),
                 alt.Tooltip("status:N", title=_("Status"))],
    )
    return finish(bars, height=260, datasets={"ranks": rows})


def base_vs_new(rows: list[dict], y_title: str, x_title: str = "") -> dict:
    """Side-by-side bars per item for both runs. `rows`: {label, order, run: base|new, value}."""
    x_title = x_title or _("Rank")
    runs = [_("Base"), _("New")]
    names = dict(zip(["base", "new"], runs))
    rows = [dict(r, run=names.get(r["run"], r["run"])) for r in rows]
    bars = Chart(alt.NamedData(name="pairs")).mark_bar().encode(
        x=alt.X("label:N", title=x_title, sort=alt.EncodingSortField(field="order", order="ascending")),
        xOffset=alt.XOffset("run:N", sort=runs),
        y=alt.Y("value:Q", title=y_title),
        color=alt.Color("run:N", title=None, sort=runs, scale=alt.Scale(domain=runs, range=[PALETTE[0], PALETTE[1]])),
        tooltip=[alt.Tooltip("label:N", title=x_title), alt.Tooltip("run:N", title=_("Run")),
                 alt.Tooltip("value:Q", title=y_title, format=",.3f")],
    )
    return finish(bars, height=240, datasets={"pairs": rows})


def trend_lines(rows: list[dict], order: list[str], y_title: str = "") -> dict:
    """Lines over runs. `rows`: {run, index, series, value}; `order`: the series names (in the report's
    language)."""
    y_title = y_title or _("Time per step (ms)")
    base = Chart(alt.NamedData(name="trend")).encode(
        x=alt.X("run:N", title=_("Run (date order)"), sort=alt.EncodingSortField(field="index", order="ascending")),
        y=alt.Y("value:Q", title=y_title),
        color=alt.Color("series:N", title=None, sort=order,
                        scale=alt.Scale(domain=order, range=(PALETTE * 3)[: len(order)])),
        tooltip=[alt.Tooltip("run:N", title=_("Run")), alt.Tooltip("series:N", title=_("Series")),
                 alt.Tooltip("value:Q", title="ms", format=",.3f")],
    )
    return finish(alt.layer(base.mark_line(), base.mark_point(filled=True)), height=300, datasets={"trend": rows})
