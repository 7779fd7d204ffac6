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

from reportgen import urls
from reportgen.i18n import N_, lazy
from reportgen.rules.base import Context, Finding, Rule, fmt_pct, th


@dataclass(frozen=True)
class Thresholds:
    sdma_small_mb: float = th(16.0, 'an SDMA / HCCS / PCIe transfer below this many MB is a small packet (msprof-analyze)')
    rdma_small_mb: float = th(1.0, 'an RDMA transfer below this many MB is a small packet (msprof-analyze)')
    small_share: float = th(0.2, 'share of transfers that are small packets from which it is reported')
    comm_matters: float = th(0.1, 'communication not hidden by computation, as a share of the step, from which small '
                                  'packets are a warning (below it: information)')
    align_bytes: float = th(512.0, 'transfer sizes should be a multiple of this many bytes (msprof-analyze)')
    misaligned_share: float = th(0.2, 'share of SDMA transfers whose size is not a multiple of it, from which it is '
                                      'reported (information)')


ADVICE_SMALL = N_("""\
Small transfers do not reach the link's bandwidth: their time is mostly latency.
- Fuse collectives: MindSpore `comm_fusion` / `all_reduce_fusion_config`; torch DDP `bucket_cap_mb`; Megatron
  `--overlap-grad-reduce` with larger buckets.
- Fewer, larger point-to-point messages between pipeline stages (larger micro-batches).""")

ADVICE_ALIGN = N_("""\
Transfers whose size is not a multiple of 512 bytes use the SDMA engines less efficiently. Pad the tensors that are
communicated (hidden sizes, vocabulary, bucket sizes) to a multiple of 512 bytes (256 fp16 values).""")


def _rate(a) -> float:
    rates = a.overlap.rates or {}
    v = rates.get("communication_rate")
    if isinstance(v, (int, float)) and math.isfinite(v):
        return float(v)
    shares = a.overlap.per_rank["comm_share"].dropna() if "comm_share" in a.overlap.per_rank else None
    return float(shares.median()) if shares is not None and len(shares) else math.nan


def check(ctx: Context) -> list[Finding]:
    a, t = ctx.a, ctx.t
    lo = a.comm.link_ops if a.comm.has_data else None
    if lo is None or lo.empty or "size_mb" not in lo.columns:
        return []
    lo = lo[lo["size_mb"].notna() & (lo["size_mb"] > 0) & (lo["transport"] != "LOCAL")]
    if lo.empty:
        return []
    rdma = lo["transport"].astype(str).str.upper() == "RDMA"
    small = np.where(rdma, lo["size_mb"] < t.rdma_small_mb, lo["size_mb"] < t.sdma_small_mb)
    out = []
    share = float(small.mean())
    rate = _rate(a)
    if share > t.small_share:
        by = {str(tr): round(float(np.mean(small[(lo["transport"] == tr).to_numpy()])), 4)
              for tr in sorted(lo["transport"].astype(str).unique())}
        matters = not math.isnan(rate) and rate >= t.comm_matters
        out.append(Finding(
            id="comm-health.small-packets", category="communication_bound",
            severity="warning" if matters else "info",
            title=lazy(N_("{share} of transfers are small packets (under {sdma} MB on SDMA, {rdma} MB on RDMA); "
                          "communication not hidden by computation is {rate} of the step"),
                       share=fmt_pct(share), sdma=f"{t.sdma_small_mb:g}", rdma=f"{t.rdma_small_mb:g}",
                       rate=fmt_pct(rate)),
            advice=lazy(ADVICE_SMALL),
            why=lazy(N_("A small transfer's time is mostly latency: many of them keep the links busy without moving "
                        "much data.")),
            page=urls.COMM_LINKS,
            evidence={"small_share": share, "transfers": int(len(lo)), "small_transfers": int(small.sum()),
                      "small_share_by_transport": by, "communication_rate": rate}))
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
`small_share` of the transfers they are reported, as a warning when communication not hidden by computation is at
least `comm_matters` of the step. **Byte alignment**: SDMA transfers whose size is not a multiple of
`align_bytes`, above `misaligned_share` of them (information). Link bandwidth against the reference of its
transport is checked by the slow-link rule; retransmissions are not in the files read."""),
    params=Thresholds, check=check,
    source="msprof-analyze advisor: communication packet and byte_alignment checks; MindStudio Insight")
