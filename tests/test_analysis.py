"""Analysis numbers: against the samples' stored averages, msprof-analyze's golden output and hand cases."""

from __future__ import annotations

import csv

import pandas as pd
import pytest

from reportgen.analysis import analyze
from reportgen.analysis.stats import robust_outliers
from reportgen.site.pages.step_trace import heatmap_cells
from reportgen.rules import run_rules
from reportgen.layouts import discover, load_run
from reportgen.synth import generate_run
from tests.conftest import sample


def _analysis(path):
    (layout,) = discover(path)
    return analyze(load_run(layout))


def test_mindinsight_stored_average_is_shown():
    a = _analysis(sample("mindinsight/cluster_pipeline_parallel_4rank"))
    avg = a.steps.average
    assert set(avg["rule"]) == {"stored"}
    # '-' row of step_trace_raw_0: total 18030115, interval 157225, fp_and_bp 17778514 ticks (10 ns)
    assert avg.at[0, "total"] == pytest.approx(180.30115)
    assert avg.at[0, "iteration_interval"] == pytest.approx(1.57225)
    assert avg.at[0, "fp_and_bp"] == pytest.approx(177.78514)
    assert a.run.info.parallel_mode == "pipeline-parallel" and a.run.info.stages == 2
    assert a.run.info.stage_of_rank == {0: 0, 1: 0, 2: 1, 3: 1}


def test_stored_average_equals_mean_of_steps_2_to_n():
    a = _analysis(sample("mindinsight/single_device_run1_rank1_allreduce"))
    steps = a.steps.per_step
    assert len(steps) == 322
    later = steps[steps["step"] >= 2]
    for phase in ("total", "fp_and_bp", "tail", "iteration_interval"):
        assert a.steps.average.at[1, phase] == pytest.approx(later[phase].mean(), abs=1e-4)


def test_modern_rank_rows_equal_msprof_analyze_golden():
    a = _analysis(sample("ascend/msinsight_st_qwen3_4rank_tp1pp2dp2_level2_text"))
    golden = sample("ascend/_golden_outputs_msprof_analyze_local_run/st_qwen3_4rank_text/cluster_analysis_output/"
                    "cluster_step_trace_time.csv")
    cols = {"Computing": "computing", "Communication(Not Overlapped)": "communication_not_overlapped",
            "Overlapped": "overlapped", "Communication": "communication", "Free": "free", "Stage": "stage",
            "Bubble": "bubble", "Preparing": "preparing",
            "Communication(Not Overlapped and Exclude Receive)": "communication_not_overlapped_exclude_receive"}
    n = 0
    with open(golden, newline="") as f:
        for row in csv.DictReader(f):
            if row["Type"] != "rank":
                continue
            r = int(row["Index"])
            for g, k in cols.items():
                assert a.steps.average.at[r, k] == pytest.approx(float(row[g]) / 1000, abs=1e-6), (r, g)
            n += 1
    assert n == 4
    assert a.run.info.stage_of_rank == {0: 0, 1: 0, 2: 1, 3: 1}  # pp groups [0,2] and [1,3]
    assert a.run.info.parallel_mode == "pipeline-parallel"


def test_robust_outliers_hand_cases():
    s = pd.Series({0: 100.0, 1: 101.0, 2: 99.5, 3: 100.5, 4: 130.0})
    assert robust_outliers(s) == [4]
    # microsecond noise never stands out, however tight the others are
    assert robust_outliers(pd.Series({0: 1.000, 1: 1.001, 2: 1.000, 3: 1.3})) == []
    # two ranks: only a large plain gap
    assert robust_outliers(pd.Series({0: 100.0, 1: 103.0})) == []
    assert robust_outliers(pd.Series({0: 100.0, 1: 140.0})) == [1]
    assert robust_outliers(pd.Series({0: 5.0})) == []


@pytest.mark.parametrize("ranks", [8, 64])
def test_healthy_synthetic_run_has_no_slow_rank(tmp_path, ranks):
    a = _analysis(generate_run(tmp_path / "run", ranks=ranks, steps=8, seed=3))
    findings = [f.to_dict() for f in run_rules(a)[0]]
    slow = [f for f in findings if f["category"] == "slow_rank" and f["severity"] != "info"]
    assert slow == [], [f["title"] for f in slow]


@pytest.mark.parametrize("layout,phase", [("ascend", "computing"), ("mindinsight", "computation")])
def test_injected_slow_rank_stands_out_in_its_phase(tmp_path, layout, phase):
    a = _analysis(generate_run(tmp_path / "run", layout=layout, ranks=16, steps=8, seed=2,
                               inject=["slow-rank:6:compute:1.3"]))
    findings = [f.to_dict() for f in run_rules(a)[0]]
    named = {(tuple(f["ranks"]), f["evidence"].get("column")) for f in findings
             if f["category"] == "slow_rank" and f["severity"] != "info" and f["id"] != "late-arrival.culprit"}
    assert ((6,), phase) in named, named


def test_heatmap_bins_large_runs():
    per_step = pd.DataFrame({"rank": [r for r in range(3000) for _ in range(20)],
                             "step": [s for _ in range(3000) for s in range(20)], "total": 1.0})
    hm = heatmap_cells(per_step, max_cells=20_000)
    assert len(hm["cells"]) <= 20_000
    assert hm["rank_bin"] > 1


def test_cluster_output_only_layout():
    a = _analysis(sample("ascend/msinsight_cluster_outputs_16rank_and_metadata"))
    assert a.run.info.layout == "cluster_analysis"
    assert a.steps.average.at[1, "computing"] == pytest.approx(75.42222)
