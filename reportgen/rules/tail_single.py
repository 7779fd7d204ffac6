"""Tail long on a single device: after forward + backward, parameter update takes a large share of the step.

Tuning guide, single device, tail long: "in single-device training this phase is short; if it is long, look at the
parameter-update operators in the timeline". In a cluster the tail holds the gradient all-reduce: see the
communication-bound and slow-rank rules.
"""

from __future__ import annotations

from dataclasses import dataclass

from reportgen import urls
from reportgen.analysis.impact import saved_by_ms
from reportgen.rules import policy
from reportgen.i18n import N_, lazy
from reportgen.rules.base import Context, Finding, Rule, fmt_ms, fmt_pct
from reportgen.rules.thresholds import th

@dataclass(frozen=True)
class Thresholds:
    info_share: float = th(0.1, N_('tail / step from which it is reported'))
    warning_share: float = th(0.2, N_('tail / step from which it is a warning'))


ADVICE = N_("""\
On one device the tail is the parameter update (optimizer) and little else. Download the rank's timeline, open it in
Perfetto and look at the operators after the last backward operator: an unfused optimizer (one small kernel per
parameter), float32 master-weight copies or a host-side step are the usual causes. Fused optimizers
(`FusedAdam`-style, `ApplyAdam` fusion) and fewer, larger parameter tensors shorten it.""")


def check(ctx: Context) -> list[Finding]:
    a = ctx.a
    st = a.steps
    if len(a.run.rank_ids) != 1 or st.kind != "legacy" or "tail" not in st.average or a.comm.has_data:
        return []  # with communication data the rank belongs to a cluster: its tail holds the all-reduce
    trace = a.run.ranks[a.run.rank_ids[0]].step_trace
    if trace is not None and trace.comm_events is not None and len(trace.comm_events):
        return []  # the step trace records collective (reduce) streams: one rank of a data-parallel job
    r = a.run.rank_ids[0]
    row = st.average.loc[r] if r in st.average.index else None
    if row is None or not row["total"] > 0:
        return []
    share = float(row["tail"]) / float(row["total"])
    if share < ctx.t.info_share:
        return []
    usual = ctx.t.info_share * float(row["total"])
    imp = saved_by_ms(max(0.0, float(row["tail"]) - usual), st, lazy(IMPACT_BASIS, share=fmt_pct(ctx.t.info_share, 0)))
    return [policy.judged(Finding(
        id="tail-single-device.tail", category="operator_hotspot", impact=imp.to_dict() if imp else None,
        severity="warning" if share >= ctx.t.warning_share else "info",
        title=lazy("The tail (parameter update) takes {ms} per step, {share} of the step",
                   ms=fmt_ms(float(row["tail"])), share=fmt_pct(share)),
        advice=lazy(ADVICE), why=lazy("On a single device the tail is normally short; a long one is optimizer overhead."),
        page=urls.rank(r, "step-trace"), ranks=[r], phase="tail",
        evidence={"tail_ms": float(row["tail"]), "step_ms": float(row["total"]), "share": share}), ctx.p)]


IMPACT_BASIS = N_("the tail brought to {share} of the step, where a single device's tail usually stays")


RULE = Rule(
    id="tail-single-device", category="operator_hotspot", title=N_("Tail long on a single device"),
    description=N_("""\
Single-device MindInsight runs: tail / step time of the averaged step. Information from `info_share`; from
`warning_share` it is judged by the severity policy on its saving (the tail brought to `info_share` of the step)."""),
    params=Thresholds, check=check, source=N_("tuning guide, single device, tail long"))
