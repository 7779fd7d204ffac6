"""Issue 33 (memory): summary.json's per-(group, collective) sums (`analysis.collective_sums`) and the rank pages'
operator tables (`site.pages.rank.communication.RankComm`) read `CommAnalysis.rank_ops` without copies of its
columns: the same numbers and orders as a plain pandas groupby / sort of the frame (independent computations)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from reportgen.analysis.collective_sums import collective_sums
from reportgen.collectives import collective_type
from reportgen.rules.highlights import Highlights
from reportgen.site.pages.rank.communication import RankComm
from rule_kit import analysis

COLS = ["communication_ms", "wait_ms", "transit_ms", "count"]


def _frame(categorical: bool) -> pd.DataFrame:
    f = pd.DataFrame({
        "rank": [0, 0, 0, 0, 1, 1, 1, 1],
        "op": ["hcom_allReduce__1", "hcom_allReduce__2", "hcom_allGather__1", "hcom_allReduce__3",
               "hcom_allReduce__1", "hcom_allGather__1", None, "hcom_allReduce__9"],
        "group": ["g1", "g1", "g1", "g2", "g1", "g1", "g1", None],
        "kind": ["collective"] * 8,
        "communication_ms": [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0],
        "wait_ms": [0.5, 0.25, 0.0, 1.0, 2.0, np.nan, 3.0, 4.0],
        "transit_ms": [0.5, 1.75, 4.0, 7.0, 14.0, 30.0, 61.0, 124.0],
        "count": [1.0, 1.0, 2.0, 1.0, 1.0, 2.0, 1.0, 1.0],
    })
    if categorical:
        for c in ("op", "group", "kind"):
            f[c] = f[c].astype("category")
    return f


@pytest.mark.parametrize("categorical", [False, True])
def test_collective_sums_by_hand(categorical):
    pairs, cuts, sums = collective_sums(_frame(categorical), COLS)
    # a row without an operator or a group is left out; AllReduce of g1 sums rank 0's two operators
    assert pairs == [("g1", "AllReduce"), ("g1", "AllGather"), ("g2", "AllReduce")]
    assert cuts.tolist() == [0, 2, 4, 5]
    assert sums["communication_ms"].tolist() == [3.0, 16.0, 4.0, 32.0, 8.0]
    assert sums["wait_ms"].tolist() == [0.75, 2.0, 0.0, 0.0, 1.0]  # (NaN skipped: a sum of none is 0)
    assert sums["count"].tolist() == [2.0, 1.0, 2.0, 2.0, 1.0]


def _reference(f: pd.DataFrame):
    """A groupby on the three keys as text, as first seen, and the pairs as first seen among the triples."""
    g = f.assign(coll=[collective_type(o) if isinstance(o, str) else None for o in f["op"].astype(object)],
                 group=f["group"].astype(object))
    g = g[g["coll"].notna() & g["group"].notna()]
    s = g.groupby(["group", "coll", "rank"], sort=False)[COLS].sum()
    pairs = list(dict.fromkeys((gr, co) for gr, co, _ in s.index))
    out = {c: [] for c in COLS}
    cuts = [0]
    for p in pairs:
        at = [i for i, (gr, co, _) in enumerate(s.index) if (gr, co) == p]
        for c in COLS:
            out[c] += s[c].to_numpy()[at].tolist()
        cuts.append(cuts[-1] + len(at))
    return pairs, cuts, out


@pytest.mark.parametrize("categorical", [False, True])
def test_collective_sums_equal_a_groupby_with_ranks_out_of_order(categorical):
    """Random operators over 5 ranks whose rows come in no order (a rank's rows in several places), values whose
    sums depend on the order they are added in: the same pairs, orders and digits as pandas' groupby."""
    rng = np.random.default_rng(7)
    n = 3000
    names = [f"hcom_{k}__{i}" for k in ("allReduce", "allGather", "reduceScatter", "broadcast") for i in range(40)]
    f = pd.DataFrame({
        "rank": rng.integers(0, 5, n),
        "op": np.array(names, dtype=object)[rng.integers(0, len(names), n)],
        "group": np.array(["a", "b", "c"], dtype=object)[rng.integers(0, 3, n)],
        "communication_ms": rng.random(n) * 10.0 ** rng.integers(-6, 6, n),
        "wait_ms": np.where(rng.random(n) < 0.1, np.nan, rng.random(n)),
        "transit_ms": rng.random(n) * 1e3,
        "count": rng.integers(1, 4, n).astype(float),
    })
    f.loc[rng.integers(0, n, 20), "group"] = None
    if categorical:
        f["op"] = f["op"].astype("category")
        f["group"] = f["group"].astype("category")
    pairs, cuts, sums = collective_sums(f, COLS)
    want_pairs, want_cuts, want = _reference(f)
    assert pairs == want_pairs and cuts.tolist() == want_cuts
    for c in COLS:
        assert sums[c].tolist() == want[c], c
    # rows that come rank by rank: the same again (the path that numbers each rank's rows where they are)
    by_rank = f.sort_values("rank", kind="stable").reset_index(drop=True)
    pairs, cuts, sums = collective_sums(by_rank, COLS)
    want_pairs, want_cuts, want = _reference(by_rank)
    assert pairs == want_pairs and cuts.tolist() == want_cuts
    for c in COLS:
        assert sums[c].tolist() == want[c], c


def test_collective_sums_of_nothing():
    f = _frame(False).iloc[[6, 7]]  # an operator or a group missing on every row
    pairs, cuts, sums = collective_sums(f, COLS)
    assert pairs == [] and cuts.tolist() == [0] and all(len(v) == 0 for v in sums.values())


@pytest.mark.parametrize("categorical", [False, True])
def test_rank_page_operators_longest_first_from_the_frame_in_any_order(categorical):
    """A rank's operators longest first (ties in the frame's order), every column read through that order from
    the frame's own arrays: the same cells as the rows sorted by hand; a missing group stays missing."""
    a = analysis(comm={"communication_ms": [[1.0, 2.0]]})
    f = _frame(categorical)
    f.loc[5, "communication_ms"] = 16.0  # a tie with row 4 (rank 1): row 4 first
    f["wait_ratio"] = f["wait_ms"] / f["transit_ms"]
    a.comm.rank_ops = f.iloc[[4, 0, 5, 1, 6, 2, 7, 3]].reset_index(drop=True)  # the ranks' rows interleaved
    rc = RankComm(a, Highlights())
    assert rc.n_ops(0) == 4 and rc.n_ops(1) == 4 and rc.n_ops(2) == 0
    got = rc._op_columns(1, arrays=True)
    assert [got["op"][i] for i in (0, 2, 3)] == ["hcom_allReduce__9", "hcom_allReduce__1", "hcom_allGather__1"]
    assert got["communication_ms"].tolist() == [128.0, 64.0, 16.0, 16.0]
    assert got["count"].tolist() == [1.0, 1.0, 1.0, 2.0]
    assert got["per_call_ms"].tolist() == [128.0, 64.0, 16.0, 8.0]
    assert pd.isna(got["op"][1])
    top = rc._op_columns(0, limit=2)
    assert top["op"] == ["hcom_allReduce__3", "hcom_allGather__1"]
    assert top["communication_ms"] == [8.0, 4.0] and top["wait_ms"] == [1.0, 0.0]
    assert top["wait_ratio"] == [pytest.approx(1 / 7), 0.0]


def test_analyze_releases_what_only_the_communication_analysis_reads(tmp_path):
    """`analyze(release_inputs=True)` (the build) drops the ranks' operator and link frames and their comm figures
    once read (issue 33: ~220 MB at 1,024 ranks): its communication analysis and expert balance equal those of a run
    that keeps them; the run's other data stay; without it, the run is left as it was."""
    from pandas.testing import assert_frame_equal

    from reportgen.analysis import analyze
    from reportgen.analysis.communication import analyze_communication
    from reportgen.analysis.expert import analyze_expert_balance
    from reportgen.analysis.per_rank import rank_figures
    from reportgen.layouts import discover, load_run
    from reportgen.synth import generate_run

    lay = discover(generate_run(tmp_path / "run", ranks=4, steps=2))[0]
    run, kept = load_run(lay, derive=rank_figures), load_run(lay, derive=rank_figures)
    assert all(len(d.communication.ops) and len(d.communication.links) for d in run.ranks.values())
    analyze(kept)
    assert all(len(d.communication.ops) and len(d.communication.links) and d.figures.comm is not None
               for d in kept.ranks.values())
    a = analyze(run, release_inputs=True)
    want = analyze_communication(kept)
    assert all(len(d.communication.ops) for d in kept.ranks.values())  # (released only when asked)
    for name in ("per_rank", "per_rank_step", "per_group_rank", "ops", "rank_ops", "links", "pairs", "link_ops"):
        assert_frame_equal(getattr(a.comm, name), getattr(want, name), check_exact=True)
    assert repr(a.expert) == repr(analyze_expert_balance(kept))
    for r, d in run.ranks.items():
        c = d.communication
        assert not len(c.ops) and not len(c.links) and d.figures.comm is None
        assert list(c.ops.columns) == list(kept.ranks[r].communication.ops.columns)  # (empty, same columns)
        assert c.ops.dtypes.equals(kept.ranks[r].communication.ops.dtypes)  # (and dtypes: one such frame shared)
        assert c.links.dtypes.equals(kept.ranks[r].communication.links.dtypes)
        assert len(c.steps) == len(kept.ranks[r].communication.steps) and c.source
