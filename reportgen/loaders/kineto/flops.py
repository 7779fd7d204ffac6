"""FLOPs inputs: the operators with FLOPs read in the pass (matrix multiplications, convolutions and attention
with their input shapes, any operator with a `with_flops` count) and their device time per step.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Optional

import numpy as np
import pandas as pd

from reportgen.loaders import op_flops
from reportgen.model import OP_FLOPS_COLUMNS, OpFlops
from reportgen.loaders.kineto.events import _num
from reportgen.loaders.kineto.steps import step_of_launch

if TYPE_CHECKING:
    from reportgen.loaders.kineto.scan import _Acc
    from reportgen.loaders.kineto.steps import DeviceEvents


def _flop_op(acc: _Acc, e: dict, name: str, ts: float, dur: float, tid: int) -> None:
    args = e.get("args")
    if not isinstance(args, dict):
        return
    prof = _num(args.get("flops")) if "flops" in args else math.nan
    dims = args.get("Input Dims")
    shaped = op_flops.torch_op_flops(name, dims, args.get("Concrete Inputs"))
    types = args.get("Input type")
    first = op_flops.TORCH_GEMM_OPS.get(name, 0) + (1 if name in op_flops.SDPA_OPS and name.endswith("_backward")
                                                    else 0)
    dtype = op_flops.dtype_of(types[first]) if isinstance(types, list) and len(types) > first else ""
    n_in = 3 if name in op_flops.CONV_OPS or name in op_flops.SDPA_OPS else 2
    shapes = "x".join(str(d) for d in dims[first:first + n_in]).replace(" ", "") if isinstance(dims, list) else ""
    acc.fl.append((ts, ts + dur, tid, name, prof if prof >= 0 else math.nan,
                   math.nan if shaped is None else shaped, shapes[:120], dtype))


def _op_flops(acc: _Acc, ev: Optional["DeviceEvents"], rel: str) -> Optional[OpFlops]:
    """The operators with FLOPs, per step: the device time of each is that of the kernels launched from its thread
    while it ran (runtime launches and kernels paired by correlation id); nested ones count once (the outermost)."""
    if not acc.fl:
        return None
    recs = sorted(acc.fl, key=lambda r: (r[2], r[0], -r[1]))
    kept, end_of = [], {}
    for r in recs:  # an operator inside another one of the list on the same thread is the outer one's work
        if r[0] < end_of.get(r[2], -math.inf):
            continue
        end_of[r[2]] = r[1]
        kept.append(r)
    dev_ms = np.full(len(kept), np.nan)
    if ev is not None and len(acc.rt_corr):
        ok = ev.corr >= 0  # device time per launch correlation id (several kernels may share one: graphs)
        order = np.argsort(ev.corr[ok], kind="stable")
        kc, kd = ev.corr[ok][order], (ev.end - ev.start)[ok][order]
        uniq, first = np.unique(kc, return_index=True)
        ksum = np.add.reduceat(kd, first) if len(first) else np.zeros(0)
        rt_tid = np.asarray(acc.rt_tid, dtype="int64")
        rt_ts = np.asarray(acc.rt_ts, dtype="float64")
        rt_corr = np.asarray(acc.rt_corr, dtype="int64")
        by_tid = {}
        for t in set(r[2] for r in kept):
            idx = np.flatnonzero(rt_tid == t)
            idx = idx[np.argsort(rt_ts[idx], kind="stable")]
            by_tid[t] = (rt_ts[idx], rt_corr[idx])
        for i, r in enumerate(kept):
            ts_, corr = by_tid[r[2]]
            lo, hi = np.searchsorted(ts_, r[0], side="left"), np.searchsorted(ts_, r[1], side="right")
            if hi > lo and len(uniq):
                c = corr[lo:hi]
                pos = np.clip(np.searchsorted(uniq, c), 0, len(uniq) - 1)
                dev_ms[i] = float(ksum[pos[uniq[pos] == c]].sum()) / 1000.0
    windows = ev.windows if ev is not None else sorted((k, v[0], v[1]) for k, v in acc.steps.items())
    host = sorted((k, v[0], v[1]) for k, v in acc.steps.items()) or windows
    idx = step_of_launch(host, np.array([r[0] for r in kept], dtype="float64"))
    partial = ev.partial if ev is not None else set()
    rows = []
    for i, r in enumerate(kept):
        step = host[idx[i]][0] if idx[i] >= 0 else None
        if step is not None and step in partial:
            step = None  # the partial last step is left out, as from the step times
        prof, shaped = r[4], r[5]
        flops, basis = (prof, "profiler") if not math.isnan(prof) else (shaped, "shapes")
        if math.isnan(flops):
            continue
        rows.append((step, r[3], r[6], r[7], basis, flops, dev_ms[i]))
    if not rows:
        return None
    df = pd.DataFrame(rows, columns=["step", "op", "shapes", "dtype", "basis", "flops", "device_ms"])
    df["step"] = df["step"].astype("Int64")
    g = df.groupby(["step", "op", "shapes", "dtype", "basis"], dropna=False, sort=False)
    out = g.agg(count=("flops", "size"), flops=("flops", "sum"),
                device_ms=("device_ms", lambda x: float(x.sum()) if x.notna().any() else math.nan)).reset_index()
    return OpFlops(source=rel, ops=out[list(OP_FLOPS_COLUMNS)],
                   with_flops=bool((df["basis"] == "profiler").any()))
