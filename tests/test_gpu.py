"""MindSpore GPU profiler output (legacy flat folder written on GPU): loaders, synthetic generator, rules."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from reportgen.analysis import analyze
from reportgen.layouts import discover, load_run
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.gpu import load_activity, load_op_detail, load_op_type, summarize_gpu_timeline
from reportgen.rules import run_rules
from reportgen.synth import generate_run, parse_injections, simulate
from reportgen.synth.timeline import expected_overlap, legacy_layout

ACTION = ("critical", "warning")


def _dicts(findings):
    return [f.to_dict() for f in findings]


def _run(path: Path):
    return load_run(discover(Path(path))[0], jobs=1)


@pytest.fixture(scope="module")
def slow_run(tmp_path_factory) -> Path:
    return generate_run(tmp_path_factory.mktemp("gpu") / "slow", layout="mindspore_gpu", ranks=8, steps=6, seed=5,
                        inject=["slow-rank:6"])


@pytest.fixture(scope="module")
def healthy_run(tmp_path_factory) -> Path:
    return generate_run(tmp_path_factory.mktemp("gpu") / "ok", layout="mindspore_gpu", ranks=8, steps=6, seed=6)


def test_layout_and_units(slow_run):
    """10 ns step-trace ticks, ms cluster-analyse values: both give the model's step and computation."""
    plan = parse_injections(["slow-rank:6"])
    plan.seed = 5
    m = simulate(8, 6, stages=1, plan=plan, seed=5)
    run = _run(slow_run)
    assert run.info.layout == "mindinsight" and sorted(run.ranks) == list(range(8))
    for r in (0, 6):
        d = run.ranks[r]
        lays = legacy_layout(m, r, 6, False, (1_763_717_400_000_000_000 + r * 1_234_567) / 1e6)
        st = d.step_trace
        assert st.kind == "legacy"
        np.testing.assert_allclose(st.steps["total"], [lay.end - lay.start for lay in lays], atol=1e-3)
        assert st.comm_events is not None and len(st.comm_events) == 6  # stream_ops_0_AllReduce-op900
        ov = d.overlap
        assert ov.producer == "cluster_analyse"
        np.testing.assert_allclose(ov.steps["computation"], [expected_overlap(lay)["computation"] for lay in lays],
                                   atol=1e-3)
        assert d.dataprep is not None and d.dataprep.device_queue["get_ms"].between(0.02, 0.03).all()  # ns file


def test_operators_and_timeline(slow_run):
    run = _run(slow_run)
    ops = run.ranks[0].operators
    assert set(ops.by_type["side"]) == {"gpu", "communication", "hostcpu"}
    assert ops.by_type.set_index("op_type").loc["GetNext", "total_ms"] == pytest.approx(0.21 * 6)
    bt = ops.by_type.set_index("op_type")
    assert bt.loc["AllReduce", "side"] == "communication" and bt.loc["Conv2D", "core"] == "GPU"
    # kernels in the detail table, device time; the types sum the same kernels
    assert ops.detail["name"].str.contains("cudnn").any()
    gpu = ops.detail[ops.detail["side"] == "gpu"]
    np.testing.assert_allclose(gpu["total_ms"].sum(), bt[bt["side"] == "gpu"]["total_ms"].sum(), rtol=1e-4)
    assert "device time" in ops.basis["gpu"] or "kernel time" in ops.basis["gpu"]
    slow = run.ranks[6].operators.by_type.set_index("op_type")
    assert slow.loc["Conv2D", "total_ms"] > 1.3 * bt.loc["Conv2D", "total_ms"]
    t = run.ranks[0].timeline
    assert t.n_streams == 2 and t.compute_ms > 0 and t.communication_ms > 0
    assert t.pure_communication_ms < t.communication_ms


