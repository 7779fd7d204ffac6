"""Operator type abnormally slow on one rank: the same operator type takes far longer on one rank than on the
others (the Marey view's "long on one device: slow node"; MindInsight's cluster operator comparison)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from reportgen import urls
from reportgen.analysis.impact import compute_saving
from reportgen.rules import policy
from reportgen.i18n import N_, lazy
from reportgen.rules.base import Context, Finding, Rule, fmt_ms, fmt_pct, gpu_run
from reportgen.rules.thresholds import th
from reportgen.rules.stats import type_totals

@dataclass(frozen=True)
class Thresholds:
    min_ratio: float = th(1.5, N_("the rank's time for the type is at least this many times the median over ranks"))
    min_share: float = th(0.01, N_("and the difference is at least this fraction of a typical rank's operator time "
                                '(information)'))
    warning_share: float = th(0.05, N_("difference (fraction of a typical rank's operator time) from which it is a "
                                    'warning'))
    min_ranks: float = th(3.0, N_('ranks with operator statistics needed to call one of them different'))


# Host operators that block until the device has caught up (copies to the host, synchronisations, waits): their
# time on the host is the device's queue ahead of them (on a rank that waits in a collective, the collective), not
# their own work; long only on the rank that waits longest, they are the victim, never the slow operator.
BLOCKING_HOST_OP = re.compile(
    r"^(?:aten::(?:copy_|to|_to_copy|item|_local_scalar_dense|cpu|nonzero|is_nonzero|equal|masked_select|"
    r"unique\w*|allclose)|.*synchroni[sz]e.*|.*(?:^|[^a-z])wait(?:$|[^a-z]).*|cuda(?:Memcpy|Stream|Event|Device)\w*|"
    r"(?:aclrt|acl\.rt\.)\w*)$", re.I)


def blocking_host_op(side: str, op_type: str) -> bool:
    """A host operator whose time is spent waiting for the device (see `BLOCKING_HOST_OP`)."""
    return side == "hostcpu" and bool(BLOCKING_HOST_OP.match(str(op_type)))


ADVICE = N_("""\
Only this rank is slow at this operator type, so the cause is local:
- compare the operator's inputs on this rank with another rank's (shapes, data types, formats: a different shard or
  an uneven split of the data), and its count (more calls on this rank?);
- if the inputs are the same, the device may be degraded (frequency, temperature, memory errors): check its health.
- Within a pipeline stage all ranks should run the same operators; across stages different layers are expected.""")

ADVICE_GPU = N_("""\
Only this rank is slow at this operator type, so the cause is local:
- compare the operator's inputs on this rank with another rank's (shapes, dtypes, memory layout: a different shard
  or an uneven split of the data), and its count (more calls on this rank?);
- if the inputs are the same, check the GPU: `nvidia-smi -q -d CLOCK,PERFORMANCE,TEMPERATURE` (or `rocm-smi`) for
  throttled clocks, ECC / Xid errors in the kernel log, other processes on the GPU, its PCIe / NVLink width.
