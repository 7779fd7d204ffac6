"""summary.json's operator totals (`operators`): the cluster's operator types and top operators, time per step
averaged over the ranks with operator data. Made with the resources view (`analysis.resources`), so a build makes
them where its operator tables are opened (`analysis.analyze`'s forked process on a large run: the build's process
never opens them) and a rebuild reads them from the analysis it cached; `op_key` is also the name `compare` matches
operators by."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from reportgen import framestack
from reportgen.numbers import rounded

_OP_SUFFIX = re.compile(r"-op\d+")
_OP_HASH = re.compile(r"[_-]?(?:0x)?[0-9a-fA-F]{12,}")
_OP_COUNTER = re.compile(r"(?:_\d+)+$")


def op_key(name: str) -> str:
    """An operator name without MindSpore's `-opN` suffixes, hashes and trailing instance counters, so the same
    operator matches across runs (`layer0/MatMulV3-op08` -> `layer0/MatMulV3`, `aclnnMatMulV3_3` ->
    `aclnnMatMulV3`)."""
    s = _OP_HASH.sub("", _OP_SUFFIX.sub("", str(name)))
    return _OP_COUNTER.sub("", s).rstrip("_") or str(name)


TOP_OPERATORS = 100


def _stacked(items: list[tuple], n_steps_of: dict) -> tuple:
    """The ranks' operator-type and per-operator frames, each one frame under the other (`rank`, `side`, text
    columns as str, `ms` and the type rows' `count` divided by the rank's divisor for the row's side: the number
    of steps where the producer's totals cover the profiled window), the bases seen and the number of ranks with
    rows. One concatenation and one pass over (rank, side) pairs, not a frame per rank."""
    def stack(frames: list[tuple[int, pd.DataFrame]], columns: tuple[str, ...]):
        if not frames:
            return None, np.zeros(0, dtype=np.int64)
        f = framestack.stack([x for _, x in frames], columns)
        return f, np.repeat(np.array([i for i, _ in frames]), [len(x) for _, x in frames])
    bt, bt_item = stack([(i, ops.by_type) for i, (_, ops) in enumerate(items) if len(ops.by_type)],
                        ("side", "op_type", "total_ms", "count"))
    dt, dt_item = stack([(i, ops.detail) for i, (_, ops) in enumerate(items) if len(ops.detail)],
                        ("side", "name", "op_type", "total_ms"))
    side_all = pd.concat([x["side"] for x in (bt, dt) if x is not None], ignore_index=True) \
        if bt is not None or dt is not None else pd.Series([], dtype=object)
    codes, sides = pd.factorize(side_all, use_na_sentinel=False)
    present = np.zeros((len(items), len(sides)), dtype=bool)
    present[np.concatenate([bt_item, dt_item]), codes] = True
    div = np.ones((len(items), len(sides)))
    bases: set = set()
    for i, (r, ops) in enumerate(items):
        n_steps = int(n_steps_of[r]) or None if r in n_steps_of else None
        for j in np.flatnonzero(present[i]):
            basis = ops.basis.get(sides[j], "per step")
            div[i, j] = 1.0 if basis == "per step" or not n_steps else float(n_steps)
            bases.add("per step" if basis == "per step" or n_steps else basis)
    n_bt = len(bt_item)

    def frame(f, item, code, text: tuple[str, ...], count: bool):
        if f is None:
            return None
        d = div[item, code]
        out = {"rank": np.array([items[i][0] for i in range(len(items))])[item], "side": _texts(f["side"])}
        for c in text:
            out[c] = _texts(f[c].astype(str))
        out["ms"] = f["total_ms"].to_numpy(dtype="float64") / d
        if count:
            out["count"] = pd.to_numeric(f["count"], errors="coerce").to_numpy(dtype="float64") / d
        return pd.DataFrame(out)
    types_f = frame(bt, bt_item, codes[:n_bt], ("op_type",), True)
    names_f = frame(dt, dt_item, codes[n_bt:], ("name", "op_type"), False)
    ranks_with = len(set(bt_item.tolist()) | set(dt_item.tolist()))
    return types_f, names_f, bases, ranks_with


_STR = pd.Series([""], dtype=str).dtype  # pandas' text dtype (pandas 3: Arrow-backed, NaN for a missing value)


def _texts(col: pd.Series):
    """What `pd.DataFrame` makes a column of from `col.to_numpy(object)`: texts without a gap become pandas' text
    dtype again, so a column of that dtype is given as it is (no round trip through Python strings: 0.4 s for the
    4,096 ranks' operator names); anything else as the object array."""
    if col.dtype == _STR and not col.hasnans:
        return col.array
    return col.to_numpy(dtype=object)


def operator_totals(run, steps) -> dict:
    """Operator types and top operators of `run` (a `model.Run`), time per step averaged over the ranks that have
    operator data (`steps`: the `StepAnalysis`, whose step counts divide the totals of a profiled window)."""
    st = steps
    n_steps_of = st.average["n_steps"].to_dict() if st.kind and "n_steps" in st.average else {}
    items = [(r, ops) for r in run.rank_ids if (ops := run.ranks[r].operators) is not None]
    types_f, names_f, bases, ranks_with = _stacked(items, n_steps_of)
    if types_f is None and names_f is None:
        return {"basis": None, "ranks": 0, "types": [], "top": []}
    ranks = ranks_with
    types = []
    if types_f is not None:
        df = types_f
        per_rank = df.groupby(["side", "op_type", "rank"], as_index=False)[["ms", "count"]].sum(min_count=1)
        n = df.groupby("side")["rank"].nunique()
        for (side, op_type), g in per_rank.groupby(["side", "op_type"]):
            types.append({"side": side, "op_type": op_type, "time_ms": rounded(float(g["ms"].sum() / n[side])),
                          "count": rounded(float(g["count"].sum(min_count=1) / n[side])),
                          "max_ms": rounded(float(g["ms"].max())), "max_rank": int(g.loc[g["ms"].idxmax(), "rank"]),
                          "ranks": int(len(g))})
        types.sort(key=lambda t: -(t["time_ms"] or 0))
    top = []
    if names_f is not None:
        df = names_f
        keys = {k: op_key(k) for k in df["name"].unique()}
        df["name"] = df["name"].map(keys)
        n = df.groupby("side")["rank"].nunique()
        agg = df.groupby(["side", "name", "op_type"], as_index=False).agg(ms=("ms", "sum"), ranks=("rank", "nunique"))
        agg["time_ms"] = agg["ms"] / agg["side"].map(n)
        for rec in agg.nlargest(TOP_OPERATORS, "time_ms").to_dict("records"):
            top.append({"side": rec["side"], "name": rec["name"], "op_type": rec["op_type"],
                        "time_ms": rounded(float(rec["time_ms"])), "ranks": int(rec["ranks"])})
    return {"basis": ", ".join(sorted(bases)) or None, "ranks": ranks,
            "unit": "ms per step, averaged over the ranks with operator data", "types": types, "top": top}


__all__ = ["TOP_OPERATORS", "op_key", "operator_totals"]
