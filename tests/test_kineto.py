"""PyTorch profiler (Kineto) traces: the loader, the synthetic generator and the rules on both."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from reportgen.analysis import analyze
from reportgen.layouts import discover, load_run
from reportgen.loaders.kineto import collective_kind, kernel_type, read_header
from reportgen.rules import run_rules
from reportgen.synth import generate_run, parse_injections, simulate
from tests.conftest import sample

ACTION = ("critical", "warning")


def _run(path: Path):
    return load_run(discover(Path(path))[0], jobs=1)


def _findings(path: Path):
    return [f.to_dict() for f in run_rules(analyze(_run(path)))[0]]


@pytest.fixture(scope="module")
def slow_run(tmp_path_factory) -> Path:
    return generate_run(tmp_path_factory.mktemp("kin") / "slow", layout="kineto", ranks=8, steps=6, seed=3,
                        inject=["slow-rank:5"])


@pytest.fixture(scope="module")
def healthy_run(tmp_path_factory) -> Path:
    return generate_run(tmp_path_factory.mktemp("kin") / "ok", layout="kineto", ranks=8, steps=6, seed=4)


def test_names_and_kinds():
    assert collective_kind("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)") \
        == "allreduce"
    assert collective_kind("ncclKernel_ReduceScatter_RING_LL_Sum_bfloat16(ncclWorkElem)") == "reducescatter"
    assert collective_kind("gloo:all_reduce") == "allreduce"
    assert collective_kind("allgather_into_tensor_coalesced") == "allgather"
    assert kernel_type("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
                       "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>)") \
        == "vectorized_elementwise_kernel"
    assert kernel_type("ampere_sgemm_128x64_tn") == "ampere_sgemm_128x64_tn"


def test_synthetic_breakdown_equals_the_model(slow_run):
    """computing / overlapped / not overlapped / free per step come back as the generator's model wrote them."""
    plan = parse_injections(["slow-rank:5"])
    plan.seed = 3
    m = simulate(8, 6, stages=1, plan=plan, seed=3)
    run = _run(slow_run)
    assert sorted(run.ranks) == list(range(8))
    for r in (0, 5):
        st = run.ranks[r].step_trace
        # the last step has no next step to end it on the device: partial, left out (it was kept before, measured
        # to its own last kernel: longer or shorter than the others depending on the run)
        assert st.kind == "modern" and list(st.steps["step"]) == [1, 2, 3, 4, 5]
        assert list(st.partial_steps["step"]) == [6]
        np.testing.assert_allclose(st.steps["computing"], m.computing[r][:5], rtol=1e-4)
        # the overlapped bucket also spans the launch gaps between backward kernels (a few 10 µs)
        np.testing.assert_allclose(st.steps["communication_not_overlapped"], m.comm_nov[r][:5], atol=0.1)
        np.testing.assert_allclose(st.steps["overlapped"], m.overlapped[r][:5], atol=0.1)
        # device windows (HTA / torch_npu): from a step's first kernel to the next step's first kernel; the
        # generator starts the first kernel 0.6 x the step's host gap into the step
        total = m.computing[r] + m.comm_nov[r] + m.free[r]
        shifted = total[:-1] - 0.6 * m.free[r][:-1] + 0.6 * m.free[r][1:]
        np.testing.assert_allclose(st.steps["total"], shifted, atol=0.01)
        np.testing.assert_allclose(st.steps["computing"] + st.steps["communication_not_overlapped"]
                                   + st.steps["free"], st.steps["total"], rtol=1e-9)
        assert "mapped through their launches" in st.label
    info = run.ranks[2].info
    assert info.rank_size == 8 and info.parallel_groups["0"]["global_ranks"] == list(range(8))
    assert info.host == "node000" and info.device == 2
    assert info.parallel_groups["0"]["backend"] == "cuda:nccl" and info.versions["NCCL"] == "2.21.5"


def test_wait_is_matched_across_ranks(slow_run):
    run = _run(slow_run)
    waits = {r: float(d.communication.steps["wait_ms"].mean()) for r, d in run.ranks.items()}
    assert min(waits, key=waits.get) == 5  # the slow rank arrives last and waits least
    assert waits[5] < 1.0 and min(w for r, w in waits.items() if r != 5) > 30
    ops = run.ranks[0].communication.ops
    assert set(ops["op"]) == {"allreduce#1", "allreduce#2"} and set(ops["group"]) == {"0"}
    # elapsed = transit + wait
    np.testing.assert_allclose(ops["communication_ms"], ops["transit_ms"] + ops["wait_ms"], rtol=1e-9)


