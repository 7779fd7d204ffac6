"""Communication bound: communication not hidden by computation takes a large share of the step on all ranks.

Tuning guide: data parallel step 3 (all tails similar and long -> AllReduce fusion, `all_reduce_fusion_config`),
model parallel step 3 (pure communication long -> sharding strategy, redistribution), pipeline parallel step 2
(a stage's pure collective share). MindInsight ParallelProposer `*_communication_rate` and
`pipeline_parallel_within_stage` (threshold 10 %).
"""

from __future__ import annotations

from dataclasses import dataclass

import math

import pandas as pd

from reportgen import urls
from reportgen.analysis.impact import saved_by_ms
from reportgen.i18n import N_, lazy
from reportgen.rules.base import Context, Finding, Rule, fmt_ms, fmt_pct, gpu_run
from reportgen.rules.thresholds import th

@dataclass(frozen=True)
class Thresholds:
    info_rate: float = th(0.1, N_('share of the step from which it is reported as information (MindInsight '
                               "ParallelProposer's 10 %)"))
    warning_rate: float = th(0.2, N_('share of the step from which it is a warning'))
    critical_rate: float = th(0.4, N_('share of the step from which it is critical'))
    own_quantile: float = th(0.0, N_("severity is judged on this quantile of the ranks' shares (0: the rank that waits"
                                  ' least), so waiting for a straggler is not counted as communication; with one '
                                  'straggler among hundreds every other rank waits, so any quantile above 0 would '
                                  'count the waiting'))
    max_tail_spread: float = th(0.25, N_('data parallel without overlap data: tails count as similar when (max − min) '
                                      "/ median of the ranks' tails is below this"))


ADVICE_DP = N_("""\
Gradient all-reduce is not hidden behind the backward pass.
- MindSpore: tune the AllReduce fusion split (`all_reduce_fusion_config`, or `comm_fusion`) so that the first
  buckets start while backward is still running; torch: adjust DDP `bucket_cap_mb` and make sure
  `overlap_grad_reduce` / gradient-accumulation fusion is on.
- Larger micro-batches or gradient accumulation communicate less often per sample.""")

ADVICE_MP = N_("""\
Pure communication (only communication operators running) is high on every rank: operator sharding probably inserts
redistribution (tensor rearrangement) between operators whose strategies do not match.
- Look at a rank's timeline for the communication operators in the pure-communication segments and check why each
  was inserted; choose strategies so that consecutive operators share their split and no redistribution is needed.
- Prefer sharding where it does not insert communication; keep tensor parallelism inside a host (HCCS) and
  data / pipeline parallelism across hosts.""")

ADVICE_DP_GPU = N_("""\
Gradient all-reduce (or FSDP's all-gather / reduce-scatter) is not hidden behind the backward pass.
- DDP: tune `bucket_cap_mb` (smaller first buckets start while backward still runs), keep
  `gradient_as_bucket_view=True` and do not call `no_sync()` more than gradient accumulation needs; FSDP: turn on
  `backward_prefetch` / `forward_prefetch` and check the wrapping granularity.
- Check that NCCL uses the fast path: NVLink / NVSwitch inside a node, InfiniBand or RoCE with GPUDirect RDMA across
  nodes (`NCCL_DEBUG=INFO` prints the transports and rings); a TCP socket transport is an order of magnitude slower.
- Larger micro-batches or gradient accumulation communicate less often per sample.""")

ADVICE_MP_GPU = N_("""\
Communication that is not hidden by computation is high: tensor-, sequence- or expert-parallel collectives (and
pipeline send / receive) sit on the critical path.
- Keep tensor and expert parallelism inside a node (NVLink / NVSwitch) and data / pipeline parallelism across nodes.
- Overlap communication with computation where the framework offers it (Megatron `--overlap-grad-reduce`,
  `--overlap-param-gather`, `--tp-comm-overlap`; async all-to-all for experts) and check NCCL's transports with
  `NCCL_DEBUG=INFO`.
- Look at a rank's trace for the collectives that run alone and why they are there (redistribution of tensors
  between operators whose splits differ).""")

ADVICE_STAGE = N_("""\
Inside this pipeline stage, collective communication (excluding the receive from other stages) is not hidden by
computation: operator sharding within the stage probably inserts redistribution. Apply the model-parallel analysis
(pure communication segments in the stage's timeline) to the stage's ranks.""")


