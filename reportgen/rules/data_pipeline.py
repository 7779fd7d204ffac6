"""Data pipeline: the host / chip data queues run dry, and which dataset operator holds them back.

Tuning guide, single device, step interval long (non-sink and sink mode steps); MindInsight MinddataProposer
(host queue empty in more than 30 % of steps -> data processing; else chip queue empty -> data transmission) and
MinddataPipelineProposer (queue usage 0.8 / 0.6, per-operator advice).
"""

from __future__ import annotations

from dataclasses import dataclass

import math

from reportgen import urls
from reportgen.analysis.impact import Impact, replace_excess, saved_by_ms
from reportgen.i18n import N_, lazy
from reportgen.rules import policy
from reportgen.rules.base import Context, Finding, Rule, fmt_ms, fmt_pct, md_literal, ranks_msg
from reportgen.rules.thresholds import th

@dataclass(frozen=True)
class Thresholds:
    host_empty_rate: float = th(0.3, N_('host queue empty in more than this fraction of the steps -> data processing '
                                     "is the bottleneck (MindInsight's 30 %)"))
    min_interval_ms: float = th(0.5, N_("the rank's step interval from which a dry queue is a warning (below it it is "
                                     'information; without a step interval it is a warning)'))
    min_share: float = th(0.05, N_('and the fraction of the step the interval must reach'))


OP_ADVICE = {
    "MapOp": N_("**{name}** (map) cannot keep up: raise its `num_parallel_workers`, simplify or vectorise its Python "
             "transforms (or use C++ transforms), and check that the host has CPU to spare."),
    "GeneratorOp": N_("**{name}** (generator) is slow: raise `num_parallel_workers` (with `python_multiprocessing`) or "
                   "convert the data to MindRecord and read it with `MindDataset`."),
    "BatchOp": N_("**{name}** (batch) is the limit: raise `prefetch_size` (`ds.config.set_prefetch_size`) and its "
               "`num_parallel_workers`; a per-batch map inside batch is often the slow part."),
    "source": N_("The source operators ({name}) read too slowly: raise their `num_parallel_workers`, use MindRecord, "
              "cache the dataset, or read from faster storage."),
    "other": N_("**{name}** is the slowest operator of the pipeline: raise its `num_parallel_workers`."),
}

ADVICE_PROCESS = N_("""\
The host queue is empty at most steps: data processing does not keep up with training (tuning guide, step 2 of
both modes). Find the slow operator in the rank's pipeline table (input queue full, output queue empty) and speed it
up; raising `num_parallel_workers`, MindRecord and caching are the usual levers.""")

ADVICE_TRANSMISSION = N_("""\
The host queue is fed but the chip-side queue runs dry: sending data from host to device is the limit. Check for
custom per-batch work in the training script between the dataset iterator and the network (time it); if there is
none, report it to the framework with this profile.""")


def _op_names(a, rank: int, ids: list[int]) -> tuple[str, str]:
    dp = a.run.ranks[rank].dataprep
    if dp is None or dp.ops is None or not len(dp.ops):
        return "", "other"
    by = {int(r.op_id): str(r.op_type) for r in dp.ops.itertuples()}
    names = [f"{md_literal(by.get(i, '?'))} (id {i})" for i in ids]
    types = {by.get(i, "") for i in ids}
    kind = next((t for t in ("MapOp", "GeneratorOp", "BatchOp") if t in types), "other")
    return ", ".join(names), kind


