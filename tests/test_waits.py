"""Who waits for whom (issue 32 item 4): the wait-for matrix (analysis/waits.py) with hand-computed values, the
late-arrival rule naming a culprit that a gradient all-reduce hides (every rank's step time equal), on every input
that records per-rank collective start times, healthy runs without a finding, and the communication page's view."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from bs4 import BeautifulSoup

from reportgen.analysis import analyze
from reportgen.analysis.arrival import Arrivals
from reportgen.analysis.waits import NO_TIMES, GroupWaits, Culprit, binned, wait_matrices
from reportgen.cli import main
from reportgen.layouts import discover, load_run
from reportgen.rules import run_rules
from reportgen.site.views.summary import _waits as summary_waits
from reportgen.synth import generate_run, parse_injections

STALL = "stall:2:backward:200ms"
H100 = Path(__file__).resolve().parent / "data" / "h100" / "ddp_gloo_stall"


def _arrivals(rows: list[tuple]) -> Arrivals:
    """(step, key, kind, {rank: late_ms}) -> the `Arrivals` analysis.waits reads (its `late` frame)."""
    late = [{"rank": r, "step": s, "op": f"{kind}#{k[-1]}", "group": "g", "key": k, "kind": kind, "late_ms": v}
            for s, k, kind, by in rows for r, v in by.items()]
    return Arrivals(late=pd.DataFrame(late), instances=pd.DataFrame(columns=["group", "kind", "last_rank",
                                                                               "last_margin_ms"]),
                    basis="start times")


def test_matrix_by_hand():
    # step 1: rank 2 arrives 10 ms after rank 0, rank 1 at 2 ms: rank 0 waits 10, rank 1 waits 8 for rank 2.
    # step 2: rank 1 is last (5 ms), rank 2 at 1 ms: rank 0 waits 5, rank 2 waits 4 for rank 1.
    # a send/receive (p2p) is the pipeline's bubble, not a culprit: left out.
    w = wait_matrices(_arrivals([(1, "1:a1", "allreduce", {0: 0.0, 1: 2.0, 2: 10.0}),
                                 (2, "2:a1", "allreduce", {0: 0.0, 1: 5.0, 2: 1.0}),
                                 (2, "2:s1", "send", {0: 0.0, 1: 50.0})]))
    assert w.steps == 2
    (g,) = w.groups
    assert g.ranks == [0, 1, 2]
    # per step (2 steps): 0 waits (10 + 0)/2 for 2 and (0 + 5)/2 for 1; 1 waits 8/2 for 2; 2 waits 4/2 for 1
    assert g.ms == pytest.approx(np.array([[0, 2.5, 5.0], [0, 0, 4.0], [0, 2.0, 0]]))
    c2, c1 = g.culprits
    assert (c2.rank, c1.rank) == (2, 1)
    assert c2.per_waiter_ms == pytest.approx((5.0 + 4.0) / 2) and c2.total_ms == pytest.approx(9.0)
    assert c1.per_waiter_ms == pytest.approx((2.5 + 2.0) / 2)
    assert c2.waiters == [(0, pytest.approx(5.0)), (1, pytest.approx(4.0))]
    assert c2.op == "allreduce#1" and c2.op_ms == pytest.approx((10.0 + 8.0) / 2 / 2)  # per step, per waiter


def test_binned_keeps_the_culprits_at_1024_ranks():
    n = 1024
    ms = np.zeros((n, n))
    ms[:, 777] = 200.0  # everybody waits 200 ms per step for rank 777
    ms[777, 777] = 0.0
    ms[:, 5] = 1.0
    ms[5, 5] = 0.0
    culprits = [Culprit(777, 200.0, 200.0 * (n - 1), 200.0, 10, 10, [], "allreduce#2", 200.0),
                Culprit(5, 1.0, n - 1.0, 1.0, 3, 10, [], "allreduce#1", 1.0)]
    g = GroupWaits(group="0", ranks=list(range(n)), ms=ms, instances=10, culprits=culprits)
    labels, m, kept = binned(g, max_cells=32, keep=8)
    assert len(labels) <= 32 and m.shape == (len(labels), len(labels))
    assert "777" in labels and "5" in labels and kept[labels.index("777")] and kept[labels.index("5")]
    j = labels.index("777")
    # a bin row: each of its ranks waits 200 ms per step for rank 777 (the mean over the bin's ranks)
    bins = [i for i, k in enumerate(kept) if not k]
    assert all(m[i, j] == pytest.approx(200.0) for i in bins)
    assert m[j, j] == 0.0
    # a bin column holds no culprit: what a row waits for its ranks together (rank 5 is out on its own)
    assert all(m[i, bins[0]] == 0.0 for i in range(len(labels)))
    # every rank is in exactly one label: the bins cover the 1,022 others
    covered = sum(1 if k else (int(l.split("–")[1]) - int(l.split("–")[0]) + 1 if "–" in l else 1)
                  for l, k in zip(labels, kept))
    assert covered == n


def test_stall_injection_parses():
    p = parse_injections([STALL, "stall:1:3:50"])
    assert p.phase_stalls == {2: ("backward", 200.0)} and p.stalls == {(1, 3): 50.0}


def _analysed(path: Path):
    a = analyze(load_run(discover(path)[0]))
    return a, run_rules(a)[0]


@pytest.fixture(scope="module")
def stalled(tmp_path_factory) -> dict:
    """A 4-rank DDP run whose rank 2 stalls 200 ms in every step's backward, in each layout with start times."""
    base = tmp_path_factory.mktemp("stall")
    out = {}
    for name, kw in (("kineto", dict(layout="kineto")), ("ascend", dict(layout="ascend")),
                     ("db", dict(layout="ascend", export="db")), ("mindinsight", dict(layout="mindinsight")),
                     ("mindspore_gpu", dict(layout="mindspore_gpu"))):
        run = generate_run(base / name, ranks=4, steps=5, seed=3, inject=[STALL], **kw)
        out[name] = _analysed(run)
    return out


