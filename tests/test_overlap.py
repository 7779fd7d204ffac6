"""Communication/computation overlap, stages and the parallel layout, against the references.

* `cluster_pipeline_parallel_4rank`: the profiler's own cluster-analyse files and MindInsight's
  ParallelProposer results (between-stage 25.82 %, within-stage 60.3 %, step interval of rank 2 2.4318 ms);
* the Qwen3 4-rank sample: msprof-analyze's golden `cluster_step_trace_time.csv` (rank and stage rows, indices);
* the PyTorch 2-rank samples: trace_view.json's Overlap Analysis lanes against their step_trace_time.csv;
* synthetic runs whose overlap values are known in closed form (`reportgen.synth.timeline`).
"""

from __future__ import annotations

import csv
import gzip
import json
import math

import numpy as np
import pytest
from bs4 import BeautifulSoup

from reportgen import intervals as iv
from reportgen.analysis import analyze
from reportgen.cli import main
from reportgen.layouts import discover, load_run
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.overlap import load_timeline_overlap
from reportgen.loaders.trace_view import load_trace_view_step_trace
from reportgen.loaders.run_info import detect_stages, parallel_indices
from reportgen.loaders.step_trace import load_legacy_step_trace, load_modern_step_trace
from reportgen.synth import generate_run, parse_injections, step_model
from reportgen.synth.timeline import expected_overlap, legacy_layout
from tests.conftest import sample


def _analysis(path):
    return analyze(load_run(discover(path)[0]))


# --- interval primitives ------------------------------------------------------------------------------


def test_interval_primitives_by_hand():
    m = iv.merge([5, 0, 2, 10, 12], [6, 3, 4, 11, 14])
    assert m[0].tolist() == [0, 5, 10, 12] and m[1].tolist() == [4, 6, 11, 14]
    # touching segments join (start <= previous end)
    t = iv.merge([0, 2], [2, 3])
    assert t[0].tolist() == [0] and t[1].tolist() == [3]
    g = iv.gaps(m)
    assert g[0].tolist() == [4, 6, 11] and g[1].tolist() == [5, 10, 12]
    x = iv.intersect(g, iv.merge([3.5, 9], [4.5, 12.5]))
    assert x[0].tolist() == [4, 9, 11] and x[1].tolist() == [4.5, 10, 12]
    assert iv.total(iv.subtract(iv.merge([0], [10]), iv.merge([2, 5], [3, 7]))) == pytest.approx(7)
    # per_step: not clipped, and an interval past the step's end moves on exactly one step
    ps = iv.per_step((np.array([1.0, 4.0, 25.0]), np.array([2.0, 6.0, 26.0])), [0, 3, 6], [3, 6, 9])
    assert ps.tolist() == [1.0, 2.0, 1.0]


def _naive_overlap(comp, comm, steps):
    """Reference: MindSpore's loops written out plainly (lists, no numpy)."""
    def merge(items):
        out = []
        for s, e in sorted(items):
            if out and s <= out[-1][1]:
                out[-1][1] = max(out[-1][1], e)
            else:
                out.append([s, e])
        return out

    def gaps(items):
        m = merge(items)
        return [[m[i][1], m[i + 1][0]] for i in range(len(m) - 1) if m[i + 1][0] > m[i][1]]

    def inter(a, b):
        out, i, j = [], 0, 0
        while i < len(a) and j < len(b):
            s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
            if e > s:
                out.append([s, e])
            if a[i][1] < b[j][1]:
                i += 1
            else:
                j += 1
        return out

    def per_step(items):
        res, k = [0.0] * len(steps), 0
        for s, e in items:
            if s > steps[k][1]:
                k += 1
                if k >= len(steps):
                    break
            res[k] += e - s
        return res

    return per_step(inter(gaps(comp), merge(comm)))


