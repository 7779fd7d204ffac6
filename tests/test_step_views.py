"""Per-step chart data (site/views/steps.py) and timeline rows (site/views/timeline.py): shapes and caps."""

from __future__ import annotations

import json

import numpy as np
import pytest

from reportgen.charts import Chart
from reportgen.charts import column_codec as columnar
from reportgen.model import ExecutionData, StepOps
from reportgen.site.views import steps as step_views
from reportgen.site.views import timeline as timeline_view
from tests.conftest import sample


def test_attach_is_columnar_keeps_hrefs_out_and_respects_the_budget(monkeypatch):
    c = Chart("x", {})
    rows = {1: [{"rank": 0, "total": 1.5, "href": "ranks/rank-0.html"}, {"rank": 1, "total": 2.0, "href": "r"}],
            2: [{"rank": 0, "total": 3.0, "href": "ranks/rank-0.html"}]}
    assert step_views.attach(c, [1, 2], lambda s: {"ranks": rows[s]}, join="rank")
    assert c.step_data == {"fields": {"ranks": ["rank", "total"]}, "join": "rank",
                           "steps": {"1": {"ranks": [[0, 1.5], [1, 2.0]]}, "2": {"ranks": [[0, 3.0]]}}}
    one = Chart("y", {})
    assert not step_views.attach(one, [1], lambda s: {"ranks": rows[s]}) and one.step_data is None
    monkeypatch.setattr(step_views, "MAX_STEP_VALUES", 5)  # 3 rows x 2 fields = 6 values
    big = Chart("z", {})
    assert not step_views.attach(big, [1, 2], lambda s: {"ranks": rows[s]}) and big.step_data is None


def _expanded(chart) -> list[dict]:
    """What report.js makes of the columnar data: dict fields looked up, their index kept as <field>_i."""
    return columnar.decode(chart.columns["ops"])


def _ops(rank: int, step: int, names, classes, lanes, start, dur) -> StepOps:
    return StepOps(rank=rank, step=step, source="t.json", step_ms=10.0, names=list(names), classes=list(classes),
                   start=np.array(start, dtype=float), dur=np.array(dur, dtype=float), lanes=list(lanes),
                   shapes=["[2,3]"] * len(names))


def test_timeline_rows_cap_keeps_communication_first_then_the_longest(monkeypatch):
    names = ["MatMul-op1", "AllReduce-op2", "Add-op3", "GetNext-op4", "Mul-op5"]
    classes = ["compute", "collective", "compute", "compute", "compute"]
    lanes = ["Ascend Hardware · Stream 3", "HCCL · Group 0 Communication", "Ascend Hardware · Stream 3",
             "AI CPU", "CPU OP · Thread 7"]
    o = _ops(0, 5, names, classes, lanes, [0, 1, 2, 3, 4], [5.0, 0.1, 0.2, 1.0, 3.0])
    ex = ExecutionData(steps=[5], reasons={5: "representative: ..."}, ops={5: {0: o}}, ranks=[0])
    monkeypatch.setattr(timeline_view, "MAX_RANK_BARS", 3)
    chart = timeline_view.rank_chart(ex, 0)
    rows = _expanded(chart)
    # the collective (short) is kept; then the two longest: MatMul 5.0 and Mul 3.0; in time order
    assert [r["name"] for r in rows] == ["MatMul-op1", "AllReduce-op2", "Mul-op5"]
    assert {r["name"]: r["cat"] for r in rows} == {"MatMul-op1": "compute", "AllReduce-op2": "communication",
                                                  "Mul-op5": "host dispatch"}
    assert rows[0]["dur"] == 5.0 and rows[0]["shapes"] == "[2,3]"
    # lanes ordered by kind: compute, communication, host dispatch
    assert sorted({(r["lane_i"], r["lane"]) for r in rows}) == [
        (0, "Ascend Hardware · Stream 3"), (1, "HCCL · Group 0 Communication"), (2, "CPU OP · Thread 7")]
    assert timeline_view.rank_chart(ex, 1) is None  # a rank the execution loader did not read
    assert timeline_view.category("GetNext-op4", "compute", "AI CPU") == "data queue"


def test_execution_timeline_shifts_devices_and_orders_them_as_the_marey_view():
    a = _ops(3, 1, ["MatMul-op1"], ["compute"], ["Ascend Hardware · Stream 1"], [1.0], [2.0])
    b = _ops(1, 1, ["MatMul-op1"], ["compute"], ["Ascend Hardware · Stream 1"], [1.0], [2.0])
    ex = ExecutionData(steps=[1], reasons={}, ops={1: {3: a, 1: b}}, ranks=[1, 3])
    chart = timeline_view.execution_chart(ex, 1, {3: 0.5, 1: 0.0}, {3: "rank 3", 1: "rank 1"})
    by = {r["lane"]: r for r in _expanded(chart)}
    assert by["rank 3 · Ascend Hardware · Stream 1"]["start"] == 1.5  # shifted by its alignment
    assert by["rank 3 · Ascend Hardware · Stream 1"]["lane_i"] == 0 and by["rank 1 · Ascend Hardware · Stream 1"]["lane_i"] == 1


