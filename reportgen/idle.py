"""Idle time with its cause (HTA's idle-time breakdown, and beyond), and kernel-launch statistics.

A foundation module (numpy on arrays, no pipeline layer): the Kineto loader computes a rank's breakdown in its
worker, where the per-kernel arrays are, and the analysis, rules and pages read the result.

Per step window, the time the computation does not cover (step − computing) is split into:

* **communication**: communication kernels run while no computation does (exposed communication: the compute
  stream waits for the collective);
* **host wait**: the device runs nothing and the kernel that ends the gap was launched by the host *after* the
  device went idle: the device waited for the host (Python, operator dispatch, data loading, logging);
* **stream wait**: the device runs nothing although the kernel that ends the gap had been launched *before* the
  device went idle: it was queued behind another stream (an event from a communication stream), a synchronisation
  or a dependency the device resolves (HTA's "kernel wait" plus its "other" of cross-stream waits). The part of it
  during which a collective was already launched and had not started yet is counted as well
  (`stream_wait_comm_ms`): the device waits on communication that waits for its peers;
* of the host wait, the part during which the host was blocked inside a collective call (`host_wait_comm_ms`: a
  CPU backend such as gloo runs the collective on the host, which returns only when every peer has arrived; the
  device waits for the host, the host for its peers): not the host's to save, the late peer's;
* **other**: gaps shorter than `QUEUE_GAP_US` between queued kernels (scheduling overhead), gaps ended by a kernel
  whose launch is unknown, and gaps after the last kernel of the trace.

Launch statistics: the delay from a kernel's host launch to its start (p50 / p90 / max) and the longest queue
(kernels launched and not yet started at one time; per stream and on the device).

A pure function of arrays the loaders already have (µs): kernel start / end / communication flag / stream, the
launch time of each kernel (NaN: unknown; all kernels of a CUDA graph carry the graph's launch) and the step
windows. `from_step_ops` does the same from the execution view's operators and host dispatch (torch_npu's
AscendCL calls and task-queue slices, linked to their device tasks).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional, Sequence

import numpy as np
import pandas as pd

from reportgen import intervals as iv

if TYPE_CHECKING:
    from reportgen.model import Run

QUEUE_GAP_US = 10.0  # a gap between queued kernels up to this long is the device's scheduling overhead ("other")
COLUMNS = ("step", "step_ms", "computing_ms", "idle_ms", "communication_ms", "host_wait_ms", "host_wait_comm_ms",
           "stream_wait_ms", "stream_wait_comm_ms", "other_ms")
CAUSES = ("communication_ms", "host_wait_ms", "stream_wait_ms", "other_ms")  # they add up to idle_ms


@dataclass
class IdleBreakdown:
    """One rank's idle time by cause per step (ms) and its launch statistics."""

    steps: pd.DataFrame  # COLUMNS
    launch: dict = field(default_factory=dict)  # n, p50_ms, p90_ms, max_ms, max_queue, max_queue_stream
    basis: str = "kernels"  # "kernels" (Kineto launches) | "host dispatch" (torch_npu, the execution view's steps)

    def mean(self) -> dict:
        """Mean per step of every column (ms), over the steps measured."""
        if not len(self.steps):
            return {}
        return {c: float(self.steps[c].mean()) for c in COLUMNS if c != "step"}

    def to_dict(self) -> dict:
        m = self.mean()
        out = {k: (round(v, 4) if isinstance(v, float) and math.isfinite(v) else None) for k, v in m.items()}
        out["steps"] = int(len(self.steps))
        out["basis"] = self.basis
        out["launch"] = {k: (round(v, 4) if isinstance(v, float) else v) for k, v in self.launch.items()}
        return out


def _merge(s: np.ndarray, e: np.ndarray) -> iv.Intervals:
    return iv.merge(s, e) if len(s) else (np.zeros(0), np.zeros(0))