def test_operators_memory_timeline(slow_run):
    d = _run(slow_run).ranks[0]
    ops = d.operators
    assert set(ops.by_type["side"]) == {"gpu", "communication", "hostcpu"}
    gpu = ops.by_type[ops.by_type["side"] == "gpu"]
    assert "vectorized_layer_norm_kernel" in set(gpu["op_type"])
    np.testing.assert_allclose(gpu["total_ms"].sum(), d.step_trace.steps["computing"].sum(), rtol=1e-3)
    assert d.memory.capacity_mb == pytest.approx(85_899_345_920 / 2**20)  # MB = 2^20 bytes (was / 1e6: 4.9 % high)
    assert d.info.device_model == "NVIDIA A100-SXM4-80GB" and d.info.device_memory_mb == d.memory.capacity_mb
    assert 0.6 < d.memory.peak_mb / d.memory.capacity_mb < 0.8
    assert d.memory.curve is not None and len(d.memory.curve) > 10
    assert d.timeline.n_streams == 2 and d.timeline.compute_ms > 0


def test_slow_rank_found_and_nothing_else(slow_run):
    acts = [f for f in _findings(slow_run) if f["severity"] in ACTION]
    ids = {f["id"] for f in acts}
    assert "slow-rank.compute" in ids
    assert all(f["ranks"] == [5] for f in acts), [(f["id"], f["ranks"]) for f in acts]


def test_healthy_run_is_silent(healthy_run):
    assert [f["id"] for f in _findings(healthy_run) if f["severity"] in ACTION] == []