# ---- timeline lanes from the traces: torch_npu host dispatch, Kineto stream names --------------------------------

REAL_TORCH_NPU = "ascend/msinsight_pytorch_2rank_level1_text/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT"  # under SAMPLES


def test_torch_npu_host_dispatch_is_read_with_the_device_operator_it_launched():

    from reportgen.loaders import step_ops
    from reportgen.loaders.issuelog import IssueLog

    path = sample(REAL_TORCH_NPU) / "trace_view.json"
    log = IssueLog(path.parents[2])
    lay = step_ops.trace_layout(path, log)
    o = step_ops.read_step_ops(path, 0, lay, list(lay.windows), log)[50]
    # the CANN process's calls and the Python process's task-queue slices, one lane per process and thread
    assert {"CANN · Thread 3099702", "CANN · Thread 3096504", "Python · Thread 3099702"} <= set(o.host_lanes)
    assert not any(ln.startswith("Python") and not n.startswith(("Enqueue", "Dequeue"))
                   for n, ln in zip(o.host_names, o.host_lanes))  # no python_function / cpu_op slices
    # in the trace: Node@launch (item_id Conv2D1) at 1736408883704713.200 µs, 5.02 µs, connection_id 955, the id
    # of the AI Core task Conv2D1 at 1736408883704903.918 µs; step 50's device range starts at the first launched
    # task, 1736408883700059.821 µs
    i = o.host_names.index("Node@launch (Conv2D1)")
    assert o.host_lanes[i] == "CANN · Thread 3099702"
    assert o.host_start[i] == pytest.approx((1736408883704713.200 - 1736408883700059.821) / 1e3, abs=1e-6)
    assert o.host_dur[i] == pytest.approx(0.00502, abs=1e-9)
    j = o.host_launch[i]
    assert o.names[j] == "Conv2D1" and o.lanes[j] == "Ascend Hardware · Stream 2"
    assert o.start[j] == pytest.approx((1736408883704903.918 - 1736408883700059.821) / 1e3, abs=1e-6)
    # the device operators are as before: the host slices are not operators of the execution view
    assert not any(n.startswith(("AscendCL@", "Node@", "Enqueue", "Dequeue")) for n in o.names)


def test_timeline_draws_host_dispatch_on_its_own_lanes_with_the_launch(tmp_path):
    from reportgen.synth import generate_run

    run = generate_run(tmp_path / "run", ranks=2, steps=3, trace_view=True)
    ex = _execution(run)
    r = sorted(ex.ops[ex.steps[0]])[0]
    o = ex.ops[ex.steps[0]][r]
    assert set(o.host_lanes) == {"CANN · Thread 4243"} and len(o.host_names) > 10
    chart = timeline_view.rank_chart(ex, r)
    rows = _expanded(chart)
    host = [x for x in rows if x["cat"] == "host dispatch"]
    assert host and {x["lane"] for x in host} == {"CANN · Thread 4243"}
    assert len([x for x in host if x["step"] == ex.steps[0]]) <= timeline_view.MAX_HOST_BARS
    dev = {(x["step"], x["start"]): x for x in rows if x["cat"] != "host dispatch"}
    for x in host:  # the synthetic launch: AscendCL@<op> a little before the operator it launched
        d = dev[(x["step"], x["launch"])]
        assert x["name"] == "AscendCL@" + d["name"].split("_")[0] and x["start"] + x["dur"] < d["start"]
    lanes = chart.columns["ops"]["dicts"]["lane"]
    assert lanes == ["Ascend Hardware · Stream 2", "HCCL · Group 0 Communication", "CANN · Thread 4243"]


def _execution(path):
    """The execution data of a run as the report reads it (steps and devices chosen, their traces read)."""
    from reportgen.analysis.execution import select
    from reportgen.layouts import discover, load_execution, load_run, timeline_ranks
    lay = discover(path)[0]
    run = load_run(lay)
    sel = select(run, timeline_ranks(lay), None)
    return load_execution(lay, run, sel.steps, sel.reasons, sel.ranks, sel.skipped)


