"""Stage imbalance: pipeline stages carry unequal work, so fast stages wait for the slowest one.

Tuning guide, pipeline parallel step 2 (stage time; FLOPs per stage from the cluster FLOPs heatmap); MindInsight
ParallelProposer `pipeline_parallel_flops` (stage FLOPs more than 20 % above the mean of stages).
"""

from __future__ import annotations

from dataclasses import dataclass

import math

from reportgen import urls
from reportgen.analysis.impact import Impact, saved_by_ms
from reportgen.i18n import N_, lazy
from reportgen.rules import policy
from reportgen.rules.base import Context, Finding, Rule, fmt_ms, fmt_pct
from reportgen.rules.thresholds import th

@dataclass(frozen=True)
class Thresholds:
    min_rel: float = th(0.1, N_('the slowest stage computes at least this fraction more than the mean of stages'))
    critical_share: float = th(0.25, N_('excess (fraction of the step) from which the finding may be critical (the '
                                        'severity policy decides from the saving)'))
    flops_rel: float = th(0.2, N_("stage FLOPs more than this fraction above the mean of stages (MindInsight's "
                               'pipeline_parallel_flops)'))


ADVICE = N_("""\
Move work out of the slowest stage: re-assign layers between stages (`pipeline_stage` of each cell in MindSpore,
the layer split of the pipeline schedule in Megatron-style frameworks) so that each stage's computation is close to
the mean. Embedding and output layers often make the first and last stage heavier; count them when splitting.
The FLOPs per stage on the Resources page show the work; the computation per stage shows the time.""")

ADVICE_FLOPS = N_("""\
The stages' work (FLOPs) is unequal although their computation time is not (yet) far apart. Check that the
assignment of layers to stages is intended; with more micro-batches or a larger model the difference becomes
time.""")


def check(ctx: Context) -> list[Finding]:
    a = ctx.a
    ov = a.overlap
    rows = [r for r in ov.stage_summary if not math.isnan(r["compute_ms"])]
    flops = {s["stage"]: s for s in a.resources.stage_flops}
    out = []
    time_stage = None
    if len(rows) >= 2:
        mean = sum(r["compute_ms"] for r in rows) / len(rows)
        worst = max(rows, key=lambda r: r["compute_ms"])
        step = sum(r["step_ms"] for r in rows if not math.isnan(r["step_ms"])) / len(rows)
        excess = worst["compute_ms"] - mean
        rel = excess / mean if mean else 0.0
        share = excess / step if step else math.nan
        if rel >= ctx.t.min_rel:
            time_stage = worst["stage"]
            fault = (policy.fault("stage", 1 + rel, 1 + ctx.p.stage_fault, excess)
                     if rel >= ctx.p.stage_fault and excess >= ctx.p.fault_min_ms else None)
            fl = flops.get(worst["stage"])
            ev = {"stage": worst["stage"], "compute_ms": worst["compute_ms"], "stages_mean_compute_ms": mean,
                  "excess_ms": excess, "excess_share_of_step": share, "compute_vs_mean": rel}
            if fl:
                ev.update({"stage_flops_m": fl["flops_m"], "flops_vs_mean": fl.get("vs_mean")})
            top = max(flops.values(), key=lambda s: s["flops_m"]) if len(flops) >= 2 else None
            if top and top.get("vs_mean") is not None and top["vs_mean"] > ctx.t.flops_rel:
                ev["mindinsight"] = {"key": "pipeline_parallel_flops", "stage": top["stage"],
                                     "value_mflops": round(top["flops_m"], 4),
                                     "percent": round(top["vs_mean"] * 100, 2)}
            out.append(policy.judged(Finding(
                id="stage-imbalance.compute", category="stage_imbalance", fault=fault,
                severity="critical" if math.isnan(share) or share >= ctx.t.critical_share else "warning",
                title=lazy("{main}{flops}", main=lazy(
                    "Stage {stage} computes {rel} more than the mean of stages ({value} vs {mean} per step)",
                    stage=worst["stage"], rel=fmt_pct(rel, 0), value=fmt_ms(worst["compute_ms"]), mean=fmt_ms(mean)),
                           flops=lazy("; its FLOPs are {pct} above the mean", pct=fmt_pct(fl["vs_mean"], 0))
                           if fl and fl.get("vs_mean") is not None and fl["vs_mean"] > 0 else ""),
                advice=lazy(ADVICE), why=lazy("Every other stage waits for the slowest one in every micro-batch: its extra "
                                   "computation becomes bubble on all the others."),
                page=urls.OVERLAP_STAGES, stages=[worst["stage"]], evidence=ev,
                table=_table(rows, flops), impact=_impact(a, worst, excess, len(rows))), ctx.p))
    if len(flops) >= 2:
        top = max(flops.values(), key=lambda s: s["flops_m"])
        if top.get("vs_mean") is not None and top["vs_mean"] > ctx.t.flops_rel and top["stage"] != time_stage:
            out.append(Finding(
                id="stage-imbalance.flops", category="stage_imbalance", severity="info",
                title=lazy("Stage {stage} carries {pct} more FLOPs than the mean of stages ({flops} MFLOPs)",
                           stage=top["stage"], pct=fmt_pct(top["vs_mean"], 2), flops=f"{top['flops_m']:.4f}"),
                advice=lazy(ADVICE_FLOPS), why=lazy("Unequal work between stages turns into waiting once it shows in time."),
                page=urls.FLOPS, stages=[top["stage"]],
                evidence={"stage": top["stage"], "stage_flops_m": top["flops_m"], "percent": top["vs_mean"] * 100,
                          "mindinsight_key": "pipeline_parallel_flops", "threshold": ctx.t.flops_rel,
                          "time_imbalance_found": time_stage is not None},
                table=_table(rows, flops)))
    return out


