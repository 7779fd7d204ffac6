"""Operator totals of the complete steps: device kernels and copies, communication kernels by collective
kind, gloo slices, and host operators' self time.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import TYPE_CHECKING, Optional

import numpy as np
import pandas as pd

from reportgen.model import OP_DETAIL_COLUMNS, Operators
from reportgen.loaders.kineto.events import collective_kind, kernel_type
from reportgen.loaders.kineto.steps import _complete_mask, _host_mask
from reportgen.loaders.kineto.communication import _comm_kinds

if TYPE_CHECKING:
    from reportgen.loaders.kineto.scan import _Acc
    from reportgen.loaders.kineto.steps import DeviceEvents


KERNEL_NAME_CAP = 160


def _operators(acc: _Acc, ev: Optional[DeviceEvents], host: list, rel: str, device: str) -> Optional[Operators]:
    """Operator totals of the complete steps only (the site divides them by the number of steps): device events
    mapped to those steps, host operators and gloo slices starting in them."""
    rows = []
    partial = ev.partial if ev is not None else set()
    if ev is not None and len(ev.start):
        sel = _complete_mask(ev)
        nid = np.asarray(acc.dev_nid, dtype="int64")
        dur = ev.end - ev.start
        names = list(acc.dev_names)
        comp = sel & ~ev.comm
        n = len(names)
        cnt = np.bincount(nid[comp], minlength=n)
        tot = np.bincount(nid[comp], weights=dur[comp], minlength=n)
        for c in np.flatnonzero(cnt):
            rows.append({"side": "gpu", "name": names[c][:KERNEL_NAME_CAP],
                         "op_type": kernel_type(names[c].split("] ", 1)[-1]), "count": float(cnt[c]),
                         "total_ms": tot[c] / 1e3, "avg_ms": tot[c] / 1e3 / cnt[c], "share": math.nan})
        # communication: one row per kernel name and collective kind (RCCL's ncclDevKernel_Generic runs them all)
        agg: dict = {}
        for i, k in _comm_kinds(acc, ev).items():
            if sel[i]:
                agg[(int(nid[i]), k)] = _add(agg.get((int(nid[i]), k)), float(dur[i]))
        kinds_of = Counter(c for c, _k in agg)
        for (c, k), (cn, tt, _mx) in agg.items():
            name = names[c][:KERNEL_NAME_CAP] if kinds_of[c] == 1 else f"{names[c][:KERNEL_NAME_CAP]} [{k}]"
            rows.append({"side": "communication", "name": name, "op_type": k, "count": float(cn),
                         "total_ms": tt / 1e3, "avg_ms": tt / 1e3 / cn, "share": math.nan})
    elif acc.colls:
        cs = np.array([c[0] for c in acc.colls], dtype="float64")
        keep = _host_mask(cs, host, partial)
        agg: dict = {}
        for (ts, dur, _k, _g, _s, name), k in zip(acc.colls, keep):
            if k:
                agg[name] = _add(agg.get(name), dur)
        for name, (cnt, tot, _mx) in agg.items():
            rows.append({"side": "communication", "name": name[:KERNEL_NAME_CAP], "op_type": collective_kind(name),
                         "count": float(cnt), "total_ms": tot / 1e3, "avg_ms": tot / 1e3 / cnt, "share": math.nan})
    if len(acc.cpu_s):
        self_us = _self_times(acc, _host_mask(np.frombuffer(acc.cpu_s, dtype="float64"), host, partial))
        counts = np.bincount(np.asarray(acc.cpu_name, dtype="int64")[
            _host_mask(np.frombuffer(acc.cpu_s, dtype="float64"), host, partial)], minlength=len(acc.names))
        names = list(acc.names)
        for i, nm in enumerate(names):
            if counts[i]:
                rows.append({"side": "hostcpu", "name": nm, "op_type": nm, "count": float(counts[i]),
                             "total_ms": self_us[i] / 1e3, "avg_ms": self_us[i] / 1e3 / counts[i],
                             "share": math.nan})
    if not rows:
        return None
    from reportgen.loaders.operators import assemble, types_from_detail

    detail = pd.DataFrame(rows, columns=list(OP_DETAIL_COLUMNS))
    parts = []
    for side, basis in (("gpu", "profiled window"), ("communication", "profiled window"),
                        ("hostcpu", "profiled window (self time)")):
        d = detail[detail["side"] == side].copy()
        if not len(d):
            continue
        tot = d["total_ms"].sum()
        d["share"] = d["total_ms"] / tot if tot > 0 else math.nan
        d = d.sort_values("total_ms", ascending=False)
        parts.append((side, rel, types_from_detail(d, side), d, basis))
    return assemble(parts)


def _add(k, dur):
    if k is None:
        return [1, dur, dur]
    k[0] += 1
    k[1] += dur
    k[2] = max(k[2], dur)
    return k


def _self_times(acc: _Acc, keep: Optional[np.ndarray] = None) -> np.ndarray:
    """Self time (µs) per operator name: its duration minus its direct children's, per thread; only the
    operators in `keep` are counted (their children are still subtracted)."""
    s = np.frombuffer(acc.cpu_s, dtype="float64")
    e = np.frombuffer(acc.cpu_e, dtype="float64")
    t = np.asarray(acc.cpu_tid, dtype="int64")
    nid = np.asarray(acc.cpu_name, dtype="int64")
    order = np.lexsort((-e, s, t))
    child = np.zeros(len(s))
    stack: list[int] = []
    cur_t = None
    sl, el, tl = s[order].tolist(), e[order].tolist(), t[order].tolist()
    for pos, i in enumerate(order.tolist()):
        if tl[pos] != cur_t:
            stack = []
            cur_t = tl[pos]
        st = sl[pos]
        while stack and el[stack[-1][1]] <= st:
            stack.pop()
        if stack:
            child[stack[-1][0]] += min(el[pos], el[stack[-1][1]]) - st
        stack.append((i, pos))
    self_t = np.maximum(e - s - child, 0.0)
    if keep is not None:
        self_t = np.where(keep, self_t, 0.0)
    return np.bincount(nid, weights=self_t, minlength=len(acc.names))
