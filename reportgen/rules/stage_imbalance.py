"""Stage imbalance: pipeline stages carry unequal work, so fast stages wait for the slowest one.

Tuning guide, pipeline parallel step 2 (stage time; FLOPs per stage from the cluster FLOPs heatmap); MindInsight
ParallelProposer `pipeline_parallel_flops` (stage FLOPs more than 20 % above the mean of stages).
"""

from __future__ import annotations

from dataclasses import dataclass

import math

from reportgen import urls
from reportgen.analysis.impact import replace_excess
from reportgen.i18n import N_, lazy
from reportgen.rules.base import Context, Finding, Rule, th, fmt_ms, fmt_pct

@dataclass(frozen=True)
class Thresholds:
    min_rel: float = th(0.1, N_('the slowest stage computes at least this fraction more than the mean of stages'))
    min_share: float = th(0.05, N_('and the difference is at least this fraction of the step'))
    critical_share: float = th(0.25, N_('difference (fraction of the step) from which the finding is critical'))
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
        if rel >= ctx.t.min_rel and (math.isnan(share) or share >= ctx.t.min_share):
            time_stage = worst["stage"]
            sev = "critical" if not math.isnan(share) and share >= ctx.t.critical_share else "warning"
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
            out.append(Finding(
                id="stage-imbalance.compute", category="stage_imbalance", severity=sev,
                title=lazy("{main}{flops}", main=lazy(
                    "Stage {stage} computes {rel} more than the mean of stages ({value} vs {mean} per step)",
                    stage=worst["stage"], rel=fmt_pct(rel, 0), value=fmt_ms(worst["compute_ms"]), mean=fmt_ms(mean)),
                           flops=lazy("; its FLOPs are {pct} above the mean", pct=fmt_pct(fl["vs_mean"], 0))
                           if fl and fl.get("vs_mean") is not None and fl["vs_mean"] > 0 else ""),
                advice=lazy(ADVICE), why=lazy("Every other stage waits for the slowest one in every micro-batch: its extra "
                                   "computation becomes bubble on all the others."),
                page=urls.OVERLAP_STAGES, stages=[worst["stage"]], evidence=ev,
                table=_table(rows, flops), impact=_impact(a, worst)))
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


IMPACT_BASIS = N_("stage {stage}'s {column} set to the other stages' median in every step; the pipeline runs at "
                  "the pace of its slowest stage")


def _impact(a, worst: dict) -> dict | None:
    per_step = a.steps.per_step
    col = next((c for c in ("computing", "fp_and_bp") if c in per_step.columns), None)
    if col is None:
        return None
    ranks = [r for r in worst.get("ranks", ()) if r in a.run.rank_ids]
    imp = replace_excess(a.steps, col, ranks, None, lazy(IMPACT_BASIS, stage=worst["stage"], column=lazy(col)))
    return imp.to_dict() if imp else None


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
The mean computation per step of each stage's ranks is compared with the mean over stages. The slowest stage is
reported when it is at least `min_rel` above the mean and the difference is at least `min_share` of the step
(critical from `critical_share`). Stage FLOPs (MindInsight: Σ FLOPs of the stage's ranks / ranks per stage) more
than `flops_rel` above the mean are shown with it, or reported as information when the time is balanced."""),
    params=Thresholds, check=check,
    source=N_("tuning guide, pipeline parallel step 2; MindInsight ParallelProposer pipeline_parallel_flops"))