def test_file_readers_units(tmp_path):
    log = IssueLog(tmp_path)
    p = tmp_path / "gpu_op_detail_info_0.csv"
    p.write_text("op_side,op_type,op_name,op_full_name,op_occurrences,op_total_time(us),op_avg_time(us),proportion,"
                 "cuda_activity_cost_time(us),cuda_activity_call_count\n"
                 "Device,MatMul,MatMul-op1,Default/MatMul-op1,4,2000,500,0.8,1800,4\n"
                 "Device,AllGather,AllGather-op2,Default/AllGather-op2,4,500,125,0.2,400,4\n")
    dev, host = load_op_detail(p, log)
    assert dev.set_index("op_type").loc["MatMul", "total_ms"] == pytest.approx(1.8)
    assert host.set_index("op_type").loc["MatMul", "total_ms"] == pytest.approx(2.0)
    assert dev.set_index("op_type").loc["AllGather", "side"] == "communication"
    a = tmp_path / "gpu_activity_data_0.csv"
    a.write_text('name,type,op_full_name,stream_id,block_dim,grid_dim,occurrences,total_duration(us),'
                 'avg_duration(us),max_duration(us),min_duration(us)\n'
                 '"void k<float, 2>(int, float*)",cuLaunchKernel,Default/MatMul-op1,7,"128,1,1","64,1,1",4,1800,450,'
                 '500,400\n')
    k = load_activity(a, log)
    assert k.loc[0, "name"] == "void k<float, 2>(int, float*)" and k.loc[0, "op_type"] == "MatMul"
    assert k.loc[0, "total_ms"] == pytest.approx(1.8) and k.loc[0, "avg_ms"] == pytest.approx(0.45)
    t = tmp_path / "gpu_op_type_info_0.csv"
    t.write_text("op_type,type_occurrences,total_time(us),total_proportion,avg_time(us)\nMatMul,4,2000,1,500\n")
    assert load_op_type(t, log).loc[0, "total_ms"] == pytest.approx(2.0)
    tl = tmp_path / "gpu_timeline_display_0.json"
    tl.write_text('[{"name": "Default/MatMul-op1", "ph": "X", "tid": "Ops", "ts": 0, "dur": 100, "pid": 0},'
                  '{"name": "k", "ph": "X", "tid": "7", "ts": 0, "dur": 90, "pid": 0, '
                  '"args": {"op_full_name": "Default/MatMul-op1"}},'
                  '{"name": "ncclKernel_AllReduce", "ph": "X", "tid": "9", "ts": 50, "dur": 100, "pid": 0, '
                  '"args": {"op_full_name": "Default/AllReduce-op2"}}')  # truncated: no closing bracket
    s = summarize_gpu_timeline(tl, log, None)
    assert s.compute_ms == pytest.approx(0.09) and s.communication_ms == pytest.approx(0.1)
    assert s.pure_communication_ms == pytest.approx(0.06) and s.free_ms == pytest.approx(0.0)
    assert s.truncated and any(i.severity == "error" for i in log.issues)


def test_slow_rank_found_and_nothing_else(slow_run):
    acts = [f for f in _dicts(run_rules(analyze(_run(slow_run)))[0]) if f["severity"] in ACTION]
    assert "slow-rank.compute" in {f["id"] for f in acts}
    assert all(f["ranks"] == [6] for f in acts), [(f["id"], f["ranks"]) for f in acts]


def test_healthy_run_is_silent(healthy_run):
    assert [f["id"] for f in _dicts(run_rules(analyze(_run(healthy_run)))[0]) if f["severity"] in ACTION] == []


def test_execution_view_from_the_gpu_timeline(slow_run):
    from reportgen.analysis.execution import select
    from reportgen.layouts import load_execution, timeline_ranks

    lay = discover(slow_run)[0]
    run = load_run(lay, jobs=1)
    assert timeline_ranks(lay) == list(range(8))
    sel = select(run, timeline_ranks(lay))
    ex = load_execution(lay, run, sel.steps, sel.reasons, sel.ranks, sel.skipped)
    s = ex.steps[0]
    o, ref = ex.ops[s][6], ex.ops[s][0]
    assert sorted(o.names) == sorted(ref.names) and all("-op" in n for n in o.names)  # operators, not kernels
    assert o.classes.count("collective") == 1 and o.names[o.classes.index("collective")].endswith("AllReduce-op900")
    assert o.dur[0] > 1.3 * ref.dur[0]  # the slow rank's Conv2D
