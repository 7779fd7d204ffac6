"""Timeline rows for the rank pages and the execution page: the operators of the chosen steps (the
representative and the slowest, `analysis.execution.choose_steps`) that the execution loader already read for the
drawn devices, on one lane per stream / thread, capped so pages stay small.

Nothing is read here: rows come from `run.execution` (`StepOps`: names, classes, starts, durations and, for
Ascend traces, the lane and input shapes of each operator). The rows go to the page columnar (`Chart.columns`).
"""

from __future__ import annotations

import re
from typing import Optional

import numpy as np

from reportgen.charts import Chart
from reportgen.charts import column_codec as columnar
from reportgen.charts import timeline as tl_charts
from reportgen.i18n import _
from reportgen.model import ExecutionData, StepOps

MAX_RANK_BARS = 800  # operators per step on a rank page: communication first, then the longest
MAX_DEVICE_BARS = 150  # operators per device and step on the execution page
MAX_HOST_BARS = 40  # host dispatch slices per step on a rank page (the longest): ~45 bytes each
FIELDS = ["step", "lane", "cat", "name", "start", "dur", "shapes", "launch"]  # lane, cat, name, shapes: dict indices
DATA_QUEUE_RE = re.compile(r"GetNext|InitData|EndOfSequence|QueueDequeue|DatasetInit|GetData", re.I)
HOST_LANE_RE = re.compile(r"^(CPU OP|Python|CANN|Host|PyTorch)", re.I)
CAT_ORDER = {c: i for i, c in enumerate(tl_charts.CATEGORIES)}


def category(name: str, cls: str, lane: str) -> str:
    if cls != "compute":
        return "communication"
    if DATA_QUEUE_RE.search(name):
        return "data queue"
    if HOST_LANE_RE.match(lane):
        return "host dispatch"
    return "compute"


def _lane(o: StepOps, i: int, cat: str) -> str:
    if o.lanes and o.lanes[i]:
        return o.lanes[i] if cat != "data queue" or o.lanes[i] != "AI CPU" else "AI CPU · data queue"
    return {"compute": _("device: compute"), "communication": _("device: communication"),
            "host dispatch": _("host"), "data queue": _("data queue")}[cat]


def _pick(o: StepOps, cap: int) -> np.ndarray:
    """Indices of the operators drawn: all when they fit, else communication first, then the longest."""
    n = len(o.names)
    if n <= cap:
        return np.arange(n)
    comm = np.array([c != "compute" for c in o.classes])
    order = np.lexsort((-np.asarray(o.dur, dtype=float), ~comm))
    return np.sort(order[:cap])


class _Rows:
    """The timeline's rows gathered column by column, part after part (a rank's step, its host dispatch, another
    device): step, lane (text until `_columns`), kind, name, start and duration (ms, unrounded), shapes, launch."""

    def __init__(self) -> None:
        self.step: list[int] = []
        self.lane: list[str] = []
        self.cat: list[str] = []
        self.name: list[str] = []
        self.start: list["np.ndarray"] = []
        self.dur: list["np.ndarray"] = []
        self.shapes: list[str] = []
        self.launch: list = []

    def __len__(self) -> int:
        return len(self.name)

    def ops(self, o: StepOps, cap: int, lane_prefix: str = "", shift: float = 0.0) -> int:
        """Add the device operators of one rank's step drawn (`_pick`); return how many."""
        idx = _pick(o, cap)
        memo: dict[tuple, tuple[str, str]] = {}  # (name, class, trace lane) -> (kind, lane): names repeat
        for i in idx.tolist():
            name, cls = o.names[i], o.classes[i]
            lane0 = o.lanes[i] if o.lanes else ""
            key = (name, cls, lane0)
            got = memo.get(key)
            if got is None:
                cat = category(name, cls, lane0)
                got = memo[key] = (cat, lane_prefix + _lane(o, i, cat))
            self.cat.append(got[0])
            self.lane.append(got[1])
            self.name.append(name)
        self.step += [int(o.step)] * len(idx)
        self.start.append(np.asarray(o.start, dtype=float)[idx] + shift)
        self.dur.append(np.asarray(o.dur, dtype=float)[idx])
        self.shapes += [o.shapes[i] for i in idx.tolist()] if o.shapes else [""] * len(idx)
        self.launch += [""] * len(idx)
        return len(idx)

    def host(self, o: StepOps, cap: int) -> None:
        """Add the step's host dispatch slices (torch_npu's CANN calls, task-queue enqueue / dequeue), the longest
        `cap`, each with the start (ms) of the device operator it launched when the trace links them (`launch`)."""
        n = len(o.host_names)
        if not n or cap <= 0:
            return
        keep = sorted(sorted(range(n), key=lambda i: -o.host_dur[i])[:cap])
        for i in keep:
            j = o.host_launch[i] if i < len(o.host_launch) else -1
            # the launched operator's start, as the page writes numbers (`column_codec`: 7 significant digits)
            self.launch.append(columnar.sig7(round(float(o.start[j]), 4)) if 0 <= j < len(o.names) else "")
            self.step.append(int(o.step))
            self.lane.append(o.host_lanes[i] or _("host"))
            self.cat.append("host dispatch")
            self.name.append(o.host_names[i])
            self.shapes.append("")
        self.start.append(np.array([float(o.host_start[i]) for i in keep], dtype=float))
        self.dur.append(np.array([float(o.host_dur[i]) for i in keep], dtype=float))


