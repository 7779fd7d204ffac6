"""Communication health: small packets and byte alignment of the transfers (msprof-analyze's communication advisor:
packet and byte_alignment checks; MindStudio Insight's communication advice).

Link bandwidth against the reference of its transport is the slow-link rule's (`slow-link.rdma_gbps` ...).
Retransmission counters are not in the files msreport reads (msprof-analyze takes them from the cluster database),
so no verdict is given on them.
"""

from __future__ import annotations

from dataclasses import dataclass

import math

import numpy as np

import pandas as pd

from reportgen import urls
from reportgen.analysis.impact import small_transfer_saving
from reportgen.i18n import N_, lazy
from reportgen.rules import policy, slow_link
from reportgen.rules.base import Context, Finding, Rule, fmt_ms, fmt_pct
from reportgen.rules.thresholds import th


@dataclass(frozen=True)
class Thresholds:
    sdma_small_mb: float = th(16.0, N_('an SDMA / HCCS / PCIe transfer below this many MB is a small packet (msprof-analyze)'))
    rdma_small_mb: float = th(1.0, N_('an RDMA transfer below this many MB is a small packet (msprof-analyze)'))
    small_share: float = th(0.2, N_('share of transfers that are small packets from which it is reported'))
    large_min_transfers: float = th(3.0, N_("large transfers of a transport needed to measure its bandwidth in large "
                                            "transfers (the reference the small ones are compared with); with fewer, "
                                            "the transport's reference bandwidth of the slow-link rule"))
    align_bytes: float = th(512.0, N_('transfer sizes should be a multiple of this many bytes (msprof-analyze)'))
    misaligned_share: float = th(0.2, N_('share of SDMA transfers whose size is not a multiple of it, from which it is '
                                      'reported (information)'))


ADVICE_SMALL = N_("""\
Small transfers do not reach the link's bandwidth: their time is mostly latency.
- Fuse collectives: MindSpore `comm_fusion` / `all_reduce_fusion_config`; torch DDP `bucket_cap_mb`; Megatron
  `--overlap-grad-reduce` with larger buckets.
- Fewer, larger point-to-point messages between pipeline stages (larger micro-batches).""")

ADVICE_ALIGN = N_("""\
Transfers whose size is not a multiple of 512 bytes use the SDMA engines less efficiently. Pad the tensors that are
communicated (hidden sizes, vocabulary, bucket sizes) to a multiple of 512 bytes (256 fp16 values).""")


def _large_gbps(lo: pd.DataFrame, small: pd.Series, t) -> dict[str, float]:
    """Per transport, the bandwidth the same bytes get in large transfers: the median bandwidth of this run's large
    transfers of that transport (at least `large_min_transfers`), else the slow-link rule's reference bandwidth."""
    out = {}
    ref = slow_link.Thresholds()
    for tr, f in lo[~small].groupby("transport"):
        bw = (f["size_mb"] / f["time_ms"]).where(f["time_ms"] > 0).dropna()
        if len(bw) >= t.large_min_transfers and float(bw.median()) > 0:
            out[str(tr)] = float(bw.median())
    for tr in lo["transport"].astype(str).unique():
        if tr not in out and slow_link.reference_gbps(ref, tr):
            out[tr] = slow_link.reference_gbps(ref, tr)
    return out


def _exposed_ms(a):
    """The median exposed communication per step (Communication (not overlapped) without the bubble), or None."""
    ps = a.steps.per_step if a.steps.kind == "modern" else None
    if ps is None or "communication_not_overlapped" not in ps.columns:
        return None
    v = ps["communication_not_overlapped"] - (ps["bubble"].fillna(0.0) if "bubble" in ps.columns else 0.0)
    v = v.dropna()
    return float(v.clip(lower=0.0).median()) if len(v) else None


SMALL_BASIS = N_("the small transfers taking what the same bytes take in large transfers ({bandwidths})")


