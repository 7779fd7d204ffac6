"""Arrivals from each rank's own coded instances (issue 33, analysis/arrival.py `rank_inputs`): the lateness, the
per-instance figures and the wait-for matrix equal the plain stacked computation (every rank's rows in one frame,
a groupby on (group, key)) and hand-computed values on an injected late rank; a 64-bit hash collision cannot join
two instances (the text check falls back to exact matching); keys that are not text are matched exactly."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reportgen.analysis import analyze, arrival
from reportgen.analysis.arrival import arrivals, rank_inputs
from reportgen.analysis.waits import wait_matrices
from test_analysis_codes import _comm_run  # (one hand-made run of collective instances for both files)

LATE_RANK, LATE_MS = 3, 5.0


def _frames(late_rank: int = LATE_RANK, late_ms: float = LATE_MS) -> dict[int, pd.DataFrame]:
    """4 ranks, one group, 2 steps x 2 all-reduces. Ranks 0, 1, 2 arrive at t, t + 0.5, t + 1 ms; `late_rank`
    at t + 1 + `late_ms`; every rank leaves at t + 20 (one clock: the ends line up)."""
    frames = {}
    for r in range(4):
        rows = []
        for s in (1, 2):
            for k in (1, 2):
                t = 1000.0 * s + 100.0 * k
                arrive = t + (1.0 + late_ms if r == late_rank else 0.5 * r)
                rows.append({"step": s, "op": f"allReduce#{k}", "group": "dp", "key": f"{s}:hcom_allReduce__{k}",
                             "kind": "collective", "start_ms": arrive, "dur_ms": t + 20.0 - arrive,
                             "name": f"hcom_allReduce__{k}"})
        f = pd.DataFrame(rows)
        f["step"] = f["step"].astype("Int64")
        frames[r] = f
    return frames


def _stacked(frames: dict[int, pd.DataFrame]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The old way: every rank's rows in one frame, an instance per (group, key), lateness after the first start
    (the clocks agree here), per instance the last arrival, its margin and its distance to the others' median."""
    f = pd.concat([x.assign(rank=r) for r, x in frames.items()], ignore_index=True)
    f["inst"] = f.groupby(["group", "key"], sort=False).ngroup()
    f["late_ms"] = f["start_ms"] - f.groupby("inst")["start_ms"].transform("min")
    rows = []
    for _, x in f.sort_values(["inst", "start_ms"], kind="stable").groupby("inst", sort=True):
        a = x["start_ms"].to_numpy()
        rows.append({"last_rank": int(x["rank"].iloc[-1]), "first_rank": int(x["rank"].iloc[0]),
                     "spread_ms": a[-1] - a[0], "last_behind_median_ms": a[-1] - float(np.median(a[:-1])),
                     "last_margin_ms": a[-1] - a[-2], "op": x["op"].iloc[-1], "step": x["step"].iloc[-1]})
    return f, pd.DataFrame(rows)


@pytest.fixture(scope="module")
def injected():
    frames = _frames()
    return frames, arrivals(_comm_run(frames))


def test_injected_late_rank_by_hand(injected):
    _, arr = injected
    assert arr.basis == "start times" and len(arr.instances) == 4
    inst = arr.instances
    # rank 3 arrives 1 + 5 = 6 ms after rank 0, 5 ms after rank 2 (the one before it), 5.5 after the median (0.5)
    assert list(inst["last_rank"]) == [LATE_RANK] * 4 and list(inst["first_rank"]) == [0] * 4
    assert list(inst["spread_ms"]) == pytest.approx([6.0] * 4)
    assert list(inst["last_margin_ms"]) == pytest.approx([5.0] * 4)
    assert list(inst["last_behind_median_ms"]) == pytest.approx([5.5] * 4)
    assert list(inst["n"]) == [4] * 4
    assert [str(x) for x in inst["op"]] == ["allReduce#1", "allReduce#2"] * 2
    assert [int(x) for x in inst["step"]] == [1, 1, 2, 2]
    # per rank and instance: 0, 0.5, 1 and 6 ms after the first
    late = arr.late
    by_rank = late.groupby("rank")["late_ms"].agg(["min", "max"])
    assert by_rank.loc[1].tolist() == pytest.approx([0.5, 0.5]) and by_rank.loc[3].tolist() == pytest.approx([6.0, 6.0])
    # no text a row: the step, operator, group and kind are categoricals
    assert all(isinstance(late[c].dtype, pd.CategoricalDtype) for c in ("step", "op", "group", "kind"))