def breakdown(k_start: Sequence[float], k_end: Sequence[float], k_comm: Sequence[bool], k_stream: Optional[Sequence],
              k_launch: Sequence[float], windows: Sequence[tuple], basis: str = "kernels",
              host_comm: Optional[tuple] = None) -> Optional[IdleBreakdown]:
    """The idle breakdown of one rank (all times µs; see the module's docstring). `host_comm`: (starts, ends) of
    the host's collective calls (any thread), for `host_wait_comm_ms`. None without kernels or windows, or when no
    kernel has a known launch (nothing can be told apart)."""
    ks = np.asarray(k_start, dtype="float64")
    ke = np.asarray(k_end, dtype="float64")
    kc = np.asarray(k_comm, dtype=bool)
    kl = np.asarray(k_launch, dtype="float64")
    if k_stream is None:
        codes, labels = np.zeros(len(ks), dtype="int64"), np.array([""], dtype=object)
    else:
        codes, labels = pd.factorize(pd.Series(np.asarray(k_stream, dtype=object)).astype(str))
    stream = np.asarray(codes, dtype="int64")
    if not len(ks) or not len(windows) or not (len(ks) == len(ke) == len(kc) == len(kl) == len(stream)):
        return None
    if not np.isfinite(kl).any():
        return None
    order = np.argsort(ks, kind="stable")
    ks, ke, kc, kl, stream = ks[order], ke[order], kc[order], kl[order], stream[order]
    comp = _merge(ks[~kc], ke[~kc])
    comm = _merge(ks[kc], ke[kc])
    busy = _merge(ks, ke)
    alone = iv.subtract(comm, comp)
    hc = (_merge(np.asarray(host_comm[0], dtype="float64"), np.asarray(host_comm[1], dtype="float64"))
          if host_comm is not None and len(host_comm[0]) else None)
    # pending collectives: comm kernels sorted by start, the earliest launch from each on (suffix minimum)
    cs, cl = ks[kc], np.where(np.isfinite(kl[kc]), kl[kc], np.inf)
    suf = np.minimum.accumulate(cl[::-1])[::-1] if len(cl) else cl
    # kernels starting at the same time form a group; the group's earliest known launch
    new_group = np.r_[True, ks[1:] != ks[:-1]]
    grp_of = np.cumsum(new_group) - 1
    grp_min = np.minimum.reduceat(np.where(np.isfinite(kl), kl, np.inf), np.flatnonzero(new_group))
    rows = []
    for step, a, b in windows:
        a, b = float(a), float(b)
        if not b > a:
            continue
        w = (np.array([a]), np.array([b]))
        c_ms = iv.total(iv.intersect(comp, w))
        exposed = iv.total(iv.intersect(alone, w))
        gaps = iv.subtract(w, busy)
        host, stream_w, stream_c, other, hg = _classify(gaps[0], gaps[1], busy[1], ks, grp_min, grp_of, cs, suf)
        host_c = iv.total(iv.intersect(hg, hc)) if hc is not None and len(hg[0]) else 0.0
        idle = (b - a) - c_ms
        rows.append({"step": step, "step_ms": (b - a) / 1e3, "computing_ms": c_ms / 1e3, "idle_ms": idle / 1e3,
                     "communication_ms": exposed / 1e3, "host_wait_ms": host / 1e3,
                     "host_wait_comm_ms": min(host_c, host) / 1e3, "stream_wait_ms": stream_w / 1e3,
                     "stream_wait_comm_ms": stream_c / 1e3, "other_ms": other / 1e3})
    if not rows:
        return None
    steps = pd.DataFrame(rows, columns=list(COLUMNS))
    return IdleBreakdown(steps=steps, launch=launch_stats(ks, kl, stream, windows, labels), basis=basis)


