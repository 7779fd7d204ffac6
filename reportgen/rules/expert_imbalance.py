"""Expert-parallel imbalance: the ranks of an expert-parallel group compute for unequal token counts, and the whole
group waits for the slowest at the next all-to-all (issue 32, item 3; `reportgen.analysis.expert`).

Reported per group whose peak-to-mean expert computation reaches `min_peak_to_mean` and whose saving (max - mean per
step) reaches `min_share` of the step; the saving is the finding's impact.
"""

from __future__ import annotations

from dataclasses import dataclass

from reportgen import urls
from reportgen.analysis.impact import saved_by_ms
from reportgen.i18n import N_, lazy
from reportgen.rules.base import Context, Finding, Rule, fmt_ms, fmt_pct, fmt_ranks
from reportgen.rules.thresholds import th


@dataclass(frozen=True)
class Thresholds:
    min_peak_to_mean: float = th(1.15, N_("expert computation max / mean in the group from which it is reported"))
    min_share: float = th(0.01, N_("saving (max - mean per step) / step from which it is reported"))


ADVICE = N_("""\
The ranks of an expert-parallel group exchange tokens at every all-to-all, so each step runs at the pace of the rank
whose experts received the most tokens. Balance the routing: raise the auxiliary load-balancing loss coefficient (or
use auxiliary-loss-free bias balancing), set a capacity factor (token dropping or padding) so that no expert takes
far more than its share, and place experts so that popular ones do not share a rank (expert placement /
redundant copies of hot experts). Check the router's token counts per expert in the training logs.""")


def check(ctx: Context) -> list[Finding]:
    eb = getattr(ctx.a, "expert", None)
    if eb is None:
        return []
    out = []
    for g in eb.groups:
        if g.saving_ms is None or g.peak_to_mean is None or g.peak_to_mean < ctx.t.min_peak_to_mean:
            continue
        basis = lazy(N_("every rank of group {group} computing the group's mean expert time ({mean}) instead of "
                        "its own (slowest {max})"), group=g.name, mean=fmt_ms(g.mean_ms), max=fmt_ms(g.max_ms))
        imp = saved_by_ms(g.saving_ms, ctx.a.steps, basis)
        if imp is None or imp.step_share < ctx.t.min_share:
            continue
        hot = g.hot_ranks or [max(g.expert_ms, key=g.expert_ms.get)]
        out.append(Finding(
            id="expert-imbalance.group", category="slow_rank", severity="warning",
            title=lazy(N_("Expert parallelism unbalanced in group {group}: {hot} compute {ratio}x the group's mean "
                          "expert time; balancing would save {ms} per step"),
                       group=g.name, hot=fmt_ranks(hot), ratio=f"{g.peak_to_mean:.2f}", ms=fmt_ms(g.saving_ms)),
            advice=lazy(ADVICE),
            why=lazy(N_("The group waits for its slowest member at the next all-to-all: the others idle for "
                        "max - mean ({ms}) per step, {share} of the step."), ms=fmt_ms(g.saving_ms),
                     share=fmt_pct(imp.step_share)),
            page=urls.page(urls.INDEX, "efficiency"), ranks=hot,
            evidence={"group": g.group, "group_name": g.name, "ranks": g.ranks, "hot_ranks": hot,
                      "expert_ms": {str(r): round(v, 4) for r, v in sorted(g.expert_ms.items())},
                      "alltoall_ms": {str(r): round(v, 4) for r, v in sorted(g.alltoall_ms.items())},
                      "mean_ms": round(g.mean_ms, 4), "max_ms": round(g.max_ms, 4),
                      "peak_to_mean": round(g.peak_to_mean, 4), "saving_ms": round(g.saving_ms, 4)},
            impact=imp.to_dict()))
    return out


RULE = Rule(
    id="expert-imbalance", category="slow_rank", title=N_("Expert-parallel imbalance"),
    description=N_("""\
Groups that run all-to-all collectives are expert-parallel groups; each rank's expert computation is the device time
of its grouped-GEMM kernels per step. A group is reported when max / mean of its ranks' expert time reaches
`min_peak_to_mean` and balancing (max - mean per step) would save at least `min_share` of the step."""),
    params=Thresholds, check=check, source=N_("issue 32: expert-parallel balance"))