def test_gzip_and_truncated_traces(tmp_path, slow_run):
    src = sorted((slow_run / "traces").glob("*.pt.trace.json"))
    d = tmp_path / "run"
    d.mkdir()
    with open(src[0], "rb") as f, gzip.open(d / (src[0].name + ".gz"), "wb") as g:
        shutil.copyfileobj(f, g)
    text = src[1].read_text()
    (d / src[1].name).write_text(text[: len(text) // 2])
    run = _run(d)
    assert sorted(run.ranks) == [0, 1]
    ref = _run(slow_run).ranks[0].step_trace.steps
    np.testing.assert_allclose(run.ranks[0].step_trace.steps["computing"], ref["computing"])
    assert any(i.severity == "error" and "could not be read to the end" in i.problem for i in run.ranks[1].issues)
    assert run.ranks[1].step_trace is not None and len(run.ranks[1].step_trace.steps) < 6


def test_header_is_read_without_the_events(slow_run):
    p = sorted((slow_run / "traces").glob("*.pt.trace.json"))[3]
    h = read_header(p)
    assert h["distributedInfo"]["rank"] == 3 and h["deviceProperties"][0]["totalGlobalMem"] == 85_899_345_920


def test_real_gloo_run_rank3():
    """torch 2.13 CPU DDP over gloo, rank 3 with a 3x batch: it computes longest and waits least."""
    run = _run(sample("real/torch_gloo_4rank"))
    assert sorted(run.ranks) == [0, 1, 2, 3]
    comp = {r: float(d.step_trace.steps["computing"].mean()) for r, d in run.ranks.items()}
    comm = {r: float(d.step_trace.steps["communication"].mean()) for r, d in run.ranks.items()}
    wait = {r: float(d.communication.steps["wait_ms"].mean()) for r, d in run.ranks.items()}
    assert max(comp, key=comp.get) == 3 and min(comm, key=comm.get) == 3 and min(wait, key=wait.get) == 3
    for d in run.ranks.values():
        st = d.step_trace.steps
        assert list(st["step"]) == [2, 3, 4, 5, 6]
        np.testing.assert_allclose(st["computing"] + st["communication_not_overlapped"] + st["free"], st["total"])
        assert "gloo" in d.info.parallel_groups["0"]["backend"] and d.info.rank_size == 4
        assert d.operators is not None and "aten::convolution_backward" in set(d.operators.detail["name"])
        assert d.memory is not None and d.memory.peak_mb > 0
    conv = {r: float(d.operators.detail.set_index("name").loc["aten::convolution_backward", "total_ms"])
            for r, d in run.ranks.items()}
    assert max(conv, key=conv.get) == 3
    assert run.ranks[3].memory.peak_mb > 2 * run.ranks[0].memory.peak_mb  # 3x batch, 3x activations


def test_execution_view_from_kernels(slow_run):
    from reportgen.analysis.execution import select
    from reportgen.layouts import load_execution, timeline_ranks

    lay = discover(slow_run)[0]
    run = load_run(lay, jobs=1)
    assert timeline_ranks(lay) == list(range(8))
    sel = select(run, timeline_ranks(lay))
    ex = load_execution(lay, run, sel.steps, sel.reasons, sel.ranks, sel.skipped)
    s = ex.steps[0]
    ops = ex.ops[s]
    assert sorted(ops) == list(range(8))
    o = ops[5]
    assert o.classes.count("collective") == 2 and o.names[:1] and "ProfilerStep" in o.window
    assert o.names == ops[0].names  # the same kernel sequence on every rank
    assert o.step_ms == pytest.approx(float(run.ranks[5].step_trace.steps.set_index("step").loc[s, "total"]))
    # the slow rank's kernels are longer
    assert o.dur[o.classes.index("compute")] > 1.3 * ops[0].dur[ops[0].classes.index("compute")]


def test_real_gloo_execution_view():
    from reportgen.analysis.execution import select
    from reportgen.layouts import load_execution, timeline_ranks

    lay = discover(sample("real/torch_gloo_4rank"))[0]
    run = load_run(lay, jobs=1)
    sel = select(run, timeline_ranks(lay))
    ex = load_execution(lay, run, sel.steps, sel.reasons, sel.ranks, sel.skipped)
    for ops in ex.ops.values():
        assert sorted(ops) == [0, 1, 2, 3]
        for o in ops.values():
            assert "collective" in o.classes and "aten::conv2d" in o.names and "CPU operators" in o.window
            assert (np.diff(o.start) >= 0).all()


def test_odd_events_never_raise(tmp_path):
    """Strings for numbers, lists for args, no steps, a non-dict distributedInfo: read what makes sense."""
    events = [
        {"ph": "X", "cat": "kernel", "name": 7, "pid": 0, "tid": 7, "ts": "100.5", "dur": "20", "args": []},
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllGather_RING_LL(x)", "pid": 0, "tid": 9, "ts": 110,
         "dur": 30, "args": {"Process Group Name": None}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 90, "dur": "NaN"},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 90, "dur": -3},
        {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 95, "args": "broken"},
        {"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": 96,
         "args": {"Total Allocated": 2e6, "Total Reserved": 4e6, "Device Type": 1, "Device Id": 0}},
        "not an event",
    ]
    p = tmp_path / "w.pt.trace.json"
    p.write_text(json.dumps({"distributedInfo": [1, 2], "traceEvents": events}))
    run = _run(tmp_path)
    d = run.ranks[0]
    # no ProfilerStep: one window over the whole trace (step id empty), not "no step data" nor a step made of idle
    st = d.step_trace.steps
    assert len(st) == 1 and st["step"].isna().all()
    assert float(st["total"].iloc[0]) == pytest.approx(0.0395)  # 100.5 .. 140 µs: the device activity's span
    assert float(st["computing"].iloc[0]) == pytest.approx(0.02) and float(st["communication"].iloc[0]) == \
        pytest.approx(0.03)
    assert any("no ProfilerStep" in i.problem and "whole trace" in i.problem for i in d.issues)
    assert set(d.operators.by_type["side"]) == {"gpu", "communication"}
    assert d.memory.peak_mb == pytest.approx(4e6 / 2**20) and d.timeline.compute_ms == pytest.approx(0.02)
    assert not any(i.severity == "error" for i in d.issues)


def test_real_gloo_coverage_is_complete():
    """Step phases and communication are read now, so the run can be judged (no 'checks that could not run')."""
    from reportgen.analysis.coverage import coverage

    cov = coverage(analyze(_run(sample("real/torch_gloo_4rank"))))
    assert cov.complete and cov.areas["step_trace"].status == "read"
    assert cov.areas["communication"].status == "read" and cov.areas["memory"].status == "read"


# --- what the real traces showed, reproduced by the generator (issue 28) -------------------------------------


