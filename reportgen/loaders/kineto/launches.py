"""Device events and their host launches: the launch of each kernel by correlation id, and the collective host
op (record_param_comms, nccl:*, c10d::*) a launch lies in on the launching thread.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reportgen import intervals as iv
from reportgen.dataquality import dq
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.kineto.events import collective_kind

if TYPE_CHECKING:
    from reportgen.loaders.kineto.scan import _Acc
    from reportgen.loaders.kineto.steps import DeviceEvents


def launch_index(rt_corr, k_corr) -> np.ndarray:
    """For each device event, the index of its host launch (same correlation id) in `rt_corr`, -1 when none."""
    rc = np.asarray(rt_corr, dtype="int64")
    kc = np.asarray(k_corr, dtype="int64")
    if not len(rc) or not len(kc):
        return np.full(len(kc), -1, dtype="int64")
    order = np.argsort(rc, kind="stable")
    pos = np.clip(np.searchsorted(rc[order], kc), 0, len(rc) - 1)
    found = (rc[order][pos] == kc) & (kc >= 0)
    return np.where(found, order[pos], -1)


def _launched_in_comm_op(acc: _Acc, li: np.ndarray) -> np.ndarray:
    """Whether each device event's launch lies inside a collective's host op on the launching thread."""
    out = np.zeros(len(li), dtype=bool)
    if not len(acc.hc_s) or not (li >= 0).any():
        return out
    hs, he = np.frombuffer(acc.hc_s, dtype="float64"), np.frombuffer(acc.hc_e, dtype="float64")
    ht = np.asarray(acc.hc_tid, dtype="int64")
    rt_ts = np.frombuffer(acc.rt_ts, dtype="float64")
    rt_tid = np.asarray(acc.rt_tid, dtype="int64")
    has = li >= 0
    lt, ltid = rt_ts[li[has]], rt_tid[li[has]]
    hit = np.zeros(len(lt), dtype=bool)
    for t in np.unique(ht):
        u = iv.merge(hs[ht == t], he[ht == t])
        sel = ltid == t
        if not sel.any() or not len(u[0]):
            continue
        x = lt[sel]
        j = np.searchsorted(u[0], x, side="right") - 1
        ok = j >= 0
        ok[ok] &= x[ok] <= u[1][j[ok]]
        hit[sel] = ok
    out[has] = hit
    return out


def _containing_op(rt_corr, rt_ts, rt_tid, hc: tuple, corrs, keys: list, look_back: int = 16) -> dict:
    """key -> the name of a host op (`hc` = starts, ends, threads, names) holding the launch of correlation id
    `corrs[i]` on the launching thread; a kind-bearing name is preferred among nested ops. Per thread, the ops
    sorted by start and at most `look_back` of them before the launch looked at (nesting is shallow)."""
    li = launch_index(rt_corr, corrs)
    hs, he = np.asarray(hc[0], dtype="float64"), np.asarray(hc[1], dtype="float64")
    ht = np.asarray(hc[2], dtype="int64")
    by_thread = {}
    for t in np.unique(ht).tolist():
        idx = np.flatnonzero(ht == t)
        idx = idx[np.argsort(hs[idx], kind="stable")]
        by_thread[t] = (idx, hs[idx])
    out = {}
    for key, l in zip(keys, li.tolist()):
        if l < 0:
            continue
        t, tid = rt_ts[l], rt_tid[l]
        got = by_thread.get(tid)
        if got is None:
            continue
        idx, starts = got
        j = int(np.searchsorted(starts, t, side="right"))
        names = [hc[3][k] for k in idx[max(0, j - look_back):j][::-1] if he[k] >= t]
        if names:
            out[key] = next((n for n in names if collective_kind(n) != "collective"), names[0])
    return out


# The share of the step windows' time that device events without a launch last from which their entry is a warning
# (a finding naming the rank). Real, healthy traces have such events: the A100 sample's 868 kernels, copies and sets
# (4.8 % of its steps: no runtime event in the trace carries their ids) and the
# DLRM sample's 64 elementwise kernels (~1 %): information, as HTA reads them the same way. From a tenth of the
# steps' time, the step breakdown's free time is mostly such events: a warning.
UNLAUNCHED_WARNING_SHARE = 0.10


def note_unlaunched(acc: _Acc, ev: DeviceEvents, path: Path, log: IssueLog) -> None:
    """Name the device events inside the step windows that no host launch maps to a step: a kernel (copy, set)
    without its `correlation` id, or with one no runtime launch carries (the launch lost it, or the launch is not in
    the trace). The steps are mapped through the launches (HTA's way, `steps.device_windows`): such an event counts
    in no step's computation or communication and its time shows as free; the numbers stay HTA's and the entry
    says how much time that is. Nothing when the steps are not mapped (the device time is then cut at the
    windows: nothing is left out)."""
    if not len(ev.start) or not (ev.step >= 0).any():
        return
    lost = (ev.step < 0) & np.isnan(ev.launch)
    if not lost.any():
        return
    starts = np.array([w[1] for w in ev.windows], dtype="float64")
    ends = np.array([w[2] for w in ev.windows], dtype="float64")
    j = np.searchsorted(starts, ev.start, side="right") - 1
    inside = j >= 0
    inside[inside] &= ev.start[inside] < ends[j[inside]]
    lost &= inside
    if not lost.any():
        return
    names = list(acc.dev_names)
    first = int(np.flatnonzero(lost)[np.argmin(ev.start[lost])])
    nid = np.asarray(acc.dev_nid, dtype="int64")
    us = float((ev.end - ev.start)[lost].sum())
    span = float((ends - starts).sum())
    share = us / span if span > 0 else 1.0
    log.add(path, dq("kineto.kernels-without-launch", n=int(lost.sum()), no_id=int((ev.corr[lost] < 0).sum()),
                     ms=format(us / 1e3, ".3f"), share=format(share, ".1%"),
                     example=f"{names[nid[first]][:80]!r} at ts {float(ev.start[first])}"),
            "warning" if share >= UNLAUNCHED_WARNING_SHARE else "info", name_rank=True)  # (not damage: real traces
    # have them -- the A100 and DLRM samples --, so no door class: `test_clean_real_samples_gain_no_door_entry`)
