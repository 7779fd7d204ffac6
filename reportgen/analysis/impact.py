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
import weakref
from dataclasses import dataclass
from typing import Iterable, Optional

import numpy as np
import pandas as pd

from reportgen.analysis.codes import distinct
from reportgen.fmt import ms as _fmt_ms, share_text
from reportgen.i18n import N_, lazy

# Arrival phases per step-trace kind: the rank's own work before it can enter the step's last collective.
# (the names are catalog messages too: impact bases name them, rendered in the report's language)
ARRIVAL = {"modern": (N_("computing"), N_("free")), "legacy": (N_("iteration_interval"), N_("fp_and_bp"))}


@dataclass(frozen=True)
class Impact:
    step_ms: float  # mean step time saved per step
    step_share: float  # of the mean step time
    basis: str  # what was replaced by what, in words

    def to_dict(self) -> dict:
        return {"step_ms": round(self.step_ms, 4), "step_share": round(self.step_share, 5), "basis": self.basis}


_WIDE: dict = {}  # (id of a per-step frame, column) -> (a weak reference to that frame, its `_wide` table)


def _wide(per_step: pd.DataFrame, col: str) -> pd.DataFrame:
    """Rank x step table of `col` (the mean where a rank has several rows of a step). The rules ask for the same
    few tables of the one `StepAnalysis.per_step` a dozen times (a pivot ~10-20 ms each at 1,024 ranks): made once
    per frame and column while the frame lives, and read only (every caller makes its own frames from it)."""
    key = (id(per_step), col)
    got = _WIDE.get(key)
    if got is not None and got[0]() is per_step:
        return got[1]
    f = per_step[["rank", "step", col]].dropna(subset=[col]).copy()
    f["step"] = f["step"].fillna(-1)
    out = f.pivot_table(index="rank", columns="step", values=col, aggfunc="mean")
    for k in [k for k, (ref, _) in _WIDE.items() if ref() is None]:  # (tables of frames gone since: dropped)
        del _WIDE[k]
    try:
        _WIDE[key] = (weakref.ref(per_step), out)
    except TypeError:  # (an object that takes no weak reference: not kept)
        pass
    return out


def replace_excess(steps, phase_col, culprits: Iterable[int], reference: Optional[Iterable[int]] = None,
                   basis: str = "", scope: Optional[Iterable[int]] = None,
                   cells: Optional[pd.DataFrame] = None) -> Optional[Impact]:
    """Saving when each culprit's `phase_col` (one arrival phase, or several) is set to the per-step median of
    the `reference` ranks (default: every rank that is not a culprit), the others' waits shrinking by as much as
    the latest arrival moves.
    `scope`: the ranks whose latest arrival sets the pace (default all; a pipeline stage's ranks for the saving of
    that stage, which the whole step gets once the stage is the slowest).
    `cells`: a rank x step frame of booleans: only the marked (rank, step) cells are replaced (a stall in some steps)."""
    kind = getattr(steps, "kind", None)
    per_step = getattr(steps, "per_step", None)
    if kind not in ARRIVAL or per_step is None or per_step.empty or "total" not in per_step.columns:
        return None
    cols = [c for c in ARRIVAL[kind] if c in per_step.columns]
    phases = (phase_col,) if isinstance(phase_col, str) else tuple(phase_col)
    phases = tuple(c for c in phases if c in cols)
    if not phases:
        return None
    culprits = [int(r) for r in culprits]
    parts = {c: _wide(per_step, c) for c in cols}
    arrival = sum(parts[c].fillna(0.0) for c in cols)
    index = parts[phases[0]].index
    ref = [r for r in (reference if reference is not None else index) if r not in culprits and r in index]
    present = [r for r in culprits if r in index]
    if not ref or not present:
        return None
    fixed = arrival.copy()
    for c in phases:
        phase = parts[c]
        typical = phase.loc[[r for r in ref if r in phase.index]].median(axis=0)
        for r in present:
            if r not in phase.index:
                continue
            excess = (phase.loc[r] - typical).clip(lower=0.0).fillna(0.0)
            if cells is not None:
                mask = cells.loc[r].reindex(excess.index, fill_value=False) if r in cells.index else False
                excess = excess.where(mask, 0.0)
            fixed.loc[r] = fixed.loc[r] - excess
    if scope is not None:
        keep = [r for r in scope if r in arrival.index]
        arrival, fixed = arrival.loc[keep], fixed.loc[keep]
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


