"""Step interval long on every rank: the step waits for its data (the tuning guide's first single-device check).

MindInsight StepTraceProposer: average step interval above 0.5 ms; the guide: ideally under 1 ms. A rank whose
interval alone is long is a slow rank (slow-rank.step-interval); this rule is about the cluster as a whole (or the
single device).
"""

from __future__ import annotations

from dataclasses import dataclass

from reportgen import urls
from reportgen.analysis.impact import saved_by_ms
from reportgen.i18n import N_, lazy
from reportgen.rules import policy
from reportgen.rules.base import Context, Finding, Rule, fmt_ms, fmt_pct
from reportgen.rules.thresholds import th

@dataclass(frozen=True)
class Thresholds:
    info_ms: float = th(0.5, N_("median step interval over ranks from which it is reported (MindInsight's "
                             'StepTraceProposer, 0.5 ms)'))
    warning_share: float = th(0.05, N_('and the fraction of the step from which it is judged by the severity policy '
                                       '(below it: information)'))
    critical_share: float = th(0.25, N_('fraction of the step from which it may be critical'))


ADVICE = N_("""\
Data for the next step is not ready when the device needs it. Follow the tuning guide's data-preparation steps on
a rank's page (**Data preparation**):
- **non-sink mode:** host queue size mostly 0 → data processing is the bottleneck (find the slow dataset operator
  in the pipeline table); otherwise sending the data to the device is: look for custom per-batch Python work between
  the iterator and the network (time it), else report it to the framework;
- **sink mode:** chip (data) queue never empty → the GetNext operator is slow (AI CPU operators); queue sometimes
  empty and host queue never empty → host-to-device transfer; host queue empty → data processing.
- Data processing: raise `num_parallel_workers` of the slow operator, convert the dataset to MindRecord, cache,
  and move heavy Python transforms to C++ ops or the device.""")


def check(ctx: Context) -> list[Finding]:
    st = ctx.a.steps
    if st.kind != "legacy" or "iteration_interval" not in st.stats or "total" not in st.stats:
        return []
    med = st.stats["iteration_interval"].median
    total = st.stats["total"].median
    if med < ctx.t.info_ms:
        return []
    share = med / total if total else 0.0
    # a ceiling: the policy decides from the saving
    sev = ("critical" if share >= ctx.t.critical_share else "warning" if share >= ctx.t.warning_share
           else "info")
    ii = st.average["iteration_interval"].dropna()
    ranks = sorted(int(r) for r in ii.index[ii >= ctx.t.info_ms])
    verdicts = {}
    for r in ranks:
        q = ctx.a.resources.queues.get(r)
        if q is not None and q.verdict:
            verdicts.setdefault(q.verdict, []).append(r)
    n = len(ii)
    title = (lazy("The step waits {ms} for data (step interval, median over ranks): {share} of the step",
                  ms=fmt_ms(med), share=fmt_pct(share)) if n == 1 else
             lazy("The step waits {ms} for data (step interval, median over ranks): {share} of the step, on {k} of "
                  "{n} ranks", ms=fmt_ms(med), share=fmt_pct(share), k=len(ranks), n=n))
    if sev == "info":
        title = lazy("{title}; small against the step", title=title)
    imp = saved_by_ms(med, st, lazy(IMPACT_BASIS))
    return [policy.judged(Finding(
        id="step-interval.long", category="data_pipeline", severity=sev, title=title, advice=lazy(ADVICE),
        impact=imp.to_dict() if imp else None,
        why=lazy("While the step waits for data the device computes nothing; the guide expects the interval under 1 ms."),
        page=urls.page(urls.STEP_TRACE) if n > 1 else urls.rank(ranks[0] if ranks else ii.index[0], "data"),
        ranks=ranks,
        evidence={"median_ms": med, "share_of_step": share, "median_step_ms": total,
                  "mindinsight_threshold_ms": ctx.t.info_ms, "queue_readings": verdicts}), ctx.p)]


IMPACT_BASIS = N_("the data ready when the step starts on every rank (the median step interval saved): an upper bound")


RULE = Rule(
    id="step-interval", category="data_pipeline", title=N_("Step interval long (waiting for data)"),
    description=N_("""\
The median of the ranks' average step interval (MindInsight step trace). Reported from `info_ms` (MindInsight's
StepTraceProposer threshold, 0.5 ms) as information; from `warning_share` of the step it is judged by the severity
policy on its saving (the median interval, were the data ready when the step starts: an upper bound). The data-pipeline rule says why, rank by rank, from the queues."""),
    params=Thresholds, check=check, source=N_("tuning guide, single device: step interval long; MindInsight "
                                               "StepTraceProposer"))
