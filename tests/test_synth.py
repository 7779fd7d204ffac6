"""The generator writes files shaped like the real ones, and runs that msreport reads back exactly."""

from __future__ import annotations

import json

import pytest

from reportgen.cli import main
from reportgen.synth import MODERN_HEADER, generate_run, parse_injections
from tests.conftest import sample


def test_modern_header_matches_real_8_3_sample(tmp_path):
    real = sample("ascend/msinsight_st_qwen3_4rank_tp1pp2dp2_level2_text/rank_0_ascend_pt/ASCEND_PROFILER_OUTPUT/"
                  "step_trace_time.csv").read_text().splitlines()[0]
    run = generate_run(tmp_path / "r", ranks=2, steps=2)
    mine = next(run.glob("*/ASCEND_PROFILER_OUTPUT/step_trace_time.csv")).read_text().splitlines()[0]
    assert mine == real == MODERN_HEADER


def test_legacy_header_matches_real_sample(tmp_path):
    real = sample("mindinsight/mindspore_ut_hccl_dev6/profiler/step_trace_raw_6_detail_time.csv").read_text()
    run = generate_run(tmp_path / "r", layout="mindinsight", ranks=2, steps=3)
    mine = (run / "profiler" / "step_trace_raw_0_detail_time.csv").read_text()
    assert mine.splitlines()[0].split(",")[:9] == real.splitlines()[0].split(",")[:9]
    assert mine.splitlines()[-1].startswith("-,")
    # magnitudes: real step totals are millions of 10 ns ticks (tens of ms), so are ours
    total = int(mine.splitlines()[1].split(",")[3])
    assert 1e6 < total < 1e9


def test_profiler_info_and_metadata_like_real(tmp_path):
    real = json.loads(sample("ascend/msinsight_st_qwen3_4rank_tp1pp2dp2_level2_text/rank_0_ascend_pt/"
                             "profiler_metadata.json").read_text())
    run = generate_run(tmp_path / "r", ranks=4, steps=2, stages=2)
    meta = json.loads(next(run.glob("*/profiler_metadata.json")).read_text())
    assert set(real["distributed_args"]) <= set(meta["distributed_args"])
    g = next(iter(meta["parallel_group_info"].values()))
    assert {"group_name", "group_rank", "global_ranks"} <= set(g)


def test_values_obey_the_step_trace_identities(tmp_path):
    run = generate_run(tmp_path / "r", ranks=4, steps=5, stages=2, inject=["unbalanced-stage:1"])
    for f in run.glob("*/ASCEND_PROFILER_OUTPUT/step_trace_time.csv"):
        for line in f.read_text().splitlines()[1:]:
            v = [float(x) for x in line.split(",")]
            comp, nov, ov, comm, free, stage, bub, excl = v[2:10]
            assert comm == pytest.approx(nov + ov)
            assert excl == pytest.approx(nov - bub)
            assert stage + bub == pytest.approx(comp + nov + free)


@pytest.mark.parametrize("ranks", [1, 8, 64])
def test_report_on_any_size(tmp_path, ranks):
    run = generate_run(tmp_path / "r", ranks=ranks, steps=4)
    out = tmp_path / "o"
    assert main([str(run), "-o", str(out), "-q"]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert len(s["metrics"]["step_trace"]["per_rank"]) == ranks
    assert s["run"]["parallel_mode"] == ("stand-alone" if ranks == 1 else "data-parallel")


def test_unknown_injection_is_refused():
    with pytest.raises(ValueError, match="unknown injection"):
        parse_injections(["slow-queue:0"])


def test_slow_link_injection_parses():
    plan = parse_injections(["slow-link:4-5", "slow-link:1-2:0.5"])
    assert plan.slow_link == {(4, 5): 0.3, (1, 2): 0.5}
