"""Memory pressure: peak device memory close to the device's capacity."""

from __future__ import annotations

from dataclasses import dataclass

import math

from reportgen import urls
from reportgen.i18n import N_, lazy
from reportgen.rules.base import Context, Finding, Rule, fmt_pct, ranks_msg
from reportgen.rules.thresholds import th

@dataclass(frozen=True)
class Thresholds:
    warning_ratio: float = th(0.9, N_('peak / capacity from which it is a warning'))
    critical_ratio: float = th(0.97, N_('peak / capacity from which it is critical'))


ADVICE = N_("""\
Little headroom is left: a longer sequence, a bigger batch or fragmentation will fail with out-of-memory, and the
allocator may already be spending time on defragmentation.
- Recompute activations (`recompute` / activation checkpointing), shard optimizer states (ZeRO / optimizer
  parallel), or lower the micro-batch size.
- On torch_npu, `PYTORCH_NPU_ALLOC_CONF=expandable_segments:True` reduces fragmentation.
- Look at the largest allocations on the rank's page (Memory) and at when the peak happens on the usage curve.""")


def check(ctx: Context) -> list[Finding]:
    m = ctx.a.resources.memory
    if m is None or not len(m) or "ratio" not in m:
        return []
    m = m[m["ratio"].notna()]
    hot = m[m["ratio"] >= ctx.t.warning_ratio].sort_values("ratio", ascending=False)
    if hot.empty:
        return []
    w = hot.iloc[0]
    ranks = [int(r) for r in hot["rank"]]
    sev = "critical" if float(w["ratio"]) >= ctx.t.critical_ratio else "warning"
    rows = [[int(r.rank), r.host, round(float(r.peak_mb), 1), round(float(r.capacity_mb), 1), fmt_pct(float(r.ratio))]
            for r in hot.head(50).itertuples()]
    return [Finding(
        id="memory-pressure.peak", category="memory_pressure", severity=sev,
        title=lazy("{ranks} peak at {ratio} of device memory ({peak} of {capacity} MB)",
                   ranks=ranks_msg(ranks, capital=True), ratio=fmt_pct(float(w["ratio"])),
                   peak=f"{float(w['peak_mb']):,.0f}", capacity=f"{float(w['capacity_mb']):,.0f}"),
        advice=lazy(ADVICE), why=lazy("A run this close to capacity fails on the next larger input and leaves no room to "
                           "trade memory for speed."),
        page=urls.rank(int(w['rank']), "memory"), ranks=ranks,
        evidence={"peak_mb": float(w["peak_mb"]), "capacity_mb": float(w["capacity_mb"]),
                  "peak_ratio": float(w["ratio"]), "capacity_source": w.get("capacity_source"),
                  "median_ratio": float(m["ratio"].median()) if len(m) else math.nan},
        table={"columns": [N_("Rank"), N_("Host"), N_("Peak (MB)"), N_("Capacity (MB)"), N_("Peak / capacity")], "rows": rows,
               "links": [urls.rank(r[0], "memory") for r in rows]})]


RULE = Rule(
    id="memory-pressure", category="memory_pressure", title=N_("Memory near capacity"),
    description=N_("""\
Peak device memory / capacity per rank (MindInsight memory summary; torch_npu `memory_record.csv` against
`--device-memory-gb`). Warning from `warning_ratio`, critical from `critical_ratio`. Without a known capacity
nothing is judged."""),
    params=Thresholds, check=check, source=N_("summary-json contract (peak above 90 % of capacity)"))
