"""msprof-analyze's advisor "slow rank" check reproduced exactly, for comparison with the vendor's tool.

advisor/analyzer/cluster/slow_rank_analyzer.py: over every (step, rank) of the Ascend step trace, mean_total = mean
of Computing + Communication(Not Overlapped) + Free; for each of the three, (max − min) / mean_total > 0.05 ->
"X has some issues in the cluster, because the max difference of X time has reached N ms". The spread is taken over
all ranks and steps together, so differences between pipeline stages and between steps count too; the robust
slow-rank and stage-imbalance rules decide what the spread means.
"""

from __future__ import annotations

from dataclasses import dataclass

from reportgen import urls
from reportgen.i18n import N_, lazy
from reportgen.rules.base import Context, Finding, Rule, fmt_pct, gpu_run
from reportgen.rules.thresholds import th

@dataclass(frozen=True)
class Thresholds:
    spread: float = th(0.05, N_('(max − min) / mean step over (step, rank) keys from which msprof-analyze reports the '
                             'column'))


COLUMNS = (("computing", "Computing", "compute"), ("communication_not_overlapped", "Communication", "communication"),
           ("free", "Free", "free"))

ADVICE = N_("""\
This is msprof-analyze's advisor verdict, kept for comparison. It compares the largest and smallest value over all
ranks and steps, so a difference between pipeline stages, or a slow first step, counts as much as a slow rank. The
slow-rank and stage-imbalance findings (when present) say which it is.""")


def check(ctx: Context) -> list[Finding]:
    a = ctx.a
    st = a.steps
    if st.kind != "modern" or len(a.run.rank_ids) < 2 or gpu_run(a):
        return []  # a GPU run has no vendor verdict to compare with
    ps = st.per_step.dropna(subset=["step"])
    if ps.empty:
        return []
    keyed = ps.groupby(["step", "rank"])[[c for c, _, _ in COLUMNS]].sum(min_count=1).dropna()
    if keyed.empty:
        return []
    mean_total = float(keyed.sum(axis=1).mean())
    if not mean_total > 0:
        return []
    stage_of = a.run.info.stage_of_rank
    out = []
    for col, label, phase in COLUMNS:
        v = keyed[col]
        diff = float(v.max() - v.min())
        if diff / mean_total <= ctx.t.spread:
            continue
        (s_hi, r_hi), (s_lo, r_lo) = v.idxmax(), v.idxmin()
        where = ""
        if a.run.info.stages > 1 and stage_of.get(int(r_hi)) != stage_of.get(int(r_lo)):
            where = lazy(" (max on rank {hi}, stage {shi}; min on rank {lo}, stage {slo}: a difference between "
                         "stages)", hi=int(r_hi), shi=stage_of.get(int(r_hi)), lo=int(r_lo), slo=stage_of.get(int(r_lo)))
        elif s_hi != s_lo and r_hi == r_lo:
            where = lazy(" (rank {rank}, between steps {lo} and {hi})", rank=int(r_hi), lo=int(s_lo), hi=int(s_hi))
        else:
            where = lazy(" (max on rank {hi} in step {shi}, min on rank {lo} in step {slo})", hi=int(r_hi),
                         shi=int(s_hi), lo=int(r_lo), slo=int(s_lo))
        out.append(Finding(
            id=f"msprof-analyze.slow-rank.{phase}", category="slow_rank", severity="info",
            title=lazy("msprof-analyze's advisor: {label} has some issues in the cluster, because the max difference "
                       "of {label} time has reached {diff} ms ({pct} of the mean step){where}", label=lazy(label),
                       diff=f"{diff:.3f}", pct=fmt_pct(diff / mean_total), where=where),
            advice=lazy(ADVICE), page=urls.page(urls.STEP_TRACE), ranks=[int(r_hi)], phase=phase,
            evidence={"msprof_analyze_rule": "slow rank", "column": label, "max_difference_ms": round(diff, 3),
                      "mean_total_ms": mean_total, "ratio": diff / mean_total,
                      "max": {"rank": int(r_hi), "step": int(s_hi), "ms": float(v.max())},
                      "min": {"rank": int(r_lo), "step": int(s_lo), "ms": float(v.min())}}))
    return out


RULE = Rule(
    id="msprof-analyze", category="slow_rank", title=N_("msprof-analyze's slow-rank check, for comparison"),
    description=N_("""\
Exactly msprof-analyze's advisor `slow rank` check on the Ascend step trace: for Computing, Communication (not
overlapped) and Free, (max − min) over all (step, rank) pairs divided by the mean step (Computing + Communication +
Free) above `spread` (5 %). Always information; merged into a slow-rank finding about the same rank and phase when
one exists."""),
    params=Thresholds, reference=True, check=check, source=N_("msprof-analyze advisor slow_rank_analyzer.py"))