def check(ctx: Context) -> list[Finding]:
    a, t = ctx.a, ctx.t
    lo = a.comm.link_ops if a.comm.has_data else None
    if lo is None or lo.empty or "size_mb" not in lo.columns:
        return []
    lo = lo[lo["size_mb"].notna() & (lo["size_mb"] > 0) & (lo["transport"] != "LOCAL")]
    if lo.empty:
        return []
    rdma = lo["transport"].astype(str).str.upper() == "RDMA"
    small = pd.Series(np.where(rdma, lo["size_mb"] < t.rdma_small_mb, lo["size_mb"] < t.sdma_small_mb),
                      index=lo.index)
    out = []
    share = float(small.mean())
    if share > t.small_share:
        by = {str(tr): round(float(np.mean(small[(lo["transport"] == tr)])), 4)
              for tr in sorted(lo["transport"].astype(str).unique())}
        gbps = _large_gbps(lo, small, t)
        imp = small_transfer_saving(a.steps, a.comm, small, gbps, lazy(SMALL_BASIS, bandwidths=", ".join(
            f"{tr} {v:.1f} GB/s" for tr, v in sorted(gbps.items()))))
        exposed = _exposed_ms(a)
        if imp is not None and exposed is not None and imp.step_ms > exposed:
            # small transfers cannot cost more than the communication that is not hidden
            imp = type(imp)(exposed, exposed * imp.step_share / imp.step_ms if imp.step_ms else 0.0, imp.basis)
        saving = imp.step_ms if imp else math.nan
        steps = max(1, int(lo["step"].nunique())) if "step" in lo.columns else 1
        small_ms = float(lo.loc[small, "time_ms"].sum()) / steps
        out.append(policy.judged(Finding(
            id="comm-health.small-packets", category="communication_bound", severity="warning",
            title=(lazy(N_("{share} of transfers are small packets (under {sdma} MB on SDMA, {rdma} MB on RDMA); at the "
                           "bandwidth of large transfers they would save {saving} per step ({step})"),
                        share=fmt_pct(share), sdma=f"{t.sdma_small_mb:g}", rdma=f"{t.rdma_small_mb:g}",
                        saving=fmt_ms(saving), step=fmt_pct(imp.step_share)) if imp else
                   lazy(N_("{share} of transfers are small packets (under {sdma} MB on SDMA, {rdma} MB on RDMA)"),
                        share=fmt_pct(share), sdma=f"{t.sdma_small_mb:g}", rdma=f"{t.rdma_small_mb:g}")),
            advice=lazy(ADVICE_SMALL),
            why=lazy(N_("A small transfer's time is mostly latency: many of them keep the links busy without moving "
                        "much data. Their cost is the time they take beyond what the same bytes take in large "
                        "transfers, counted only where computation does not hide it.")),
            page=urls.COMM_LINKS, impact=imp.to_dict() if imp else None,
            evidence={"small_share": share, "transfers": int(len(lo)), "small_transfers": int(small.sum()),
                      "small_share_by_transport": by, "small_transfer_ms_per_step": small_ms,
                      "large_transfer_gbps": gbps, "saving_ms": saving}), ctx.p))
    sd = lo[~rdma]
    if len(sd):
        nbytes = np.round(sd["size_mb"].to_numpy() * 1e6)
        mis = (np.mod(nbytes, t.align_bytes) != 0)
        mshare = float(mis.mean())
        if mshare > t.misaligned_share:
            out.append(Finding(
                id="comm-health.alignment", category="communication_bound", severity="info",
                title=lazy(N_("{share} of SDMA transfers have a size that is not a multiple of {n} bytes"),
                           share=fmt_pct(mshare), n=f"{t.align_bytes:g}"),
                advice=lazy(ADVICE_ALIGN), page=urls.COMM_LINKS,
                why=lazy(N_("SDMA moves aligned blocks fastest; a misaligned size costs bandwidth on every transfer.")),
                evidence={"misaligned_share": mshare, "transfers": int(len(sd)), "misaligned_transfers": int(mis.sum()),
                          "align_bytes": t.align_bytes}))
    return out


RULE = Rule(
    id="comm-health", category="communication_bound", title=N_("Communication health: small packets, alignment"),
    description=N_("""\
Every transfer on a link between two devices (one record per operator and link) is checked: **small packets**
are SDMA / HCCS / PCIe transfers under `sdma_small_mb` and RDMA transfers under `rdma_small_mb`; above
`small_share` of the transfers they are reported. They are judged by their own cost: the time the small transfers
take beyond what the same bytes take at the bandwidth of large transfers of their transport (this run's median,
or the slow-link rule's reference), per step, counting only the share of communication not hidden by computation.
Severity follows the severity policy on that saving (a warning only when it is a real share of the step). **Byte alignment**: SDMA transfers whose size is not a multiple of
`align_bytes`, above `misaligned_share` of them (information). Link bandwidth against the reference of its
transport is checked by the slow-link rule; retransmissions are not in the files read."""),
    params=Thresholds, check=check,
    source=N_("msprof-analyze advisor: communication packet and byte_alignment checks; MindStudio Insight"))
