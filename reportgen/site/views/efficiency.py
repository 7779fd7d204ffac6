"""The overview's efficiency section: each device and its peak, MFU per rank and stage, the GEMMs' headroom."""

from __future__ import annotations

from typing import Optional

from reportgen.analysis import Analysis
from reportgen.analysis.efficiency import BASIS_LABELS, STATUS_LABELS, Efficiency
from reportgen.fmt import compact_ranks, share as fmt_share
from reportgen.i18n import _, text

MAX_RANK_ROWS = 32  # more ranks: the lowest, median and highest MFU ranks and the stages


def _tf(v: Optional[float]) -> str:
    return "" if v is None else (f"{v:,.1f}" if v >= 10 else f"{v:,.3g}")


def _mfu(v: Optional[float]) -> str:
    return "" if v is None else fmt_share(v, 2 if v < 0.1 else 1)


def efficiency_context(a: Analysis) -> Optional[dict]:
    e: Optional[Efficiency] = a.efficiency
    if e is None:
        return None
    devices = []
    for d in e.devices:
        peaks = ", ".join(f"{k} {_tf(v)}" if k != "any" else _tf(v) for k, v in d.tflops.items())
        devices.append({"model": d.model or _("not recorded"), "entry": d.entry, "peaks": peaks,
                        "mem": f"{d.mem_gbps:,.0f}" if d.mem_gbps else "", "status": d.status,
                        "status_text": _(STATUS_LABELS[d.status]), "source": d.source,
                        "ranks": compact_ranks(d.ranks)})
    rows = [x for x in e.per_rank if x.flops_per_step is not None or x.mfu is not None]
    missing = sorted(set(x.rank for x in e.per_rank) - {x.rank for x in rows})
    capped = len(rows) > MAX_RANK_ROWS
    if capped:
        with_mfu = sorted((x for x in rows if x.mfu is not None), key=lambda x: x.mfu)
        pick = [with_mfu[0], with_mfu[len(with_mfu) // 2], with_mfu[-1]] if with_mfu else rows[:3]
        rows = sorted({x.rank: x for x in pick}.values(), key=lambda x: x.rank)
    rank_rows = []
    for x in rows:
        steps = [m for _s, m in x.per_step]
        rank_rows.append({
            "rank": x.rank, "stage": x.stage, "mfu": _mfu(x.mfu),
            "per_step": (f"{_mfu(min(steps))} – {_mfu(max(steps))}" if len(steps) > 1 else ""),
            "tflop": "" if x.flops_per_step is None else f"{x.flops_per_step / 1e12:,.4g}",
            "step_ms": "" if x.step_ms is None else f"{x.step_ms:,.3f}",
            "peak": "" if x.peak_tflops is None else f"{_tf(x.peak_tflops)}" + (f" ({x.dtype})" if x.dtype else ""),
            "known": "" if x.known_share is None else fmt_share(x.known_share, 1)})
    gemms = [{"op": g.op, "shapes": g.shapes, "dtype": g.dtype, "ranks": g.ranks, "calls": f"{g.calls_per_step:,.4g}",
              "ms": f"{g.ms_per_step:,.3f}", "tflops": _tf(g.tflops),
              "eff": "" if g.efficiency is None else fmt_share(g.efficiency, 1),
              "headroom": "" if g.headroom_ms is None else f"{g.headroom_ms:,.3f}"} for g in e.gemms]
    low_cover = [x for x in e.per_rank if x.mfu is not None and x.known_share is not None and x.known_share < 0.5]
    notes = [text(n) for n in e.notes]
    if low_cover and e.flops_basis in ("shapes", "profiler"):
        share = max(x.known_share for x in low_cover)
        notes.append(_("FLOPs are known for at most {share} of the computing time (operators without a FLOPs count "
                       "are not counted): the MFU is a lower bound").format(
                           share=fmt_share(share, 1)))
    return {
        "mfu": _mfu(e.mfu), "basis": _(BASIS_LABELS[e.flops_basis]) if e.flops_basis else "",
        "statement": text(e.statement) if e.statement is not None else "",
        "devices": devices, "ranks": rank_rows, "n_ranks": len(e.per_rank), "shown": len(rank_rows),
        "capped": capped, "missing": compact_ranks(missing),
        "stages": [{"stage": s["stage"], "ranks": compact_ranks(s["ranks"]), "mfu": _mfu(s["mfu"])} for s in e.stages]
        if len(e.stages) > 1 else [],
        "gemms": gemms, "ceiling": fmt_share(e.ceiling_fraction, 0),
        "headroom": "" if e.headroom_ms is None else f"{e.headroom_ms:,.3f}", "notes": notes,
        "expert": _expert_rows(a),
    }


def _expert_rows(a: Analysis) -> list[dict]:
    """One row per expert-parallel group (analysis.expert): expert time per step (mean, max), peak-to-mean, hot
    ranks, what balancing saves, and the all-to-all time per step (mean over its ranks)."""
    eb = getattr(a, "expert", None)
    if eb is None:
        return []

    def ms(v):
        return "" if v is None else f"{v:,.3f}"
    rows = []
    for g in eb.groups:
        a2a = list(g.alltoall_ms.values())
        rows.append({"group": g.name, "ranks": compact_ranks(g.ranks), "mean": ms(g.mean_ms), "max": ms(g.max_ms),
                     "ratio": "" if g.peak_to_mean is None else f"{g.peak_to_mean:.2f}",
                     "hot": compact_ranks(g.hot_ranks), "saving": ms(g.saving_ms),
                     "a2a": ms(sum(a2a) / len(a2a)) if a2a else ""})
    return rows