def test_injected_late_rank_equals_the_stacked_computation(injected):
    frames, arr = injected
    f, ref = _stacked(frames)
    np.testing.assert_array_equal(arr.late["late_ms"].to_numpy(), f["late_ms"].to_numpy())
    assert list(arr.late["rank"]) == list(f["rank"]) and list(arr.late["inst"]) == list(f["inst"])
    for c in ("last_rank", "first_rank", "spread_ms", "last_behind_median_ms", "last_margin_ms"):
        np.testing.assert_array_equal(arr.instances[c].to_numpy(dtype=float), ref[c].to_numpy(dtype=float), c)


def test_wait_matrix_of_the_injected_rank(injected):
    _, arr = injected
    w = wait_matrices(arr)
    assert w.steps == 2
    (g,) = w.groups
    assert g.ranks == [0, 1, 2, 3]
    # per step, two all-reduces: rank 0 waits 2 x 6 ms for rank 3, rank 1 2 x 5.5, rank 2 2 x 5
    assert g.ms[:, 3] == pytest.approx([12.0, 11.0, 10.0, 0.0])
    assert g.ms[:, :3] == pytest.approx(np.zeros((4, 3)))
    (c,) = g.culprits
    assert c.rank == LATE_RANK and c.per_waiter_ms == pytest.approx(11.0) and c.saving_ms == pytest.approx(10.0)
    assert c.last_in == 4 and c.instances == 4 and c.op == "allReduce#1" and c.op_ms == pytest.approx(5.5)


def test_rank_inputs_hash_the_same_instance_alike_and_groups_apart():
    frames = _frames()
    a, b = rank_inputs(frames[0]), rank_inputs(frames[1])
    assert a.key_hash is not None and list(a.key_hash) == list(b.key_hash)  # same (group, key): same number
    other = frames[1].assign(group="tp")
    assert not set(rank_inputs(other).key_hash) & set(a.key_hash)  # same keys, another group: other instances
    # a row without a start, or without a key, takes no part
    gap = frames[2].copy()
    gap.loc[0, "start_ms"] = np.nan
    gap.loc[1, "key"] = None
    assert list(rank_inputs(gap).at) == [2, 3]


def test_a_hash_collision_does_not_join_two_instances(monkeypatch):
    frames = _frames()
    real = rank_inputs

    def colliding(x):  # every row the same hash: the text check must notice and match the text instead
        got = real(x)
        got.key_hash = np.zeros(len(got.at), dtype=np.uint64)
        return got
    monkeypatch.setattr(arrival, "rank_inputs", colliding)
    arr = arrivals(_comm_run(frames))
    f, ref = _stacked(frames)
    assert len(arr.instances) == 4
    np.testing.assert_array_equal(arr.late["late_ms"].to_numpy(), f["late_ms"].to_numpy())
    np.testing.assert_array_equal(arr.instances["spread_ms"].to_numpy(), ref["spread_ms"].to_numpy())


def test_keys_that_are_not_text_are_matched_exactly():
    frames = {r: x.assign(key=np.arange(len(x)) + 10) for r, x in _frames().items()}  # integer keys
    assert rank_inputs(frames[0]).key_hash is None
    arr = arrivals(_comm_run(frames))
    f, ref = _stacked(frames)
    np.testing.assert_array_equal(arr.late["late_ms"].to_numpy(), f["late_ms"].to_numpy())
    assert list(arr.instances["last_rank"]) == list(ref["last_rank"]) == [LATE_RANK] * 4


def test_analyze_drops_the_instances_after_the_arrivals():
    run = _comm_run(_frames())
    a = analyze(run)
    assert a.waits is not None and a.waits.groups[0].culprits[0].rank == LATE_RANK
    assert all(d.communication.instances is None for d in run.ranks.values())
    assert len(a.waits.arrivals.instances) == 4  # what the late-arrival rule reads is kept


