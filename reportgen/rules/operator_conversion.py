"""Conversion operators (Cast, TransData) take a noticeable share of device computation.

Tuning guide, single device, forward + backward long, step 1: "too many conversion operators (TransData, Cast) with
noticeable time: remove redundant ones if they were added by hand; report it if the framework inserts them".
"""

from __future__ import annotations

from dataclasses import dataclass

from reportgen import urls
from reportgen.analysis.impact import compute_share_saving
from reportgen.rules import policy
from reportgen.i18n import N_, lazy
from reportgen.rules.base import Context, Finding, Rule, fmt_ms, fmt_pct
from reportgen.rules.thresholds import th
from reportgen.rules.stats import type_totals

CONVERSION = {"cast", "transdata", "transdatarnn", "transdatad"}

@dataclass(frozen=True)
class Thresholds:
    info_share: float = th(0.05, N_("conversion operators' share of AI Core time (median over ranks) from which it is "
                                 'reported'))
    warning_share: float = th(0.1, N_('share from which it is a warning'))


ADVICE = N_("""\
Data-type and layout conversions are pure overhead.
- Cast: keep the model in one precision where accuracy allows (float16 / bfloat16 end to end, mixed precision
  `O2`/`O3` rather than casting around single operators); remove hand-written casts that are not needed.
- TransData: formats change between operators that prefer different layouts (NCHW ↔ NC1HWC0 / FRACTAL_NZ);
  keep consecutive operators in the same format, use shapes aligned to 16, and report conversions the framework
  inserts without need.""")


def check(ctx: Context) -> list[Finding]:
    t = type_totals(ctx.a, ("aicore",))
    if t.empty:
        return []
    per_rank = t.groupby("rank")["total_ms"].sum()
    conv = t[t["op_type"].str.lower().isin(CONVERSION)]
    if conv.empty:
        return []
    c = conv.groupby("rank")["total_ms"].sum().reindex(per_rank.index, fill_value=0.0)
    share = (c / per_rank.where(per_rank > 0)).dropna()
    if share.empty:
        return []
    med = float(share.median())
    if med < ctx.t.info_share:
        return []
    by_type = conv.groupby("op_type")["total_ms"].sum().sort_values(ascending=False)
    r = int(share.idxmax())
    n = len(share)
    imp = compute_share_saving(ctx.a.steps, med, lazy(IMPACT_BASIS, share=fmt_pct(med)))
    return [policy.judged(Finding(
        id="operator-conversion.share", category="operator_hotspot", impact=imp.to_dict() if imp else None,
        severity="warning" if med >= ctx.t.warning_share else "info",
        title=(lazy("Conversion operators ({types}) take {share} of AI Core time", types=", ".join(by_type.index[:3]),
                    share=fmt_pct(med)) if n == 1 else
               lazy("Conversion operators ({types}) take {share} of AI Core time (median over {n} ranks)",
                    types=", ".join(by_type.index[:3]), share=fmt_pct(med), n=n)),
        advice=lazy(ADVICE), why=lazy("Every conversion is device time spent moving data rather than computing."),
        page=urls.rank(r, "operators"), ranks=sorted(int(x) for x in share.index),
        evidence={"median_share": med, "max_share": float(share.max()), "types_ms": by_type.to_dict(),
                  "rank_max": r, "rank_max_ms": float(c[r])},
        table={"columns": [N_("Type"), N_("Time, all ranks")], "rows": [[k, fmt_ms(v)] for k, v in by_type.items()],
               "links": [None] * len(by_type)}), ctx.p)]


IMPACT_BASIS = N_("the conversions' {share} of the computation removed on every rank: an upper bound")


RULE = Rule(
    id="operator-conversion", category="operator_hotspot", title=N_("Cast / TransData share"),
    description=N_("""\
The share of AI Core time spent in Cast and TransData operators (per rank, median over ranks). Information from
`info_share`; from `warning_share` it is judged by the severity policy on its saving (that share of the median
computation per step, were the conversions removed: an upper bound; none without a step trace)."""),
    params=Thresholds, check=check, source=N_("tuning guide, single device, forward + backward long, step 1"))