def test_timeline_recomputation_on_real_mindspore_data():
    d = sample("mindinsight/single_device_run1_rank1_allreduce/profiler")
    log = IssueLog(d)
    trace = load_legacy_step_trace(d / "step_trace_raw_1_detail_time.csv", log)
    o = load_timeline_overlap(d / "output_timeline_data_1.txt", trace, log)
    assert o is not None and o.producer == "timeline" and not o.pipeline
    # the timeline is truncated: it covers steps 1-14 of 322, and the report says so
    assert o.steps["step"].tolist() == list(range(1, 15))
    assert "14 of 322" in o.coverage_note
    # independent plain-Python reference on the same inputs
    comp = []
    with open(d / "output_timeline_data_1.txt") as f:
        next(f)
        for line in f:
            c = line.split(",")
            comp.append([float(c[2]), float(c[2]) + float(c[3])])
    with open(d / "step_trace_raw_1_detail_time.csv") as f:
        rows = list(csv.reader(f))
    head = rows[0]
    starts = [h[: -len("_start_point")] for h in head if h.endswith("_start_point")]
    comm, steps = [], []
    for row in rows[1:]:
        if row[0] == "-":
            continue
        steps.append((int(row[1]) / 1e5, int(row[2]) / 1e5))
        for n in starts:
            comm.append([int(row[head.index(n + "_start_point")]) / 1e5, int(row[head.index(n + "_end_point")]) / 1e5])
    ref = _naive_overlap(comp, comm, steps)
    got = o.steps["communication_alone"].tolist()
    assert got == pytest.approx(ref[:14], abs=1e-9)
    assert (o.steps["computation"] + o.steps["communication_alone"]).tolist() == pytest.approx(
        [b - a for a, b in steps[:14]], abs=1e-9)


# --- MindInsight pipeline sample ---------------------------------------------------------------------------


def _last_rows(path):
    with open(path) as f:
        rows = [list(map(float, r)) for r in list(csv.reader(f))[1:]]
    return rows[:-1], rows[-1]


def test_pipeline_sample_equals_cluster_analyse_files_and_parallel_proposer():
    d = sample("mindinsight/cluster_pipeline_parallel_4rank")
    a = _analysis(d)
    o = a.overlap
    assert o.view == "pipeline" and a.run.info.parallel_mode == "pipeline-parallel"
    assert a.run.info.stage_of_rank == {0: 0, 1: 0, 2: 1, 3: 1}
    cols = ["computation", "communication_alone", "stage", "receive_alone", "collective_alone"]
    for r in range(4):
        steps, avg = _last_rows(d / "profiler" / f"ascend_cluster_analyse_pipeline-parallel_2_4_{r}.csv")
        assert [o.per_rank.at[r, c] for c in cols] == pytest.approx(avg, abs=1e-9)
        mine = o.per_step[o.per_step["rank"] == r]
        assert mine[cols].values.ravel().tolist() == pytest.approx(np.ravel(steps).tolist(), abs=1e-9)
    # MindInsight ParallelProposer's expected output on this fixture
    assert round(o.rates["between_stage_rate"] * 100, 2) == 25.82
    within = o.rates["within_stage_rate"]
    assert max(within, key=within.get) == 0 and round(within[0] * 100, 1) == 60.3
    ii = o.per_rank["iteration_interval"]
    assert round(float(ii[2]), 4) == 2.4318 and round((ii[2] / ii.mean() - 1) * 100, 2) == 22.23
    # stage 1 computes 8x longer; stage 0 waits in Receive
    assert o.slowest_stage == 1 and o.waiting_stage == 0


def test_hand_made_cluster_analyse_files_are_reported(samples_root):
    a = _analysis(sample("mindinsight/single_device_run2_rank1_full"))
    assert any("step-trace columns" in i.problem for i in a.issues)
    assert a.overlap.view == "none"
    lays = discover(sample("mindinsight/cluster_analyse_variants_single_rank"))
    for lay in lays:
        a = analyze(load_run(lay))
        # values that do not fit the step trace are shown as written, with a warning saying so
        assert a.overlap.per_rank.at[1, "computation"] == pytest.approx(651.9051)
        assert any("does not match this run's step trace" in i.problem for i in a.issues)


