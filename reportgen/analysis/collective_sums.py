"""Per (group, collective type): each rank's sums over the group's operators of that type (summary.json's
`communication.collectives`), from `CommAnalysis.rank_ops` (a row a rank and operator: 1.6 million at 1,024 ranks).

Memory (issue 33): no copy of the frame's columns, no key or hash table a row wide. The rows of one rank come
together (`rank_ops` is made rank by rank), so each rank's (group, collective) pairs are numbered on its own few
hundred rows; one small integer a row (the triple's number) is kept, and each column is summed by pandas' groupby
on a categorical of those numbers (its own compensated sums over the rows in their order: the digits of a groupby
on the three keys)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.collectives import collective_types


def _codes(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes (-1: missing) and distinct values of a label column: a categorical's own (no copy), else a
    factorisation."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.cat.codes.to_numpy(), col.cat.categories.to_numpy(dtype=object)
    c, u = pd.factorize(col)
    return c, np.asarray(u, dtype=object)


def _rank_blocks(rank: np.ndarray) -> tuple[np.ndarray | None, np.ndarray, np.ndarray]:
    """(order, starts, codes): the rows by rank (`order` None when each rank's rows already come together) and the
    bounds of each rank's rows there; `codes` the ranks as integers, -1 where missing."""
    if rank.dtype.kind in "iu":
        rc = rank
    else:
        rc, _ = pd.factorize(rank)
    order = None
    if len(rc):
        starts = np.r_[0, np.flatnonzero(rc[1:] != rc[:-1]) + 1]
        if len(pd.unique(rc[starts])) != len(starts):  # a rank's rows in several places: taken by rank
            order = np.argsort(rc, kind="stable")
            s = rc[order]
            starts = np.r_[0, np.flatnonzero(s[1:] != s[:-1]) + 1]
    else:
        starts = np.zeros(0, dtype=np.int64)
    return order, np.r_[starts, len(rc)], rc


def collective_sums(rank_ops: pd.DataFrame, cols: list[str]) -> tuple[list[tuple[object, str]], np.ndarray,
                                                                       dict[str, np.ndarray]]:
    """(pairs, cuts, sums): the (group value, collective type) pairs as first seen in the rows; per pair, its
    ranks' sums of each of `cols` (as float64), one a (group, collective, rank) triple, in the order the triples
    were first seen: pair k's are `sums[col][cuts[k]:cuts[k + 1]]`. Rows with a missing group, operator or rank
    are left out."""
    oc, ov = _codes(rank_ops["op"])
    tc, tv = pd.factorize(np.array(collective_types(ov), dtype=object))  # per distinct name, not per row
    coll_of = np.r_[tc, -1].astype(np.int64)  # (an operator code -1 reads the last: missing)
    gc, gv = _codes(rank_ops["group"])
    order, bounds, rc = _rank_blocks(rank_ops["rank"].to_numpy())
    span = max(1, len(tv))
    n = len(rank_ops)
    tid = np.full(n, -1, dtype=np.int64 if n >= 2 ** 31 else np.int32)
    first_at, pair_keys = [], []
    base = 0
    for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
        rows = np.arange(a, b) if order is None else order[a:b]
        g = gc[rows].astype(np.int64)
        k = coll_of[oc[rows]]
        ok = np.flatnonzero((g >= 0) & (k >= 0) & (rc[rows] >= 0))
        if not len(ok):
            continue
        loc, keys = pd.factorize(g[ok] * span + k[ok])  # the rank's pairs, as first seen
        tid[rows[ok]] = base + loc
        first_at.append(rows[ok][np.unique(loc, return_index=True)[1]])
        pair_keys.append(np.asarray(keys, dtype=np.int64))
        base += len(keys)
    if not base:
        return [], np.zeros(1, dtype=np.int64), {c: np.zeros(0) for c in cols}
    first = np.concatenate(first_at)
    pk = np.concatenate(pair_keys)
    if order is not None:  # the triples numbered as first seen in the rows
        by = np.argsort(first, kind="stable")
        renum = np.empty(base, dtype=tid.dtype)
        renum[by] = np.arange(base, dtype=tid.dtype)
        tid = np.where(tid >= 0, renum[np.maximum(tid, 0)], -1).astype(tid.dtype, copy=False)
        pk = pk[by]
    del first_at, pair_keys, first
    key = pd.Categorical.from_codes(tid, categories=pd.RangeIndex(base))
    del tid
    sums = {}
    for c in cols:  # a column at a time (no block of them copied)
        s = pd.Series(rank_ops[c].to_numpy(), copy=False).groupby(key, sort=True, observed=False).sum()
        sums[c] = s.to_numpy(dtype="float64")
    del key
    pid, pkeys = pd.factorize(pk)  # the pairs as first seen among the triples
    by_pair = np.argsort(pid, kind="stable")
    cuts = np.searchsorted(pid[by_pair], np.arange(len(pkeys) + 1))
    pairs = [(gv[int(p) // span], tv[int(p) % span]) for p in pkeys]
    return pairs, cuts, {c: v[by_pair] for c, v in sums.items()}
