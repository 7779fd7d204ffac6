"""The run-level pass over every rank's trace: collectives paired across ranks (wait and transit), ranks
profiled over different steps, and the run's note of what was read.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from reportgen.dataquality import Coded, dq
from reportgen.model import DataIssue, RankData
from reportgen.loaders.kineto.communication import _fill_ops


def run_note(ranks: dict[int, RankData]) -> Coded:
    """One data-quality line for the run: what was read, and which ranks had no device activity."""
    cpu = sorted(r for r, d in ranks.items() if d.step_trace is not None and "CPU operators" in d.step_trace.label)
    if not cpu:
        return dq("kineto.read")
    if len(cpu) == len(ranks):
        return dq("kineto.read-cpu-only")
    return dq("kineto.read-cpu-ranks", ranks=", ".join(map(str, cpu[:10])))


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
    issues.append(DataIssue("", dq("kineto.no-common-step", parts=parts), "warning"))


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
        issues.append(DataIssue("", dq("kineto.collective-kinds-differ", mism=len(mism)), "warning"))
    counts = allf.groupby(["group", "rank"]).size()
    uneven = [g for g, c in counts.groupby(level=0) if c.nunique() > 1]
    if uneven:
        issues.append(DataIssue("", dq("kineto.collective-counts-differ", map=", ".join(map(str, uneven[:5]))), "info"))
    for r, f in allf.groupby("rank"):
        c = ranks[int(r)].communication
        w = np.full(len(c.instances), math.nan)
        w[f["_i"].to_numpy()] = f["wait"].to_numpy()
        _fill_ops(c, w)
