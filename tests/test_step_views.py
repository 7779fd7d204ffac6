"""Per-step chart data (site/step_views.py) and timeline rows (site/timeline_view.py): shapes and caps."""

from __future__ import annotations

import numpy as np

from reportgen.charts import Chart
from reportgen.model import ExecutionData, StepOps
from reportgen.site import step_views, timeline_view


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
    c = chart.columns["ops"]
    out = []
    for vals in c["rows"]:
        row = {}
        for f, v in zip(c["fields"], vals):
            if f in c.get("dicts", {}):
                row[f], row[f + "_i"] = c["dicts"][f][v], v
            else:
                row[f] = v
        out.append(row)
    return out


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
