"""Shared chart look: colours and sizes, so every chart function stays short."""

from __future__ import annotations

import copy
import functools
import json
import os

from reportgen.i18n import _

import altair as alt

PALETTE = ["#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2", "#ff9da6", "#9d755d", "#bab0ac"]
OK_COLOR = "#4c78a8"
SLOW_COLOR = "#d62728"
# One colour per kind of time, on every page and chart (a phase keeps its colour whatever else is drawn).
PHASE_COLORS = {
    "Computing": "#4c78a8", "Computation": "#4c78a8", "Forward + backward": "#4c78a8",
    "Computing (not overlapped)": "#4c78a8",
    "Communication": "#f58518", "Communication (not overlapped)": "#f58518", "Pure communication": "#f58518",
    "Communication (not overlapped, excl. receive)": "#f58518", "Comm. (not overlapped, excl. receive)": "#f58518",
    "Pure collective communication": "#f58518", "Comm. not overlapped (excl. receive)": "#f58518",
    "Pure collective": "#f58518",
    "Overlapped": "#72b7b2",
    "Free": "#bab0ac",
    "Bubble": "#e45756", "Pure receive": "#e45756",
    "Step interval": "#54a24b", "Preparing": "#9d755d",
    "Tail": "#b279a2",
    "Stage": "#ff9da6", "Stage time": "#ff9da6",
    "Step total": "#333333", "Step time": "#333333",
    "Transit": "#f58518", "Wait": "#e45756", "Idle / other": "#bab0ac",
}


def phase_scale(labels: list[str]) -> alt.Scale:
    """The colour scale of phase labels: fixed colours (PHASE_COLORS), the palette only for unknown labels."""
    used = set(PHASE_COLORS.values())
    spare = iter([c for c in PALETTE if c not in used] + PALETTE * 4)
    shown = {_(k): v for k, v in PHASE_COLORS.items()}  # labels in the report language keep their colour
    return alt.Scale(domain=list(labels), range=[PHASE_COLORS.get(l) or shown.get(l) or next(spare) for l in labels])


class Chart(alt.Chart):
    """`alt.Chart` whose `encode` is given Altair's channel objects: a shorthand text ("rank:O") becomes
    `alt.X("rank:O")` for `x`, a dict (`alt.value`, `alt.condition`) `alt.OpacityValue(**it)` for `opacity` (its "Value" class when
    it holds a value), as Altair's own `encode` would make them. Altair turns a text or a dict into its channel by
    building a converter over its whole schema for each one (~6 ms a channel, some 60 channels a build: ~0.35 s
    of a build's CPU); an object it takes as it is. The same spec (the tests build every chart and validate it)."""

    def encode(self, *args, **channels):
        return super().encode(*args, **{k: _channel(k, v) for k, v in channels.items()})


def _channel(name: str, obj):
    """`obj` given to `encode` as `name`, as the channel object Altair would make of it (a list: each item)."""
    if isinstance(obj, (list, tuple)):
        return [_channel(name, o) for o in obj]
    if isinstance(obj, str):
        obj = {"shorthand": obj}
    if type(obj) is dict:
        cls = getattr(alt, name[:1].upper() + name[1:] + ("Value" if "value" in obj else ""), None)
        if isinstance(cls, type) and issubclass(cls, alt.SchemaBase):
            return cls(**obj)
    return obj


FONT = "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"
# Altair's JSON-schema validation of every spec costs ~50 ms a chart (a second per report at scale) and finds
# nothing a build can act on: the tests validate every spec they build (MSREPORT_VALIDATE_SPECS=1, conftest.py).
VALIDATE = os.environ.get("MSREPORT_VALIDATE_SPECS", "") == "1"


def finish(chart: alt.TopLevelMixin, height: int = 280, datasets: dict | None = None) -> dict:
    """Apply the house config and return the spec dict.

    Charts reference their rows as named data; the rows are attached to `datasets` after Altair has
    validated the spec, so validation cost does not grow with the number of ranks.

    The house config is the same dict on every chart that sets none of its own: it is made once (`_config`) and
    put in place of the default one, instead of Altair's four `configure_*` calls, each a deep copy of the whole
    chart (a third of a cluster chart's cost). Under the tests' validation (`VALIDATE`) both ways are taken and
    must give the same spec, key order included."""
    sized = chart.properties(width="container", height=height)
    if getattr(chart, "config", alt.Undefined) is alt.Undefined:
        spec = sized.to_dict(validate=VALIDATE)
        if "config" in spec:  # (the default theme's config, first: replaced where it is)
            spec["config"] = copy.deepcopy(_config())
            if VALIDATE and json.dumps(spec) != json.dumps(_configured(sized)):
                raise AssertionError("theme.finish: the house config differs from Altair's configure_*")
        else:
            spec = _configured(sized)
    else:
        spec = _configured(sized)
    if datasets:
        spec["datasets"] = datasets
    return spec


def _configured(chart: alt.TopLevelMixin) -> dict:
    """The chart with the house config applied by Altair (its `configure_*` calls), as a dict."""
    return (chart.configure(font=FONT)
            .configure_axis(labelFontSize=11, titleFontSize=12, gridColor="#eee")
            .configure_legend(labelFontSize=11, titleFontSize=12, orient="bottom", labelLimit=360,
                              titleLimit=360)
            .configure_view(stroke=None)
            .to_dict(validate=VALIDATE))


@functools.lru_cache(maxsize=1)
def _config() -> dict:
    """The config `_configured` gives a chart without its own (the default theme's merged with the house one)."""
    return _configured(alt.Chart(alt.NamedData("x")).mark_point())["config"]