# --- Ascend samples vs msprof-analyze ----------------------------------------------------------------------


def _golden(rel):
    p = sample(f"ascend/_golden_outputs_msprof_analyze_local_run/{rel}/cluster_analysis_output/"
               "cluster_step_trace_time.csv")
    with open(p) as f:
        return list(csv.DictReader(f))


COLS = {"Computing": "computing", "Communication(Not Overlapped)": "communication_not_overlapped",
        "Overlapped": "overlapped", "Communication": "communication", "Free": "free", "Stage": "stage",
        "Bubble": "bubble", "Communication(Not Overlapped and Exclude Receive)":
            "communication_not_overlapped_exclude_receive", "Preparing": "preparing"}


def test_qwen_rank_and_stage_rows_equal_msprof_analyze():
    a = _analysis(sample("ascend/msinsight_st_qwen3_4rank_tp1pp2dp2_level2_text"))
    o = a.overlap
    assert o.view == "modern" and [s.ranks for s in o.stages] == [[0, 1], [2, 3]]
    golden = _golden("st_qwen3_4rank_text")
    sr = o.stage_rows
    for g in golden:
        step = int(g["Step"])
        if g["Type"] == "rank":
            r = int(g["Index"])
            row = o.per_step[(o.per_step["rank"] == r) & (o.per_step["step"] == step)].iloc[0]
            for k, c in COLS.items():
                assert row[c] * 1000 == pytest.approx(float(g[k]), abs=1e-6), (r, k)
            idx = a.run.info.parallel_index[r]
            assert (idx["dp"], idx["pp"], idx["tp"]) == (int(g["DP Index"]), int(g["PP Index"]), int(g["TP Index"]))
        else:
            members = [int(x) for x in g["Index"].strip("()").split(",")]
            stage = next(s.index for s in o.stages if s.ranks == members)
            row = sr[(sr["pp_stage"] == stage) & (sr["step"] == step) & (sr["stat"] == "max")].iloc[0]
            for k, c in COLS.items():
                assert row[c] * 1000 == pytest.approx(float(g[k]), abs=1e-6), (members, k)


def test_stage_detection_follows_msprof_analyze():
    groups = {"a": {"group_name": "pp", "global_ranks": [0, 4]}, "b": {"group_name": "pp", "global_ranks": [1, 5]},
              "c": {"group_name": "tp", "global_ranks": [0, 1]}, "d": {"group_name": "tp", "global_ranks": [4, 5]},
              "e": {"group_name": "dp", "global_ranks": [0, 2]}, "f": {"group_name": "pp", "global_ranks": [2, 6]},
              "w": {"group_name": "default_group", "global_ranks": list(range(8))}}
    # the world group spans stages and is left out; tp/dp groups inside a stage are united
    assert detect_stages(groups) == [[0, 1, 2], [4, 5], [6]]
    assert detect_stages({"t": {"group_name": "tp", "global_ranks": [0, 1]}}) == []
    sizes, idx = parallel_indices({"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 2,
                                   "data_parallel_size": 2, "world_size": 8}, list(range(8)))
    assert idx[5] == {"tp": 1, "dp": 0, "pp": 1} and idx[2] == {"tp": 0, "dp": 1, "pp": 0}
    assert parallel_indices({"tensor_model_parallel_size": 2, "data_parallel_size": 2, "world_size": 8}, [0]) == ({}, {})


