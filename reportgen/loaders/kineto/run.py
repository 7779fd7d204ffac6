"""The run-level pass over every rank's trace: collectives paired across ranks (wait and transit), ranks
profiled over different steps, and the run's note of what was read.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from reportgen.model import DataIssue, RankData
from reportgen.loaders.kineto.communication import _fill_ops


READ_NOTE = ("Kineto traces: read distributedInfo (world size, process groups), deviceProperties, the host's "
             "ProfilerStep#N ranges (the GPU lane's copies are annotations), device kernels / copies / sets of "
             "every accelerator (2021 schema categories included), runtime launches (to map each kernel to the "
             "step that launched it, and to find the kernels a collective's host op launched), cpu_op operators "
             "(self time), gloo:* work slices, [memory] events, the input shapes of matrix multiplications, "
             "convolutions and attention and the with_flops counts (FLOPs); not read: python_function events, "
             "flow (ac2g) events, other operators' shapes and stacks")


def run_note(ranks: dict[int, RankData]) -> str:
    """One data-quality line for the run: what was read, and which ranks had no device activity."""
    cpu = sorted(r for r, d in ranks.items() if d.step_trace is not None and "CPU operators" in d.step_trace.label)
    if cpu:
        which = "any rank" if len(cpu) == len(ranks) else f"rank(s) {', '.join(map(str, cpu[:10]))}"
        return (READ_NOTE + f". No GPU/NPU activity on {which}: the CPU is the device (computation = operators of "
                "the training thread, communication = the backend's collective work slices, gloo:*)")
    return READ_NOTE


def check_step_ranges(ranks: dict[int, RankData], issues: list[DataIssue]) -> None:
    """Ranks whose traces share no step (one recorded steps 550-554, another 15-17) were not profiled together:
    their steps are not comparable, whatever the folder says."""
    sets = {r: {int(s) for s in d.step_trace.steps["step"].dropna()} for r, d in ranks.items()
            if d.step_trace is not None and len(d.step_trace.steps) and d.step_trace.steps["step"].notna().any()}
    if len(sets) < 2:
        return
    groups: list[tuple[set, list]] = []  # ranks joined while their steps overlap
    for r in sorted(sets):
        hit = [g for g in groups if g[0] & sets[r]]
        merged = (set(sets[r]), [r])
        for g in hit:
            merged[0].update(g[0])
            merged[1].extend(g[1])
            groups.remove(g)
        groups.append(merged)
    if len(groups) < 2:
        return
    parts = "; ".join(f"rank(s) {', '.join(map(str, sorted(rs)[:8]))}: steps {min(st)}-{max(st)}"
                      for st, rs in sorted(groups, key=lambda g: min(g[1]))[:4])
    issues.append(DataIssue("", f"the ranks' traces share no step ({parts}): they were not profiled together (other "
                                "jobs or other profiling windows), so comparing the ranks step by step is not "
                                "meaningful; profile the ranks over the same steps", "warning"))


def match_collectives(ranks: dict[int, RankData], issues: list[DataIssue]) -> None:
    """Pair every collective instance across the ranks that recorded it and set each rank's wait and transit."""
    check_step_ranges(ranks, issues)
    frames = []
    for r, d in ranks.items():
        c = d.communication
        inst = getattr(c, "instances", None) if c is not None else None
        if inst is not None and len(inst):
            frames.append(inst.assign(rank=r, _i=np.arange(len(inst))))
    if not frames:
        return
    allf = pd.concat(frames, ignore_index=True)
    keyed = allf.groupby(["group", "key"])
    n = keyed["rank"].transform("nunique")
    kinds = keyed["kind"].transform("nunique")
    shortest = keyed["dur_ms"].transform("min")
    ok = (n >= 2) & (kinds == 1)
    allf["wait"] = np.where(ok, allf["dur_ms"] - shortest, math.nan)
    mism = allf.loc[kinds > 1, ["group", "key"]].drop_duplicates()
    if len(mism):
        issues.append(DataIssue("", f"{len(mism)} collective instance(s) have different kinds on different ranks "
                                    "(the ranks' traces do not record the same collectives in the same order); "
                                    "their wait is unknown", "warning"))
    counts = allf.groupby(["group", "rank"]).size()
    uneven = [g for g, c in counts.groupby(level=0) if c.nunique() > 1]
    if uneven:
        issues.append(DataIssue("", "ranks recorded different numbers of collectives in process group(s) "
                                    f"{', '.join(map(str, uneven[:5]))}; only instances found on two or more ranks "
                                    "get a wait time", "info"))
    for r, f in allf.groupby("rank"):
        c = ranks[int(r)].communication
        w = np.full(len(c.instances), math.nan)
        w[f["_i"].to_numpy()] = f["wait"].to_numpy()
        _fill_ops(c, w)
