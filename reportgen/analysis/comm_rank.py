"""One rank's side of the communication analysis (`analysis.communication`), a pure function of the rank's
`Communication` (computed in the worker that loads the rank: `analysis.per_rank`). The cluster analysis combines
these instead of stacking every rank's operators (1.6 million rows at 1,024 ranks) and grouping them again.

Each figure is the one the run-wide grouping gives for the rank's rows (every key of those groupings starts with
the rank): the same rows, in the same order, through the same reductions, so the same digits.

Rows that make up "the averaged step" (`averaged`): a producer's stored-average rows (stored average and no step)
where the rank has them, else its step rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd

from reportgen.analysis.codes import Groups, codes, take_rows
from reportgen.model import COMM_TIME_COLUMNS, Communication

GROUP_COLUMNS = (*COMM_TIME_COLUMNS, "sdma_mb", "sdma_ms", "rdma_mb", "rdma_ms")


@dataclass
class CommFigures:
    stored: bool  # the rank has stored-average rows: its operator and group figures come from them
    n_ops: np.ndarray  # per row of `Communication.steps`: operators of the rank recorded in that step (step rows)
    groups: list  # the distinct groups of the rank's operators, as first seen
    ops_at: np.ndarray  # per (op, group, kind) of the rank, in the keys' order: the position of its first row
    ops_nums: np.ndarray  # [k, j]: COMM_TIME_COLUMNS then the count, per step (stored rows: as stored)
    per_group: Optional[pd.DataFrame]  # per group: GROUP_COLUMNS per step, as `CommAnalysis.per_group_rank`


def wait_ratio(wait: pd.Series, transit: pd.Series) -> pd.Series:
    """Wait/(wait+transit), 0 when the divisor is ~0 (msprof-analyze's compute_ratio)."""
    den = wait.fillna(0) + transit.fillna(0)
    return (wait.fillna(0) / den.where(den > 1e-15)).fillna(0.0)


def comm_figures(c: Communication, rank: int) -> CommFigures:
    """The rank's figures (`rank`: its global rank, the `rank` column of its group rows)."""
    ops = c.ops if c.ops is not None else pd.DataFrame()
    missing = [x for x in GROUP_COLUMNS if x not in ops.columns]
    if len(ops) and missing:  # (a column a producer does not write: missing values, as stacking the ranks gives)
        ops = ops.assign(**{x: np.nan for x in missing})
    k: dict = {}
    step_rows = stored_rows = np.zeros(0, dtype=np.int64)
    if len(ops):
        avg = (bool(c.stored_average) & ops["step"].isna()).to_numpy(dtype=bool)
        step_rows, stored_rows = np.flatnonzero(~avg), np.flatnonzero(avg)
        k = {name: codes(col) for name, col in (("op", ops["op"]), ("group", ops["group"]), ("kind", ops["kind"]),
                                                 ("step", ops["step"].fillna(-1)))}
    stored = bool(len(stored_rows))
    rows = stored_rows if stored else step_rows
    at, nums = _rank_ops(ops, k, rows, stored)
    return CommFigures(stored=stored, n_ops=_n_ops(c, k, step_rows), groups=_groups(ops), ops_at=at, ops_nums=nums,
                       per_group=_per_group(ops, k, rows, rank))


def _groups(ops: pd.DataFrame) -> list:
    if not len(ops):
        return []
    _, u = pd.factorize(ops["group"].to_numpy(dtype=object))
    return list(u)


def _n_ops(c: Communication, k: dict, step_rows: np.ndarray) -> np.ndarray:
    """Per row of the rank's per-step totals: its operators (step rows) in that step (a missing step matches the
    operators without one)."""
    st = c.steps
    if st is None or not len(st):
        return np.zeros(0, dtype=np.int64)
    if not k or not len(step_rows):
        return np.zeros(len(st), dtype=np.int64)
    sv = k["step"][1]
    cnt = np.bincount(k["step"][0][step_rows], minlength=len(sv))
    sc = pd.Index(sv).get_indexer(st["step"].fillna(-1).to_numpy())
    return np.where(sc >= 0, cnt[np.maximum(sc, 0)], 0).astype(np.int64)


def _parts(k: dict, rows: np.ndarray, names: list[str]) -> list[tuple[np.ndarray, int]]:
    return [(k[n][0][rows], len(k[n][1])) for n in names]


def _rank_ops(ops: pd.DataFrame, k: dict, rows: np.ndarray, stored: bool) -> tuple[np.ndarray, np.ndarray]:
    """Per (op, group, kind): the sum over `rows` per step (the sum over the rank's steps / their number; stored
    rows: the sum), and the count; the position of each group's first row."""
    cols = list(COMM_TIME_COLUMNS)
    if not len(rows):
        return np.zeros(0, dtype=np.int64), np.zeros((0, len(cols) + 1))
    g = Groups(_parts(k, rows, ["op", "group", "kind"]), len(rows))
    a = g.agg(take_rows(ops[cols], rows), cols, "sum", min_count=1)
    if stored:
        a["count"] = g.size.astype(float)
    else:
        a["count"] = g.size
        div = float(len(np.unique(k["step"][0][rows])))  # the rank's distinct steps (a missing one counted once)
        for col in cols:
            a[col] = a[col] / div
        a["count"] = a["count"] / div
    return rows[g.first], a[[*cols, "count"]].to_numpy(dtype="float64")


def _per_group(ops: pd.DataFrame, k: dict, rows: np.ndarray, rank: int) -> Optional[pd.DataFrame]:
    """Per group: Σ per (group, step), then the mean over the steps (as `CommAnalysis.per_group_rank`'s rows)."""
    if not len(rows):
        return None
    cols = list(GROUP_COLUMNS)
    g1 = Groups(_parts(k, rows, ["group", "step"]), len(rows))
    per = g1.agg(take_rows(ops[cols], rows), cols, "sum", min_count=1)
    first = rows[g1.first]
    g2 = Groups(_parts(k, first, ["group"]), len(first))
    out = per.groupby(g2.gid, sort=True).mean()
    at = first[g2.first]
    out.insert(0, "group", pd.Series(k["group"][1].take(k["group"][0][at]), dtype=object).to_numpy())
    out.insert(0, "rank", np.full(len(at), rank, dtype=np.int64))
    out = out.reset_index(drop=True)
    out["wait_ratio"] = wait_ratio(out["wait_ms"], out["transit_ms"]).round(4)
    for t in ("sdma", "rdma"):
        out[f"{t}_gbps"] = out[f"{t}_mb"] / out[f"{t}_ms"].where(out[f"{t}_ms"] > 0)
    return out
