"""One operator type dominates device computation: where forward + backward time goes (tuning guide, single
device, forward + backward long, step 1: look at the top operators first)."""

from __future__ import annotations

from dataclasses import dataclass

from reportgen import urls
from reportgen.i18n import N_, lazy
from reportgen.rules.base import Context, Finding, Rule, fmt_ms, fmt_pct
from reportgen.rules.thresholds import th
from reportgen.rules.stats import type_totals

@dataclass(frozen=True)
class Thresholds:
    share: float = th(0.5, N_("one type's share of AI Core time (all ranks) from which it is reported"))


ADVICE = N_("""\
Most device time is in one operator type, so that is where speed-ups pay:
- in float32? switch to float16 / bfloat16 where accuracy allows (the guide's first lever);
- shapes: dimensions that are multiples of 16 (or 128 / 256 for matrix units) run at full speed;
- fused kernels (FlashAttention, fused optimizers, fused MatMul + bias / activation) replace chains of small ones.
This is information: a model made of matrix multiplications is expected to spend its time in them.""")


def check(ctx: Context) -> list[Finding]:
    t = type_totals(ctx.a, ("aicore",))
    if t.empty:
        return []
    by = t.groupby("op_type")["total_ms"].sum().sort_values(ascending=False)
    total = float(by.sum())
    if not total > 0:
        return []
    top, v = str(by.index[0]), float(by.iloc[0])
    share = v / total
    if share < ctx.t.share:
        return []
    n = t["rank"].nunique()
    r = int(t[t["op_type"] == top].sort_values("total_ms").iloc[-1]["rank"])
    return [Finding(
        id="operator-dominant.type", category="operator_hotspot", severity="info",
        title=(lazy("{op} takes {share} of AI Core time", op=top, share=fmt_pct(share)) if n == 1 else
               lazy("{op} takes {share} of AI Core time over {n} ranks", op=top, share=fmt_pct(share), n=n)),
        advice=lazy(ADVICE), why=lazy("Optimising anything else can win at most the remaining {rest} of AI Core time.",
                                      rest=fmt_pct(1 - share, 0)),
        page=urls.rank(r, "operators"), ranks=[] if n > 1 else [r],
        evidence={"op_type": top, "share": share, "total_ms": v, "next_types": {
            str(k): float(x) / total for k, x in by.iloc[1:4].items()}},
        table={"columns": [N_("Type"), N_("Time, all ranks"), N_("Share")],
               "rows": [[str(k), fmt_ms(float(x)), fmt_pct(float(x) / total)] for k, x in by.head(8).items()],
               "links": [None] * min(8, len(by))})]


RULE = Rule(
    id="operator-dominant", category="operator_hotspot", title=N_("One operator type dominates"),
    description=N_("""\
The AI Core operator type with the largest time over all ranks, reported as information when it holds at least
`share` of AI Core time, with the guide's levers (precision, shapes, fused kernels)."""),
    params=Thresholds, check=check, source=N_("tuning guide, single device, forward + backward long, step 1"))
