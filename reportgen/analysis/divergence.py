"""Where a slow rank falls behind: its operator timeline against the fastest rank of its stage.

MindStudio Insight documents this as a manual procedure: put the slowest and the fastest device of a stage side by
side, align them on their first shared collective and find the first operator where they part. The execution view
(`analysis.execution`) has the operator timelines of the steps it shows (MindInsight, trace_view.json, Kineto),
already aligned on the first shared collective; operators are joined by name and occurrence (the k-th `MatMul` of
the step on one device is the k-th on the other). Walking the joined operators in the fast rank's order, the first
one that takes longer on the slow rank by more than the thresholds is where it diverges; the operator types whose
extra time adds up to most of the gap are what to look at.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd

from reportgen.analysis.execution import OP_SUFFIX_RE


@dataclass(frozen=True)
class Divergence:
    step: int
    slow_rank: int
    fast_rank: int
    first_op: str  # the operator's name as recorded
    first_type: str
    first_index: int  # its position among the slow rank's joined operators (0-based)
    first_at_ms: float  # its start on the fast rank (aligned ms of the execution view)
    first_extra_ms: float  # how much longer it took on the slow rank
    gap_ms: float  # Σ extra time of the joined compute operators (slow − fast)
    types: list[dict]  # [{"type", "extra_ms", "share"}] by extra time, most first

    def to_dict(self) -> dict:
        return {"step": self.step, "slow_rank": self.slow_rank, "fast_rank": self.fast_rank,
                "first_op": self.first_op, "first_type": self.first_type, "first_index": self.first_index,
                "first_at_ms": round(self.first_at_ms, 4), "first_extra_ms": round(self.first_extra_ms, 4),
                "gap_ms": round(self.gap_ms, 4), "types": self.types}


def op_type(name: str) -> str:
    return OP_SUFFIX_RE.sub("", str(name).rsplit("/", 1)[-1])


def _ops(m, rank: int) -> pd.DataFrame:
    """The compute operators of `rank` in the step, on the view's common time axis, numbered by occurrence."""
    o = m.ops[rank]
    f = pd.DataFrame({"name": list(o.names), "cls": list(o.classes), "start": m.aligned_start(rank),
                      "dur": np.asarray(o.dur, dtype=float)})
    f = f[f["cls"] == "compute"].sort_values("start", kind="stable")
    f["k"] = f.groupby("name").cumcount()
    return f[["name", "k", "start", "dur"]]


def divergence(view, slow: int, candidates: list[int], *, min_op_ms: float = 0.05, min_op_rel: float = 0.2,
               min_gap_ms: float = 1.0, top: int = 3) -> Optional[Divergence]:
    """The divergence point of rank `slow` against the fastest of `candidates` (its stage's other ranks) in the
    first execution-view step that has both; None without operator timelines or when they do not part by
    `min_gap_ms`. An operator diverges when it takes more than `min_op_ms` and `min_op_rel` of its time longer."""
    for m in getattr(view, "marey", None) or []:
        present = set(getattr(m, "ops", None) or {})
        peers = [r for r in candidates if r != slow and r in present]
        if slow not in present or not peers:
            continue
        busy = {d.rank: d.busy_ms.get("compute", 0.0) for d in m.devices}
        fast = int(min(peers, key=lambda r: busy.get(r, float("inf"))))
        j = _ops(m, fast).merge(_ops(m, slow), on=["name", "k"], suffixes=("_f", "_s"))
        if j.empty:
            continue
        j = j.sort_values("start_f", kind="stable").reset_index(drop=True)
        j["extra"] = j["dur_s"] - j["dur_f"]
        gap = float(j["extra"].sum())
        if gap < min_gap_ms:
            return None
        hit = j[(j["extra"] > min_op_ms) & (j["extra"] > min_op_rel * j["dur_f"])]
        if hit.empty:
            return None
        first = hit.iloc[0]
        j["type"] = j["name"].map(op_type)
        by_type = j.groupby("type")["extra"].sum().sort_values(ascending=False)
        types = [{"type": str(t), "extra_ms": round(float(v), 4), "share": round(float(v) / gap, 4)}
                 for t, v in by_type.head(top).items() if v > 0]
        return Divergence(step=int(m.step), slow_rank=int(slow), fast_rank=fast, first_op=str(first["name"]),
                          first_type=op_type(first["name"]), first_index=int(hit.index[0]),
                          first_at_ms=float(first["start_f"]), first_extra_ms=float(first["extra"]), gap_ms=gap,
                          types=types)
    return None