def test_the_loading_workers_inputs_are_used_and_give_the_same_arrivals():
    """`per_rank.rank_figures` codes each rank's instances where it is loaded (cached with the rank): arrivals
    read them (no second coding in the main process) and give what coding the frames here gives."""
    import pickle

    from reportgen.analysis.per_rank import rank_figures

    frames = _frames()
    plain = arrivals(_comm_run(frames))
    run = _comm_run(frames)
    for d in run.ranks.values():
        d.figures = pickle.loads(pickle.dumps(rank_figures(d)))  # (as the rank cache entry holds them)
        assert list(d.figures.arrival.at) == [0, 1, 2, 3]
    got = arrivals(run)
    np.testing.assert_array_equal(got.late["late_ms"].to_numpy(), plain.late["late_ms"].to_numpy())
    pd.testing.assert_frame_equal(got.instances, plain.instances)
    # read, not made again: rank 3's stored numbers changed, its rows are instances of their own (one rank each:
    # left out), so rank 2 is the last to arrive everywhere
    run.ranks[LATE_RANK].figures.arrival.key_hash = run.ranks[LATE_RANK].figures.arrival.key_hash + np.uint64(1)
    got = arrivals(run)
    assert list(got.instances["last_rank"]) == [2] * 4 and list(got.instances["n"]) == [3] * 4


def test_merged_codes_equal_a_mapping_per_part():
    """`arrival._merged`: ranks' codes into their own distinct values -> the run's (first seen, -1 kept), by one
    gather, parts with the same value lists sharing a mapping: what mapping each part on its own gives."""
    from reportgen.analysis.arrival import _merged

    def plain(parts):
        index, out = {}, []
        for c, u in parts:
            m = np.array([index.setdefault(v, len(index)) for v in u] + [-1], dtype=np.int32)
            out.append(m[c])
        return (np.concatenate(out) if out else np.zeros(0, dtype=np.int32)), list(index)
    rng = np.random.default_rng(5)
    for _ in range(200):
        parts = []
        for _ in range(int(rng.integers(0, 6))):
            u = list(rng.choice(["a", "b", "c", "d"], size=int(rng.integers(0, 4)), replace=False))
            c = rng.integers(-1, len(u), int(rng.integers(0, 8))) if u else np.full(int(rng.integers(0, 3)), -1)
            parts.append((c.astype(rng.choice([np.int16, np.int32, np.int64])), u))
            if rng.random() < 0.3:  # the same list again (a rank of the same role)
                parts.append((rng.integers(-1, len(u), 5) if u else np.full(2, -1), list(u)))
        want, got = plain(parts), _merged(parts)
        assert got[1] == want[1] and got[0].dtype == want[0].dtype and np.array_equal(got[0], want[0]), parts


def test_a_rank_that_repeats_an_instance_counts_once_from_the_workers_inputs():
    """The loading worker notes whether a rank repeats a (group, key) (`RankInputs.distinct_keys`): where none
    does, the repeat search is skipped; a rank that repeats one still counts once per instance (its first row), as
    coding the frames here gives."""
    import pickle

    from reportgen.analysis.per_rank import rank_figures

    frames = _frames()
    assert rank_inputs(frames[0]).distinct_keys
    twice = pd.concat([frames[1], frames[1].iloc[[0]].assign(start_ms=frames[1]["start_ms"].iloc[0] + 50.0)],
                      ignore_index=True)  # rank 1 lists its first all-reduce again, 50 ms later
    frames[1] = twice
    assert not rank_inputs(twice).distinct_keys
    plain = arrivals(_comm_run(frames))
    run = _comm_run(frames)
    for d in run.ranks.values():
        d.figures = pickle.loads(pickle.dumps(rank_figures(d)))
    got = arrivals(run)
    pd.testing.assert_frame_equal(got.late, plain.late)
    pd.testing.assert_frame_equal(got.instances, plain.instances)
    assert (got.late["rank"] == 1).sum() == 4  # its repeated row left out: once per instance
    assert list(got.instances["spread_ms"]) == pytest.approx([6.0] * 4)  # (the repeat, 50 ms late, is not read)
