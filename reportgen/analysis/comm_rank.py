"""One rank's side of the communication analysis (`analysis.communication`), a pure function of the rank's
`Communication`, computed in the worker that loads the rank (`analysis.per_rank`). The cluster analysis combines
these instead of stacking every rank's operators (1.6 million rows at 1,024 ranks) and grouping them again.

Each figure is the one the run-wide grouping gave for the rank's rows (every key of those groupings starts with the
rank): the same rows, in the same order, through the same reductions (`groupsum.group_sum`: pandas' compensated
sums), so the same digits. Plain arrays, no frames: ~1 ms a rank.

Rows that make up "the averaged step": a producer's stored-average rows (stored average and no step) where the rank
has them, else its step rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import pandas as pd

from reportgen.analysis.codes import Groups, codes, column_array, distinct
from reportgen.groupsum import group_mean, group_sum
from reportgen.model import COMM_TIME_COLUMNS, Communication

GROUP_COLUMNS = (*COMM_TIME_COLUMNS, "sdma_mb", "sdma_ms", "rdma_mb", "rdma_ms")
_NT = len(COMM_TIME_COLUMNS)


@dataclass
class CommFigures:
    stored: bool  # the rank has stored-average rows: its operator and group figures come from them
    n_ops: np.ndarray  # per row of `Communication.steps`: the rank's operators in that step (step rows)
    groups: list  # the distinct groups of the rank's operators, as first seen
    ops_at: np.ndarray  # per (op, group, kind) of the rank, in the keys' order: the position of its first row
    ops_nums: Optional[np.ndarray]  # [k, j]: COMM_TIME_COLUMNS then the count, per step (stored rows: as stored);
    #   None where every (op, group, kind) has one row (real runs name each call apart): the row's own numbers
    #   then (`ops_numbers`), not a copy of them in the rank's cache entry and the main process
    ops_div: float  # the rank's steps (what its sums are divided by; 1 for stored rows)
    group_names: list  # per group of the averaged rows, in the groups' order
    group_nums: np.ndarray  # [k, j]: GROUP_COLUMNS per step (Σ per step, the mean over the steps)
    # per `ops_at` row its group and kind as codes into the rank's distinct ones among those rows (in their order):
    # the run-wide codes come from a few values a rank, not from the text of every row
    labels: dict = field(default_factory=dict)  # "group" / "kind" -> (codes, values)


def wait_ratio(wait: pd.Series, transit: pd.Series) -> pd.Series:
    """Wait/(wait+transit), 0 when the divisor is ~0 (msprof-analyze's compute_ratio)."""
    if wait.dtype == np.float64 and transit.dtype == np.float64 and wait.index.equals(transit.index):
        # two row-long arrays, not pandas' six (issue 33: a row a rank and operator): the same divisions
        out = wait.to_numpy(dtype=np.float64, copy=True)
        out[np.isnan(out)] = 0.0
        den = transit.to_numpy(dtype=np.float64, copy=True)
        den[np.isnan(den)] = 0.0
        with np.errstate(invalid="ignore", divide="ignore"):  # (inf - inf: NaN, then 0 as pandas gives)
            den += out
            ok = den > 1e-15
            np.divide(out, den, out=out, where=ok)
        del den
        out[~ok] = 0.0
        out[np.isnan(out)] = 0.0
        return pd.Series(out, index=wait.index, copy=False)
    den = wait.fillna(0) + transit.fillna(0)
    return (wait.fillna(0) / den.where(den > 1e-15)).fillna(0.0)


def op_codes(ops: pd.DataFrame) -> dict:
    """The rank's operators' key columns as integer codes (`codes.codes`: in the values' order, -1 missing), each
    factorised once a rank for the analyses that read them (`comm_figures`, `expert.rank_alltoall`): "op", "group",
    "kind", "step" (a missing step as -1, as `fillna(-1)` gives it) and "step_na" (whether each row's step is
    missing)."""
    step_na, step_codes = _steps(ops)
    k = {name: codes(column_array(ops, name)) for name in ("op", "group", "kind")}
    k["step"] = codes(step_codes)
    k["step_na"] = step_na
    return k


def comm_figures(c: Communication, k: Optional[dict] = None) -> CommFigures:
    """The rank's `CommFigures`; `k`: `op_codes` of its operators where made already."""
    ops = c.ops if c.ops is not None else pd.DataFrame()
    empty = np.zeros(0, dtype=np.int64)
    if not len(ops):
        return CommFigures(False, _n_ops(c, {}, empty), [], empty.astype(np.int32), np.zeros((0, _NT + 1)), 1.0, [],
                           np.zeros((0, len(GROUP_COLUMNS))))
    # (a column a producer does not write: missing values, as stacking the ranks gave). The columns' own arrays,
    # not a Series each (~40 µs apiece a rank)
    have = ops.columns.tolist()
    vals = np.column_stack([_column(ops, have.index(x)) if x in have else np.full(len(ops), np.nan)
                            for x in GROUP_COLUMNS])
    k = k if k is not None else op_codes(ops)
    avg = k["step_na"] & bool(c.stored_average)
    step_rows, stored_rows = np.flatnonzero(~avg), np.flatnonzero(avg)
    stored = bool(len(stored_rows))
    rows = stored_rows if stored else step_rows
    at, nums, div = _rank_ops(vals, k, rows, stored)
    names, gnums = _per_group(vals, k, rows)
    first_seen = _first_seen(*k["group"])
    lab = {n: _local(k[n][0][at], k[n][1]) for n in ("group", "kind")}
    return CommFigures(stored, _n_ops(c, k, step_rows), list(first_seen), at, nums, div, names, gnums, lab)


def _local(c: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, list]:
    """Codes `c` (0 <= c < len(u)) renumbered into the values they use, in the values' order, and those values
    (`np.unique(c, return_inverse=True)`, through a table of the few codes: ~10x quicker)."""
    used = distinct(c)
    new = np.zeros(len(u), dtype=np.int32)
    new[used] = np.arange(len(used), dtype=np.int32)
    return new[c], list(u[used])


def _steps(ops: pd.DataFrame) -> tuple[np.ndarray, object]:
    """(whether each row's step is missing, the steps with a missing one as -1), as `ops["step"].isna()` and
    `.fillna(-1)` give them: a nullable integer column's own arrays (the loaders'), else through pandas."""
    v = column_array(ops, "step")
    if isinstance(v, pd.arrays.IntegerArray) and v.dtype == "Int64":
        return np.asarray(v.isna(), dtype=bool), v.to_numpy(dtype=np.int64, na_value=-1)
    return ops["step"].isna().to_numpy(dtype=bool), ops["step"].fillna(-1)


def _first_seen(c: np.ndarray, u: np.ndarray) -> list:
    """The distinct values of a column in the order first seen, missing ones left out (`pd.factorize`'s uniques),
    from its `codes` (`c`, into the sorted values `u`; -1 missing): no second hashing of the column."""
    ok = c[c >= 0]
    _, first = np.unique(ok, return_index=True)
    return list(u[ok[np.sort(first)]])


def ops_numbers(f: CommFigures, ops: pd.DataFrame) -> np.ndarray:
    """`f.ops_nums`, or where every group has one row, those rows' numbers as the grouped sum gives them (a
    one-value sum is 0.0 + the value: -0.0 becomes 0.0) and a count of 1, per step."""
    if f.ops_nums is not None:
        return f.ops_nums
    names = ops.columns.tolist()  # (an Index lookup builds its hash table on every rank's frame: ~0.2 ms)
    return numbers_of(f, {x: _column(ops, names.index(x)) for x in COMM_TIME_COLUMNS if x in names})


def numbers_of(f: CommFigures, columns: dict) -> np.ndarray:
    """`ops_numbers` (where `f.ops_nums` is None) from the operators' COMM_TIME_COLUMNS as float64 arrays (a column
    missing: NaN), wherever they are read from (a frame, a packed frame: `analysis.comm_inputs`)."""
    out = np.empty((len(f.ops_at), _NT + 1))
    for j, x in enumerate(COMM_TIME_COLUMNS):
        out[:, j] = (columns[x][f.ops_at] if x in columns else np.nan) + 0.0
    out[:, _NT] = 1.0
    if not f.stored:
        out /= f.ops_div
    return out


def _column(frame: pd.DataFrame, i: int) -> np.ndarray:
    """Column `i` as float64 (missing: NaN): the block's own array where pandas gives it (a Series per column and
    rank costs ~40 µs: 0.2 s over a 1,024-rank run's five columns)."""
    get = getattr(frame, "_get_column_array", None)
    if get is not None:
        try:
            v = get(i)
        except Exception:  # noqa: BLE001  # (a pandas whose internals differ: the public way)
            v = None
        if isinstance(v, np.ndarray) and v.dtype == np.float64:
            return v
    return floats(frame.iloc[:, i])


def floats(col: pd.Series) -> np.ndarray:
    """A column's values as float64, missing ones NaN (a float64 column's own array: no copy)."""
    if col.dtype == np.float64:
        return col.to_numpy()
    return col.to_numpy(dtype="float64", na_value=np.nan)


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
    want = _steps(st)[1]
    if isinstance(want, np.ndarray) and want.dtype == np.int64 and all(type(v) is int for v in sv):
        # (integer steps, the loaders'): looked up in a table of the rank's few steps, not through a pandas Index
        pos = {v: i for i, v in enumerate(sv.tolist())}
        sc = np.array([pos.get(v, -1) for v in want.tolist()], dtype=np.int64)
    else:
        sc = pd.Index(sv).get_indexer(np.asarray(want))
    return np.where(sc >= 0, cnt[np.maximum(sc, 0)], 0).astype(np.int64)


def _parts(k: dict, rows: np.ndarray, names: list[str]) -> list[tuple[np.ndarray, int]]:
    return [(k[n][0][rows], len(k[n][1])) for n in names]


def _rank_ops(vals: np.ndarray, k: dict, rows: np.ndarray, stored: bool
              ) -> tuple[np.ndarray, Optional[np.ndarray], float]:
    """Per (op, group, kind): the sum over `rows` per step (the sum over the rank's steps / their number; stored
    rows: the sum), and the count (None where each group is one row); the position of each group's first row;
    the divisor."""
    if not len(rows):
        return np.zeros(0, dtype=np.int32), np.zeros((0, _NT + 1)), 1.0
    g = Groups(_parts(k, rows, ["op", "group", "kind"]), len(rows))
    # per step: over the rank's distinct steps (a missing one counted once)
    div = 1.0 if stored else float(len(distinct(k["step"][0][rows])))
    at = rows[g.first].astype(np.int32)
    if g.n == len(g.rows):
        return at, None, div
    out = np.empty((g.n, _NT + 1))
    out[:, :_NT] = group_sum(vals[rows[g.rows], :_NT], g.gid, g.n, min_count=1)
    out[:, _NT] = g.size
    if not stored:
        out /= div
    return at, out, div


def _per_group(vals: np.ndarray, k: dict, rows: np.ndarray) -> tuple[list, np.ndarray]:
    """Per group: Σ per (group, step), then the mean over the steps."""
    if not len(rows):
        return [], np.zeros((0, len(GROUP_COLUMNS)))
    g1 = Groups(_parts(k, rows, ["group", "step"]), len(rows))
    per = group_sum(vals[rows[g1.rows]], g1.gid, g1.n, min_count=1)
    first = rows[g1.first]
    g2 = Groups(_parts(k, first, ["group"]), len(first))
    at = first[g2.first]
    return list(k["group"][1].take(k["group"][0][at])), group_mean(per[g2.rows], g2.gid, g2.n)