def test_kineto_lanes_carry_the_traces_stream_names(tmp_path):
    from reportgen.synth import generate_run

    run = generate_run(tmp_path / "run", layout="kineto", ranks=2, steps=3)
    ex = _execution(run)
    o = ex.ops[ex.steps[0]][0]
    # synth/kineto.py names the GPU's process "GPU 0" (process_labels) and its streams "stream 7" / "stream 20"
    assert set(o.lanes) == {"GPU 0 · stream 7", "GPU 0 · stream 20"}
    comm = {ln for ln, c in zip(o.lanes, o.classes) if c != "compute"}
    assert comm == {"GPU 0 · stream 20"}
    # the launches (cudaLaunchKernel on the Python thread, "CPU" its process label) with the kernel of the same
    # correlation id: synth/kineto.py calls cudaLaunchKernel (9.2 µs) 36, 41 or 46 µs before a compute kernel,
    # (7.1 µs) 27 µs before an NCCL kernel
    assert set(o.host_lanes) == {"CPU · thread 200000 (python)"} and set(o.host_names) == {"cudaLaunchKernel"}
    assert all(j >= 0 for j in o.host_launch)
    for i, j in enumerate(o.host_launch):
        lead = o.start[j] - o.host_start[i]
        if o.classes[j] == "compute":
            assert o.host_dur[i] == pytest.approx(0.0092) and min(abs(lead - d) for d in (0.036, 0.041, 0.046)) < 1e-6
        else:
            assert o.host_dur[i] == pytest.approx(0.0071) and lead == pytest.approx(0.027, abs=1e-6)
    rows = _expanded(timeline_view.rank_chart(ex, 0))
    assert {x["lane"] for x in rows} == {"GPU 0 · stream 7", "GPU 0 · stream 20", "CPU · thread 200000 (python)"}
    assert {x["cat"] for x in rows if x["lane"].startswith("CPU")} == {"host dispatch"}


def test_malformed_host_and_metadata_events_never_raise(tmp_path):
    """Broken CANN / task-queue slices and metadata are skipped; the device operators are read as before."""
    import json

    from reportgen.loaders import kineto, step_ops
    from reportgen.loaders.issuelog import IssueLog

    ev = [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "Ascend Hardware"}},
          {"ph": "M", "name": "process_name", "pid": 2, "tid": 0, "args": {"name": "CANN"}},
          {"ph": "M", "name": "process_name", "pid": 3, "tid": 0, "args": {"name": "Python"}},
          {"ph": "M", "name": "thread_name", "pid": 2, "tid": 7, "args": ["not", "a", "dict"]},
          {"ph": "X", "name": "MatMul", "pid": 1, "tid": 2, "ts": "100.0", "dur": 10, "args": {"connection_id": [1]}},
          {"ph": "X", "name": 42, "pid": 2, "tid": 7, "ts": "101.0", "dur": 1},  # name not a string
          {"ph": "X", "name": "AscendCL@x", "pid": 2, "tid": 7, "ts": "102.0", "dur": "n/a"},  # no duration
          {"ph": "X", "name": "AscendCL@y", "pid": 2, "tid": 7, "ts": "bad", "dur": 1},  # no start
          {"ph": "X", "name": "Node@launch", "pid": 2, "tid": 7, "ts": "103.0", "dur": 2,
           "args": {"item_id": {"x": 1}, "connection_id": None}},
          {"ph": "X", "name": "Enqueue", "pid": 3, "tid": 9, "cat": None, "ts": "104.0", "dur": 1}]  # cat missing
    path = tmp_path / "trace_view.json"
    path.write_text(json.dumps(ev), encoding="utf-8")
    log = IssueLog(tmp_path)
    lay = step_ops.trace_layout(path, log)
    o = next(iter(step_ops.read_step_ops(path, 0, lay, list(lay.windows), log).values()))
    assert o.names == ["MatMul"] and o.host_names == ["Node@launch"] and o.host_launch == [-1]
    assert o.host_lanes == ["CANN · thread 7"]
    names: dict = {}
    for e in ({"name": "thread_name", "pid": 0, "tid": 7, "args": None},
              {"name": "process_labels", "pid": 0, "args": {"labels": 3}},
              {"name": "process_name", "pid": 0, "args": {"name": " python "}}):
        kineto.execution._name_meta(e, names)
    assert kineto.execution._lane_name(names, (0, 7), True) == "python · stream 7"


def test_timeline_spec_is_built_once_per_language_and_steps_and_each_page_gets_its_own_datasets():
    from reportgen import i18n
    from reportgen.charts import timeline as tl_charts

    steps = [(3, "step 3 (representative)"), (5, "step 5 (slowest)")]
    with i18n.use("en"):
        a, b = tl_charts.timeline(steps), tl_charts.timeline(steps)
        one = tl_charts.timeline(steps[:1])
    with i18n.use("zh"):
        zh = tl_charts.timeline(steps)
    assert a == b and a is not b and a["datasets"] is not b["datasets"] and a["datasets"] == {"ops": []}
    a["datasets"]["ops"].append({"x": 1})  # a page's rows never reach another page's spec
    assert b["datasets"] == {"ops": []}
    assert json.dumps(one) != json.dumps(a) and "tlstep" in json.dumps(a) and "tlstep" not in json.dumps(one)
    assert "Time from the step start (ms)" in json.dumps(a)
    assert "Time from the step start (ms)" not in json.dumps(zh, ensure_ascii=False)  # the other language's titles