def check(ctx: Context) -> list[Finding]:
    a = ctx.a
    res = a.resources
    st = a.steps
    groups: dict[str, list[int]] = {}
    rates: dict[int, float] = {}
    for r, q in sorted(res.queues.items()):
        verdict = q.reading(ctx.t.host_empty_rate)
        if verdict in ("data_process", "data_transmission"):
            groups.setdefault(verdict, []).append(r)
            rates[r] = q.host_empty / q.host_total if q.host_total else math.nan
    out = []
    ii = st.average["iteration_interval"] if st.kind == "legacy" and "iteration_interval" in st.average else None
    tot = st.average["total"] if st.kind and "total" in st.average else None
    for verdict, ranks in groups.items():
        costly, known = [], []
        for r in ranks:
            if ii is not None and r in ii.index and tot is not None and not math.isnan(ii[r]):
                known.append(r)
                if ii[r] >= ctx.t.min_interval_ms and ii[r] >= ctx.t.min_share * tot[r]:
                    costly.append(r)
            else:
                costly.append(r)  # no step interval to weigh it with: the dry queue is the evidence
        sev = "critical" if costly else "info"  # the policy decides from the saving
        worst = max(ranks, key=lambda r: (r in costly, rates.get(r, 0)))
        q = res.queues[worst]
        ids, kind = res.bottlenecks.get(worst, ([], ""))
        names, op_kind = _op_names(a, worst, ids)
        op_line = ""
        if names and kind in ("operator", "queue_drop"):
            op_line = lazy(OP_ADVICE[op_kind], name=names)
        elif names and kind == "source":
            source_advice = OP_ADVICE["source"]
            op_line = lazy(source_advice, name=names)
        cpu = res.cpu.get(worst)
        if verdict == "data_process":
            title = lazy("{ranks}: the host data queue is empty in {empty} of {total} steps ({rate}); data "
                         "processing does not keep up", ranks=ranks_msg(ranks, capital=True), empty=q.host_empty,
                         total=q.host_total, rate=fmt_pct(rates[worst], 0))
            advice = lazy("{advice}{op}", advice=lazy(ADVICE_PROCESS), op=lazy("\n\n{line}", line=op_line)
                          if op_line else "")
        else:
            title = lazy("{ranks}: the chip-side data queue ran dry in {empty} of {total} batches while the host "
                         "queue was fed; host-to-device transfer is the limit", ranks=ranks_msg(ranks, capital=True),
                         empty=q.device_empty, total=q.device_total)
            advice = lazy(ADVICE_TRANSMISSION)
        if sev == "info":
            title = lazy("{title} (the step interval stays small)", title=title)
        ev = {"verdict": verdict, "rank": worst, "host_queue_empty": q.host_empty, "host_queue_steps": q.host_total,
              "host_empty_rate": rates.get(worst), "chip_queue_empty": q.device_empty,
              "chip_queue_batches": q.device_total, "bottleneck_operator": names or None,
              "bottleneck_kind": kind or None, "ranks_costing_time": costly}
        if ii is not None and worst in ii.index:
            ev["step_interval_ms"] = float(ii[worst])
        if cpu is not None and cpu.busy is not None:
            ev["host_cpu_busy_pct"] = cpu.busy
        rows = []
        for r in ranks[:50]:
            qq = res.queues[r]
            rows.append([r, f"{qq.host_empty} / {qq.host_total}", f"{qq.device_empty} / {qq.device_total}",
                         fmt_ms(float(ii[r])) if ii is not None and r in ii.index else "—"])
        imp = _impact(a, costly, known, ctx.t)
        if imp is not None and sev == "critical" and (not [r for r in costly if r in known]
                                                      or imp.basis.msgid == IMPACT_ALL):
            sev = "warning"  # an upper bound (the iterator's whole wait) proposes a warning at most
        # the policy's fault floor: a dry rank waiting for data several times as long as the other ranks
        fault = None
        if ii is not None and len(ii.dropna()) > len(ranks):
            peers = float(ii.drop(index=[r for r in ranks if r in ii.index]).median())
            waits = [(float(ii[r]), r) for r in costly if r in known]
            if waits and peers >= 0:
                w, _r = max(waits)
                if w >= ctx.p.phase_fault * peers and w - peers >= ctx.p.fault_min_ms:
                    fault = policy.fault("phase", w / peers if peers > 0 else math.inf, ctx.p.phase_fault, w - peers)
        out.append(policy.judged(Finding(fault=fault,
            id=f"data-pipeline.{verdict.replace('_', '-')}", category="data_pipeline", severity=sev, title=title,
            impact=imp.to_dict() if imp else None,
            advice=advice, why=lazy("A device waiting for input computes nothing; the step interval grows by the wait."),
            page=urls.rank(worst, "data"), ranks=ranks, evidence=ev,
            table={"columns": [N_("Rank"), N_("Host queue empty (steps)"), N_("Chip queue empty (batches)"), N_("Step interval")],
                   "rows": rows, "links": [urls.rank(r, "data") for r in ranks[:50]]}), ctx.p))
    return out


