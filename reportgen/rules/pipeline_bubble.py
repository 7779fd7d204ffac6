"""Pipeline bubble: time spent only receiving from other stages (waiting for them) is a large share of the step.

Tuning guide, pipeline parallel step 3 (pure communication, receive only); MindInsight ParallelProposer
`pipeline_parallel_between_stage` (threshold 10 %); msprof-analyze: Bubble -> PP bubble.
"""

from __future__ import annotations

from dataclasses import dataclass

import math

from reportgen import urls
from reportgen.analysis.impact import saved_by_ms
from reportgen.i18n import N_, lazy
from reportgen.rules import policy
from reportgen.rules.base import Context, Finding, Rule, fmt_pct
from reportgen.rules.thresholds import th

@dataclass(frozen=True)
class Thresholds:
    info_rate: float = th(0.1, N_('Σ receive-only (bubble) / Σ step over all ranks from which it is reported as '
                               "information (MindInsight's 10 %)"))
    warning_rate: float = th(0.2, N_('from which it is judged by the severity policy on its saving (below it: '
                                     'information)'))
    critical_rate: float = th(0.4, N_('from which it may be critical'))


ADVICE = N_("""\
Stages wait for each other. With balanced stages the remaining bubble is the pipeline's fill and drain, about
(stages − 1) / (micro-batches + stages − 1) of the step.
- If the stage-imbalance finding names a slow stage, move layers out of it first (the FLOPs per stage on the
  Resources page show where the work is).
- Otherwise raise the number of micro-batches (`micro_batch_num` / gradient accumulation), or use an interleaved
  (virtual pipeline) schedule to shrink fill and drain.
- Check the receive operators' order in a waiting stage's timeline: a receive scheduled too late is also a bubble.""")


def check(ctx: Context) -> list[Finding]:
    a = ctx.a
    ov = a.overlap
    if len(ov.stages) < 2 or not ov.rates:
        return []
    rate = ov.rates.get("between_stage_rate")
    if rate is None or math.isnan(float(rate)):
        return []
    rate = float(rate)
    if rate < ctx.t.info_rate:
        return []
    # a ceiling: the policy decides from the saving
    sev = "critical" if rate >= ctx.t.critical_rate else "warning" if rate >= ctx.t.warning_rate else "info"
    per_stage = []
    for s in ov.stage_summary:
        share = s["wait_ms"] / s["step_ms"] if s["step_ms"] and not math.isnan(s["wait_ms"]) else math.nan
        per_stage.append((s["stage"], s["wait_ms"], share))
    waiting = [st for st, _, sh in per_stage if not math.isnan(sh) and sh >= ctx.t.info_rate]
    known = [x for x in per_stage if not math.isnan(x[2])]
    worst = max(known, key=lambda x: x[2]) if known else None
    col = "bubble" if ov.view == "modern" else "receive_alone"
    # What more micro-batches or an interleaved schedule can save: the bubble every stage has, the slowest one
    # included (fill and drain). The rest of a stage's bubble is waiting for a slower stage: the stage-imbalance
    # finding's saving, not this one's.
    common = _common_bubble(a)
    imp = saved_by_ms(common, a.steps, lazy(IMPACT_BASIS)) if common is not None else None
    return [policy.judged(Finding(
        id="pipeline-bubble.between-stage", category="pipeline_bubble", severity=sev,
        title=(lazy("Waiting for other stages (receive only) takes {rate} of the step over all ranks; most in stage "
                    "{stage} ({share} of its step)", rate=fmt_pct(rate), stage=worst[0], share=fmt_pct(worst[2]))
               if worst else
               lazy("Waiting for other stages (receive only) takes {rate} of the step over all ranks",
                    rate=fmt_pct(rate))),
        advice=lazy(ADVICE), why=lazy("During the bubble the device computes nothing: it is idle time multiplied by every rank "
                           "of the waiting stage."),
        page=urls.OVERLAP_STAGES, stages=waiting, impact=imp.to_dict() if imp else None,
        evidence={"rate": rate, "common_bubble_ms": common if common is not None else math.nan, "mindinsight_key": "pipeline_parallel_between_stage", "column": col,
                  "threshold_info": ctx.t.info_rate, "definition": ov.rates.get("definition", ""),
                  "per_stage_share": {str(s): sh for s, _, sh in per_stage}},
        table={"columns": [N_("Stage"), N_("Bubble per step (ms)") if ov.view == "modern" else
                           N_("Pure receive per step (ms)"), N_("Bubble / step") if ov.view == "modern" else
                           N_("Pure receive / step")],
               # the per-stage shares, then the rate of the title (all ranks together), so both numbers are seen
               "rows": [[s, round(w, 4) if not math.isnan(w) else None, fmt_pct(sh)] for s, w, sh in per_stage]
                       + [[N_("all ranks (the title's rate)"), None, fmt_pct(rate)]],
               "links": [None] * (len(per_stage) + 1)}), ctx.p)]


def _common_bubble(a):
    """Per step, the bubble of the stage that waits least (each stage's mean over its ranks), averaged over the
    steps: the fill and drain every stage has; the rest is waiting for the step's slowest stage (which stage that is
    may change from step to step, e.g. a stall). From the stages' averages when there is no per-step data."""
    ov = a.overlap
    col = ov.wait_col
    ps = ov.per_step
    stage_of = {r: s.index for s in ov.stages for r in s.ranks}
    if ps is not None and len(ps) and col in ps.columns and stage_of:
        f = ps[["rank", "step", col]].dropna(subset=[col]).copy()
        f["step"] = f["step"].fillna(-1)
        f["stage"] = f["rank"].map(stage_of)
        f = f.dropna(subset=["stage"])
        if f["stage"].nunique() >= 2:
            per = f.groupby(["step", "stage"])[col].mean().groupby(level="step").min()
            return float(per.mean()) if len(per) else None
    waits = [s["wait_ms"] for s in ov.stage_summary if not math.isnan(s["wait_ms"])]
    return min(waits) if waits else None


IMPACT_BASIS = N_("the bubble every stage has, the slowest stage included (fill and drain), removed by more "
                  "micro-batches or an interleaved schedule: an upper bound; the rest is waiting for a slower stage "
                  "(the stage-imbalance finding)")


RULE = Rule(
    id="pipeline-bubble", category="pipeline_bubble", title=N_("Pipeline bubble (waiting for other stages)"),
    description=N_("""\
MindInsight ParallelProposer's between-stage rate: Σ pure receive / Σ (computation + pure communication) over all
ranks (Ascend layout: Σ Bubble / Σ step). Reported from `info_rate` (MindInsight's 10 %); from `warning_rate`
it is judged by the severity policy on its saving: the bubble that every stage has, the slowest one included (fill
and drain, what more micro-batches or an interleaved schedule remove). The rest of a stage's bubble is waiting for a
slower stage and is the stage-imbalance finding's saving. The stages listed are those whose own receive share reaches
`info_rate`."""),
    params=Thresholds, check=check,
    source=N_("tuning guide, pipeline parallel step 3; MindInsight ParallelProposer pipeline_parallel_between_stage"))