@pytest.fixture(scope="module")
def a2a_run(tmp_path_factory):
    """4 ranks, expert all-to-all by a custom kernel under record_param_comms, GPU-lane ProfilerStep marks."""
    from reportgen.synth.kineto import write_kineto

    plan = parse_injections([])
    plan.seed = 11
    m = simulate(4, 4, stages=1, plan=plan, seed=11)
    root = tmp_path_factory.mktemp("kin") / "a2a"
    write_kineto(root, m, 4, 4, plan, per_host=4, first_step=1, expert_a2a=True)
    return root, m


def test_custom_all_to_all_is_communication(a2a_run):
    from reportgen.synth.kineto import A2A_KERNEL, A2A_SHARE, MISC_KERNEL, MISC_US

    root, m = a2a_run
    text = next(root.glob("*.pt.trace.json")).read_text()
    assert '"cat": "gpu_user_annotation", "name": "ProfilerStep#1"' in text and "ncclDevKernel_AllReduce" in text
    run = _run(root)
    for r in (0, 3):
        d = run.ranks[r]
        st = d.step_trace.steps
        n = len(st)
        assert n == 3 and (st["total"] > 50).all()  # the GPU-lane marks (15 µs) are not the steps
        fwd = m.computing[r][:n] * 0.35
        a2a = fwd * A2A_SHARE
        # the all-to-all runs under the forward kernels: communication and overlap grow by it, computation by the
        # small signal kernel only (an unrecognised kernel beside the collectives, launched outside them)
        np.testing.assert_allclose(st["communication"], m.overlapped[r][:n] + m.comm_nov[r][:n] + a2a, atol=0.1)
        np.testing.assert_allclose(st["overlapped"], m.overlapped[r][:n] + a2a, atol=0.1)
        np.testing.assert_allclose(st["computing"], m.computing[r][:n] + MISC_US / 1e3, rtol=1e-4)
        ops = d.operators.detail.set_index("name")
        assert ops.loc[A2A_KERNEL, "side"] == "communication" and ops.loc[MISC_KERNEL, "side"] == "gpu"
        assert set(d.communication.ops["kind"]) == {"allreduce", "alltoall"}
        probs = [i.problem for i in d.issues]
        assert any("launched inside a collective's host op" in p and "a2a_dispatch_kernel" in p for p in probs)
        assert any("counted as computation" in p and "signal_ready_kernel" in p for p in probs)
        assert not any("a2a_dispatch_kernel" in p and "counted as computation" in p for p in probs)


def test_2021_schema(tmp_path):
    """`Operator` / `Runtime` / `Kernel` / `Memcpy` categories, no distributedInfo: read like today's schema."""
    from reportgen.synth.kineto import INPUT_COPY_US, write_kineto

    plan = parse_injections([])
    plan.seed = 2
    m = simulate(1, 4, stages=1, plan=plan, seed=2)
    write_kineto(tmp_path / "old", m, 1, 4, plan, per_host=1, first_step=5, schema="2021")
    text = next((tmp_path / "old").glob("worker0.*.pt.trace.json")).read_text()
    assert '"cat": "Kernel"' in text and '"cat": "Memcpy"' in text and "distributedInfo" not in text
    d = _run(tmp_path / "old").ranks[0]
    st = d.step_trace.steps
    assert list(st["step"]) == [5, 6, 7]
    # the input copy is device work (computation)
    np.testing.assert_allclose(st["computing"], m.computing[0][:3] + INPUT_COPY_US / 1e3, rtol=1e-4)
    np.testing.assert_allclose(st["communication"], m.overlapped[0][:3] + m.comm_nov[0][:3], atol=0.1)
    det = d.operators.detail
    assert "[memcpy] Memcpy HtoD (Pinned -> Device)" in set(det["name"]) and "aten::mm" in set(det["name"])
    assert d.info.device_model == "NVIDIA A100-SXM4-80GB"


def test_concurrent_gloo_threads_are_one_union(tmp_path):
    from reportgen.synth.kineto import write_kineto_gloo

    truth = write_kineto_gloo(tmp_path / "g", ranks=2, steps=3, seed=5, threads=2)
    run = _run(tmp_path / "g")
    for r, rows in truth.items():
        d = run.ranks[r]
        st = d.step_trace.steps.set_index("step")
        cs = d.communication.steps.set_index("step")
        for step, a, b, comp, union, summed in rows:
            assert summed > union  # the two threads overlap
            assert float(st.loc[step, "communication"]) == pytest.approx(union / 1e3, rel=1e-6)
            assert float(cs.loc[step, "communication_ms"]) == pytest.approx(union / 1e3, rel=1e-6)
            assert float(st.loc[step, "computing"]) == pytest.approx(comp / 1e3, rel=1e-6)
            assert float(st.loc[step, "total"]) == pytest.approx((b - a) / 1e3, rel=1e-6)
        assert "CPU operators" in d.step_trace.label and d.step_trace.partial_steps is None