@pytest.mark.parametrize("layout", ["kineto", "ascend", "db", "mindinsight", "mindspore_gpu"])
def test_stalled_rank_is_named_with_200_ms_per_step(stalled, layout):
    a, findings = stalled[layout]
    # the all-reduce equalises the steps: every rank's mean step time within 1 % of the others'
    totals = a.steps.per_step.groupby("rank")["total"].mean()
    assert totals.max() - totals.min() < 0.01 * totals.mean()
    assert a.waits is not None, a.waits_reason
    top_g, top = a.waits.top(1)[0]
    assert top.rank == 2
    # each of the 3 other ranks waits ~200 ms per step for rank 2 (the stall), nobody else is waited for as long
    assert top.per_waiter_ms == pytest.approx(200.0, rel=0.05)
    assert top.total_ms == pytest.approx(3 * 200.0, rel=0.05)
    assert {r for r, _ms in top.waiters} == {0, 1, 3}
    others = [c.per_waiter_ms for g in a.waits.groups for c in g.culprits if c.rank != 2]
    assert max(others, default=0.0) < 10.0
    late = [f for f in findings if f.id == "late-arrival.culprit"]
    assert len(late) == 1 and late[0].ranks == [2]
    ev = late[0].evidence
    assert ev["waited_for_per_peer_ms"] == pytest.approx(200.0, rel=0.05)
    assert set(ev["waited_for"]["2"]["waiters"]) == {"0", "1", "3"}
    # its cost: the collectives would start ~200 ms earlier per step had it arrived with the others
    assert late[0].impact["step_ms"] == pytest.approx(200.0, rel=0.05)
    assert late[0].severity == "warning"  # the policy: a saving of 55 % of the step, the rule's ceiling
    assert "200 ms per step for it" in str(late[0].title) or "199 ms per step for it" in str(late[0].title) \
        or "198 ms per step for it" in str(late[0].title) or "201 ms per step for it" in str(late[0].title)


@pytest.mark.parametrize("name,kw", [
    ("ascend-tp2-pp2", dict(layout="ascend", ranks=8, tp=2, stages=2)),
    ("ascend-16", dict(layout="ascend", ranks=16)),
    ("kineto-8", dict(layout="kineto", ranks=8)),
    ("mindinsight-pp2", dict(layout="mindinsight", ranks=8, stages=2)),
    ("oneoff-stall", dict(layout="ascend", ranks=8, inject=["stall:1:2:200"])),
    ("rotating-stall", dict(layout="kineto", ranks=8, inject=["rotating-stall"])),
])
def test_healthy_runs_name_no_late_rank(tmp_path, name, kw):
    a, findings = _analysed(generate_run(tmp_path / name, steps=5, seed=5, **kw))
    assert a.waits is not None
    assert not [f for f in findings if f.id == "late-arrival.culprit"]
    if "inject" not in kw:  # noise only: nobody costs a peer more than 2 % of the step
        step = float(a.steps.per_step["total"].median())
        assert max(c.per_waiter_ms for _g, c in a.waits.top(1)) < 0.02 * step


def test_no_arrival_times_says_so(tmp_path):
    """MindInsight hccl_raw has per-operator totals but no start times; without the step traces' collective
    columns the wait-for matrix cannot be read: the reason is given, not an all-clear."""
    run = generate_run(tmp_path / "mi", layout="mindinsight", ranks=2, steps=3,
                       inject=["missing-step-trace:0", "missing-step-trace:1"])
    a = analyze(load_run(discover(run)[0]))
    assert a.comm.has_data  # communication was read ...
    assert a.waits is None and a.waits_reason == NO_TIMES  # ... but not who waits for whom
    s = summary_waits(a)
    assert s["available"] is False and "start time" in s["reason"] and s["groups"] == []