@pytest.mark.parametrize("level", ["level0", "level1", "level2"])
def test_trace_view_lanes_equal_step_trace_time(level):
    base = sample(f"ascend/msinsight_pytorch_2rank_{level}_text")
    for r in (0, 1):
        out = base / f"rank{r}_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
        log = IssueLog(base)
        ref = load_modern_step_trace(out / "step_trace_time.csv", log).steps.iloc[0]
        got = load_trace_view_step_trace(out / "trace_view.json", log).steps.iloc[0]
        assert int(got["step"]) == int(ref["step"])
        for c in ("computing", "communication_not_overlapped", "overlapped", "communication", "free", "stage",
                  "bubble", "preparing", "total"):
            assert got[c] == pytest.approx(ref[c], rel=1e-9, abs=1e-9), (level, r, c)


# --- synthetic runs -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("stages,tp", [(2, 1), (4, 1), (1, 2), (8, 1)])
def test_synthetic_mindinsight_overlap_matches_closed_form(tmp_path, stages, tp):
    ranks = 16
    inject = ["unbalanced-stage:1:1.5"] if stages > 1 else []
    run = generate_run(tmp_path / "run", layout="mindinsight", ranks=ranks, steps=5, stages=stages, tp=tp, seed=7,
                       inject=inject)
    a = _analysis(run)
    o = a.overlap
    assert o.view == ("pipeline" if stages > 1 else "model")
    assert a.run.info.parallel_mode == ("pipeline-parallel" if stages > 1 else "model-parallel")
    # the generator's step model (transfer times from its communication operators, issue 16)
    m = step_model(ranks, 5, stages=stages, tp=tp, plan=parse_injections(inject), seed=7, layout="mindinsight")
    for r in (0, ranks // 2 + 1, ranks - 1):
        lays = legacy_layout(m, r, 5, stages > 1, (61688106196804 + r * 1234) / 1e5)
        exp = [expected_overlap(x) for x in lays]
        mine = o.per_step[o.per_step["rank"] == r]
        assert mine["communication_alone"].tolist() == pytest.approx([e["communication_alone"] for e in exp],
                                                                    abs=2e-4)
        if stages > 1:
            assert mine["receive_alone"].tolist() == pytest.approx([e["receive_alone"] for e in exp], abs=2e-4)
    # the timeline recomputation agrees with the files within 1 % for every rank
    assert len(o.checks) == ranks and all(c["ok"] and c["max_diff"] < 0.01 for c in o.checks)
    if stages > 1:
        assert o.slowest_stage == 1
        assert o.waiting_stage != 1
        assert len(o.stage_summary) == stages


def test_synthetic_trace_view_without_csv_agrees(tmp_path):
    run = generate_run(tmp_path / "run", ranks=8, steps=5, stages=2, seed=5, trace_view=True,
                       inject=["missing-step-trace:3", "unbalanced-stage:0:1.4"])
    a = _analysis(run)
    o = a.overlap
    assert o.view == "modern" and 3 in o.per_rank.index
    assert any("Overlap Analysis" in i.problem for i in a.issues)
    # compare rank 3 (from the trace) with the same model written as CSV for rank 2's neighbour run
    ref_run = generate_run(tmp_path / "ref", ranks=8, steps=5, stages=2, seed=5,
                           inject=["unbalanced-stage:0:1.4"])
    ref = _analysis(ref_run).overlap.per_rank
    for c in ("computing", "communication_not_overlapped", "overlapped", "free", "bubble", "stage", "total",
              "preparing"):
        assert o.per_rank.at[3, c] == pytest.approx(ref.at[3, c], rel=0.01), c
    assert o.slowest_stage == 0 and o.waiting_stage == 1


def test_unbalanced_stage_is_obvious_on_the_page(tmp_path):
    run = generate_run(tmp_path / "run", ranks=64, steps=4, stages=4, tp=2, seed=2,
                       inject=["unbalanced-stage:2:1.5"])
    out = tmp_path / "report"
    assert main([str(run), "-o", str(out), "-q"]) == 0
    soup = BeautifulSoup((out / "cluster" / "overlap.html").read_text(), "html.parser")
    rows = soup.select("#overlap-stage-table tbody tr")
    assert len(rows) == 4
    slow = [r for r in rows if "slow" in (r.get("class") or [])]
    assert len(slow) == 1 and slow[0].td["data-v"] == "2" and "slowest" in slow[0].text
    # the stage filter offers every stage, and every rank row carries its stage in the filtered column
    opts = [o["value"] for o in soup.select("select[data-colfilter='overlap-rank-table'] option") if o["value"]]
    assert opts == ["0", "1", "2", "3"]
    col = int(soup.select_one("select[data-colfilter='overlap-rank-table']")["data-col"])
    stage_cells = [tr.select("td")[col].text.strip() for tr in soup.select("#overlap-rank-table tbody tr")]
    assert stage_cells == [str(r // 16) for r in range(64)]
    summary = json.loads((out / "summary.json").read_text())
    ov = summary["metrics"]["overlap"]
    assert ov["slowest_stage"] == 2 and summary["run"]["stages"] == 4
    assert set(ov["per_rank"]["0"]) >= {"computation_ms", "communication_alone_ms", "stage_ms", "receive_alone_ms",
                                        "collective_alone_ms", "free_ms"}
    assert summary["run"]["stage_ranks"]["2"] == list(range(32, 48))
    assert summary["run"]["parallel_index"]["17"] == {"tp": 1, "dp": 0, "pp": 1}
    # stage CSV: per-step rows with max / mean / min over each stage's ranks (64 ranks: a large run, gzip-compressed)
    with gzip.open(out / "cluster" / "overlap-stages.csv.gz", "rt", encoding="utf-8", newline="") as f:
        stats = {(r["Stage"], r["Step"], r["Over the stage's ranks"]) for r in csv.DictReader(f)}
    assert ("2", "1", "max") in stats and ("0", "average", "mean") in stats
    # rank pages carry the overlap section
    rank = BeautifulSoup((out / "ranks" / "rank-40.html").read_text(), "html.parser")
    assert rank.select_one("#overlap") is not None and "Stage 2" in rank.text


def test_data_parallel_without_overlap_files_says_so(tmp_path):
    run = generate_run(tmp_path / "run", layout="mindinsight", ranks=4, steps=3, seed=1)
    for p in (run / "profiler").glob("ascend_cluster_analyse_*"):
        p.unlink()
    for p in (run / "profiler").glob("output_timeline_data_*"):
        p.unlink()
    out = tmp_path / "report"
    assert main([str(run), "-o", str(out), "-q"]) == 0
    soup = BeautifulSoup((out / "cluster" / "overlap.html").read_text(), "html.parser")
    assert "No communication/computation overlap data" in soup.text
    assert "data-parallel" in soup.text
    assert len(soup.select("#overlap-dp-table tbody tr")) == 4  # the communication share instead
    s = json.loads((out / "summary.json").read_text())
    assert s["metrics"]["overlap"]["view"] == "none" and s["metrics"]["overlap"]["per_rank"] == {}


def test_truncated_cluster_analyse_is_reported_not_fatal(tmp_path):
    run = generate_run(tmp_path / "run", layout="mindinsight", ranks=4, steps=4, stages=2, seed=1)
    p = next((run / "profiler").glob("ascend_cluster_analyse_*_2.csv"))
    text = p.read_text()
    p.write_text(text[: int(len(text) * 0.7)])
    a = _analysis(run)
    assert any(i.file.endswith(p.name) for i in a.issues)
    assert 2 in a.overlap.per_rank.index or 2 in a.overlap.ranks_without_data
    assert not math.isnan(a.overlap.per_rank.at[0, "computation"])


def test_msprof_overlap_lanes_per_iteration():
    a = _analysis(sample("mindinsight/msprof_raw_2rank_10iter"))
    o = a.overlap
    assert o.view == "model" and o.sources == ["msprof_timeline"]
    d = next(sample("mindinsight/msprof_raw_2rank_10iter").rglob("device_0/timeline"))
    events = json.loads((d / "msprof_0_2_1.json").read_text())
    nov = sum(float(e["dur"]) for e in events if e.get("name") == "Communication(Not Overlapped)") / 1e3
    row = o.per_step[(o.per_step["rank"] == 0) & (o.per_step["step"] == 1)].iloc[0]
    assert row["communication_alone"] == pytest.approx(nov, abs=1e-9)
    # computation + pure communication is the iteration time msprof's step trace gives (47.58781 ms)
    assert row["computation"] + row["communication_alone"] == pytest.approx(47.58781, abs=1e-6)


@pytest.mark.parametrize("layout", ["ascend", "mindinsight"])
def test_healthy_pipeline_marks_no_stage(tmp_path, layout):
    run = generate_run(tmp_path / "run", layout=layout, ranks=32, steps=5, stages=4, seed=9)
    o = _analysis(run).overlap
    assert len(o.stage_summary) == 4
    assert o.slowest_stage is None and o.waiting_stage is None
    soup_page = tmp_path / "report"
    assert main([str(run), "-o", str(soup_page), "-q"]) == 0
    soup = BeautifulSoup((soup_page / "cluster" / "overlap.html").read_text(), "html.parser")
    assert not soup.select("#overlap-stage-table tr.slow") and "slowest" not in soup.select_one(
        "#overlap-stage-table").text


def test_zero_bubble_in_a_pipelined_modern_run_is_explained():
    o = _analysis(sample("ascend/msinsight_st_qwen3_4rank_tp1pp2dp2_level2_text")).overlap
    assert o.rates["between_stage_rate"] == 0.0
    assert any("batchSendRecv" in n for n in o.notes)


@pytest.mark.parametrize("case", ["plain", "rank without rows", "a step twice", "a missing step", "a step missing "
                                  "in the overlap", "other step dtype", "interval column already there"])
def test_the_iteration_interval_beside_the_overlap_steps_is_the_merge(case):
    """`_Intervals.beside` (a MindInsight rank's overlap steps with the step trace's iteration interval) gives the
    frame `steps.merge(<the rank's rows>, on="step", how="left")` gives, in every case the shortcut does not take
    (a repeated or missing step, another dtype) through that merge itself."""
    import pandas as pd
    from pandas.testing import assert_frame_equal

    from reportgen.analysis.overlap import _Intervals

    per = pd.DataFrame({"rank": np.array([0, 1, 0, 1, 0, 2], dtype=np.int64),
                        "step": pd.array([1, 1, 2, 2, 3, 1], dtype="Int64"),
                        "iteration_interval": [10.0, 11.0, 12.0, math.nan, 14.0, 15.0]})
    steps = pd.DataFrame({"step": pd.array([3, 1, 2, 5], dtype="Int64"), "computation": [1.0, 2.0, 3.0, 4.0]},
                         index=[7, 8, 9, 10])
    r = 0
    if case == "rank without rows":
        r = 5
    elif case == "a step twice":
        per.loc[len(per)] = [0, 2, 99.0]
    elif case == "a missing step":
        per.loc[len(per)] = [0, pd.NA, 99.0]
    elif case == "a step missing in the overlap":
        steps.loc[8, "step"] = pd.NA
    elif case == "other step dtype":
        steps["step"] = steps["step"].astype("int64")
    elif case == "interval column already there":
        steps["iteration_interval"] = 1.0
    mine = (per[per["rank"] == r][["step", "iteration_interval"]] if r in set(per["rank"].tolist())
            else pd.DataFrame({"step": pd.array([], dtype="Int64"), "iteration_interval": []}))
    want = steps.merge(mine, on="step", how="left")
    got = _Intervals(per).beside(steps.copy(), r)
    assert_frame_equal(got, want, check_exact=True)