- Within a pipeline stage all ranks should run the same operators; across stages different layers are expected.""")


def check(ctx: Context) -> list[Finding]:
    a = ctx.a
    t = type_totals(a, ("aicore", "aicpu", "hostcpu"))
    if t.empty:
        return []
    ranks = sorted(t["rank"].unique())
    if len(ranks) < ctx.t.min_ranks:
        return []
    typical = float(t.groupby("rank")["total_ms"].sum().median())
    stage_of = a.run.info.stage_of_rank if a.run.info.stages > 1 else {}
    piv = t.pivot_table(index=["side", "op_type"], columns="rank", values="total_ms", aggfunc="sum", fill_value=0.0)
    hits = []
    groups: dict[int, list[int]] = {}
    for r in ranks:
        groups.setdefault(stage_of.get(int(r), 0), []).append(r)
    for g, members in groups.items():
        if len(members) < ctx.t.min_ranks:
            continue
        sub = piv[members]
        med = sub.median(axis=1)
        for (side, op_type), row in sub.iterrows():
            if blocking_host_op(side, op_type):
                continue  # waiting for the device, not work: the victim of whatever the device waits for
            m = float(med[(side, op_type)])
            if m <= 0:
                continue
            r = int(row.idxmax())
            hi = float(row[r])
            gap = hi - m
            if hi >= ctx.t.min_ratio * m and typical > 0 and gap >= ctx.t.min_share * typical:
                hits.append((gap, r, side, op_type, hi, m, g))
    if not hits:
        return []
    hits.sort(reverse=True)
    out = []
    by_rank: dict[int, list] = {}
    for h in hits:
        by_rank.setdefault(h[1], []).append(h)
    for r, hs in sorted(by_rank.items(), key=lambda kv: -kv[1][0][0])[:20]:
        gap, _, side, op_type, hi, m, g = hs[0]
        share = gap / typical
        per_step = gap if "per step" in (a.resources.operator_basis or "") else gap / max(1, _n_steps(a, r))
        imp = compute_saving(a.steps, [r], per_step, lazy(IMPACT_BASIS, rank=r, op=op_type), _window(a))
        out.append(policy.judged(Finding(
            id="operator-rank.slow-on-rank", category="operator_hotspot", impact=imp.to_dict() if imp else None,
            severity="warning" if share >= ctx.t.warning_share else "info",
            title=lazy("{main}{more}", main=lazy("Rank {rank} spends {value} in {op} against a median of {median} on "
                                                 "its peers ({ratio}×)", rank=r, value=fmt_ms(hi), op=op_type,
                                                 median=fmt_ms(m), ratio=f"{hi / m:.1f}"),
                       more=(lazy(", and {n} more types", n=len(hs) - 1) if len(hs) > 2 else
                             lazy(", and 1 more type") if len(hs) > 1 else "")),
            advice=lazy(ADVICE_GPU if gpu_run(a) else ADVICE), why=lazy("The extra {gap} is {share} of a typical rank's operator time; collectives "
                                          "make the others wait for it.", gap=fmt_ms(gap), share=fmt_pct(share)),
            page=urls.rank(r, "operators"), ranks=[r],
            evidence={"op_type": op_type, "side": side, "value_ms": hi, "median_ms": m, "ratio": hi / m,
                      "gap_share_of_operator_time": share, "basis": a.resources.operator_basis,
                      "compared_within": f"stage {g}" if stage_of else "cluster"},
            table={"columns": [N_("Type"), N_("Runs on"), N_("This rank (ms)"), N_("Peers' median (ms)"), N_("Ratio")],
                   "rows": [[h[3], h[2], round(h[4], 4), round(h[5], 4), round(h[4] / h[5], 2)] for h in hs[:20]],
                   "links": [None] * min(20, len(hs))}), ctx.p))
    return out


IMPACT_BASIS = N_("rank {rank}'s computation set to its peers' median in every step, at most its extra {op} time "
                  "per step")


def _window(a):
    """The profiled window (the median span of the ranks' device timelines), for runs without a step trace."""
    spans = sorted(d.timeline.span_ms for d in a.run.ranks.values() if d.timeline is not None and d.timeline.span_ms)
    return spans[len(spans) // 2] if spans else None


def _n_steps(a, r: int) -> int:
    ps = a.steps.per_step
    if ps is None or ps.empty:
        return 1
    return int(ps.loc[ps["rank"] == r, "step"].nunique()) or 1


RULE = Rule(
    id="operator-rank", category="operator_hotspot", title=N_("Operator type slow on one rank"),
    description=N_("""\
For each operator type (AI Core, AI CPU, host CPU; communication is waiting, not work, and so are host operators
that block until the device catches up: copies to the host, synchronisations), the time on each rank is
compared with the median over the ranks of its pipeline stage (at least `min_ranks`). A rank is reported when its
time is at least `min_ratio` × the median and the difference is at least `min_share` of a typical rank's operator
time (information); from `warning_share` it is judged by the severity policy on its saving (the rank's
computation set to its peers' median, at most the operator's extra time per step; none without a step trace). Totals cover what the profiler recorded (per step for MindInsight,
the profiled window for Ascend)."""),
    params=Thresholds, check=check, source=N_("MindInsight cluster operator view; Marey view interpretation "
                                               "(long on one device: slow node)"))
