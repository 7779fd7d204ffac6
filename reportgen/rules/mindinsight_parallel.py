"""MindInsight's cluster helper (ParallelProposer) reproduced exactly: step interval, FLOPS and link bandwidth.

MindInsight compares each rank with the plain mean of all ranks (+/- 20 %). The values are reproduced to its
decimals so they can be checked against MindInsight; whether they matter is decided by the robust rules
(slow-rank, slow-link), which these findings are merged into when both name the same subject. On their own they
are information: MindInsight's 20 % of a small number can be a fraction of a millisecond in a long step.
The communication rates and stage FLOPs of ParallelProposer are in the communication-bound, pipeline-bubble and
stage-imbalance rules.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from reportgen import urls
from reportgen.i18n import N_, lazy
from reportgen.rules.base import Context, Finding, Rule
from reportgen.rules.thresholds import th

@dataclass(frozen=True)
class Thresholds:
    step_interval: float = th(0.2, N_("a rank's average step interval above the mean of ranks by this fraction"))
    flops_per_second: float = th(0.2, N_("a rank's FLOPS below the mean of ranks by this fraction"))
    cluster_link: float = th(0.2, N_("a link's bandwidth below the mean of its transport's links by this fraction"))


ADVICE = N_("""\
This is MindInsight's helper verdict, kept for comparison with MindSpore Insight. It compares each rank with the
plain mean of the ranks; the robust slow-rank and slow-link findings (when present) say whether the difference
costs enough time to act on.""")


def _step_interval(ctx: Context) -> list[Finding]:
    st = ctx.a.steps
    if st.kind != "legacy" or "iteration_interval" not in st.average.columns or len(st.average) < 2:
        return []
    ii = st.average["iteration_interval"].dropna()
    mean = float(ii.mean())
    if not mean > 0:
        return []
    p = ii / mean - 1
    r = int(p.idxmax())
    if not p[r] > ctx.t.step_interval:
        return []
    return [Finding(
        id="mindinsight.step-interval", category="slow_rank", severity="info",
        title=lazy("MindInsight's helper: rank {rank}'s step interval {value} ms is {pct} % above the mean of ranks "
                   "({mean} ms)", rank=r, value=f"{ii[r]:.4f}", pct=f"{p[r] * 100:.2f}", mean=f"{mean:.4f}"),
        advice=lazy(ADVICE), page=urls.step_trace_row(r), ranks=[r], phase="step_interval",
        evidence={"mindinsight_key": "step_interval", "rank": r, "value_ms": round(float(ii[r]), 4),
                  "percent": round(float(p[r]) * 100, 2), "mean_ms": mean, "threshold": ctx.t.step_interval})]


def _flops(ctx: Context) -> list[Finding]:
    f = ctx.a.resources.flops
    if f is None or len(f) < 2 or "flops_per_s_g" not in f:
        return []
    s = f.set_index("rank")["flops_per_s_g"].dropna()
    mean = float(s.mean())
    if len(s) < 2 or not mean > 0:
        return []
    p = (mean - s) / mean
    r = int(p.idxmax())
    if not p[r] > ctx.t.flops_per_second:
        return []
    return [Finding(
        id="mindinsight.flops-per-second", category="slow_rank", severity="info",
        title=lazy("MindInsight's helper: rank {rank} runs at {value} GFLOPS, {pct} % below the mean of ranks",
                   rank=r, value=f"{s[r]:.4f}", pct=f"{p[r] * 100:.2f}"),
        advice=lazy(ADVICE), page=urls.FLOPS, ranks=[r], phase="compute",
        evidence={"mindinsight_key": "flops_per_second", "rank": r, "value_gflops": round(float(s[r]), 4),
                  "percent": round(float(p[r]) * 100, 2), "mean_gflops": mean})]


def _links(ctx: Context) -> list[Finding]:
    lt = ctx.a.comm.links if ctx.a.comm.has_data else None
    if lt is None or lt.empty:
        return []
    lt = lt[lt["mapped"] & ~lt["self"]]
    bw_col = "stored_bandwidth_gbps" if "stored_bandwidth_gbps" in lt and lt["stored_bandwidth_gbps"].notna().any() \
        else "bandwidth_gbps"
    out = []
    for transport, g in lt.groupby("transport"):
        if str(transport) not in ("SDMA", "RDMA", "HCCS", "PCIE", "SIO"):
            continue
        bw = pd.to_numeric(g[bw_col], errors="coerce") * 1e6  # KB/s as MindInsight shows it
        bw = bw.dropna()
        if len(bw) < 2:
            continue
        mean = float(bw.mean())
        if not mean > 0:
            continue
        p = (mean - bw) / mean
        i = p.idxmax()
        if not p[i] > ctx.t.cluster_link:
            continue
        src, dst = int(g.at[i, "src"]), int(g.at[i, "dst"])
        out.append(Finding(
            id="mindinsight.cluster-link", category="slow_link", severity="info",
            title=lazy("MindInsight's helper: {transport} link {src}→{dst} at {bw} KB/s is {pct} % below the mean of "
                       "{n} {transport} links", transport=transport, src=src, dst=dst, bw=f"{bw[i]:.4f}",
                       pct=f"{p[i] * 100:.2f}", n=len(bw)),
            advice=lazy(ADVICE), page=urls.COMM_LINKS, links=[f"{src}-{dst}"],
            transport=str(transport), ranks=[src, dst],
            evidence={"mindinsight_key": "cluster_link", "src": src, "dst": dst, "transport": str(transport),
                      "bandwidth_kb_s": round(float(bw[i]), 4), "percent": round(float(-p[i]) * 100, 2),
                      "mean_kb_s": mean, "bandwidth_column": bw_col}))
    return out


def check(ctx: Context) -> list[Finding]:
    if len(ctx.a.run.rank_ids) < 2 or ctx.a.run.info.layout != "mindinsight":
        return []
    return _step_interval(ctx) + _flops(ctx) + _links(ctx)


RULE = Rule(
    id="mindinsight", category="slow_rank", title=N_("MindInsight's cluster helper (ParallelProposer), for comparison"),
    description=N_("""\
Exactly MindInsight's `ParallelProposer` on the averaged step: `step_interval` (a rank's step interval more than
20 % above the mean of ranks), `flops_per_second` (a rank's FLOPS more than 20 % below the mean) and `cluster_link`
(per transport, the link furthest below the mean bandwidth of the links, by more than 20 %; bandwidth in KB/s as
the profiler stored it). Always information: they are merged into a slow-rank or slow-link finding about the same
rank or link when one exists. Values to 4 decimals, percents to 2, as MindInsight shows them."""),
    params=Thresholds, reference=True, check=check, source=N_("MindInsight parallel_proposer.py"))
