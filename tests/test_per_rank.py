"""The analyses' per-rank figures (issue 33, `analysis.per_rank`): computed where a rank is loaded, they give the
same numbers, to the last digit, as the same analyses computed in the main process from the ranks' data; the
compensated group sums they use are pandas' own."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reportgen.groupsum import group_mean, group_sum
from reportgen.analysis.communication import analyze_communication
from reportgen.analysis.expert import analyze_expert_balance
from reportgen.analysis.per_rank import RankFigures, rank_figures
from reportgen.layouts import discover, load_run
from reportgen.synth import generate_run


@pytest.mark.parametrize("nan", [True, False])  # (no NaN and sorted groups: pandas 3 sums by `reduceat`)
@pytest.mark.parametrize("sort", [False, True])
@pytest.mark.parametrize("min_count", [0, 1])
def test_group_sum_is_pandas_groupby_sum(sort, min_count, nan):
    rng = np.random.default_rng(7)
    for trial in range(60):
        n_rows, groups = int(rng.integers(1, 400)), int(rng.integers(1, 40))
        gid = rng.integers(0, groups, n_rows)
        if sort:
            gid = np.sort(gid)
        if trial % 3 == 0:  # a few long groups (pandas' own path) among short ones
            gid[: n_rows // 2] = 0
        gid = np.unique(gid, return_inverse=True)[1].reshape(-1)
        n = int(gid.max()) + 1
        vals = rng.random((n_rows, 4)) * 10.0 ** rng.integers(-4, 9, (n_rows, 4))
        if nan:
            vals[rng.random((n_rows, 4)) < 0.15] = np.nan
        else:  # (signs mixed: the compensated sum and `reduceat` then differ in the last bits)
            vals *= np.where(rng.random((n_rows, 4)) < 0.5, -1.0, 1.0)
        vals[rng.random((n_rows, 4)) < 0.02] = -0.0
        if trial % 7 == 0 and nan:
            vals[rng.random((n_rows, 4)) < 0.03] = np.inf
        want = pd.DataFrame(vals).groupby(gid, sort=True).sum(min_count=min_count).to_numpy()
        got = group_sum(vals, gid, n, min_count=min_count)
        assert want.shape == got.shape
        # bit for bit (NaN where pandas has NaN; -0.0 and 0.0 told apart)
        assert np.array_equal(want.view(np.int64), got.view(np.int64)) or np.array_equal(want, got, equal_nan=True) \
            and np.array_equal(np.signbit(want), np.signbit(got))
        mean = pd.DataFrame(vals).groupby(gid, sort=True).mean().to_numpy()
        assert np.array_equal(mean, group_mean(vals, gid, n), equal_nan=True)


def _frames_equal(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a, b, check_exact=True, check_categorical=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One Ascend and one MindInsight run (stored averages), each loaded with the per-rank figures (as the
    pipeline loads) and without them (every figure computed in the main process)."""
    base = tmp_path_factory.mktemp("per_rank")
    out = {}
    for layout in ("ascend", "mindinsight"):
        path = generate_run(base / layout, layout=layout, ranks=8, steps=3, stages=2, tp=2, comm_ops_per_step=6
                            if layout == "ascend" else None, inject=["slow-rank:3:compute:1.3"])
        lay = discover(path)[0]
        out[layout] = (load_run(lay, derive=rank_figures), load_run(lay))
    return out


@pytest.mark.parametrize("layout", ["ascend", "mindinsight"])
def test_figures_from_the_workers_equal_the_main_process(runs, layout):
    with_figs, without = runs[layout]
    assert all(isinstance(d.figures, RankFigures) and d.figures.comm is not None for d in with_figs.ranks.values())
    assert all(d.figures is None for d in without.ranks.values())
    a, b = analyze_communication(with_figs), analyze_communication(without)
    assert a.has_data and len(a.rank_ops) and len(a.per_group_rank) and len(a.per_rank_step)
    for name in ("per_rank", "per_rank_step", "per_group_rank", "ops", "rank_ops", "links", "pairs", "link_ops"):
        _frames_equal(getattr(a, name), getattr(b, name))
    assert list(a.groups) == list(b.groups)
    assert [(g.ranks, g.local_to_global) for g in a.groups.values()] == \
        [(g.ranks, g.local_to_global) for g in b.groups.values()]
    ea, eb = analyze_expert_balance(with_figs), analyze_expert_balance(without)
    assert (ea is None) == (eb is None) and (ea is None or ea.to_dict() == eb.to_dict())


def test_per_rank_numbers_against_the_rank_rows(runs):
    """A rank's operator figures by hand: each (op, group, kind)'s time summed over its step rows / the rank's
    steps, and its count / the steps."""
    run = runs["ascend"][0]
    rank = run.rank_ids[0]
    ops = run.ranks[rank].communication.ops
    steps = ops["step"].nunique()
    ro = analyze_communication(run).rank_ops
    ro = ro[ro["rank"] == rank]
    want = ops.groupby(["op", "group", "kind"])["communication_ms"].agg(["sum", "size"])
    assert len(ro) == len(want)
    for (op, group, kind), row in want.iterrows():
        got = ro[(ro["op"] == op) & (ro["group"] == group) & (ro["kind"] == kind)]
        assert len(got) == 1
        assert got["communication_ms"].iloc[0] == pytest.approx(row["sum"] / steps, rel=1e-12)
        assert got["count"].iloc[0] == pytest.approx(row["size"] / steps)


