"""AI CPU operators: operators that fall back to the AI CPU take a noticeable share of device time.

msprof-analyze advisor AICPU Issues (any AI CPU task of 20 µs or more; share of time >= 5 % high, >= 3 % medium);
tuning guide (GetNext on the AI CPU is data fetching in sink mode, not a fallback).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from reportgen import urls
from reportgen.analysis.impact import compute_share_saving
from reportgen.rules import policy
from reportgen.i18n import N_, lazy
from reportgen.rules.base import Context, Finding, Rule, fmt_ms, fmt_pct
from reportgen.rules.thresholds import th
from reportgen.rules.stats import type_totals

# data fetching in sink mode, not operator fallbacks
DATA_OPS = {"getnext", "initdata", "dynamicgetnext", "dynamicgetnextv2", "getnextfromqueue", "endofsequence"}

@dataclass(frozen=True)
class Thresholds:
    info_share: float = th(0.03, N_('AI CPU time / (AI Core + AI CPU time), median over ranks, from which it is '
                                 "reported (msprof-analyze's 3 %, medium)"))
    warning_share: float = th(0.05, N_("share from which it is a warning (msprof-analyze's 5 %, high)"))
    min_max_us: float = th(20.0, N_('only when some AI CPU operator takes at least this many µs (msprof-analyze)'))


ADVICE = N_("""\
Operators running on the AI CPU are much slower than on the AI Core and break the device pipeline.
- Usual causes: float64 / int64 / complex inputs, or shapes and attributes the AI Core kernel does not support;
  cast inputs to float32/float16/int32 where the operator allows it.
- Index-style operators (index, index_put, nonzero, argmin, unique) often fall back: rewrite them with masks or
  gather/scatter forms that have AI Core kernels.""")


def check(ctx: Context) -> list[Finding]:
    t = type_totals(ctx.a, ("aicore", "aicpu"))
    if t.empty or not (t["side"] == "aicpu").any():
        return []
    t = t[~((t["side"] == "aicpu") & t["op_type"].str.lower().isin(DATA_OPS))]
    dev = t.groupby("rank")["total_ms"].sum()
    cpu = t[t["side"] == "aicpu"]
    c = cpu.groupby("rank")["total_ms"].sum().reindex(dev.index, fill_value=0.0)
    share = (c / dev.where(dev > 0)).dropna()
    if share.empty:
        return []
    med = float(share.median())
    rows = ctx.a.resources.operator_rows
    b = rows[(rows["side"] == "aicpu") & ~rows["op_type"].str.lower().isin(DATA_OPS)]
    longest = b["max_ms"].fillna(b["avg_ms"]).max() if len(b) else 0.0
    max_us = 0.0 if pd.isna(longest) else float(longest) * 1000
    if med < ctx.t.info_share or max_us < ctx.t.min_max_us:
        return []
    by_type = cpu.groupby("op_type")["total_ms"].sum().sort_values(ascending=False)
    r = int(share.idxmax())
    imp = compute_share_saving(ctx.a.steps, med, lazy(IMPACT_BASIS, share=fmt_pct(med)))
    return [policy.judged(Finding(
        id="aicpu.share", category="operator_hotspot", impact=imp.to_dict() if imp else None,
        severity="warning" if med >= ctx.t.warning_share else "info",
        title=lazy("AI CPU operators take {share} of device operator time ({types})", share=fmt_pct(med),
                   types=", ".join(by_type.index[:3])),
        advice=lazy(ADVICE), why=lazy("AI CPU fallbacks are slow and serialise the device's work."),
        page=urls.rank(r, "operators"), ranks=sorted(int(x) for x in share.index),
        evidence={"median_share": med, "max_share": float(share.max()), "longest_op_us": max_us,
                  "types_ms": by_type.head(20).to_dict()},
        table={"columns": [N_("AI CPU type"), N_("Time, all ranks")],
               "rows": [[k, fmt_ms(v)] for k, v in by_type.head(20).items()], "links": [None] * min(20, len(by_type))}),
        ctx.p)]


IMPACT_BASIS = N_("the AI CPU operators' {share} of the computation saved on every rank (moved to the AI Core, "
                  "where they take a fraction of it): an upper bound")


RULE = Rule(
    id="aicpu", category="operator_hotspot", title=N_("AI CPU operators"),
    description=N_("""\
AI CPU time / (AI Core + AI CPU time) per rank, median over ranks, leaving out the sink-mode data operators
(GetNext, InitData, …). Reported when some AI CPU operator takes at least `min_max_us`: information from
`info_share`; from `warning_share` (msprof-analyze's medium and high priorities) it is judged by the severity policy
on its saving (that share of the median computation per step: an upper bound; none without a step trace)."""),
    params=Thresholds, check=check, source=N_("msprof-analyze advisor AICPU Issues"))