def exposed_fraction(steps, ranks: Iterable[int]) -> Optional[float]:
    """Share of these ranks' communication time that is not hidden by computation, from the step trace:
    Communication (not overlapped) / (it + Overlapped), the pipeline bubble (waiting for another stage) left out;
    None when the step trace has no overlap columns."""
    ps = getattr(steps, "per_step", None)
    if ps is None or not {"overlapped", "communication_not_overlapped"} <= set(getattr(ps, "columns", ())):
        return None
    f = ps[ps["rank"].isin({int(r) for r in ranks})]
    bubble = f["bubble"].fillna(0.0) if "bubble" in f.columns else 0.0
    nov = (f["communication_not_overlapped"] - bubble).clip(lower=0.0)
    both = (nov + f["overlapped"]).dropna()
    if both.empty or float(both.sum()) <= 0:
        return None
    return float(min(1.0, max(0.0, float(nov[both.index].sum()) / float(both.sum()))))


_TRANSFERS: dict = {}  # id of a `link_ops` frame -> (a weak reference to it, `_transfer_rows` of it)


def _transfer_rows(lo: pd.DataFrame) -> tuple:
    """(the `link_ops` columns the savings read, its step's missing values -1; each row's (step, group, operator)
    as an integer key; whether all three are given; whether the row is the first of its key and rank): what
    `small_transfer_saving` and `link_saving` both read, made once per frame while it lives (factorising the text
    of 300,000 records twice a rule cost ~60 ms at 1,024 ranks), and read only."""
    got = _TRANSFERS.get(id(lo))
    if got is not None and got[0]() is lo:
        return got[1]
    f = lo[["step", "op", "group", "src", "dst", "transport", "time_ms", "size_mb", "rank"]].copy()
    f["step"] = f["step"].fillna(-1)
    # integer keys for (step, group, op) (a merge and groupbys on text cost seconds at 1,024 ranks); a missing
    # value is a key of its own, as a merge matches it, and the per-operator sums leave it out, as a groupby does
    kk = np.zeros(len(f), dtype=np.int64)
    named = np.ones(len(f), dtype=bool)  # rows whose step, group and operator are all given
    for k in ("step", "group", "op"):
        c, u = pd.factorize(f[k], use_na_sentinel=False)
        missing = np.flatnonzero(pd.isna(np.asarray(u, dtype=object)))
        if len(missing):
            named &= ~np.isin(c, missing)
        kk = pd.factorize(kk * max(1, len(u)) + c)[0].astype(np.int64)
    rc, ru = pd.factorize(f["rank"], use_na_sentinel=False)
    first = ~pd.Series(kk * max(1, len(ru)) + rc).duplicated().to_numpy()
    out = (f, kk, named, first)
    for k in [k for k, (ref, _) in _TRANSFERS.items() if ref() is None]:  # (frames gone since: dropped)
        del _TRANSFERS[k]
    try:
        _TRANSFERS[id(lo)] = (weakref.ref(lo), out)
    except TypeError:  # (an object that takes no weak reference: not kept)
        pass
    return out


def _transfer_saving(rows: tuple, hit: pd.Series, target_gbps: dict):
    """(mean saving per step in ms before hiding, the records of the operators concerned) when the `hit` transfer
    records of `rows` (`_transfer_rows` of link_ops) move their data at `target_gbps[transport]`: an operator lasts
    as long as its slowest record, a rank saves the sum over its operators and a step what its most delayed rank
    saves."""
    if not hit.any():
        return None
    f, kk, named, first = rows
    tc, tu = pd.factorize(f["transport"])  # the target of each distinct transport (Series.map's values)
    target = pd.Series([target_gbps.get(t, math.nan) for t in tu] + [math.nan], dtype=object).astype(float) \
        .to_numpy()[tc]
    ideal = f["size_mb"].to_numpy(dtype=float) / target
    old_t = f["time_ms"].to_numpy(dtype=float)
    hv = hit.to_numpy(dtype=bool)
    fixed = np.where(~hv | np.isnan(ideal), old_t, np.fmin(old_t, ideal))
    in_ops = np.isin(kk, distinct(kk[hv]))
    ops = f[in_ops]
    sel = in_ops & named
    per_op = pd.DataFrame({"k": kk[sel], "old": old_t[sel], "new": fixed[sel]}).groupby("k").max()
    delta = (per_op["old"] - per_op["new"]).clip(lower=0.0)
    # a rank's operators run one after the other, different groups' operators side by side: each member of an
    # operator saves its delta, and the step saves what its most delayed rank saves
    m = in_ops & first & named
    members = pd.DataFrame({"step": f["step"].to_numpy()[m], "rank": f["rank"].to_numpy()[m],
                            "delta": delta.reindex(kk[m]).to_numpy()})
    per_step = members.groupby(["step", "rank"])["delta"].sum().groupby(level="step").max()
    return float(per_step.reindex(f["step"].unique(), fill_value=0.0).mean()), ops