def test_one_row_groups_keep_only_positions(runs):
    """Where every (op, group, kind) of a rank is one row (each call named apart), the figures hold the rows'
    positions and no copy of their numbers; where names repeat over steps, the sums."""
    for d in runs["ascend"][0].ranks.values():
        f = d.figures.comm
        ops = d.communication.ops
        one_row = not ops.duplicated(["op", "group", "kind"]).any()
        assert (f.ops_nums is None) == one_row
        assert len(f.ops_at) == len(ops.drop_duplicates(["op", "group", "kind"]))


def test_changed_rank_data_after_loading_drops_the_figures(tmp_path):
    """A layout whose run-level pass rewrites the ranks' data (Kineto's collective matching) gets its figures
    made again from the data (not the worker's, made before the pass)."""
    from tests.test_expert_balance import write_moe

    run = load_run(discover(write_moe(tmp_path / "moe", [2000.0, 2000.0, 4000.0, 2000.0]))[0], derive=rank_figures)
    assert all(d.figures is None for d in run.ranks.values())
    assert analyze_expert_balance(run).groups[0].hot_ranks == [2]


def _variant(run, how: str):
    """The Ascend run's communication changed so that other paths of the figures run: operator names that repeat
    over the steps, stored-average rows (a step-less row per operator) on half the ranks, missing keys."""
    import copy

    run = copy.deepcopy(run)
    for r, d in run.ranks.items():
        c = d.communication
        ops = c.ops.copy()
        if how == "repeat":
            ops["op"] = ops["op"].astype(str).str.replace(r"\d+", "", regex=True)
        elif how == "stored" and r % 2:
            avg = ops[ops["step"] == ops["step"].min()].copy()
            avg["step"] = pd.array([None] * len(avg), dtype="Int64")
            ops = pd.concat([ops, avg], ignore_index=True)
            c.stored_average = True
        elif how == "missing":
            ops["group"] = ops["group"].astype(object).where(np.arange(len(ops)) % 5 != 1, None)
            ops["op"] = ops["op"].astype(object).where(np.arange(len(ops)) % 7 != 2, np.nan)
        c.ops = ops
    return run


@pytest.mark.parametrize("how", ["repeat", "stored", "missing"])
def test_figures_equal_the_main_process_on_other_paths(runs, how):
    base = _variant(runs["ascend"][1], how)
    with_figs = _variant(runs["ascend"][1], how)
    for d in with_figs.ranks.values():
        d.figures = rank_figures(d)
    if how == "repeat":
        assert all(d.figures.comm.ops_nums is not None for d in with_figs.ranks.values())
    if how == "stored":
        assert sum(d.figures.comm.stored for d in with_figs.ranks.values()) == len(with_figs.ranks) // 2
    a, b = analyze_communication(with_figs), analyze_communication(base)
    assert len(a.rank_ops) and len(a.per_group_rank)
    for name in ("per_rank", "per_rank_step", "per_group_rank", "ops", "rank_ops"):
        _frames_equal(getattr(a, name), getattr(b, name))
    assert {g: gi.ranks for g, gi in a.groups.items()} == {g: gi.ranks for g, gi in b.groups.items()}
    _check_against_pandas(with_figs, a)


def _check_against_pandas(run, a) -> None:
    """`rank_ops` and `per_group_rank` against a plain pandas groupby of each rank's rows (independent of the
    figures): the averaged rows are the rank's stored-average rows where it has them, else its step rows."""
    any_stored = any(d.communication.stored_average and d.communication.ops["step"].isna().any()
                     for d in run.ranks.values())
    for r, d in run.ranks.items():
        c = d.communication
        ops = c.ops
        avg = c.stored_average & ops["step"].isna()
        stored = bool(avg.any())
        rows = ops[avg] if stored else ops[~avg]
        keys = rows.dropna(subset=["op", "group", "kind"])
        want = keys.groupby(["op", "group", "kind"])["communication_ms"].agg(["sum", "size"])
        div = 1.0 if stored else rows["step"].fillna(-1).nunique()
        got = a.rank_ops[a.rank_ops["rank"] == r]
        assert len(got) == len(want)
        got = got.set_index([got["op"].astype(object), got["group"].astype(object), got["kind"].astype(object)])
        for key, row in want.iterrows():
            assert got.loc[key, "communication_ms"] == pytest.approx(row["sum"] / div, rel=1e-12)
            assert got.loc[key, "count"] == pytest.approx(row["size"] / div)
        pg = a.per_group_rank[a.per_group_rank["rank"] == r]
        if any_stored and not stored:
            assert pg.empty
            continue
        per = rows.dropna(subset=["group"]).assign(s=rows["step"].fillna(-1)).groupby(["group", "s"])[
            "communication_ms"].sum().groupby(level=0).mean()
        assert sorted(pg["group"]) == sorted(per.index)
        for g, v in per.items():
            assert pg.loc[pg["group"] == g, "communication_ms"].iloc[0] == pytest.approx(v, rel=1e-12)


