"""Host bound: the device sits idle (Free) for a large share of the step on every rank.

Seed 003's delimitation (Free -> scheduling / host dispatch); msprof-analyze Overall Summary (free / E2E above
10 %); the tuning guide's timeline check ("a period in which no operator of any kind runs").
"""

from __future__ import annotations

from dataclasses import dataclass

import math

import pandas as pd

from reportgen import urls
from reportgen.analysis.impact import _wide, saved_by_ms
from reportgen.i18n import N_, lazy
from reportgen.rules.base import Context, Finding, Rule, th, fmt_pct

@dataclass(frozen=True)
class Thresholds:
    info_rate: float = th(0.1, N_("median free / step over ranks from which it is reported (msprof-analyze's 10 %)"))
    warning_rate: float = th(0.2, N_('from which it is a warning'))
    critical_rate: float = th(0.4, N_('from which it is critical'))


ADVICE = N_("""\
The device waits for the host to give it work (operator dispatch, Python in the step, synchronisation).
- Look at a rank's timeline (download it from the rank page, open in Perfetto) for gaps with no device task and what
  the host does meanwhile: CPU-side operators, `.item()` / `.cpu()` synchronisations, data loading, logging.
- Graph mode / compiled graphs (MindSpore `GRAPH_MODE`, `torch.compile` / torchair), task queue and fused
  operators reduce dispatch overhead; check CPU affinity and contention on the host.""")


def check(ctx: Context) -> list[Finding]:
    a = ctx.a
    st = a.steps
    if st.kind == "modern" and "free" in st.average and "total" in st.average:
        share = (st.average["free"] / st.average["total"]).dropna()
        source = "Free / step time of step_trace_time.csv"
        page = urls.page(urls.STEP_TRACE)
    else:
        vals = {r: d.timeline.free_ms / d.timeline.span_ms for r, d in a.run.ranks.items()
                if d.timeline is not None and d.timeline.free_ms is not None and d.timeline.span_ms}
        if not vals or st.kind is not None:
            return []  # the step trace is the better basis; timeline-only runs are judged as information
        share = pd.Series(vals)
        source = "free time / span of the device timeline"
        page = urls.rank(min(vals), "timeline")
    if share.empty:
        return []
    med = float(share.median())
    if math.isnan(med) or med < ctx.t.info_rate:
        return []
    sev = ("critical" if med >= ctx.t.critical_rate else "warning" if med >= ctx.t.warning_rate else "info")
    if st.kind is None:
        sev = "info"
    ranks = sorted(int(r) for r in share.index[share >= ctx.t.info_rate])
    # the severity policy: the saving is the median free time were the host to keep up (an upper bound)
    # (the median step's: one slow step, a warm-up or a checkpoint, is not what the host costs every step)
    imp = (saved_by_ms(float(_wide(st.per_step, "free").median(axis=0).median()), st, lazy(N_(
        "the free time of the median rank in the median step, were the host to keep the device busy: an upper "
        "bound"))) if st.kind == "modern" and "free" in st.per_step.columns else None)
    return [Finding(
        id="host-bound.free", category="host_bound", severity=sev, impact=imp.to_dict() if imp else None,
        title=lazy("The device is idle (free) for {share} of the step (median over {n} ranks)", share=fmt_pct(med),
                   n=len(share)),
        advice=lazy(ADVICE), why=lazy("Free time is neither computation nor communication: the device has nothing to run."),
        page=page, ranks=ranks,
        evidence={"median_free_share": med, "max_free_share": float(share.max()), "source": source,
                  "threshold_info": ctx.t.info_rate})]


RULE = Rule(
    id="host-bound", category="host_bound", title=N_("Device idle (host bound)"),
    description=N_("""\
The median over ranks of Free / step time (Ascend `step_trace_time.csv`). Information from `info_rate`
(msprof-analyze's 10 %), warning from `warning_rate`, critical from `critical_rate`. Runs with only a device
timeline use its free time / span, as information. A single rank with more free time than its peers is a
slow-rank finding (phase free)."""),
    params=Thresholds, check=check, source=N_("seed 003; msprof-analyze Overall Summary; tuning guide timeline check"))