IMPACT_BASIS = N_("{ranks}: step interval set to the other ranks' median in every step; the others' waits shrink "
                  "by as much")
IMPACT_ALL = N_("the data ready when the step starts (the step interval of the ranks whose queue runs dry saved): an "
                "upper bound")


IMPACT_GET = N_("{ranks}: the wait for each batch (the dataset iterator's get time, {ms} per step on average) saved: "
               "an upper bound")


def _wait_impact(a, ranks: list[int]):
    """Without a step interval (feed mode without a step trace): the dataset iterator's mean get time per step of
    the dry rank that waits longest, against the step time (the step trace's, else the device timeline's span per
    step). None when the files hold neither."""
    best = None
    for r in ranks:
        dp = a.run.ranks[r].dataprep if r in a.run.ranks else None
        h = getattr(dp, "host_times", None)
        if dp is None or dp.mode != "feed" or h is None or not len(h) or "get_ms" not in h.columns:
            continue
        get = float(h["get_ms"].dropna().mean()) if h["get_ms"].notna().any() else math.nan
        tl = a.run.ranks[r].timeline
        step = (tl.span_ms / len(h)) if tl is not None and tl.span_ms else math.nan
        if not math.isnan(get) and (best is None or get > best[0]):
            best = (get, step, r)
    if best is None:
        return None
    get, step, r = best
    basis = lazy(IMPACT_GET, ranks=ranks_msg([r], capital=True), ms=fmt_ms(get))
    imp = saved_by_ms(get, a.steps, basis)
    if imp is None and step and not math.isnan(step):
        imp = Impact(get, get / step, basis)
    return imp


def _impact(a, costly: list[int], known: list[int], t=None):
    """The saving of feeding the dry ranks as fast as the others (their step interval at the other ranks' median);
    every rank dry, or the other ranks waiting for data as long (by the rule's own thresholds): the dry ranks'
    interval itself (an upper bound). None without a step interval (the queue alone says nothing about the time
    lost)."""
    dry = [r for r in costly if r in known]
    if not dry:
        return _wait_impact(a, costly)
    ii = a.steps.average["iteration_interval"].dropna()
    others = ii.drop(index=[r for r in dry if r in ii.index])
    tot = a.steps.average["total"].dropna() if "total" in a.steps.average else None
    waiting = (t is not None and len(others) and tot is not None and len(tot)
               and float(others.median()) >= t.min_interval_ms and float(others.median()) >= t.min_share * float(tot.median()))
    if len(others) and not waiting:
        return replace_excess(a.steps, "iteration_interval", dry, None, lazy(IMPACT_BASIS, ranks=ranks_msg(dry, capital=True)))
    return saved_by_ms(float(ii[[r for r in dry if r in ii.index]].median()), a.steps, lazy(IMPACT_ALL))


RULE = Rule(
    id="data-pipeline", category="data_pipeline", title=N_("Data queues run dry"),
    description=N_("""\
MindInsight's queue reading for every rank with MindData queue files: the host queue empty in more than
`host_empty_rate` of the steps → data processing; otherwise the chip-side (GetNext) queue ever empty → data
transmission. The bottleneck dataset operator follows MindInsight's pipeline rule (input queues ≥ 0.8, output
queue < 0.6; all queues low → the source operators) with the seed's "input full, output empty" fallback, and gets
MindInsight's per-operator advice. Judged by the severity policy when the rank's step interval is at least
`min_interval_ms` and `min_share` of its step; information otherwise (the queue runs dry but the step barely
waits), and without a step interval (no saving can be estimated). The saving sets the dry ranks' step interval to
the other ranks' median (every rank dry: the interval itself, an upper bound)."""),
    params=Thresholds, check=check,
    source=N_("tuning guide, single device (non-sink and sink mode); MindInsight MinddataProposer, "
           "MinddataPipelineProposer"))