def exposed_saving(steps, ranks, saved_ms: float, basis) -> Optional[Impact]:
    """`saved_ms` of transfer time per step, times the share of these ranks' communication not hidden by
    computation (`exposed_fraction`; all of it when the data cannot tell), as an impact."""
    share = exposed_fraction(steps, ranks)
    if share is None:
        share, basis = 1.0, lazy(N_("{basis} (how much is hidden by computation is unknown: counted as exposed)"),
                                 basis=basis)
    else:
        # the percentage is a message too: "67 %" in English, "67%" in Chinese (`fmt.share_text`)
        basis = lazy(N_("{basis}; {pct} of their communication time is not hidden by computation"), basis=basis,
                     pct=share_text(share, 0))
    return saved_by_ms(saved_ms * share, steps, basis)


def small_transfer_saving(steps, comm, small: pd.Series, target_gbps: dict, basis="") -> Optional[Impact]:
    """Saving when the small transfers (`small`: a boolean per `comm.link_ops` row) took what the same bytes take
    at `target_gbps[transport]` in large transfers, counting only the time not hidden by computation."""
    lo = getattr(comm, "link_ops", None)
    if lo is None or lo.empty or not {"step", "op", "group", "src", "dst", "time_ms", "size_mb"} <= set(lo.columns):
        return None
    rows = _transfer_rows(lo)
    found = _transfer_saving(rows, small.reindex(rows[0].index, fill_value=False).astype(bool), target_gbps)
    if found is None:
        return None
    saved, ops = found
    return exposed_saving(steps, ops["rank"].dropna().unique(), saved, basis)


def link_saving(steps, comm, links: Iterable[tuple[int, int]], target_gbps: dict, basis: str = "") -> Optional[Impact]:
    """Saving when the given links (src, dst) move their data at `target_gbps[transport]` (e.g. the transport's
    median bandwidth): every operator that uses one of them lasts as long as its slowest link (a ring runs at the
    pace of its slowest hop; a send/receive pair at its link's), so an operator saves its old duration minus the
    new one; a rank saves the sum over its operators and the step what its most delayed rank saves, times the share of transfer time not hidden by
    computation (`exposed_fraction`; all of it when the data cannot tell)."""
    lo = getattr(comm, "link_ops", None)
    if lo is None or lo.empty or not {"step", "op", "group", "src", "dst", "time_ms", "size_mb"} <= set(lo.columns):
        return None
    links = {(int(s), int(d)) for s, d in links}
    rows = _transfer_rows(lo)
    f = rows[0]
    hit = pd.Series(pd.MultiIndex.from_arrays([f["src"].astype("int64").to_numpy(), f["dst"].astype("int64").to_numpy()])
                    .isin(list(links)) if links else np.zeros(len(f), dtype=bool), index=f.index)
    found = _transfer_saving(rows, hit, target_gbps)
    if found is None:
        return None
    saved_ring, ops = found
    return exposed_saving(steps, ops["rank"].dropna().unique(), saved_ring, basis)


COMPUTE = ("computing", "fp_and_bp")  # the step trace's computation column, by kind


def compute_share_saving(steps, share: float, basis) -> Optional[Impact]:
    """Saving when `share` of every rank's computation went away (operators that are pure overhead everywhere):
    that share of the median computation per step; None without a computation column."""
    ps = getattr(steps, "per_step", None)
    col = next((c for c in COMPUTE if ps is not None and c in ps.columns), None)
    if col is None or share is None or not math.isfinite(share):
        return None
    comp = _wide(ps, col).median(axis=0)
    if comp.empty:
        return None
    return saved_by_ms(float(comp.mean()) * max(0.0, share), steps, basis)


def compute_saving(steps, ranks: Iterable[int], cap_ms: float, basis, window_ms: Optional[float] = None
                   ) -> Optional[Impact]:
    """Saving when these ranks' computation lost `cap_ms` per step of excess (an operator type slower on them than on
    their peers): their computation set to the peers' median (`replace_excess`), at most `cap_ms` per step.
    Without a step trace, `window_ms` (the profiled window, or the step the excess was measured in) stands for the
    step: the excess delays every rank that synchronises with these, so `cap_ms` of it is saved."""
    col = next((c for c in COMPUTE if getattr(steps, "per_step", None) is not None
                and c in steps.per_step.columns), None)
    if col is None:
        if window_ms and math.isfinite(window_ms) and window_ms > 0 and math.isfinite(cap_ms):
            ms = max(0.0, min(cap_ms, window_ms))
            return Impact(ms, ms / window_ms, lazy(N_("{basis} (no step trace: per profiled window of {ms})"),
                                                   basis=basis, ms=_fmt_ms(window_ms)))
        return None
    imp = replace_excess(steps, col, list(ranks), None, basis)
    if imp is None or not math.isfinite(cap_ms):
        return imp
    return saved_by_ms(min(imp.step_ms, max(0.0, cap_ms)), steps, basis)
