"""Slow link: a link whose bandwidth is far below the links of the same transport.

Tuning guide, model parallel step 4 ("long transit time: look at the link bandwidth"); msprof-analyze's reading
of the communication matrix (compare bandwidth by transport type); MindInsight ParallelProposer `cluster_link`.
"""

from __future__ import annotations

from dataclasses import dataclass

import math

from reportgen import urls
from reportgen.analysis.impact import exposed_saving, link_saving
from reportgen.i18n import N_, lazy
from reportgen.rules import policy
from reportgen.rules.base import Context, Finding, Rule, fmt_ms, fmt_pct, md_literal
from reportgen.rules.thresholds import th
from reportgen.analysis.stats import MAD_SCALE

@dataclass(frozen=True)
class Thresholds:
    min_drop: float = th(0.3, N_('a link is slow below (1 − min_drop) × the median bandwidth of its transport'))
    z: float = th(3.5, N_('and more than this many robust standard deviations below that median'))
    min_size_mb: float = th(1.0, N_('links that moved less than this per step are latency-bound and not compared'))
    min_peers: float = th(3.0, N_('links of the same transport needed for a median'))
    critical_share: float = th(0.2, N_('lost time per step (fraction of the step) from which the finding may be '
                                       'critical (the severity policy decides from the saving)'))
    rdma_gbps: float = th(12.5, N_('reference bandwidth of an RDMA link (GB/s): a link below (1 − min_drop) × it is '
                                'slow even when every link of its transport is (msprof-analyze / MindStudio Insight)'))
    hccs_gbps: float = th(18.0, N_('reference bandwidth of an HCCS link (GB/s)'))
    pcie_gbps: float = th(20.0, N_('reference bandwidth of a PCIe link (GB/s)'))
    ref_min_size_mb: float = th(16.0, N_('the reference applies to links moving at least this much per step (smaller '
                                      'transfers are latency-bound and reach less by nature)'))


ADVICE = N_("""\
A link much slower than its peers of the same transport slows every collective that uses it (a ring all-reduce
runs at the speed of its slowest hop).
- Check the two devices' network ports and cables, link error and retransmission counters (`hccn_tool`), and for
  RDMA the switch port and its congestion / PFC settings.
- If the link is slow only in some operators, look at the per-operator distribution on the Communication page:
  small packets (under 16 MB on SDMA, 1 MB on RDMA) reach low bandwidth by nature.""")


IMPACT_BASIS = N_("links {links} ({transport}) moving their data at the {median} GB/s median of their transport; "
                   "every operator using them lasts as long as its slowest link")
IMPACT_BASIS_LINKS = N_("{basis} (from the links' time per step: the operators' records are not available)")


def _lost_per_rank(slow) -> float:
    """The most time any one rank loses on the slow links per step (its links' lost time summed)."""
    per = {}
    for s, d, lost in zip(slow["src"], slow["dst"], slow["lost_ms"]):
        for r in (int(s), int(d)):
            per[r] = per.get(r, 0.0) + max(0.0, float(lost))
    return max(per.values(), default=0.0)


TITLE_ONE = N_("Link {links} ({transport}) runs at {bw} GB/s, {rel} of the {median} GB/s median of "
               "{n_compared} {transport} links")
TITLE_MANY = N_("{subject}{n} links {links} ({transport}) run at down to {bw} GB/s, {rel} of the {median} GB/s "
                "median of {n_compared} {transport} links")


TITLE_ONE_REF = N_("Link {links} ({transport}) runs at {bw} GB/s, {rel} of the {median} GB/s reference of "
                   "{transport} links (their median is below it too)")
TITLE_MANY_REF = N_("{subject}{n} links {links} ({transport}) run at down to {bw} GB/s, {rel} of the {median} GB/s "
                    "reference of {transport} links (their median is below it too)")


def reference_gbps(t, transport: str) -> float:
    return {"RDMA": t.rdma_gbps, "HCCS": t.hccs_gbps, "PCIE": t.pcie_gbps}.get(transport.upper(), 0.0)