def _classify(g0: np.ndarray, g1: np.ndarray, busy_end: np.ndarray, ks: np.ndarray, grp_min: np.ndarray,
              grp_of: np.ndarray, cs: np.ndarray, suf: np.ndarray) -> tuple:
    """Host wait, stream wait, of it with a collective pending, and other (µs) of the gaps [g0, g1] (see the
    module's docstring), and the host-wait gaps themselves (starts, ends)."""
    ok = g1 > g0
    g0, g1 = g0[ok], g1[ok]
    if not len(g0):
        return 0.0, 0.0, 0.0, 0.0, (np.zeros(0), np.zeros(0))
    gap = g1 - g0
    # when the device went idle: the end of the busy time before the gap (the gap may be cut by the window)
    k = np.searchsorted(busy_end, g0, side="right") - 1
    went_idle = np.where(k >= 0, busy_end[np.clip(k, 0, None)], g0)
    # the work that ends the gap: the first kernels to start at or after its end (their earliest launch)
    i = np.searchsorted(ks, g1, side="left")
    has_next = i < len(ks)
    ic = np.clip(i, 0, len(ks) - 1)
    launch = np.where(has_next, grp_min[grp_of[ic]] if len(ks) else np.inf, np.inf)
    known = has_next & np.isfinite(launch)
    host = known & (launch >= went_idle)
    queued = known & ~host & (ks[ic] - went_idle > QUEUE_GAP_US)
    ci = np.searchsorted(cs, g1, side="left")
    pending = queued & (ci < len(cs))
    if len(cs):
        pending &= suf[np.clip(ci, 0, len(cs) - 1)] <= went_idle
    h, q, p = float(gap[host].sum()), float(gap[queued].sum()), float(gap[pending].sum())
    return h, q, p, float(gap.sum()) - h - q, (g0[host], g1[host])


def launch_times(rt_corr, rt_ts, k_corr) -> np.ndarray:
    """The host launch time of each kernel (µs) from the runtime calls' correlation ids; NaN where none matches."""
    rc, rt = np.asarray(rt_corr, dtype="int64"), np.asarray(rt_ts, dtype="float64")
    kc = np.asarray(k_corr, dtype="int64")
    out = np.full(len(kc), np.nan)
    if not len(rc) or not len(kc):
        return out
    o = np.argsort(rc, kind="stable")
    rc, rt = rc[o], rt[o]
    pos = np.clip(np.searchsorted(rc, kc), 0, len(rc) - 1)
    found = (rc[pos] == kc) & (kc >= 0)
    out[found] = rt[pos[found]]
    return out


def launch_stats(ks: np.ndarray, kl: np.ndarray, stream: np.ndarray, windows: Sequence[tuple],
                 labels: Sequence = ("",)) -> dict:
    """Launch delay (start − launch, ms) of the kernels starting inside the windows, and the longest queue:
    the most kernels launched and not yet started at one time, on the device and on the busiest stream."""
    starts = np.array([float(w[1]) for w in windows])
    ends = np.array([float(w[2]) for w in windows])
    o = np.argsort(starts)
    starts, ends = starts[o], ends[o]
    idx = np.searchsorted(starts, ks, side="right") - 1
    inside = (idx >= 0) & (ks < ends[np.clip(idx, 0, None)])
    ok = inside & np.isfinite(kl)
    if not ok.any():
        return {}
    delay = (ks[ok] - kl[ok]) / 1e3
    out = {"n": int(ok.sum()), "p50_ms": float(np.percentile(delay, 50)), "p90_ms": float(np.percentile(delay, 90)),
           "max_ms": float(delay.max()), "max_queue": _max_queue(kl[ok], ks[ok])}
    best, where = -1, None
    for s in np.unique(stream[ok]):
        sel = ok & (stream == s)
        q = _max_queue(kl[sel], ks[sel])
        if q > best:
            best, where = q, s
    name = str(labels[int(where)]) if where is not None and 0 <= int(where) < len(labels) else ""
    if name:  # the streams are known
        out["max_queue_stream"] = name
        out["max_queue_on_stream"] = int(best)
    return out