def _stage_times(ov) -> dict[int, float]:
    """Mean stage time per stage: the profiler's stage column when present, else computation + communication."""
    out = {}
    for s in ov.stage_summary:
        sel = ov.per_rank.loc[[r for r in s["ranks"] if r in ov.per_rank.index]]
        if "stage" in sel and sel["stage"].notna().any() and float(sel["stage"].mean()) > 0:
            out[int(s["stage"])] = float(sel["stage"].mean())
        elif not math.isnan(s["step_ms"]):
            out[int(s["stage"])] = float(s["step_ms"])
    return out


def _own_stage_share(ov, stage: int, q: float):
    """Low quantile of the stage's ranks' own pure-collective shares (the ranks that wait least)."""
    s = next((x for x in ov.stage_summary if x["stage"] == stage), None)
    if s is None:
        return None
    sel = ov.per_rank.loc[[r for r in s["ranks"] if r in ov.per_rank.index]]
    if ov.view == "modern":
        share = sel["communication_not_overlapped_exclude_receive"] / sel["total"]
    elif "collective_alone" in sel:
        share = sel["collective_alone"] / (sel["computation"] + sel["communication_alone"])
    else:
        return None
    share = share.dropna()
    return float(share.quantile(q)) if len(share) else None


IMPACT_BASIS = N_("the exposed communication of the rank that waits least in each step ({ms} per step: its "
                   "communication not hidden by computation, waiting for other stages left out) hidden behind "
                   "computation or removed (fusion, fewer redistributions); an upper bound, as the last collective of "
                   "a step can rarely be hidden{room}")


def own_exposed(a, ranks=None) -> "pd.Series | None":
    """Per step, the exposed communication (ms) of the rank that waits least: the communication that is not
    waiting for a slower rank (in a synchronous collective the last rank to arrive does not wait), the pipeline
    bubble left out. Computed per step, so a stall that moves from rank to rank is not mistaken for communication."""
    st = a.steps
    ps = st.per_step if st.kind else None
    ov = a.overlap.per_step if a.overlap.view in ("model", "pipeline") else None
    alone = "collective_alone" if a.overlap.view == "pipeline" else "communication_alone"  # pipeline: receives left out
    if ps is not None and "communication_not_overlapped" in ps.columns:
        f = ps
        v = f["communication_not_overlapped"] - (f["bubble"].fillna(0.0) if "bubble" in f.columns else 0.0)
    elif ov is not None and alone in ov.columns:
        f, v = ov, ov[alone]
    else:
        return None
    f = f.assign(v=v.clip(lower=0.0), step=f["step"].fillna(-1))
    if ranks is not None:
        f = f[f["rank"].isin(set(ranks))]
    f = f.dropna(subset=["v"])
    return f.groupby("step")["v"].min() if len(f) else None


def comm_impact(a, ranks=None):
    """What hiding (or removing) the exposed communication would save (`IMPACT_BASIS`); the basis says how much
    computation there is left to hide it behind, when that is less."""
    own = own_exposed(a, ranks)
    if own is None or own.empty:
        return None
    ps = a.steps.per_step if a.steps.kind else None
    ms = float(own.mean())
    room = ""
    if ps is not None and "computing" in ps.columns:
        left = float((ps["computing"] - (ps["overlapped"].fillna(0.0) if "overlapped" in ps.columns
                                          else 0.0)).median())
        if 0 <= left < ms:
            room = lazy(N_("; computation could hide at most {ms} of it: the rest has to go"), ms=fmt_ms(left))
    imp = saved_by_ms(ms, a.steps, lazy(IMPACT_BASIS, ms=fmt_ms(ms), room=room))
    return imp.to_dict() if imp else None


def _severity(rate: float, ctx: Context) -> str | None:
    if rate is None or math.isnan(rate) or rate < ctx.t.info_rate:
        return None
    if rate >= ctx.t.critical_rate:
        return "critical"
    return "warning" if rate >= ctx.t.warning_rate else "info"


