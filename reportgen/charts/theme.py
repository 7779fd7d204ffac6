"""Shared chart look: colours and sizes, so every chart function stays short."""

from __future__ import annotations

import altair as alt

PALETTE = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac"]
OK_COLOR = "#4c78a8"
SLOW_COLOR = "#d62728"
FONT = "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"


def finish(chart: alt.TopLevelMixin, height: int = 280, datasets: dict | None = None) -> dict:
    """Apply the house config and return the spec dict.

    Charts reference their rows as named data; the rows are attached to `datasets` after Altair has
    validated the spec, so validation cost does not grow with the number of ranks.
    """
    spec = (chart.properties(width="container", height=height)
            .configure(font=FONT)
            .configure_axis(labelFontSize=11, titleFontSize=12, gridColor="#eee")
            .configure_legend(labelFontSize=11, titleFontSize=12, orient="bottom")
            .configure_view(stroke=None)
            .to_dict())
    if datasets:
        spec["datasets"] = datasets
    return spec
