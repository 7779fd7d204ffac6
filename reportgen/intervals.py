"""Interval arithmetic for timelines: the overlap algorithm MindSpore's timeline generator uses.

Pure functions on sorted interval arrays (`starts`, `ends` as float numpy arrays, any time unit). They
reproduce `AscendTimelineGenerator` (`_get_merged_time_list`, `_get_intersection_time`,
`_compute_time_inside_step`) including its quirks, so recomputed values match the producer's
`ascend_cluster_analyse_*.csv` files:

* `gaps` only counts holes *inside* the span of a set, never before its first or after its last interval;
* `per_step` does not clip intervals at step boundaries, and an interval past the current step's end
  moves the cursor exactly one step on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

Intervals = tuple[np.ndarray, np.ndarray]  # (starts, ends), sorted by start, non-overlapping after merge()


def _arr(x) -> np.ndarray:
    return np.asarray(x, dtype="float64").reshape(-1)


def empty() -> Intervals:
    return np.empty(0), np.empty(0)


def merge(starts, ends) -> Intervals:
    """Union of [start, end] intervals; a segment joins the previous one when it starts at or before its end."""
    s, e = _arr(starts), _arr(ends)
    if s.size == 0:
        return empty()
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    run_end = np.maximum.accumulate(e)
    # A new merged segment starts where the start is beyond every end seen so far.
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    new[1:] = s[1:] > run_end[:-1]
    idx = np.flatnonzero(new)
    out_s = s[idx]
    last = np.append(idx[1:] - 1, s.size - 1)
    out_e = run_end[last]
    return out_s, out_e


def gaps(merged: Intervals) -> Intervals:
    """Holes between consecutive merged intervals (inside the set's span only)."""
    s, e = merged
    if s.size < 2:
        return empty()
    gs, ge = e[:-1], s[1:]
    keep = ge > gs
    return gs[keep], ge[keep]


def intersect(a: Intervals, b: Intervals) -> Intervals:
    """Intersection of two merged interval lists (two-pointer walk, vectorised per element of `a`)."""
    a_s, a_e = a
    b_s, b_e = b
    if a_s.size == 0 or b_s.size == 0:
        return empty()
    # For each interval of a, the range of b intervals that can overlap it.
    lo = np.searchsorted(b_e, a_s, side="right")
    hi = np.searchsorted(b_s, a_e, side="left")
    counts = np.maximum(hi - lo, 0)
    total = int(counts.sum())
    if total == 0:
        return empty()
    ai = np.repeat(np.arange(a_s.size), counts)
    offs = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    bi = np.repeat(lo, counts) + offs
    s = np.maximum(a_s[ai], b_s[bi])
    e = np.minimum(a_e[ai], b_e[bi])
    keep = e > s
    s, e = s[keep], e[keep]
    order = np.argsort(s, kind="stable")
    return s[order], e[order]


def subtract(a: Intervals, b: Intervals) -> Intervals:
    """a minus b (both merged)."""
    a_s, a_e = a
    if a_s.size == 0:
        return empty()
    if b[0].size == 0:
        return a_s.copy(), a_e.copy()
    # a \ b = a ∩ complement(b); the complement inside a's span is b's gaps plus the two open ends.
    lo = min(float(a_s[0]), float(b[0][0])) - 1.0
    hi = max(float(a_e[-1]), float(b[1][-1])) + 1.0
    cs = np.concatenate([[lo], b[1]])
    ce = np.concatenate([b[0], [hi]])
    keep = ce > cs
    return intersect(a, (cs[keep], ce[keep]))


def total(iv: Intervals) -> float:
    return float(np.sum(iv[1] - iv[0])) if iv[0].size else 0.0


def per_step(iv: Intervals, step_starts, step_ends) -> np.ndarray:
    """Sum of interval durations per step, assigned the way MindSpore's `_compute_time_inside_step` does.

    Intervals are walked in start order; one goes to the current step while its start is at or before that
    step's end, otherwise the cursor moves on exactly one step (intervals past the last step are dropped).
    Intervals are not clipped at step boundaries.
    """
    ends = _arr(step_ends)
    out = np.zeros(ends.size)
    if ends.size == 0 or iv[0].size == 0:
        return out
    step = 0
    for s, e in zip(iv[0].tolist(), iv[1].tolist()):
        if s > ends[step]:
            step += 1
            if step >= ends.size:
                break
        out[step] += e - s
    return out


@dataclass(frozen=True)
class StepOverlap:
    """Per-step overlap metrics (same unit as the input), the columns of `ascend_cluster_analyse_*.csv`."""

    step_duration: np.ndarray
    computation: np.ndarray
    communication_alone: np.ndarray
    receive_alone: np.ndarray
    collective_alone: np.ndarray
    stage: np.ndarray
    free: np.ndarray
    pipeline: bool


def overlap_per_step(compute: Intervals, comm: Intervals, receive: Intervals, collective: Intervals,
                     step_starts, step_ends) -> StepOverlap:
    """MindSpore's cluster overlap metrics per step.

    `compute`, `comm`, `receive` and `collective` are raw (unmerged) interval lists: compute operators,
    all communication operators, the point-to-point receives among them, and the other communication
    operators. Pure communication = communication in the holes of computation; receive-only = receives
    in the holes of everything else; computation = step duration - pure communication; stage = step
    duration - receive-only; free = holes of computation and communication together.
    """
    st, en = _arr(step_starts), _arr(step_ends)
    dur = en - st
    c = merge(*compute)
    m = merge(*comm)
    r = merge(*receive)
    comm_alone = per_step(intersect(gaps(c), m), st, en)
    coll_alone = per_step(intersect(gaps(c), merge(*collective)), st, en)
    pipeline = r[0].size > 0
    if pipeline:
        others = merge(np.concatenate([compute[0], collective[0]]), np.concatenate([compute[1], collective[1]]))
        recv_alone = per_step(intersect(gaps(others), r), st, en)
    else:
        recv_alone = np.zeros(st.size)
    both = merge(np.concatenate([compute[0], comm[0]]), np.concatenate([compute[1], comm[1]]))
    free = per_step(gaps(both), st, en)
    return StepOverlap(step_duration=dur, computation=dur - comm_alone, communication_alone=comm_alone,
                       receive_alone=recv_alone, collective_alone=coll_alone, stage=dur - recv_alone, free=free,
                       pipeline=pipeline)