def test_device_lane_marks_never_make_steps(tmp_path, slow_run):
    """A trace whose host ProfilerStep ranges were dropped but GPU-lane marks remain: the marks are used, with a
    warning, rather than nothing; with both, the host's win whatever their order in the file."""
    src = sorted((slow_run / "traces").glob("*.pt.trace.json"))[0]
    data = json.loads(src.read_text())
    data["traceEvents"] = list(reversed(data["traceEvents"]))  # the GPU-lane marks come last now
    (tmp_path / "rev").mkdir()
    (tmp_path / "rev" / src.name).write_text(json.dumps(data))
    st = _run(tmp_path / "rev").ranks[0].step_trace.steps
    assert len(st) == 5 and (st["total"] > 50).all()
    data["traceEvents"] = [e for e in data["traceEvents"] if not (e.get("cat") == "user_annotation"
                                                                 and str(e.get("name")).startswith("ProfilerStep"))]
    (tmp_path / "lane").mkdir()
    (tmp_path / "lane" / src.name).write_text(json.dumps(data))
    d = _run(tmp_path / "lane").ranks[0]
    assert d.step_trace is not None and any("only the device lane" in i.problem for i in d.issues)


def test_other_accelerators_are_devices(tmp_path):
    """Kernels of an XPU / privateuse1 backend (`kernel` events, `xpu_runtime` / `privateuse1_runtime` launches)
    are device work: the run is not CPU-only."""
    ev = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 1000},
          {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#2", "pid": 1, "tid": 1, "ts": 1000, "dur": 1000}]
    for k in range(4):
        ev.append({"ph": "X", "cat": "xpu_runtime", "name": "urEnqueueKernelLaunch", "pid": 1, "tid": 1,
                   "ts": 10 + 500 * k, "dur": 5, "args": {"correlation": 100 + k}})
        ev.append({"ph": "X", "cat": "kernel", "name": f"gemm_{k}", "pid": 2, "tid": 3, "ts": 50 + 500 * k,
                   "dur": 200, "args": {"correlation": 100 + k, "device": 0}})
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "r.pt.trace.json").write_text(json.dumps({"traceEvents": ev}))
    run = _run(tmp_path / "x")
    d = run.ranks[0]
    assert "device kernels" in d.step_trace.label and list(d.step_trace.steps["step"]) == [1]
    assert float(d.step_trace.steps["total"].iloc[0]) == pytest.approx(1.0)  # 50 -> 1050 µs
    assert float(d.step_trace.steps["computing"].iloc[0]) == pytest.approx(0.4)


def test_traces_of_different_jobs_are_separate_runs(tmp_path, slow_run):
    """Two traces in one folder from different jobs (another GPU and world size): two runs, never one job."""
    src = sorted((slow_run / "traces").glob("*.pt.trace.json"))
    d = tmp_path / "mixed"
    d.mkdir()
    shutil.copy(src[0], d / src[0].name)
    other = src[1].read_text().replace("NVIDIA A100-SXM4-80GB", "AMD Instinct MI300X").replace(
        '"world_size": 8', '"world_size": 16')
    (d / src[1].name).write_text(other)
    runs = discover(d)
    assert len(runs) == 2 and {len(r.ranks) for r in runs} == {1}
    assert {r.name for r in runs} == {"NVIDIA A100-SXM4-80GB, world size 8", "AMD Instinct MI300X, world size 16"}
    assert len({r.slug for r in runs}) == 2
    assert all(any("different jobs" in i.problem for i in r.issues) for r in runs)
    # the same job in one folder stays one run
    assert len(discover(slow_run)) == 1


def test_execution_view_shows_the_custom_all_to_all_as_communication(a2a_run):
    from reportgen.analysis.execution import select
    from reportgen.layouts import load_execution, timeline_ranks

    root, _m = a2a_run
    lay = discover(root)[0]
    run = load_run(lay, jobs=1)
    sel = select(run, timeline_ranks(lay))
    ex = load_execution(lay, run, sel.steps, sel.reasons, sel.ranks, sel.skipped)
    o = ex.ops[ex.steps[0]][0]
    assert "alltoall" in o.names and o.classes[o.names.index("alltoall")] == "collective"
    assert o.classes.count("collective") == 3  # two all-reduce buckets and the all-to-all