@pytest.mark.skipif(not H100.exists(), reason="tests/data/h100/ddp_gloo_stall not in this checkout")
def test_real_h100_ddp_over_gloo_names_the_stalled_rank():
    """Recorded on an H100: 2 ranks, DDP over gloo, rank 1 sleeps 200 ms on the device in every backward (meta)."""
    meta = {r: json.loads((H100 / f"meta_rank{r}.json").read_text()) for r in (0, 1)}
    stall = meta[1]["stall_ms"]
    assert stall == 200.0 and meta[0]["stall_ms"] == 0.0
    a, findings = _analysed(H100)
    # every rank's steps take the same time (the wall clock around each step agrees within 2 %)
    wall = [np.median([meta[r]["step_wall_ms"][s] for s in meta[r]["profiled_steps"]]) for r in (0, 1)]
    assert abs(wall[0] - wall[1]) < 0.02 * wall[0]
    assert a.waits is not None and a.waits.source == "collectives"
    (g,) = a.waits.groups
    top = g.culprits[0]
    assert top.rank == 1 and top.waiters[0][0] == 0
    # rank 0 waits for rank 1 about its stall per step (the sleep, less what rank 0 has left to do meanwhile)
    assert 0.9 * stall <= top.per_waiter_ms <= 1.05 * stall
    assert g.culprits[1].per_waiter_ms < 0.05 * stall  # rank 0 is waited for by noise only
    late = [f for f in findings if f.id == "late-arrival.culprit"]
    assert len(late) == 1 and late[0].ranks == [1]
    assert 0.9 * stall <= late[0].impact["step_ms"] <= 1.05 * stall
    assert late[0].evidence["waited_for"]["1"]["collective"].startswith("allreduce#")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("waits-site")
    run = generate_run(base / "run", layout="kineto", ranks=4, steps=5, seed=3, inject=[STALL])
    assert main([str(run), "-o", str(base / "out"), "-q", "--lang", "en"]) == 0
    return base / "out"


def test_communication_page_shows_who_waits_for_whom(site):
    soup = BeautifulSoup((site / "cluster" / "communication.html").read_text(encoding="utf-8"), "html.parser")
    assert soup.find(id="comm-waits-h") is not None
    rows = soup.find(id="comm-waits-table").find("tbody").find_all("tr")
    cells = [td.get_text(strip=True) for td in rows[0].find_all("td")]
    assert cells[0] == "2" and cells[2].endswith("ms") and 190 <= float(cells[2].split()[0]) <= 210
    assert {x.split(" ")[0] for x in cells[6].split(", ")} == {"0", "1", "3"}
    fig = soup.find(id="fig-comm-waits")
    spec = json.loads(fig.find("script").string)
    data = spec["datasets"]["cells"]
    col2 = [c["ms"] for c in data if c["j"] == "2" and c["i"] != "2"]
    assert len(col2) == 3 and all(190 <= v <= 210 for v in col2)
    assert all(c["ms"] < 10 for c in data if c["j"] != "2")
    assert all(c["culprit"] for c in data if c["j"] == "2")
    s = json.loads((site / "summary.json").read_text(encoding="utf-8"))["metrics"]["waits"]
    assert s["available"] and s["unit"] == "ms per step"
    top = s["groups"][0]["culprits"][0]
    assert top["rank"] == 2 and top["per_waiter_ms"] == pytest.approx(200.0, rel=0.05)
    assert not math.isnan(top["saving_ms"]) and {w["rank"] for w in top["waiters"]} == {0, 1, 3}


@pytest.mark.parametrize("rel", ["ascend/msinsight_pytorch_2rank_level1_text", "ascend/msinsight_pytorch_2rank_level1_db",
                                 "mindinsight/msprof_raw_2rank_10iter"])
def test_real_healthy_samples_have_a_matrix_and_no_late_rank(samples_root, rel):
    """Real 2-rank Ascend runs (text, DB, raw msprof): the arrivals are read, the ranks' waits for each other are a
    few ms of a step of tens to hundreds, and nobody is named (the late-arrival rule keeps its thresholds)."""
    path = samples_root / rel
    if not path.exists():
        pytest.skip(f"{rel} not in the samples")
    a, findings = _analysed(path)
    assert a.waits is not None, a.waits_reason
    step = float(a.steps.per_step["total"].median())
    g, top = a.waits.top(1)[0]
    assert len(g.ranks) == 2 and top.per_waiter_ms < 0.1 * step
    assert not [f for f in findings if f.id == "late-arrival.culprit"]