def common_place(a, links: list[str]):
    """("nic", rank) when every slow link starts or ends at one device (its NIC), ("host", name) when every slow
    link touches one host, else None. One link is a link, not a NIC."""
    if len(links) < 2:
        return None
    pairs = [tuple(int(x) for x in l.split("-")) for l in links]
    common = set(pairs[0])
    for p in pairs[1:]:
        common &= set(p)
    if len(common) == 1:
        return ("nic", next(iter(common)))
    host = {r: a.run.ranks[r].info.host for r in a.run.rank_ids if r in a.run.ranks}
    touched = [{host.get(s), host.get(d)} - {None, ""} for s, d in pairs]
    hosts = set.intersection(*touched) if touched and all(touched) else set()
    if len(hosts) == 1:
        return ("host", next(iter(hosts)))
    return None


def place_msg(place):
    if place is None:
        return ""
    if place[0] == "nic":
        return lazy(N_("The network port of rank {rank}'s device: "), rank=place[1])
    return lazy(N_("Host {host}: "), host=str(place[1])[:80])


def check(ctx: Context) -> list[Finding]:
    a = ctx.a
    pairs = a.comm.pairs if a.comm.has_data else None
    if pairs is None or pairs.empty:
        return []
    step_ms = a.steps.stats["total"].median if "total" in a.steps.stats else math.nan
    p = pairs[(pairs["transport"] != "LOCAL") & (pairs["size_mb"] >= ctx.t.min_size_mb)
              & pairs["bandwidth_gbps"].notna() & (pairs["bandwidth_gbps"] > 0)]
    findings = []
    for transport, f in p.groupby("transport"):
        if len(f) < ctx.t.min_peers:
            continue
        med = float(f["bandwidth_gbps"].median())
        mad = float((f["bandwidth_gbps"] - med).abs().median())
        floor = max(ctx.t.min_drop * med, ctx.t.z * MAD_SCALE * mad)
        ref = reference_gbps(ctx.t, str(transport))
        below_ref = (f["bandwidth_gbps"] < (1 - ctx.t.min_drop) * ref) & (f["size_mb"] >= ctx.t.ref_min_size_mb) \
            if ref else False
        slow = f[((med - f["bandwidth_gbps"]) > floor) | below_ref].copy()
        if slow.empty:
            continue
        # the typical bandwidth a slow link is measured against: its transport's median, or the reference when the
        # median itself is far below the reference (every link, or half of them, slow)
        by_ref = bool(ref) and med < (1 - ctx.t.min_drop) * ref
        if by_ref:
            med = ref
        slow["expected_ms"] = slow["size_mb"] / med
        slow["lost_ms"] = slow["time_ms"] - slow["expected_ms"]
        slow = slow.sort_values("lost_ms", ascending=False)
        w = slow.iloc[0]
        lost_share = float(w["lost_ms"]) / step_ms if step_ms and not math.isnan(step_ms) else math.nan
        # [issue 16, h-numbers] a link cannot lose more than the whole step: the files disagree; no share is shown
        # (analysis.consistency writes the data-quality note)
        over_step, lost_share = (True, math.nan) if lost_share > 1 else (False, lost_share)
        # fault floor (the policy): far below its peers, whatever it saves today (not against the reference: when
        # the whole transport is slow, the saving decides)
        ratio = float(w["bandwidth_gbps"]) / med
        fault = (policy.fault("link", ratio, ctx.p.link_fault, float(w["lost_ms"]))
                 if not by_ref and ratio < ctx.p.link_fault and float(w["lost_ms"]) >= ctx.p.fault_min_ms else None)
        links = [f"{int(s)}-{int(d)}" for s, d in zip(slow["src"], slow["dst"])]
        n = len(links)
        place = common_place(a, links)
        basis = lazy(IMPACT_BASIS, links=", ".join(links[:8]) + (" …" if n > 8 else ""), transport=transport,
                     median=f"{med:.2f}")
        imp = link_saving(a.steps, a.comm, [tuple(map(int, x.split("-"))) for x in links], {transport: med}, basis)
        if imp is None:  # no per-operator records: the links' lost time itself (per rank, the most delayed one)
            imp = exposed_saving(a.steps, sorted({int(x) for pair in zip(slow["src"], slow["dst"]) for x in pair}),
                                 _lost_per_rank(slow), lazy(IMPACT_BASIS_LINKS, basis=basis))
        title = lazy((TITLE_ONE_REF if n == 1 else TITLE_MANY_REF) if by_ref else (TITLE_ONE if n == 1 else TITLE_MANY),
                     subject=place_msg(place), n=n, links=", ".join(links[:4])
                     + (" …" if n > 4 else ""), transport=str(transport), bw=f"{float(w['bandwidth_gbps']):.2f}",
                     rel=fmt_pct(float(w["bandwidth_gbps"]) / med, 0), median=f"{med:.2f}", n_compared=len(f))
        rows = [[int(r.src), int(r.dst), round(float(r.size_mb), 3), round(float(r.time_ms), 4),
                 round(float(r.bandwidth_gbps), 4), fmt_pct(float(r.bandwidth_gbps) / med, 0),
                 round(float(r.lost_ms), 4)] for r in slow.head(50).itertuples()]
        findings.append(Finding(
            id="slow-link.bandwidth", category="slow_link",
            severity="critical" if math.isnan(lost_share) or lost_share >= ctx.t.critical_share else "warning", title=title, advice=lazy(ADVICE),
            why=(lazy("About {lost} per step is spent on this link beyond what the median {transport} bandwidth "
                      "would need ({share} of the step); counting only what computation does not hide and what "
                      "delays the step's last rank, fixing it saves about {saving} per step.",
                      lost=fmt_ms(float(w["lost_ms"])), transport=md_literal(transport), share=fmt_pct(lost_share),
                      saving=fmt_ms(imp.step_ms))
                 if imp is not None and not math.isnan(lost_share) else
                 lazy("About {lost} per step is spent on this link beyond what the median {transport} bandwidth "
                      "would need ({share} of the step).", lost=fmt_ms(float(w["lost_ms"])),
                      transport=md_literal(transport), share=fmt_pct(lost_share))
                 if not math.isnan(lost_share) else
                 lazy("About {lost} per step is spent on this link beyond what the median {transport} bandwidth "
                      "would need (more than the step itself: the communication files and the step trace disagree,"
                      " see data quality).", lost=fmt_ms(float(w["lost_ms"])), transport=md_literal(transport))
                 if over_step else
                 lazy("About {lost} per step is spent on this link beyond what the median {transport} bandwidth "
                      "would need.", lost=fmt_ms(float(w["lost_ms"])), transport=md_literal(transport))),
            page=urls.COMM_LINKS, links=links, transport=str(transport),
            ranks=sorted({int(x) for pair in zip(slow["src"], slow["dst"]) for x in pair}),
            impact=imp.to_dict() if imp else None, fault=fault,
            evidence={**({"host": place[1]} if place and place[0] == "host" else {}),
                      **({"nic_rank": place[1]} if place and place[0] == "nic" else {}),
                      "bandwidth_gbps": float(w["bandwidth_gbps"]), "transport_median_gbps": med,
                      "size_mb": float(w["size_mb"]), "time_ms": float(w["time_ms"]),
                      "lost_ms": float(w["lost_ms"]), "lost_share_of_step": lost_share, "links_compared": len(f),
                      "compared_with": N_("reference") if by_ref else N_("transport median")},
            table={"columns": [N_("Source"), N_("Destination"), N_("Size (MB)"), N_("Time (ms)"),
                               N_("Bandwidth (GB/s)"), N_("vs median"), N_("Lost (ms)")],
                   "rows": rows, "links": [None] * len(rows)}))
        findings.append(policy.judged(findings.pop(), ctx.p))
    return findings


RULE = Rule(
    id="slow-link", category="slow_link", title=N_("Slow link"),
    description=N_("""\
Links between two devices (all communication groups summed, per averaged step) are compared with the other links
of the same transport (HCCS, RDMA, SDMA, PCIE, SIO; LOCAL and links under `min_size_mb` are left out; at least
`min_peers` links). A link is slow when its bandwidth is more than `min_drop` below the transport's median and
more than `z` robust standard deviations below it (or below the transport's reference bandwidth when the median
itself is). The time lost on a link is its time minus size / median bandwidth; the saving replaces the slow links'
bandwidth by the median in every operator that uses them (an operator lasts as long as its slowest link) and counts
the share of communication not hidden by computation. Severity follows the severity policy: the saving, and the
fault floor for a link under `severity.link_fault` of its transport's median (at least a warning). Pages mark
exactly the links of warning and critical findings."""),
    params=Thresholds, check=check,
    source=N_("tuning guide, model parallel step 4; msprof-analyze communication matrix reading; MindInsight "
           "cluster_link"))
