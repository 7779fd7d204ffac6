"""What the Marey view of a step draws: bars per device, lines joining operators across a stage's devices, the
stage-mean lanes, and the caps that keep a page small.

`analysis.execution.marey_step` gives the numbers (every operator of every drawn device, its alignment shift, the
join keys, the spread); this module chooses and shapes what is drawn of them. Nothing here is read by a rule.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reportgen.analysis.execution import MareyStep

MAX_BARS = 600  # operators drawn per device row (the longest; all communication first)
MAX_JOINS = 80  # operators joined across devices by a line


@dataclass(frozen=True)
class MareyLayout:
    bars: list[dict]  # rank, row, name, cls, start, end, dur (aligned ms)
    joins: list[dict]  # key, name, cls, order, row, t (start), end
    stages: list[dict]  # stage, ranks, label, n, bars: [{key, name, cls, n, st_min/max/avg, ed_min/max/avg}]
    span_ms: float  # from the first drawn start to the last drawn end
    not_drawn: int  # operators left out by the cap, over all devices
    drawn: dict[int, int]  # rank -> operators drawn


def _kept(classes: list[str], dur: np.ndarray, max_bars: int) -> list[int]:
    """Indices drawn on one device: every communication operator first (up to the cap), then the longest."""
    comm = [i for i, c in enumerate(classes) if c != "compute"]
    comp = [i for i, c in enumerate(classes) if c == "compute"]
    keep = comm[:max_bars]
    room = max_bars - len(keep)
    if room > 0 and comp:
        top = np.argsort(-np.asarray(dur, dtype=float)[comp], kind="stable")[:room]
        keep += [comp[i] for i in top]
    return sorted(keep)


def layout(m: MareyStep, max_bars: int = MAX_BARS, max_joins: int = MAX_JOINS) -> MareyLayout:
    bars: list[dict] = []
    drawn: dict[int, int] = {}
    not_drawn = 0
    row_of = {d.rank: i for i, d in enumerate(m.devices)}
    starts = {d.rank: m.aligned_start(d.rank) for d in m.devices}
    for d in m.devices:
        o = m.ops[d.rank]
        keep = _kept(o.classes, o.dur, max_bars)
        drawn[d.rank] = len(keep)
        not_drawn += len(o.names) - len(keep)
        st = starts[d.rank]
        for i in keep:
            dur = float(o.dur[i])
            bars.append({"rank": d.rank, "row": d.label, "name": o.names[i], "cls": o.classes[i],
                         "start": round(float(st[i]), 4), "end": round(float(st[i]) + dur, 4), "dur": round(dur, 4)})
    # joins: communication operators and the operators with the largest spread or duration
    chosen: list[str] = []
    comm = sorted((s for s in m.spread if s.cls != "compute"), key=lambda s: -s.median_ms)
    wide = sorted((s for s in m.spread if s.cls == "compute"), key=lambda s: -(s.excess_ms + s.median_ms))
    for s in comm[: max_joins // 2] + wide:
        if len(chosen) >= max_joins:
            break
        chosen.append(s.key)
    keyset = set(chosen)
    joins = []
    for d in m.devices:
        o, st = m.ops[d.rank], starts[d.rank]
        for i, k in enumerate(m.keys[d.rank]):
            if k in keyset:
                joins.append({"key": k, "name": o.names[i], "cls": o.classes[i], "order": row_of[d.rank],
                              "row": d.label, "t": round(float(st[i]), 4), "end": round(float(st[i]) + float(o.dur[i]), 4)})
    # stage aggregates (MindInsight's stage_data: st/ed min, max, average over the stage's devices)
    stage_rows = []
    for stage in sorted({d.stage for d in m.devices}):
        members = [d.rank for d in m.devices if d.stage == stage]
        agg: dict[str, list] = {}
        for r in members:
            o, st = m.ops[r], starts[r]
            for i, k in enumerate(m.keys[r]):
                a = float(st[i])
                agg.setdefault(k, [o.names[i], o.classes[i], []])[2].append((a, a + float(o.dur[i])))
        items = []
        for k, (name, cls, spans) in agg.items():
            arr = np.array(spans)
            items.append({"key": k, "name": name, "cls": cls, "n": len(spans),
                          "st_min": float(arr[:, 0].min()), "st_max": float(arr[:, 0].max()),
                          "st_avg": float(arr[:, 0].mean()), "ed_min": float(arr[:, 1].min()),
                          "ed_max": float(arr[:, 1].max()), "ed_avg": float(arr[:, 1].mean())})
        items.sort(key=lambda x: -(x["ed_avg"] - x["st_avg"]))
        stage_rows.append({"stage": stage, "ranks": members, "label": f"stage {stage} (mean of {len(members)})",
                           "bars": items[:max_bars], "n": len(items)})
    span = max((b["end"] for b in bars), default=0.0) - min((b["start"] for b in bars), default=0.0)
    return MareyLayout(bars=bars, joins=joins, stages=stage_rows, span_ms=span, not_drawn=not_drawn, drawn=drawn)