def _top_ops(a, n: int = 3) -> tuple[str, list[dict]]:
    """The communication operators behind the rate: the longest ones (mean time per step over the ranks)."""
    ops = getattr(a.comm, "ops", None)
    if not getattr(a.comm, "has_data", False) or ops is None or not len(ops) or "mean_ms" not in ops:
        return "", []
    top = ops.dropna(subset=["mean_ms"]).sort_values("mean_ms", ascending=False, kind="stable").head(n)
    total = float(ops["mean_ms"].sum())
    rows = [{"op": str(r.op), "group": str(r.group), "mean_ms": float(r.mean_ms)} for r in top.itertuples()]
    if not rows or total <= 0:
        return "", []
    names = ", ".join(f"{r['op']} ({r['mean_ms']:.1f} ms)" for r in rows)
    return lazy("; mostly {names} of {n} operator(s), {total} ms per step in all", names=names, n=len(ops),
                total=f"{total:.1f}"), rows


def _overall(ctx: Context) -> list[Finding]:
    """Model / data parallel (or the Ascend layout without stages): the rate over all ranks."""
    a = ctx.a
    ov = a.overlap
    rates = ov.rates or {}
    out: list[Finding] = []
    mode = a.run.info.parallel_mode
    if ov.view in ("model", "modern") and rates.get("communication_rate") is not None and \
            not (ov.view == "modern" and len(ov.stages) > 1):
        rate = float(rates["communication_rate"])
        shares = ov.per_rank["comm_share"].dropna()
        # Judge on the ranks that wait least (low quantile): waiting for a straggler is the slow rank's cost, not
        # the communication's. MindInsight's rate over all ranks is the reported value. With `own_quantile` 0 it
        # is judged step by step (a straggler that changes from step to step makes every rank wait sometimes).
        own = min(rate, float(shares.quantile(ctx.t.own_quantile))) if len(shares) else rate
        per_step_own = own_exposed(a)
        step_ref = a.steps.stats["total"].median if "total" in a.steps.stats else math.nan
        if ctx.t.own_quantile == 0 and per_step_own is not None and len(per_step_own) and step_ref > 0:
            own = min(own, float(per_step_own.mean()) / step_ref)
        sev = _severity(rate, ctx)
        if sev:
            sev = _severity(own, ctx) or "info"
            dp = mode == "data-parallel"
            col = "communication_alone" if ov.view == "model" else "communication_not_overlapped"
            waiting = own < ctx.t.info_rate or (rate - own) >= 0.5 * rate
            out.append(Finding(
                id="communication-bound.rate", category="communication_bound", severity=sev,
                title=lazy("{main}{least}{ops}", main=lazy(
                    "Communication not hidden by computation takes {rate} of the step over all ranks (ranks from "
                    "{lo} to {hi})", rate=fmt_pct(rate), lo=fmt_pct(float(shares.min())),
                    hi=fmt_pct(float(shares.max()))),
                           least=lazy("; the ranks that wait least show {own}: the rest is waiting for slower ranks",
                                      own=fmt_pct(own)) if rate - own >= 0.05 or waiting else "",
                           ops=_top_ops(a)[0]),
                advice=lazy((ADVICE_DP_GPU if dp else ADVICE_MP_GPU) if gpu_run(a) else (ADVICE_DP if dp else ADVICE_MP)),
                why=lazy("Communication that runs while no computation does adds straight to the step time on every "
                    "rank."),
                page=urls.OVERLAP_RATES,
                evidence={"rate": rate, "threshold_info": ctx.t.info_rate,
                          "mindinsight_key": "data_parallel_communication_rate" if dp
                          else "model_parallel_communication_rate",
                          "definition": rates.get("definition", ""), "column": col,
                          "min_rank_share": float(shares.min()), "max_rank_share": float(shares.max()),
                          "judged_rate": own, "top_operators": _top_ops(a)[1]},
                impact=comm_impact(a)))
    return out