def test_a_failing_figure_does_not_cost_the_rank(tmp_path):
    """A per-rank function that raises (an input nobody foresaw) leaves the rank loaded without figures; the
    analysis then makes them from its data: the same numbers."""
    lay = discover(generate_run(tmp_path / "run", ranks=4, steps=2))[0]

    def boom(data):
        raise ValueError("unforeseen")
    run = load_run(lay, derive=boom)
    assert sorted(run.ranks) == [0, 1, 2, 3]
    assert all(d.figures is None and d.communication is not None for d in run.ranks.values())
    a, b = analyze_communication(run), analyze_communication(load_run(lay, derive=rank_figures))
    _frames_equal(a.rank_ops, b.rank_ops)
    _frames_equal(a.per_group_rank, b.per_group_rank)


@pytest.mark.parametrize("nan", [False, True])
def test_long_groups_sum_and_mean_as_pandas_in_either_of_its_ways(nan, monkeypatch):
    """Groups of more than 16 rows: pandas' own routine called directly (`groupsum.pandas_sums`), which pandas runs
    two ways (from pandas 3: `np.add.reduceat` where the group numbers come sorted and no value is NaN, else its
    compensated sums): the same digits as its groupby either way, and the same again through the public call."""
    from reportgen import groupsum as codes

    rng = np.random.default_rng(11)
    for sort in (True, False):
        gid = rng.integers(0, 6, 500)
        gid[:6] = np.arange(6)
        gid = np.sort(gid) if sort else gid
        vals = rng.random((500, 3)) * 10.0 ** rng.integers(-5, 9, (500, 3))
        if nan:
            vals[rng.random((500, 3)) < 0.1] = np.nan
        frame = pd.DataFrame(vals).groupby(gid, sort=True)
        for public in (False, True):
            if public:
                monkeypatch.setitem(codes._DIRECT, "ok", False)
            for mc in (0, 1):
                want = frame.sum(min_count=mc).to_numpy()
                assert (group_sum(vals, gid, 6, min_count=mc).view(np.int64) == want.view(np.int64)).all()
            assert (group_mean(vals, gid, 6).view(np.int64) == frame.mean().to_numpy().view(np.int64)).all()
            monkeypatch.setitem(codes._DIRECT, "ok", True)


def test_alltoall_from_the_codes_equals_the_groupby():
    """`expert.rank_alltoall` from the rank's codes (`comm_rank.op_codes`, as `rank_figures` passes them) gives what
    its groupby gives (the frame alone): the same groups in the same order, the same sums to the bit (sizes missing
    in one column, in both, -0.0, rows without a step), and the groupby itself where the groups are not all text."""
    from types import SimpleNamespace

    from reportgen.analysis.comm_rank import op_codes
    from reportgen.analysis.expert import rank_alltoall

    rng = np.random.default_rng(5)
    n = 300
    base = pd.DataFrame({
        "step": pd.array(rng.integers(1, 4, n), dtype="Int64"),
        "op": np.array([f"hcom_{rng.choice(['allToAll', 'alltoallv', 'allReduce', 'Dispatch'])}__{i}" for i in
                        range(n)], dtype=object),
        "group": np.array([str(g) for g in rng.choice(["b_group", "a_group", "9"], n)], dtype=object),
        "kind": np.array(rng.choice(["collective", "p2p", "all_to_all"], n), dtype=object),
        "communication_ms": rng.random(n) * 10.0 ** rng.integers(-4, 4, n),
        "sdma_mb": rng.random(n), "rdma_mb": rng.random(n)})
    base.loc[rng.random(n) < 0.2, "sdma_mb"] = np.nan
    base.loc[rng.random(n) < 0.2, "rdma_mb"] = np.nan
    base.loc[base["group"] == "9", ["sdma_mb", "rdma_mb"]] = -0.0
    base.loc[rng.random(n) < 0.05, "communication_ms"] = np.nan
    base.loc[rng.random(n) < 0.05, "step"] = pd.NA
    variants = {"text": base, "no sizes": base.drop(columns=["rdma_mb"]),
                "all sizes missing": base.assign(sdma_mb=np.nan, rdma_mb=np.nan),
                "a group missing": base.assign(group=base["group"].where(np.arange(n) % 9 != 4, None)),
                "number groups": base.assign(group=pd.factorize(base["group"])[0] * 10)}
    for name, ops in variants.items():
        data = SimpleNamespace(communication=SimpleNamespace(ops=ops))
        want, got = rank_alltoall(data), rank_alltoall(data, op_codes(ops))
        assert want and list(got) == list(want), name
        for g, (ms, mb) in want.items():
            assert np.array([ms, mb]).view(np.int64).tolist() == np.array(got[g]).view(np.int64).tolist(), (name, g)