def test_waits_made_beside_equal_those_made_here(tmp_path, monkeypatch):
    """`analyze(beside=True)` (a build with two processes or more, on WAITS_BESIDE_RANKS ranks or more: lowered
    here) works out who waits for whom in a forked process while this one makes the rest (issue 33): the same
    matrices, culprits and summary, and the ranks' instances dropped as they are here; the rules name the same
    culprit. A failure there is the analysis' waits-failed entry, as here, and the rest of the analysis is made."""
    import reportgen.analysis as analysis_mod
    from reportgen.analysis.per_rank import rank_figures
    from reportgen.analysis.waits import analyze_waits

    lay = discover(generate_run(tmp_path / "run", ranks=4, steps=5, seed=3, inject=[STALL], layout="ascend"))[0]
    monkeypatch.setattr(analysis_mod, "WAITS_BESIDE_RANKS", 2)
    made = {}
    for beside in (False, True):
        run = load_run(lay, derive=rank_figures)
        made[beside] = a = analyze(run, release_inputs=True, beside=beside)
        assert a.waits is not None, a.waits_reason
        assert all(d.communication.instances is None and d.figures.arrival is None for d in run.ranks.values())
    here, there = made[False].waits, made[True].waits
    assert here.to_dict() == there.to_dict() and here.to_dict()["groups"][0]["culprits"][0]["rank"] == 2
    for g, h in zip(here.groups, there.groups):
        assert np.array_equal(g.ms, h.ms) and g.ranks == h.ranks and g.culprits == h.culprits
    assert summary_waits(made[False]) == summary_waits(made[True])
    assert [f.ranks for f in run_rules(made[True])[0] if f.id == "late-arrival.culprit"] == [[2]]

    def fails(*a, **kw):
        raise ValueError("no arrivals today")
    monkeypatch.setattr(analysis_mod, "analyze_waits", fails)
    for beside in (False, True):
        a = analyze(load_run(lay, derive=rank_figures), release_inputs=True, beside=beside)
        assert a.waits is None and a.comm is not None and a.resources is not None
        (issue,) = [i for i in a.issues if i.code == "analysis.waits-failed"]
        assert "ValueError" in str(issue.problem) and "no arrivals today" in str(issue.problem)
    assert analysis_mod.analyze_waits is fails and analyze_waits is not fails


def test_resources_made_beside_equal_those_made_here(tmp_path, monkeypatch):
    """The forked process of `analyze(beside=True)` makes the resources view too, once the waits are made (issue
    33: the operator tables were 2.7 s of the build's process at 4,096 ranks while the forked one idled): the same
    memory, FLOPs and operator tables and summary.json (its operator totals made there too); the build's process,
    summary.json made, has opened the operators of the (at most three) ranks whose files the coverage names, no
    other (it counts them without opening them). A failure there is raised here, as without the fork."""
    import pickle

    import reportgen.analysis as analysis_mod
    from reportgen.analysis.per_rank import rank_figures
    from reportgen.site.views.summary import summary_metrics

    lay = discover(generate_run(tmp_path / "run", ranks=6, steps=3, seed=5, layout="ascend"))[0]
    monkeypatch.setattr(analysis_mod, "WAITS_BESIDE_RANKS", 2)

    def loaded():  # the ranks as a worker or the rank cache hands them over: operators and memory sealed
        run = load_run(lay, derive=rank_figures)
        run.ranks = {r: pickle.loads(pickle.dumps(d)) for r, d in run.ranks.items()}
        assert all("operators" in vars(d)["_sealed"] for d in run.ranks.values())
        return run
    made, metrics = {}, {}
    for beside in (False, True):
        run = loaded()
        made[beside] = a = analyze(run, release_inputs=True, beside=beside)
        assert a.resources.operator_summary and a.coverage.areas["operators"].ranks == 6
        metrics[beside] = json.dumps(summary_metrics(a, run_rules(a)[0]), sort_keys=True, default=str)
        sealed = sum("operators" in vars(d).get("_sealed", ()) for d in run.ranks.values())
        assert (sealed >= 6 - 3) if beside else sealed == 0
    assert metrics[False] == metrics[True] and '"top": [{' in metrics[True]
    here, there = made[False].resources, made[True].resources
    for name in ("memory", "flops", "operator_rows", "operator_types"):
        pd.testing.assert_frame_equal(getattr(here, name), getattr(there, name), check_exact=True)
    assert here.operator_summary == there.operator_summary and here.operator_basis == there.operator_basis
    assert made[False].coverage.to_dict() == made[True].coverage.to_dict()

    def fails(*a, **kw):
        raise ValueError("no resources today")
    monkeypatch.setattr(analysis_mod, "analyze_resources", fails)
    for beside in (False, True):
        with pytest.raises(ValueError, match="no resources today"):
            analyze(loaded(), release_inputs=True, beside=beside)