def _within_stage(ctx: Context) -> list[Finding]:
    """Pipeline: the pure collective share of the longest stage (a fast stage's share is mostly waiting)."""
    ov = ctx.a.overlap
    rates = ov.rates or {}
    out: list[Finding] = []
    within = rates.get("within_stage_rate") or {}
    if len(ov.stages) > 1 and within:
        vals = {int(s): float(v) for s, v in within.items() if v is not None and not math.isnan(float(v))}
        times = _stage_times(ov)
        # The guide: look at the pure collective share of the *long* stage. A fast stage's collectives are mostly
        # waiting for the slow one, so its rate is shown but not judged.
        longest = max(times, key=times.get) if times else None
        mi_worst = max(vals, key=vals.get) if vals else None
        if longest is not None and longest in vals and _severity(vals[longest], ctx):
            rate = vals[longest]
            own = _own_stage_share(ov, longest, ctx.t.own_quantile)
            judged = min(rate, own) if own is not None else rate
            # step by step too (the rank that waits least in each step): a stall that moves from rank to rank within
            # the stage is waiting, not communication (the saving's own measure, `own_exposed`)
            members = next((x["ranks"] for x in ov.stage_summary if x["stage"] == longest), None)
            per_step = own_exposed(ctx.a, members)
            if per_step is not None and len(per_step) and times.get(longest):
                judged = min(judged, float(per_step.mean()) / times[longest])
            others = sorted(s for s, v in vals.items() if s != longest and _severity(v, ctx))
            out.append(Finding(
                id="communication-bound.within-stage", category="communication_bound",
                severity=_severity(judged, ctx) or "info",
                title=lazy("{main}{least}", main=lazy(
                    "Stage {stage}, the longest stage: collective communication not hidden by computation takes "
                    "{rate} of its step", stage=longest, rate=fmt_pct(rate)),
                           least=lazy("; its ranks that wait least show {own}: the rest is waiting for slower ranks",
                                      own=fmt_pct(judged)) if rate - judged >= 0.05 else ""),
                advice=lazy(ADVICE_STAGE), why=lazy("The whole pipeline runs at the pace of its longest stage; communication "
                                         "inside it lengthens every step."),
                page=urls.OVERLAP_STAGES, stages=[longest], ranks=[],
                evidence={"rate": rate, "stage": longest, "per_stage": vals, "stage_time_ms": times,
                          "mindinsight_key": "pipeline_parallel_within_stage",
                          "mindinsight_stage": mi_worst, "mindinsight_rate": vals.get(mi_worst),
                          "other_stages_above_info_rate": others, "threshold_info": ctx.t.info_rate,
                          "judged_rate": judged},
                impact=comm_impact(ctx.a, next((x["ranks"] for x in ov.stage_summary if x["stage"] == longest),
                                               None)),
                table={"columns": [N_("Stage"), N_("Stage time (ms)"), N_("Pure collective / step")],
                       "rows": [[s, round(times[s], 4) if s in times else None, fmt_pct(v, 2)]
                                for s, v in sorted(vals.items())],
                       "links": [None] * len(vals)}))
        elif mi_worst is not None and _severity(vals[mi_worst], ctx):
            out.append(Finding(
                id="communication-bound.within-stage", category="communication_bound", severity="info",
                title=lazy("Stage {stage}: collective communication not hidden by computation takes {rate} of its "
                           "step, but it is not the longest stage (mostly waiting)", stage=mi_worst,
                           rate=fmt_pct(vals[mi_worst])),
                advice=lazy(ADVICE_STAGE), why=lazy("A stage that is not the longest waits in its collectives for the others; "
                                         "the share is a symptom rather than the cause."),
                page=urls.OVERLAP_STAGES, stages=[mi_worst], ranks=[],
                evidence={"rate": vals[mi_worst], "stage": mi_worst, "per_stage": vals, "stage_time_ms": times,
                          "mindinsight_key": "pipeline_parallel_within_stage"}))
    return out