def _max_queue(launch: np.ndarray, start: np.ndarray) -> int:
    """The most kernels launched and not started at one instant (a start at the same time as a launch first)."""
    t = np.concatenate([start, launch])
    d = np.concatenate([-np.ones(len(start)), np.ones(len(launch))])
    o = np.lexsort((d, t))  # at equal times the start (−1) before the launch (+1)
    return int(max(0.0, np.cumsum(d[o]).max())) if len(t) else 0


# --- torch_npu (and any run with an execution view): from the operators of the chosen steps ------------------


def from_step_ops(ops: dict) -> Optional[IdleBreakdown]:
    """The breakdown of one rank from its `StepOps` per step (ms from the step's start): device operators with
    their lanes, the host dispatch slices with the operator each launched (`host_launch`). The launch of an
    operator is the start of its dispatch slice (the last one naming it). None when no dispatch is linked."""
    ks, ke, kc, kst, kl, wins = [], [], [], [], [], []
    base = 0.0
    for step in sorted(ops):
        o = ops[step]
        n = len(o.names)
        if not n:
            continue
        lt = np.full(n, np.nan)
        for i, j in enumerate(getattr(o, "host_launch", []) or []):
            if 0 <= j < n and i < len(o.host_start):
                lt[j] = o.host_start[i] if math.isnan(lt[j]) else max(lt[j], o.host_start[i])
        if not np.isfinite(lt).any():
            continue
        off = base * 1e3
        s = np.asarray(o.start, dtype="float64") * 1e3 + off
        ks.append(s)
        ke.append(s + np.asarray(o.dur, dtype="float64") * 1e3)
        kc.append(np.array([c != "compute" for c in o.classes], dtype=bool))
        kst.append(np.asarray(o.lanes if len(o.lanes) == n else [""] * n, dtype=object))
        kl.append(lt * 1e3 + off)
        wins.append((step, off, off + float(o.step_ms) * 1e3))
        base += float(o.step_ms) * 2 + 1.0  # steps laid apart: one step's gaps never end at the next one's kernels
    if not wins:
        return None
    return breakdown(np.concatenate(ks), np.concatenate(ke), np.concatenate(kc), np.concatenate(kst),
                     np.concatenate(kl), wins, basis="host dispatch")


def run_idle(run: "Run") -> dict[int, IdleBreakdown]:
    """Per rank, its idle breakdown: the loader's (every step of a Kineto trace), else the one from the execution
    view's steps (torch_npu host dispatch). Computed once per run."""
    cached = getattr(run, "_idle_cache", None)
    if cached is not None:
        return cached
    out: dict[int, IdleBreakdown] = {}
    for r, d in run.ranks.items():
        b = getattr(d, "idle", None)
        if b is not None and len(b.steps):
            out[r] = b
    ex = getattr(run, "execution", None)
    if ex is not None and getattr(ex, "ops", None):
        by_rank: dict[int, dict] = {}
        for step, per in ex.ops.items():
            for r, o in per.items():
                by_rank.setdefault(int(r), {})[step] = o
        for r, ops in by_rank.items():
            if r in out or r not in run.ranks:
                continue
            try:
                b = from_step_ops(ops)
            except (ValueError, TypeError, IndexError):
                b = None
            if b is not None:
                out[r] = b
    try:
        run._idle_cache = out  # type: ignore[attr-defined]
    except AttributeError:
        pass
    return out


def run_table(run: "Run") -> pd.DataFrame:
    """One row per rank: mean per step of every column, and the launch statistics."""
    rows = []
    for r, b in sorted(run_idle(run).items()):
        m = b.mean()
        rows.append({"rank": r, **m, "basis": b.basis, "steps": len(b.steps),
                     **{f"launch_{k}": v for k, v in b.launch.items()}})
    return pd.DataFrame(rows)
