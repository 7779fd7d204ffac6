"""Late arrival (culprit vs victim): in a collective the late rank waits least; its peers' long waits point at it.

Tuning guide, model parallel step 4 ("long wait -> there is a slow node"); MindInsight's communication graph (a
node with a short wait may be the slow node); msprof-analyze's slow_rank recipe votes for the rank with the
shortest operator in each collective.
"""

from __future__ import annotations

from dataclasses import dataclass

import math

from reportgen import urls
from reportgen.analysis.arrival import arrivals, late_ranks, pseudo_group_text
from reportgen.analysis.impact import ARRIVAL, replace_excess, saved_by_ms
from reportgen.i18n import N_, lazy
from reportgen.rules.base import Context, Finding, Rule, fmt_ms, ranks_msg
from reportgen.rules.thresholds import th
from reportgen.rules.slow_rank import slow_table
from reportgen.analysis.stats import peer_median, standouts, step_reference

# evidence["basis"]: English in summary.json, translated on the pages
BASIS = {"start times": N_("arrival at matched collectives (start times)"),
         "elapsed times": N_("arrival at matched collectives (elapsed times)")}

@dataclass(frozen=True)
class Thresholds:
    z: float = th(3.5, N_("robust z-score below the group's median wait, in a step"))
    min_rel: float = th(0.5, N_('and waiting at least this fraction less than the median wait'))
    min_abs_ms: float = th(1.0, N_('and at least this many ms less'))
    min_share: float = th(0.05, N_('and the difference at least this fraction of the median step time'))
    persistence: float = th(0.5, N_('fraction of its steps in which the rank must wait least'))
    elapse_share: float = th(0.5, N_("and its whole communication time must be shorter than the peers' median by at "
                                  'least this fraction of the wait difference (else the wait went into transfer: a '
                                  'slow link, not a late rank)'))


ADVICE = N_("""\
The ranks that wait least in collectives arrive last: the others wait for them. Treat them as the slow nodes:
- open their pages and compare computation, data waiting (step interval) and free time with a peer's;
- the waiting ranks are victims: their long wait disappears once the late rank is fixed.
Wait time can only be compared within a communication group; ranks of different pipeline stages are compared
separately.""")


# the step-trace phase that holds a rank's own work, by step-trace kind
WORK_PHASES = ("computing", "fp_and_bp")


def _why_late(a, rank: int, stage_of) -> "tuple[str, dict] | None":
    """What the late rank does longer than its peers (from the step breakdown): its computation, when longer."""
    ps = a.steps.per_step if a.steps.kind else None
    col = next((c for c in WORK_PHASES if ps is not None and c in ps.columns), None)
    if col is None:
        return None
    mean = ps.groupby("rank")[col].mean().dropna()
    if rank not in mean.index or len(mean) < 2:
        return None
    med = float(peer_median(mean, stage_of).get(rank, float("nan")))
    others = mean.drop(index=rank)
    if stage_of:
        others = others[[stage_of.get(int(r), 0) == stage_of.get(rank, 0) for r in others.index]]
    peer = float(others.median()) if len(others) else med
    own = float(mean[rank])
    if not own > peer * 1.05:  # a few per cent more is noise, not the reason it is late
        return None
    text = (N_("it computes {own} per step against {peer} on its peers") if col == "computing" else
            N_("it spends in forward and backward {own} per step against {peer} on its peers"))
    return (lazy(text, own=fmt_ms(own), peer=fmt_ms(peer)),
            {"work_phase": col, "work_ms": own, "peers_median_work_ms": peer})


IMPACT_ARRIVAL = N_("the late ranks ({ranks}) arriving at each collective they were last at with the next latest "
                    "rank: those collectives start earlier by as much ({ms} per step)")
IMPACT_BASIS = N_("the late ranks ({ranks}) arriving with their peers: their {phases} set to the peers' median "
                  "in every step; the others' waits shrink by as much")
AND = N_("{first} and {second}")


def _impact(a, ranks, stage_of):
    if a.steps.kind not in ARRIVAL:
        return None
    ref = None
    if stage_of:
        stages = {stage_of.get(r) for r in ranks}
        ref = [r for r in a.run.rank_ids if stage_of.get(r) in stages]
    imp = replace_excess(a.steps, ARRIVAL[a.steps.kind], ranks, ref, lazy(
        IMPACT_BASIS, ranks=", ".join(str(r) for r in ranks[:8]) + (" …" if len(ranks) > 8 else ""),
        phases=lazy(AND, first=lazy(ARRIVAL[a.steps.kind][0]), second=lazy(ARRIVAL[a.steps.kind][1]))), scope=ref)
    return imp.to_dict() if imp else None