def _columns(rows: _Rows, device_of: Optional[list[int]] = None) -> dict:
    """The page's columnar dataset (`column_codec`): lanes ordered by device (the execution view's order), then
    kind (compute, communication, host, data), then name; lane, kind, name and shapes stored once each, rows
    carry their index (the browser expands them, `lane_i` keeps the lane order); the step as runs, start (4
    decimals) and duration (5) delta-coded."""
    first_cat: dict[str, int] = {}
    dev: dict[str, int] = {}
    for ln, c, k in zip(rows.lane, rows.cat, device_of or [0] * len(rows)):
        first_cat[ln] = min(first_cat.get(ln, 99), CAT_ORDER[c])
        dev[ln] = k
    lanes = sorted(first_cat, key=lambda ln: (dev[ln], first_cat[ln], ln))
    pos = {ln: i for i, ln in enumerate(lanes)}
    cats = [_(c) for c in tl_charts.CATEGORIES]  # the legend's words, in the chart's domain too
    names: dict[str, int] = {}
    shapes: dict[str, int] = {}
    runs = columnar.list_or_runs  # (lane, kind, shapes and launch repeat in a row: sorted by lane, few launches)
    cols = [columnar.runs_column(rows.step), runs([pos[ln] for ln in rows.lane]), runs([CAT_ORDER[c] for c in rows.cat]),
            runs([names.setdefault(n, len(names)) for n in rows.name]),
            columnar.rounded_column(np.concatenate(rows.start), 4),
            columnar.rounded_column(np.concatenate(rows.dur), 5),
            runs([shapes.setdefault(x, len(shapes)) for x in rows.shapes]), runs(rows.launch)]
    return {"ops": {"fields": FIELDS, "cols": cols,
                    "dicts": {"lane": [lane_text(ln) for ln in lanes], "cat": cats, "name": list(names),
                              "shapes": list(shapes)}}}


# Lane names the loaders make up when the trace names none (`loaders.step_ops._lane`); the trace's own process and
# thread names are data and stay as written.
_LANE_WORDS = ((re.compile(r"(^|· )Communication · "), lambda m: m[1] + _("Communication") + " · "),
               (re.compile(r"\bplane (\d+)$"), lambda m: _("plane {n}").format(n=m[1])),
               (re.compile(r"\bstream (\d+)$"), lambda m: _("stream {n}").format(n=m[1])),
               (re.compile(r"\bthread (\d+)$"), lambda m: _("thread {n}").format(n=m[1])),
               (re.compile(r"· data queue$"), lambda m: "· " + _("data queue")))


def lane_text(lane: str) -> str:
    """A timeline lane label in the report's language (the words msreport wrote; trace names unchanged)."""
    for pat, repl in _LANE_WORDS:
        lane = pat.sub(repl, lane)
    return lane


def step_labels(ex: ExecutionData, steps: list[int]) -> list[tuple[int, str]]:
    roles = {"representative": _("representative"), "slowest": _("slowest")}
    out = []
    for s in steps:
        why = roles.get((ex.reasons.get(s) or "").split(":")[0], "")
        out.append((s, _("step {n}").format(n=s) + (f" ({why})" if why else "")))
    return out


def rank_chart(ex: Optional[ExecutionData], rank: int) -> Optional[Chart]:
    """The timeline of `rank` for the chosen steps, when the execution loader read this rank."""
    if ex is None:
        return None
    steps = [s for s in ex.steps if rank in ex.ops.get(s, {})]
    if not steps:
        return None
    rows = _Rows()
    for s in steps:
        rows.ops(ex.ops[s][rank], MAX_RANK_BARS)
        rows.host(ex.ops[s][rank], MAX_HOST_BARS)
    if not len(rows):
        return None
    chart = Chart(f"rank-{rank}-timeline", tl_charts.timeline(step_labels(ex, steps)),
                  _("The operators of the chosen steps on each stream / thread (times from the rank's own step "
                    "start). Scroll to zoom along time, drag to pan, double-click to reset; hover a bar for its "
                    "name, duration and input shapes."))
    chart.columns = _columns(rows)
    return chart


def execution_chart(ex: Optional[ExecutionData], step: int, shifts: dict[int, float],
                    labels: dict[int, str]) -> Optional[Chart]:
    """One step across the drawn devices: a lane per device and stream / thread, devices aligned as in the
    Marey view (`shifts`, ms), at most MAX_DEVICE_BARS operators per device."""
    if ex is None or step not in ex.ops:
        return None
    rows, device_of = _Rows(), []
    for k, r in enumerate(labels):  # the execution view's device order
        o = ex.ops[step].get(r)
        if o is not None:
            device_of += [k] * rows.ops(o, MAX_DEVICE_BARS, lane_prefix=f"{labels[r]} · ", shift=shifts.get(r, 0.0))
    if not len(rows):
        return None
    chart = Chart(f"timeline-{step}", tl_charts.timeline([(step, _("step {n}").format(n=step))],
                                                         lane_title=_("Device · stream / thread")),
                  _("Every drawn device's streams and threads in this step, aligned as in the view above (at most "
                    "{n} operators per device: communication first, then the longest). Scroll to zoom, drag to "
                    "pan, double-click to reset.").format(n=MAX_DEVICE_BARS))
    chart.columns = _columns(rows, device_of)
    return chart
