"""The integer-code paths of the analysis (issue 33, scale) give what the plain pandas / Python forms give: groups
in the same order with the same sums, the same arrivals, the same collective names and regular-expression hits.
Each is checked against the straightforward form computed here, on data built to hit the edges (missing keys,
ties, duplicates, mixed kinds, names with newlines)."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from reportgen.analysis.arrival import Arrivals, arrivals
from reportgen.analysis.codes import Groups, codes, codes_of_parts, column_array, distinct
from reportgen.groupsum import group_sum
from reportgen.analysis.comm_rank import wait_ratio
from reportgen.analysis.expert import EP_NAME_RE, EXPERT_KERNEL_RE, _lowered, search_all
from reportgen.analysis.waits import analyze_waits, wait_matrices
from reportgen.collectives import ALLTOALL_RE, collective_type, collective_types
from reportgen.model import Communication, Run


def _frame(n: int = 400, seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ops = np.array(["hcom_allReduce__1_0", "b", "a", "hcom_send_2", "Z", "a/b"], dtype=object)
    groups = np.array(["g2", "g10", "g1", None], dtype=object)
    f = pd.DataFrame({"rank": rng.integers(0, 7, n), "op": ops[rng.integers(0, len(ops), n)],
                      "group": groups[rng.integers(0, len(groups), n)],
                      "v": np.round(rng.random(n) * 3, 1), "w": rng.random(n)})
    f.loc[rng.integers(0, n, 20), "v"] = np.nan
    return f


def test_groups_match_a_pandas_groupby_order_sums_and_first_rows():
    f = _frame()
    names = ["rank", "op", "group"]
    cs = {k: codes(f[k]) for k in names}
    g = Groups([(cs[k][0], len(cs[k][1])) for k in names], len(f))
    ref = f.groupby(names)[["v", "w"]].sum(min_count=1)  # drops the rows with a missing group, keys sorted
    got = g.agg(f, ["v", "w"], "sum", min_count=1)
    assert g.n == len(ref)
    keys = pd.MultiIndex.from_arrays([cs[k][1][cs[k][0][g.first]] for k in names])
    assert list(keys) == list(ref.index)  # same groups in the same order
    np.testing.assert_array_equal(got.to_numpy(), ref.to_numpy())  # same sums, to the bit
    assert list(g.size) == list(f.dropna(subset=["group"]).groupby(names).size())
    # first row of each group: where pandas' first occurrence is
    firsts = f.dropna(subset=["group"]).reset_index().groupby(names)["index"].min()
    assert list(g.first) == list(firsts)


@pytest.mark.parametrize("largest", [True, False])
def test_groups_pick_is_idxmax_or_idxmin_first_of_ties(largest):
    f = _frame()
    c, u = codes(f["op"])
    g = Groups([(c, len(u))], len(f))
    got = g.pick(f["v"].to_numpy(), largest)
    by = f.groupby("op")["v"]
    for k, op in enumerate(u[c[g.first]]):
        vals = f.loc[f["op"] == op, "v"]
        if vals.notna().any():
            want = (vals.idxmax() if largest else vals.idxmin())
            assert got[k] == want
        else:
            assert got[k] == -1
    assert len(by.size()) == g.n


def test_codes_order_as_sorting_the_values_and_mixed_types_do_not_fail():
    c, u = codes(pd.Series(["b", "a", None, "c", "a"], dtype=object))
    assert list(u) == ["a", "b", "c"] and list(c) == [1, 0, -1, 2, 0]
    c, u = codes(pd.Series([3, 1, 2]))
    assert list(c) == [2, 0, 1]
    c, u = codes(pd.Series(["x", 1, "x"], dtype=object))  # text and numbers: first-seen order, no error
    assert c[0] == c[2] != c[1]


@pytest.mark.parametrize("rows", [1, 3, 1 << 16])
def test_codes_of_parts_equal_codes_of_the_whole(rows):
    """Batched factorisation (issue 33): the same codes and values as one over the concatenated parts, missing
    values -1, any batch size (one row a batch, several parts a batch, all parts in one)."""
    rng = np.random.default_rng(7)
    pool = np.array(["hcom_b_2", "hcom_a_1", "z", "a/b", None, "hcom_a_1", np.nan, "é"], dtype=object)
    parts = [pool[rng.integers(0, len(pool), n)] for n in (5, 0, 9, 1, 14, 0, 3)]
    want_c, want_u = codes(np.concatenate(parts))
    for dtype in (np.int64, np.int32):
        c, u = codes_of_parts(parts, rows=rows, dtype=dtype)
        assert c.dtype == dtype
        assert list(u) == list(want_u) == ["a/b", "hcom_a_1", "hcom_b_2", "z", "é"]
        np.testing.assert_array_equal(c, want_c)
    # values that do not compare (text and numbers): first-seen order over the whole, as `codes` gives it
    mixed = [np.array(["x", 2], dtype=object), np.array([1, "x", 2], dtype=object), np.array([None, 1], dtype=object)]
    c, u = codes_of_parts(mixed, rows=2)
    wc, wu = codes(np.concatenate(mixed))
    assert list(u) == list(wu)
    np.testing.assert_array_equal(c, wc)
    c, u = codes_of_parts([], rows=rows)
    assert len(c) == 0 and len(u) == 0


@pytest.mark.parametrize("largest", [True, False])
def test_groups_pick_with_missing_keys_ties_and_groups_without_a_value(largest):
    """`pick` (the first row holding the group's largest / smallest value) against pandas' idxmax / idxmin, with
    rows whose key is missing left out and a group whose values are all NaN (-1)."""
    f = pd.DataFrame({"op": ["a", "b", "a", None, "c", "b", "a", "c", "b"],
                      "v": [2.0, 5.0, 2.0, 9.0, np.nan, 5.0, 1.0, np.nan, -1.0]})
    c, u = codes(f["op"])
    g = Groups([(c, len(u))], len(f))
    got = g.pick(f["v"].to_numpy()[g.rows], largest)
    rows = g.rows[np.where(got >= 0, got, 0)]
    ref = f[f["op"].isin(["a", "b"])].groupby("op")["v"]  # (pandas refuses a group of NaN only: "c" left out)
    want = {"a": 0 if largest else 6, "b": 1 if largest else 8}  # ties: the first row
    assert list(u) == ["a", "b", "c"] and g.n == 3
    assert [int(rows[k]) if got[k] >= 0 else -1 for k in range(3)] == [want["a"], want["b"], -1]
    assert (ref.idxmax() if largest else ref.idxmin()).astype(int).tolist() == [want["a"], want["b"]]


def test_wait_ratio_float_columns_equal_the_pandas_formula_to_the_bit():
    """wait / (wait + transit), 0 where the divisor is ~0 or the ratio undefined: the numpy path for float64
    columns (issue 33: fewer row-long temporaries) gives the pandas formula's values, signs of zero included."""
    rng = np.random.default_rng(11)
    w = rng.random(2000) * 10
    t = rng.random(2000) * 10
    w[rng.random(2000) < 0.1] = np.nan
    t[rng.random(2000) < 0.1] = np.nan
    w[:8] = [np.inf, np.inf, 0.0, 1e-17, -np.inf, -0.0, 3.0, np.nan]
    t[:8] = [-np.inf, np.inf, 0.0, 0.0, 1.0, 2.0, -3.0, np.nan]
    ws, ts = pd.Series(w, index=np.arange(2000) * 3), pd.Series(t, index=np.arange(2000) * 3)
    got = wait_ratio(ws, ts)
    den = ws.fillna(0) + ts.fillna(0)
    want = (ws.fillna(0) / den.where(den > 1e-15)).fillna(0.0)
    assert got.index.equals(want.index) and got.dtype == want.dtype == np.float64
    assert (got.to_numpy().view(np.int64) == want.to_numpy().view(np.int64)).all()
    assert got.iloc[5] == 0.0 and math.copysign(1.0, got.iloc[5]) == -1.0  # -0 / 2: -0, as pandas
    assert got.iloc[0] == 0.0 and got.iloc[1] == 0.0 and got.iloc[3] == 0.0 and got.iloc[6] == 0.0
    assert ws.iloc[:8].equals(pd.Series(w[:8], index=np.arange(8) * 3))  # the inputs are not changed
    nullable = wait_ratio(pd.Series([1.0, None], dtype="Float64"), pd.Series([1.0, 2.0], dtype="Float64"))
    assert nullable.tolist() == [0.5, 0.0]  # other dtypes: pandas' own path


@pytest.mark.parametrize("min_count", [0, 1])
def test_group_sum_of_many_rows_equals_pandas_groupby_on_the_numbers(min_count):
    """More than 65,536 rows: grouped through a categorical of the group numbers (no hash table of every row,
    issue 33): the same compensated sums to the bit as pandas' groupby on the integers, absent groups 0 / NaN."""
    rng = np.random.default_rng(5)
    n_rows, n = 70_000, 40
    gid = rng.integers(0, n, n_rows)
    gid[gid == 7] = 8  # group 7 has no row
    vals = rng.normal(size=(n_rows, 2)) * 10.0 ** rng.integers(-8, 9, (n_rows, 2))
    vals[rng.random((n_rows, 2)) < 0.05] = np.nan
    vals[gid == 3, 1] = np.nan  # a group without a value in one column
    got = group_sum(vals, gid, n, min_count=min_count)
    ref = pd.DataFrame(vals).groupby(gid, sort=True).sum(min_count=min_count)
    want = np.full((n, 2), np.nan if min_count else 0.0)
    want[ref.index.to_numpy()] = ref.to_numpy()
    assert (got.view(np.int64) == want.view(np.int64)).all()
    assert (np.isnan(got[3, 1]) if min_count else got[3, 1] == 0.0)
    assert (np.isnan(got[7, 0]) if min_count else got[7, 0] == 0.0)


def test_collective_types_equal_collective_type_name_by_name():
    names = ["hcom_allReduce__1_4_1", "Default/AllReduce-op3", "a/b/hcom_allGather_1", "HCOM_reduceScatter", "123",
             "", "a/", "x\ny/AllGather", "hcom_", "hcom_hcom_x", "allreduce", float("nan"), None, 5, "Send",
             "ÄllReduce", "hcom_123", "é/ab", "x/\n/y", "hcom_\nab", "alltoallv", "hcom_batchSendRecv__1_0_0"]
    assert collective_types(names) == [collective_type(n) for n in names]
    assert collective_types([]) == []


@pytest.mark.parametrize("regex", [ALLTOALL_RE, EXPERT_KERNEL_RE, EP_NAME_RE, re.compile(r"^ab"),
                                   re.compile(r"b\nc"), re.compile(r"(?<=x)y")])
def test_search_all_equals_a_search_per_text(regex):
    texts = ["hcom_allToAll_1", "a2a", "x", "AllToAllV", "moe_dispatch", "combinex", "all_to_all", "ab\nc", "",
             "dispatch", "GroupedMatmul", "_grouped_mm", "ep_group", "xy", "abab", "grouped_gemm_ep", "sleep"]
    for many in (texts, texts * 3, texts[::-1] * 4):  # (a few texts are searched one by one; more: the joined scan)
        assert list(search_all(many, regex)) == [bool(regex.search(t)) for t in many]


@pytest.mark.parametrize("regex", [ALLTOALL_RE, EXPERT_KERNEL_RE, re.compile(r"gemm\b|(?-i:MoE)_x|a.c{2}", re.I),
                                   re.compile("k|s|i", re.I), re.compile(r"[a-z]2[a-z]", re.I)])
def test_search_all_of_many_names_equals_a_search_per_text(regex):
    """Many names (the joined scan; a case-insensitive pattern of plain words scans ASCII names lowered): the same
    hits as a search per name: mixed case, word boundaries, a case-sensitive part, and non-ASCII letters that the
    pattern matches case-insensitively (the Kelvin sign, the long s, the dotted I: k, s, i), where the scan is
    the pattern's own."""
    rng = np.random.default_rng(3)
    parts = ["hcom_", "AllToAll", "all_to_all", "A2A", "Dispatch", "COMBINE", "GroupedMatmul", "_grouped_mm", "gemm",
             "GEMM_", "moe", "MoE", "_x", "ffn", "abcc", "ABCC", "k", "s", "i", "_", "9", ".", "-"]
    names = ["".join(rng.choice(parts, int(rng.integers(1, 5)))) for _ in range(400)]
    for extra in ([], ["\u212a", "\u017f", "\u0130", "x\u212ay", "gemm\u00e9"]):
        texts = names + extra
        assert list(search_all(texts, regex)) == [bool(regex.search(t)) for t in texts]
    assert _lowered(ALLTOALL_RE) is not None and _lowered(EXPERT_KERNEL_RE) is not None  # (the lowered scan is tried)
    assert _lowered(EP_NAME_RE) is None and _lowered(re.compile("ab")) is None


def _reference_arrivals(frames: list[pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame, bool]:
    """The per-instance arrivals written the plain way (a groupby per quantity, a loop per instance)."""
    f = pd.concat(frames, ignore_index=True).dropna(subset=["start_ms", "dur_ms"])
    inst = f.groupby(["group", "key"], sort=False).ngroup()
    f = f.assign(_inst=inst)
    f = f[f["_inst"].notna() & (f["_inst"] >= 0)]
    kinds = f.groupby("_inst")["kind"].transform(lambda s: s.astype(str).nunique())
    f = f[kinds == 1].drop_duplicates(subset=["_inst", "rank"], keep="first")
    f = f[f.groupby("_inst")["rank"].transform("size") >= 2]
    end = f["start_ms"] + f["dur_ms"]
    g = f.assign(end=end).groupby("_inst")
    same = float((g["end"].max() - g["end"].min()).median()) <= max(
        0.05, 0.1 * float((g["start_ms"].max() - g["start_ms"].min()).median()))
    f = f.assign(arrival=f["start_ms"] if same else -f["dur_ms"])
    f = f.assign(late_ms=f["arrival"] - f.groupby("_inst")["arrival"].transform("min"))
    rows = []
    for i, x in f.sort_values(["_inst", "arrival"], kind="stable").groupby("_inst", sort=True):
        a = x["arrival"].to_numpy()
        rows.append({"op": x["op"].iloc[-1], "group": x["group"].iloc[-1], "n": len(x),
                     "first_rank": int(x["rank"].iloc[0]), "last_rank": int(x["rank"].iloc[-1]),
                     "spread_ms": a[-1] - a[0], "last_behind_median_ms": a[-1] - float(np.median(a[:-1])),
                     "last_margin_ms": a[-1] - a[-2]})
    return f, pd.DataFrame(rows), same


def _comm_run(frames: dict[int, pd.DataFrame]) -> Run:
    from pathlib import Path

    from reportgen.model import RankData, RankInfo, RunInfo

    ranks = {}
    for r, inst in frames.items():
        c = Communication(source=f"r{r}", producer="test", steps=pd.DataFrame(), ops=pd.DataFrame(),
                          links=pd.DataFrame(), instances=inst)
        ranks[r] = RankData(info=RankInfo(rank=r, source_dir=f"rank_{r}"), communication=c)
    return Run(root=Path("hand-made"), info=RunInfo(path="x", layout="test", layout_label="test"), ranks=ranks)


@pytest.mark.parametrize("clock", ["same", "skewed"])
def test_arrivals_equal_the_plain_computation(clock):
    rng = np.random.default_rng(7 if clock == "same" else 8)
    frames = {}
    for r in range(6):
        n = 30
        step = pd.array(rng.integers(1, 4, n), dtype="Int64")
        op = np.array([f"allReduce#{k % 5}" for k in range(n)], dtype=object)
        key = [f"{s}:{o}" for s, o in zip(step, op)]
        group = np.array(["g1", "g2", None][r % 3] if r < 5 else "g1", dtype=object).repeat(n)
        kind = np.array(["collective"] * n, dtype=object)
        if r == 4:
            kind[3] = "p2p"  # an instance whose rows name two kinds: left out
        start = 1000.0 + rng.random(n) * (5 if clock == "same" else 500) + np.arange(n) * 50
        dur = np.round(rng.random(n) * 3 + 1, 2)
        if clock == "same":
            dur = (start.max() + 10 - start)  # the ends line up
        start[5] = np.nan  # a row without a start: dropped
        frames[r] = pd.DataFrame({"step": step, "op": pd.array(op, dtype="str"), "group": group,
                                  "key": pd.array(key, dtype="str"), "kind": kind, "start_ms": start, "dur_ms": dur,
                                  "name": op})
    frames[2] = pd.concat([frames[2], frames[2].iloc[:3]], ignore_index=True)  # a rank twice in an instance
    arr = arrivals(_comm_run(frames))
    f, inst, same = _reference_arrivals([x.assign(rank=r) for r, x in frames.items()])
    assert arr.basis == ("start times" if same else "elapsed times")
    assert len(arr.instances) == len(inst) > 0
    for col in ("op", "group", "n", "first_rank", "last_rank"):
        assert [str(x) for x in arr.instances[col]] == [str(x) for x in inst[col]], col
    for col in ("spread_ms", "last_behind_median_ms", "last_margin_ms"):
        np.testing.assert_array_equal(arr.instances[col].to_numpy(dtype=float), inst[col].to_numpy(dtype=float))
    np.testing.assert_array_equal(arr.late["late_ms"].to_numpy(), f["late_ms"].to_numpy())
    assert list(arr.late["rank"]) == list(f["rank"])


def test_waits_keep_instances_not_the_lateness_rows():
    """`analyze_waits` builds the matrices from the per-rank lateness rows, then keeps only the instances (what the
    late-arrival rule reads): the matrices are the ones `wait_matrices` makes from the full rows."""
    late = pd.DataFrame({"rank": [0, 1, 2, 0, 1, 2], "step": [1, 1, 1, 2, 2, 2], "op": ["ar"] * 6,
                         "group": ["g"] * 6, "key": ["1:ar"] * 3 + ["2:ar"] * 3, "kind": ["collective"] * 6,
                         "late_ms": [0.0, 4.0, 1.0, 0.0, 6.0, 2.0], "inst": [0, 0, 0, 1, 1, 1]})
    inst = pd.DataFrame({"step": [1, 2], "op": ["ar", "ar"], "group": ["g", "g"], "key": ["1:ar", "2:ar"],
                         "kind": ["collective"] * 2, "n": [3, 3], "first_rank": [0, 0], "last_rank": [1, 1],
                         "spread_ms": [4.0, 6.0], "last_behind_median_ms": [3.5, 5.0], "last_margin_ms": [3.0, 4.0]})
    arr = Arrivals(late=late, instances=inst, basis="start times")
    full = wait_matrices(arr)
    w, reason = analyze_waits(_comm_run({0: pd.DataFrame(), 1: pd.DataFrame()}), arr)
    assert reason == "" and w.arrivals.late.empty and list(w.arrivals.late.columns) == list(late.columns)
    assert w.arrivals.instances is inst
    g = w.groups[0]
    np.testing.assert_array_equal(g.ms, full.groups[0].ms)
    # rank 0 waited (4 + 6) / 2 steps for rank 1, rank 2 waited (3 + 4) / 2
    assert g.ms[0, 1] == pytest.approx(5.0) and g.ms[2, 1] == pytest.approx(3.5)
    assert g.culprits[0].rank == 1 and not math.isnan(g.culprits[0].per_waiter_ms)


def test_distinct_is_numpy_unique_for_every_integer_type_and_range():
    """`codes.distinct` (a table of the range where the integers are few and close, else a hash and a sort of the
    distinct values) gives `np.unique`'s values and dtype: negative, unsigned and 64-bit extremes, empty."""
    rng = np.random.default_rng(33)
    cases = [np.zeros(0, dtype=np.int64), np.array([5], dtype=np.int8), np.array([True, False, True]),
             np.array([-128, 127, -128, 0], dtype=np.int8),  # (a range that overflows the type's own subtraction)
             np.array([2 ** 64 - 5, 2 ** 64 - 1, 2 ** 64 - 5], dtype=np.uint64),
             np.array([-2 ** 63, 2 ** 63 - 1, -2 ** 63], dtype=np.int64)]
    for dtype in (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64):
        info = np.iinfo(dtype)
        for span in (3, 200, 10 ** 6, 2 ** 40):
            lo, hi = max(int(info.min), -span), min(int(info.max), span)
            cases.append(rng.integers(lo, hi, 300, endpoint=True, dtype=np.int64).astype(dtype))
            cases.append(rng.integers(lo, hi, 7, endpoint=True, dtype=np.int64).astype(dtype))
    for a in cases:
        want, got = np.unique(a), distinct(a)
        assert got.dtype == want.dtype and np.array_equal(got, want), a
    # not integers: numpy's own
    f = np.array([2.5, np.nan, -1.0, 2.5])
    np.testing.assert_array_equal(distinct(f), np.unique(f))


def test_column_array_is_the_columns_values_and_missing_columns_are_missing():
    f = pd.DataFrame({"a": [1.5, 2.5], "s": pd.array(["x", None], dtype="str"), "i": pd.array([1, None], dtype="Int64")})
    for c in ("a", "s", "i"):
        got = column_array(f, c)
        assert len(got) == 2 and got.dtype == f[c].dtype
        pd.testing.assert_series_equal(pd.Series(got, name=c), f[c])
    assert pd.isna(column_array(f, "absent")).all() and len(column_array(f, "absent")) == 2