def _tail(ctx: Context) -> list[Finding]:
    """Data parallel without overlap files: every rank's tail long and similar."""
    ov, st = ctx.a.overlap, ctx.a.steps
    out: list[Finding] = []
    if ov.view == "none" and st.kind == "legacy" and "tail" in st.stats and "total" in st.stats:
        tail = st.average["tail"].dropna()
        med_tail, med_total = float(tail.median()), st.stats["total"].median
        share = med_tail / med_total if med_total else math.nan
        spread = float((tail.max() - tail.min()) / med_tail) if med_tail > 0 else math.inf
        sev = _severity(share, ctx)
        if sev and spread <= ctx.t.max_tail_spread:
            out.append(Finding(
                id="communication-bound.tail", category="communication_bound", severity=sev,
                title=lazy("Every rank's tail is long and similar: {share} of the step (median {median} ms, "
                           "spread {spread})", share=fmt_pct(share), median=f"{med_tail:.2f}",
                           spread=fmt_pct(spread, 0)),
                advice=lazy(ADVICE_DP),
                why=lazy("In data parallel the tail holds the gradient AllReduce; when it is long on every rank alike, "
                    "no slow rank causes it: the AllReduce itself is exposed."),
                page=urls.page(urls.STEP_TRACE),
                # the severity policy: what hiding the exposed AllReduce saves (an upper bound)
                impact=(lambda i: i.to_dict() if i else None)(saved_by_ms(med_tail, st, lazy(N_(
                    "every rank's tail (the exposed gradient AllReduce) hidden behind computation: an upper bound")))),
                evidence={"tail_share": share, "median_tail_ms": med_tail,
                                                          "median_step_ms": med_total, "tail_spread": spread}))
    return out


def lone_rank(run) -> bool:
    """One rank of a larger job profiled alone (the world size in its metadata is larger than one)."""
    return len(run.rank_ids) == 1 and (run.info.rank_size or 1) > 1


def _lone(ctx: Context) -> list[Finding]:
    """One rank of a larger job: its own exposed communication, judged as it is (its waiting for the other ranks
    cannot be told apart without their traces), at most a warning."""
    a = ctx.a
    ov = a.overlap
    rate = (ov.rates or {}).get("communication_rate")
    r = a.run.rank_ids[0]
    if ov.view not in ("model", "modern") or rate is None or math.isnan(float(rate)):
        return []
    rate = float(rate)
    sev = _severity(rate, ctx)
    if not sev:
        return []
    dp = a.run.info.parallel_mode == "data-parallel"
    return [Finding(
        id="communication-bound.rate", category="communication_bound",
        severity="warning" if sev == "critical" else sev,
        title=lazy("{main}{ops}", main=lazy(
            "Communication not hidden by computation takes {rate} of the step on rank {rank}, profiled alone (one "
            "of {world} ranks): part of it may be waiting for the other ranks, which its trace cannot tell apart",
            rate=fmt_pct(rate), rank=r, world=a.run.info.rank_size), ops=_top_ops(a)[0]),
        advice=lazy((ADVICE_DP_GPU if dp else ADVICE_MP_GPU) if gpu_run(a) else (ADVICE_DP if dp else ADVICE_MP)),
        why=lazy("Communication that runs while no computation does adds straight to the step time on every "
                 "rank."),
        page=urls.OVERLAP_RATES, ranks=[r],
        evidence={"rate": rate, "threshold_info": ctx.t.info_rate, "lone_rank": True,
                  "world_size": a.run.info.rank_size, "definition": (ov.rates or {}).get("definition", ""),
                  "judged_rate": rate, "severity_capped": sev == "critical", "top_operators": _top_ops(a)[1]},
        impact=comm_impact(a))]


def check(ctx: Context) -> list[Finding]:
    if lone_rank(ctx.a.run):
        return _lone(ctx)
    if len(ctx.a.run.rank_ids) < 2:
        return []
    return [*_overall(ctx), *_within_stage(ctx), *_tail(ctx)]


RULE = Rule(
    id="communication-bound", category="communication_bound", title=N_("Communication not hidden by computation"),
    description=N_("""\
MindInsight ParallelProposer's rates from the averaged step of every rank: Σ pure communication / Σ (computation +
pure communication) (model or data parallel; for the Ascend layout Σ Communication (not overlapped) / Σ step),
judged on the `own_quantile` quantile of the ranks' own shares (waiting for a straggler is the straggler's cost),
and
per pipeline stage Σ pure collective (excluding receive) / Σ (computation + pure communication). A data-parallel
MindInsight run without overlap files uses the tail: long on every rank and similar across ranks (spread under
`max_tail_spread`). Severity: information from `info_rate` (MindInsight's 10 %), warning from `warning_rate`,
critical from `critical_rate`."""),
    params=Thresholds, check=check,
    source=N_("tuning guide, data parallel step 3, model parallel step 3, pipeline parallel step 2; MindInsight "
           "ParallelProposer"))