IMPACT_BASIS = N_("every stage's computation brought to the balanced stage time (the mean of the {n} stages, "
                  "{balanced} per step; stage {stage} the longest): the pipeline runs at the pace of its slowest "
                  "stage, compared step by step before and after")


def _impact(a, worst: dict, excess: float, n: int) -> dict | None:
    """The longest stage's excess over the balanced stage time, saved by every stage since the pipeline runs at the
    pace of its slowest stage. Per step, each stage's computation is moved to the mean over stages (the same work
    split evenly; each rank keeps its own deviation from its stage) and the step's pace (the latest arrival of any
    rank: its computation, plus free time in the Ascend step trace) is compared before and after; without per-step
    data, the averaged excess."""
    saved = _rebalanced(a)
    balanced = worst["compute_ms"] - excess
    basis = lazy(IMPACT_BASIS, stage=worst["stage"], n=n, balanced=fmt_ms(balanced))
    ms = max(0.0, excess if saved is None else saved)
    imp = saved_by_ms(ms, a.steps, basis)
    if imp is None:  # no step trace (MindInsight overlap files only): the stages' own step time
        steps = [s["step_ms"] for s in a.overlap.stage_summary if s["step_ms"] and not math.isnan(s["step_ms"])]
        step = sum(steps) / len(steps) if steps else math.nan
        imp = Impact(ms, ms / step, basis) if step and not math.isnan(step) else None
    return imp.to_dict() if imp else None


def _rebalanced(a) -> float | None:
    """Per step, the pipeline's pace (the longest own time of any rank: its computation, and its free time in the
    Ascend step trace) minus the pace once every stage's
    computation is moved to the mean over stages (each rank keeping its deviation from its stage), averaged over the
    steps. None without per-step overlap data."""
    ov = a.overlap
    col = ov.compute_col
    ps = ov.per_step
    if ps is None or ps.empty or col not in ps.columns or not a.run.info.stage_of_rank:
        return None
    f = ps[["rank", "step"]].copy()
    f["work"] = ps[col]
    # Communication is left out: a stage's exposed communication is partly waiting for the other stages, and the
    # profilers do not always separate that wait (a Bubble column of zeros puts it in Communication), so counting it
    # would hide the imbalance behind its own consequence.
    own = ps[col].copy()
    if ov.view == "modern" and "free" in ps.columns:
        own = own + ps["free"].fillna(0.0)
    f["own"] = own
    f = f.dropna(subset=["work", "own"])
    f["step"] = f["step"].fillna(-1)
    f["stage"] = f["rank"].map(a.run.info.stage_of_rank)
    f = f.dropna(subset=["stage"])
    if f.empty or f["stage"].nunique() < 2:
        return None
    stage_mean = f.groupby(["step", "stage"])["work"].transform("mean")
    balanced = f.groupby(["step", "stage"])["work"].mean().groupby(level="step").mean()
    f["new"] = f["own"] - stage_mean + f["step"].map(balanced)
    per_step = f.groupby("step").agg(old=("own", "max"), new=("new", "max"))
    return float((per_step["old"] - per_step["new"]).clip(lower=0.0).mean())


def _table(rows: list[dict], flops: dict) -> dict:
    out = []
    for r in rows:
        f = flops.get(r["stage"], {})
        out.append([r["stage"], r["n_ranks"], round(r["compute_ms"], 4), fmt_pct(r["compute_vs_mean"]),
                    round(f["flops_m"], 4) if f else None,
                    fmt_pct(f["vs_mean"], 2) if f and f.get("vs_mean") is not None else "—"])
    return {"columns": [N_("Stage"), N_("Ranks"), N_("Computation (ms)"), N_("vs mean"), N_("Stage FLOPs (MFLOPs)"), N_("FLOPs vs mean")],
            "rows": out, "links": [None] * len(out)}


RULE = Rule(
    id="stage-imbalance", category="stage_imbalance", title=N_("Pipeline stage imbalance"),
    description=N_("""\
The mean computation per step of each stage's ranks is compared with the mean over stages (the balanced stage
time: the same work split evenly). The slowest stage is reported when it is at least `min_rel` above it. The
pipeline runs at the pace of its slowest stage, so the saving is that stage's excess over the balanced stage time,
per step. Severity follows the severity policy: the saving, and the fault floor for a stage `severity.stage_fault`
above the balanced time (at least a warning). Stage FLOPs (MindInsight: Σ FLOPs of the stage's ranks / ranks per stage) more
than `flops_rel` above the mean are shown with it, or reported as information when the time is balanced."""),
    params=Thresholds, check=check,
    source=N_("tuning guide, pipeline parallel step 2; MindInsight ParallelProposer pipeline_parallel_flops"))