def test_report_names_the_device_and_the_partial_step_in_either_language(tmp_path, a2a_run):
    """One zh build: the overview's facts name the GPU and its memory (MB = 2^20 bytes), summary.json carries them
    (additive keys), the data-quality table says in Chinese which step is partial."""
    from bs4 import BeautifulSoup

    from reportgen.report import build_report

    root, _m = a2a_run
    build_report(root, tmp_path / "out", lang="zh")
    s = json.loads((tmp_path / "out" / "summary.json").read_text(encoding="utf-8"))
    assert s["run"]["device_model"] == "NVIDIA A100-SXM4-80GB"
    assert s["run"]["device_memory_mb"] == pytest.approx(85_899_345_920 / 2**20)
    assert any("step(s) 4 partial" in i["problem"] for i in s["data_quality"])  # stored in English
    soup = BeautifulSoup((tmp_path / "out" / "index.html").read_text(encoding="utf-8"), "html.parser")
    text = soup.get_text(" ", strip=True)
    assert "NVIDIA A100-SXM4-80GB（内存 81,920 MB）" in text
    assert "迭代 4 不完整" in text and "由 Kineto trace 计算" in text


def test_a_rank_traced_twice_makes_two_runs_in_time_order(tmp_path, slow_run):
    """Two profiling runs of the same job in one folder (the same ranks, later time base): two runs, not a second
    trace of each rank ignored."""
    src = sorted((slow_run / "traces").glob("*.pt.trace.json"))[:2]
    d = tmp_path / "twice"
    d.mkdir()
    for p in src:
        shutil.copy(p, d / p.name)
        later = p.read_text().replace('"ts": 5', '"ts": 6')  # the events' µs start with 5e9: 1e9 µs later
        (d / ("later_" + p.name)).write_text(later)
    runs = discover(d)
    assert len(runs) == 2 and all(sorted(r.ranks) == [0, 1] for r in runs)
    first = min(runs, key=lambda r: r.name)
    assert all(not p.name.startswith("later_") for rf in first.ranks.values() for p in rf.files["kineto_trace"])
    assert not any("a second trace" in i.problem for r in runs for i in r.issues)


def test_cpu_trace_without_steps_is_one_window(tmp_path):
    """A CPU-only trace without ProfilerStep: one window from its first operator or gloo slice to its last."""
    ev = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 100, "dur": 400},
          {"ph": "X", "cat": "user_annotation", "name": "gloo:all_reduce", "pid": 1, "tid": 2, "ts": 300, "dur": 700}]
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "r.pt.trace.json").write_text(json.dumps({"traceEvents": ev}))
    st = _run(tmp_path / "c").ranks[0].step_trace.steps
    assert float(st["total"].iloc[0]) == pytest.approx(0.9)  # 100 -> 1000 µs
    assert float(st["computing"].iloc[0]) == pytest.approx(0.4)
    assert float(st["communication"].iloc[0]) == pytest.approx(0.7)
    assert float(st["overlapped"].iloc[0]) == pytest.approx(0.2)


def test_ranks_without_a_common_step_are_named(tmp_path, slow_run):
    """Two ranks of one job that recorded different steps (another profiling window): a warning names the ranges."""
    src = sorted((slow_run / "traces").glob("*.pt.trace.json"))[:3]
    d = tmp_path / "ranges"
    d.mkdir()
    for p in src[:2]:
        shutil.copy(p, d / p.name)
    later = src[2].read_text()
    for s in range(6, 0, -1):
        later = later.replace(f'"ProfilerStep#{s}"', f'"ProfilerStep#{s + 100}"')
    (d / src[2].name).write_text(later)
    run = _run(d)
    assert list(run.ranks[2].step_trace.steps["step"]) == [101, 102, 103, 104, 105]
    msgs = [i.problem for i in run.issues if "share no step" in i.problem]
    assert msgs == ["the ranks' traces share no step (rank(s) 0, 1: steps 1-5; rank(s) 2: steps 101-105): they "
                    "were not profiled together (other jobs or other profiling windows), so comparing the ranks "
                    "step by step is not meaningful; profile the ranks over the same steps"]
    assert not any("share no step" in i.problem for i in _run(slow_run).issues)