def _from_arrivals(ctx: Context) -> list[Finding]:
    """Matched collective instances with their start times (Kineto): the rank that reaches them last."""
    a = ctx.a
    waits = getattr(a, "waits", None)
    arr = waits.arrivals if waits is not None and waits.arrivals is not None else arrivals(a.run)
    if arr is None:
        return []
    step_ms = a.steps.stats["total"].median if a.steps.kind and "total" in a.steps.stats else math.nan
    n_steps = int(arr.instances["step"].nunique())
    found = late_ranks(arr, n_steps, ctx.t.min_abs_ms, ctx.t.min_share, step_ms, ctx.t.persistence)
    if not found:
        return []
    stage_of = a.run.info.stage_of_rank if a.run.info.stages > 1 else None
    ranks = [x.rank for x in found]
    w = found[0]
    title = lazy(N_("{ranks} arrives last at collectives: it reaches {op} of step {step} {late} after the first rank "
                    "(rank {first}); the median peer waits {cost} per step for it"),
                 ranks=ranks_msg([w.rank], capital=True), op=w.worst_op, step=w.worst_step, late=fmt_ms(w.worst_ms),
                 first=w.first_rank, cost=fmt_ms(w.cost_ms))
    if len(found) > 1:
        title = lazy("{title}; also {others}", title=title, others=ranks_msg(ranks[1:]))
    who = waits.culprit(w.rank) if waits is not None else None
    if who is not None:  # the wait-for matrix (analysis.waits): what each peer loses per step waiting for it
        g, c = who
        title = lazy(N_("{title}; the other ranks of its group wait {ms} per step for it, most at {op}"),
                     title=title, ms=fmt_ms(c.per_waiter_ms), op=c.op)
    matrix = _matrix_evidence(waits, found) if waits is not None else {}
    why_late = _why_late(a, w.rank, stage_of)
    if why_late:
        title = lazy("{title}; {why_late}", title=title, why_late=why_late[0])
    inst = arr.instances
    top = inst[inst["last_rank"].isin(ranks)].sort_values("spread_ms", ascending=False).head(20)
    return [Finding(
        id="late-arrival.culprit", category="slow_rank", severity="warning", title=title, advice=lazy(ADVICE),
        why=lazy("Every rank of a collective waits for its last member; the time the others spend waiting is lost "
                 "on all of them."),
        page=urls.comm_rank_row(w.rank), ranks=ranks, phase="communication",
        evidence={"basis": BASIS.get(arr.basis, arr.basis), "late_ms": w.worst_ms,
                  "late_op": w.worst_op, "late_step": w.worst_step, "first_rank": w.first_rank,
                  "cost_per_step_ms": w.cost_ms, "saving_per_step_ms": w.saving_ms, "last_in": w.last_in, "significant_instances": w.significant,
                  "per_rank": {str(x.rank): {"cost_per_step_ms": x.cost_ms, "last_in": x.last_in,
                                             "late_ms": x.worst_ms} for x in found},
                  "waited_for_per_peer_ms": matrix.get(str(w.rank), {}).get("waited_for_per_peer_ms"),
                  "waited_for": matrix,
                  **(why_late[1] if why_late else {})},
        table={"columns": [N_("Step"), N_("Collective"), N_("Group"), N_("Last to arrive"), N_("First to arrive"),
                           N_("Last − first (ms)"), N_("Last − median (ms)")],
               "rows": [[None if r.step != r.step else r.step, r.op, pseudo_group_text(str(r.group)) or str(r.group), r.last_rank, r.first_rank,
                         round(r.spread_ms, 4), round(r.last_behind_median_ms, 4)] for r in top.itertuples()],
               "links": [None] * len(top)},
        impact=_arrival_impact(a, found))]


def _matrix_evidence(waits, found) -> dict:
    """Per named rank, from the wait-for matrix: what each other rank of its group waits for it per step, by whom,
    at which collective."""
    out = {}
    for x in found:
        who = waits.culprit(x.rank)
        if who is None:
            continue
        g, c = who
        out[str(x.rank)] = {"group": g.group, "waited_for_per_peer_ms": c.per_waiter_ms,
                            "waited_for_total_ms": c.total_ms, "saving_per_step_ms": c.saving_ms,
                            "waiters": {str(r): ms for r, ms in c.waiters}, "collective": c.op}
    return out


