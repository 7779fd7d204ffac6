"""What fixing a finding would save: the culprit's excess replaced by the typical value, propagated through
synchronisation, without a simulator.

Every rank "arrives" at the step's synchronising collectives after its own work (the arrival phases: computation,
free time, the step interval). In a synchronous collective the step ends when the last member arrives, and in a
pipeline the slowest stage sets the pace, so in both cases the step's pace is the latest arrival over the ranks that
synchronise. The saving of a step is that latest arrival minus the latest arrival once the culprits' excess in one
phase is replaced by the typical value of that step (the median of the reference ranks); time hidden by overlap is
not in the arrival phases, so it saves nothing. The estimate is the mean saving over the steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Optional

import pandas as pd

# Arrival phases per step-trace kind: the rank's own work before it can enter the step's last collective.
ARRIVAL = {"modern": ("computing", "free"), "legacy": ("iteration_interval", "fp_and_bp")}


@dataclass(frozen=True)
class Impact:
    step_ms: float  # mean step time saved per step
    step_share: float  # of the mean step time
    basis: str  # what was replaced by what, in words

    def to_dict(self) -> dict:
        return {"step_ms": round(self.step_ms, 4), "step_share": round(self.step_share, 5), "basis": self.basis}


def _wide(per_step: pd.DataFrame, col: str) -> pd.DataFrame:
    f = per_step[["rank", "step", col]].dropna(subset=[col]).copy()
    f["step"] = f["step"].fillna(-1)
    return f.pivot_table(index="rank", columns="step", values=col, aggfunc="mean")


def replace_excess(steps, phase_col: str, culprits: Iterable[int], reference: Optional[Iterable[int]] = None,
                   basis: str = "") -> Optional[Impact]:
    """Saving when each culprit's `phase_col` is set to the per-step median of the `reference` ranks (default:
    every rank that is not a culprit), the others' waits shrinking by as much as the latest arrival moves."""
    kind = getattr(steps, "kind", None)
    per_step = getattr(steps, "per_step", None)
    if kind not in ARRIVAL or per_step is None or per_step.empty or "total" not in per_step.columns:
        return None
    cols = [c for c in ARRIVAL[kind] if c in per_step.columns]
    if phase_col not in per_step.columns or phase_col not in cols:
        return None
    culprits = [int(r) for r in culprits]
    parts = {c: _wide(per_step, c) for c in cols}
    arrival = sum(parts[c].fillna(0.0) for c in cols)
    phase = parts[phase_col]
    ref = [r for r in (reference if reference is not None else phase.index) if r not in culprits and r in phase.index]
    present = [r for r in culprits if r in phase.index]
    if not ref or not present:
        return None
    typical = phase.loc[ref].median(axis=0)
    fixed = arrival.copy()
    for r in present:
        excess = (phase.loc[r] - typical).clip(lower=0.0).fillna(0.0)
        fixed.loc[r] = arrival.loc[r] - excess
    saved = (arrival.max(axis=0) - fixed.max(axis=0)).clip(lower=0.0)
    step = _wide(per_step, "total").median(axis=0)
    mean_step = float(step.mean()) if len(step) else math.nan
    ms = float(saved.mean()) if len(saved) else math.nan
    if math.isnan(ms) or not mean_step or math.isnan(mean_step):
        return None
    return Impact(ms, ms / mean_step, basis)


def saved_by_ms(saved_ms: float, steps, basis: str) -> Optional[Impact]:
    """An impact measured directly in ms per step (e.g. exposed communication that would be hidden)."""
    ref = getattr(steps, "per_step", None)
    if ref is None or ref.empty or "total" not in ref.columns or saved_ms is None or math.isnan(saved_ms):
        return None
    step = _wide(ref, "total").median(axis=0)
    mean_step = float(step.mean()) if len(step) else math.nan
    if not mean_step or math.isnan(mean_step):
        return None
    return Impact(float(saved_ms), float(saved_ms) / mean_step, basis)