def _arrival_impact(a, found):
    ms = sum(x.saving_ms for x in found)
    imp = saved_by_ms(ms, a.steps, lazy(IMPACT_ARRIVAL, ranks=", ".join(str(x.rank) for x in found[:8]),
                                        ms=fmt_ms(ms)))
    return imp.to_dict() if imp else None


def check(ctx: Context) -> list[Finding]:
    arrived = _from_arrivals(ctx)
    if arrived:
        return arrived
    a = ctx.a
    ca = a.comm
    if not ca.has_data or ca.per_rank_step.empty or "wait_ms" not in ca.per_rank_step.columns:
        return []
    ref = step_reference(a.steps.per_step) if a.steps.kind else None
    stage_of = a.run.info.stage_of_rank if a.run.info.stages > 1 else None
    found = standouts(ca.per_rank_step, "wait_ms", groups=stage_of, step_ms=ref, z=ctx.t.z,
                      min_rel=ctx.t.min_rel, min_abs_ms=ctx.t.min_abs_ms, min_share=ctx.t.min_share,
                      persistence=ctx.t.persistence, high=False)
    # A late rank also spends less time in communication as a whole (it arrives later, leaves with the others);
    # a rank whose own link is the slow hop of a ring waits less too, but its transfer takes the difference.
    if found and "communication_ms" in ca.per_rank_step.columns:
        comm = ca.per_rank_step.groupby("rank")["communication_ms"].mean()
        med = peer_median(comm, stage_of)
        found = [s for s in found if s.rank in comm.index
                 and med[s.rank] - comm[s.rank] >= ctx.t.elapse_share * s.excess_ms]
    if not found:
        return []
    ranks = [s.rank for s in found]
    w = found[0]
    n = len(found)
    title = lazy(N_("{ranks} arrive last at collectives: they wait {wait} per step while peers wait {peers}") if n > 1
                 else N_("{ranks} arrives last at collectives: it waits {wait} per step while peers wait {peers}"),
                 ranks=ranks_msg(ranks, capital=True), wait=fmt_ms(w.value_ms), peers=fmt_ms(w.median_ms))
    why_late = _why_late(a, w.rank, stage_of)
    if why_late:
        title = lazy("{title}; {why_late}", title=title, why_late=why_late[0])
    imp = _impact(a, ranks, stage_of)
    return [Finding(
        id="late-arrival.culprit", category="slow_rank", severity="warning", title=title, advice=lazy(ADVICE),
        why=lazy("Every rank of a collective waits for its last member; the time the others spend waiting is lost "
                 "on all of them."),
        page=urls.comm_rank_row(w.rank), ranks=ranks, phase="communication",
        evidence={"wait_ms": w.value_ms, "peers_median_wait_ms": w.median_ms, "difference_ms": w.excess_ms,
                  "difference_share_of_step": w.share, "steps_waiting_least": w.steps_out, "steps": w.steps_total,
                  **(why_late[1] if why_late else {})},
        table=slow_table(a, found, "Wait", stage_of is not None, diff="Waits less by"),
        impact=imp)]


RULE = Rule(
    id="late-arrival", category="slow_rank", title=N_("Late arrival at collectives (culprit vs victims)"),
    description=N_("""\
Communication wait time per rank and step (from the communication files) is compared within each pipeline stage.
A rank that waits **less** than its peers by more than `z` robust standard deviations, `min_rel` of the median
wait, `min_abs_ms` and `min_share` of the step, in at least `persistence` of its steps, arrives last: its peers
wait for it. Where every rank's collectives are matched with their start times (Kineto traces, Ascend
communication.json and its databases, msprof timelines, MindInsight and MindSpore GPU step traces), the arrival is
read directly: a rank that reaches at least `persistence` of the collectives whose spread (last − first arrival) is
at least `min_abs_ms` and `min_share` of the step last, in at least `persistence` of the steps, and costs the median
peer as much per step, is named, with the instance it was latest at, that cost and, from the wait-for matrix (who
waits for whom), what each other rank of its group waits for it per step, by whom and at which collective. Severity:
warning at most (the saving decides between warning and information)."""),
    params=Thresholds, check=check,
    source=N_("tuning guide, model parallel step 4; MindInsight communication graph; msprof-analyze slow_rank recipe"))
