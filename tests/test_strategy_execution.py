"""Strategy perception (parallel_strategy files, stage graphs, pipeline view) and the execution overview (step
operators, alignment, Marey view, operator spread)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from bs4 import BeautifulSoup

from conftest import sample
from reportgen.analysis import analyze
from reportgen.analysis.execution import align, group_stages, join_keys, marey_step, select, type_spread
from reportgen.charts import marey_layout
from reportgen.analysis.strategy import analyze_strategy
from reportgen.charts.strategy_layout import build_stage, collapse
from reportgen.cli import main
from reportgen.layouts import discover, load_execution, load_run, timeline_ranks
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.strategy import load_parallel_strategy
from reportgen.model import StepOps, StrategyOp
from reportgen.synth import generate_run
from reportgen.synth.execution import LAYERS_PER_STAGE, LAYER_OPS, MICRO_BATCHES


def _analysis(path: Path, steps=None):
    lay = discover(path)[0]
    run = load_run(lay)
    sel = select(run, timeline_ranks(lay), steps)
    run.execution = load_execution(lay, run, sel.steps, sel.reasons, sel.ranks, sel.skipped)
    return analyze(run)


@pytest.fixture(scope="module")
def pipe32(tmp_path_factory) -> Path:
    return generate_run(tmp_path_factory.mktemp("pipe") / "run", layout="mindinsight", ranks=32, steps=5, stages=4,
                        tp=2, seed=3, inject=["slow-rank:13:compute:1.3", "slow-op:LayerNorm:4"])


@pytest.fixture(scope="module")
def pipe32_healthy(tmp_path_factory) -> Path:
    return generate_run(tmp_path_factory.mktemp("pipeh") / "run", layout="mindinsight", ranks=32, steps=5,
                        stages=4, tp=2, seed=3)


# --- strategy ---------------------------------------------------------------------------------------------------


def test_real_strategy_sample_merges_like_mindinsight():
    root = sample("mindinsight/parallel_strategy_2rank")
    expected = json.loads((root / "expected_api_result" / "parallel_strategy.json").read_text())["data"]
    run = load_run(discover(root)[0])
    s = run.strategy
    assert s.parallel_type == expected["parallel_type"] == "auto_parallel"
    assert {str(i): d for i, d in enumerate(s.stage_devices)} == expected["stage_devices"]
    assert [st.ranks for st in s.stages] == [[0, 1]]
    conv = next(o for o in s.stages[0].ops if o.op_type == "Conv2D")
    assert conv.strategy == [[2, 1, 1, 1], [1, 1, 1, 1]]  # gen_strategy (no in_strategy in this version)
    assert conv.groups == ["0", "1"]  # rank 0 says group 0, rank 1 group 1: unioned, as MindInsight merges
    assert conv.inputs == ["1", "1000"] and run.info.parallel_mode_raw == "auto_parallel"
    g = build_stage(analyze_strategy(s).stages[0])
    assert g.n_ops == 2 and g.n_sharded == 1 and g.n_split == 1
    assert [r.inputs for r in g.all_rows if r.op_type == "Conv2D"] == [["Default/GetNext-op767"]]  # 1000: no node
    assert [(u, v, c) for u, v, c in g.edges] == [("Default", "Default/conv1-Conv2d", 1)]


def test_synthetic_stage_graphs_count_special_operators(pipe32):
    a = _analysis(pipe32)
    sv = a.strategy
    assert [st.ranks for st in sv.stages] == [list(range(s * 8, s * 8 + 8)) for s in range(4)]
    per_mb = 2 * LAYERS_PER_STAGE  # forward + backward per layer
    compute = MICRO_BATCHES * per_mb * len(LAYER_OPS)
    matmuls = MICRO_BATCHES * per_mb * sum(1 for t, _ in LAYER_OPS if t == "MatMulV3")
    for st in map(build_stage, sv.stages):
        pipe = (MICRO_BATCHES if st.stage > 0 else 0) + (MICRO_BATCHES if st.stage < 3 else 0)
        assert st.n_ops == compute + matmuls + pipe + LAYERS_PER_STAGE + 1
        assert st.n_sharded == compute and st.n_split == compute  # dp 4 splits every strategy
        assert st.n_redistribution == matmuls  # an AllGather after each tensor-parallel MatMul
        assert st.n_gradient_aggregation == LAYERS_PER_STAGE
        assert sum(b.n_ops for b in st.blocks) == st.n_ops
        assert sum(b.redistribution for b in st.blocks) == matmuls
        layers = {b.key: b.layer for b in st.blocks}
        assert all(layers[u] < layers[v] for u, v, _ in st.edges
                   if next(b.first for b in st.blocks if b.key == u) < next(b.first for b in st.blocks if b.key == v))
    assert [(p.src_stage, p.dst_stage, p.sends, p.receives) for p in sv.pairs] == [
        (0, 1, 2, 2), (1, 2, 2, 2), (2, 3, 2, 2)]
    assert sv.micro_batches == MICRO_BATCHES
    assert a.run.info.stage_source.startswith("the stage layout of the parallel_strategy files")


def _op(i: int, scope: str, **kw) -> StrategyOp:
    return StrategyOp(id=str(i), name=f"{scope}/Op-op{i}", op_type="Op", scope=scope, order=i, **kw)


def test_collapse_splits_largest_scope_within_the_limit():
    ops = [_op(i, f"Default/net/layer{i % 6}/sub{i % 3}") for i in range(60)] + [_op(100, "Default")]
    m = collapse(ops, max_nodes=8)
    blocks = set(m.values())
    assert len(blocks) <= 8 and len(m) == 61
    assert any(b.startswith("Default/net/layer") for b in blocks)  # split below the top scope
    assert collapse(ops, max_nodes=100)[str(0)] == "Default/net/layer0/sub0"  # fully expanded when room allows
    assert set(collapse(ops, max_nodes=1).values()) == {"Default"}


def _write(path: Path, rank: int, stage: int, nodes: list, devices: list) -> None:
    path.write_text(json.dumps({"config": {"rankId": rank, "stageId": stage, "parallelType": "semi_auto_parallel",
                                           "stageDevices": [{"dim": [{"size": str(r)} for r in d]} for d in devices]},
                                "graph": {"node": nodes, "parameters": [], "constVals": []}}))


def test_stage_merge_unions_groups_and_reports_differences(tmp_path):
    def node(nid, group, name="<script>alert(1)</script>"):
        return {"name": nid, "opType": "AllReduce", "scope": "Default", "fullName": f"Default/{name}-op{nid}",
                "attribute": [{"name": "group", "value": {"dtype": "DT_STRING", "strVal": group}}]}
    devs = [[0, 1, 2], [3]]
    _write(tmp_path / "a0.json", 0, 0, [node("1", "g-a")], devs)
    _write(tmp_path / "a1.json", 1, 0, [node("1", "g-b"), node("2", "g-b")], devs)
    _write(tmp_path / "a3.json", 3, 1, [node("1", "g-c")], devs)
    log = IssueLog(tmp_path)
    s = load_parallel_strategy({0: tmp_path / "a0.json", 1: tmp_path / "a1.json", 3: tmp_path / "a3.json"}, log, 4)
    assert [(st.stage, st.ranks, st.expected_ranks) for st in s.stages] == [(0, [0, 1], [0, 1, 2]), (1, [3], [3])]
    assert s.stages[0].ops[0].groups == ["g-a", "g-b"]
    problems = " ".join(i.problem for i in log.issues)
    assert "1 operator(s) are not in rank 0's graph" in problems and "for 3 of 4 ranks" in problems


def test_strategy_page_escapes_and_lists_blocks(tmp_path):
    run = tmp_path / "run" / "profiler"
    run.mkdir(parents=True)
    nodes = [{"name": "1", "opType": "MatMul", "scope": "Default/<b>x</b>", "fullName": "Default/<script>x</script>",
              "attribute": [{"name": "in_strategy", "value": {"dtype": "DT_TUPLE", "values": [
                  {"dtype": "DT_TUPLE", "values": [{"dtype": "DT_INT64", "intVal": "2"}]}]}}]}]
    for r in (0, 1):
        _write(run / f"parallel_strategy_{r}.json", r, 0, nodes, [[0, 1]])
        (run / f"profiler_info_{r}.json").write_text(json.dumps({"rank_id": r, "parallel_mode": "semi_auto_parallel",
                                                                   "stage_num": 1, "rank_size": 2}))
    out = tmp_path / "out"
    assert main([str(tmp_path / "run"), "-o", str(out), "-q"]) == 0
    html = (out / "cluster" / "strategy.html").read_text()
    assert "<script>x</script>" not in html and "&lt;script&gt;" in html and "<b>x</b>" not in html
    soup = BeautifulSoup(html, "html.parser")
    assert len(soup.select("svg.strategy-graph g.block")) == 1
    assert soup.select_one("table.matrix td.split").text == "2"
    assert (out / "cluster" / "strategy-stage-0.csv").read_text().count("\n") == 2


def test_run_without_strategy_files_says_so(synth_8_report):
    out = synth_8_report
    soup = BeautifulSoup((out / "cluster" / "strategy.html").read_text(), "html.parser")
    assert soup.select_one("#strategy-none") is not None
    assert [tr.select("td")[1].text for tr in soup.select("#strategy-layout-table tbody tr")] == ["0–7"]


# --- execution --------------------------------------------------------------------------------------------------


def _ops(rank, names, classes, starts, durs, step_ms=100.0):
    return StepOps(rank=rank, step=1, source="", step_ms=step_ms, names=names, classes=classes,
                   start=np.array(starts, float), dur=np.array(durs, float))


def test_alignment_on_the_first_shared_collective_end():
    # the same program on three devices; device clocks (step starts) differ by known offsets, and the all-reduce
    # ends at the same moment everywhere (rank 2 computed longer, so it spent less time in the all-reduce)
    names = ["MatMul-op1", "AllReduce-op2", "Add-op3"]
    cls = ["compute", "collective", "compute"]
    ops = {0: _ops(0, names, cls, [0, 10, 20], [10, 10, 1]),
           1: _ops(1, names, cls, [3, 13, 23], [10, 10, 1]),  # its step started 3 ms earlier
           2: _ops(2, names, cls, [1, 16, 21], [15, 5, 1])}  # its step started 1 ms earlier, computes 5 ms more
    keys = {r: join_keys(o.names) for r, o in ops.items()}
    stages = group_stages(ops, {}, keys)
    assert stages == {0: 0, 1: 0, 2: 0}
    shift, notes = align(ops, stages, keys)
    assert shift == pytest.approx({0: 0.0, 1: -3.0, 2: -1.0})
    assert "2 of 2 device(s) aligned" in notes[0]


def test_stage_inference_and_send_receive_alignment():
    a = ["MatMul-op1", "AllReduce-op10", "Send-op20"]
    b = ["Receive-op30", "MatMul-op31", "AllReduce-op40"]
    ops = {0: _ops(0, a, ["compute", "collective", "send"], [0, 10, 12], [10, 2, 1]),
           1: _ops(1, a, ["compute", "collective", "send"], [0, 10, 12], [10, 2, 1]),
           2: _ops(2, b, ["receive", "compute", "collective"], [0, 5, 15], [5, 10, 2]),
           3: _ops(3, b, ["receive", "compute", "collective"], [0, 5, 15], [5, 10, 2])}
    keys = {r: join_keys(o.names) for r, o in ops.items()}
    stages = group_stages(ops, {}, keys)  # MindInsight's rule: devices sharing a collective form a stage
    assert stages == {0: 0, 1: 0, 2: 1, 3: 1}
    shift, _ = align(ops, stages, keys)
    assert shift[2] == shift[3] == pytest.approx(13.0 - 5.0)  # its Receive ends when stage 0's Send ends


def test_alignment_is_invariant_to_device_clock_offsets_on_real_ops():
    """MindInsight's Marey output for a 4-device pipeline (real operator names and times): moving each device's
    clock by an arbitrary offset must not change the aligned picture, and the stages are found from the shared
    all-reduces."""
    d = json.loads((sample("mindinsight/marey_pipeline_4device_derived") / "ascend_marey_timeline_1.json").read_text())
    rng = np.random.default_rng(0)

    def build(offsets):
        out = {}
        for k, (dev, m) in enumerate(sorted(d["maps"].items())):
            items = sorted(m.items(), key=lambda kv: kv[1]["st"])
            names = [n for n, _ in items]
            out[k] = _ops(k, names, [("collective" if n.startswith("AllReduce") else "send" if n.startswith("Send")
                                      else "receive" if n.startswith("Receive") else "compute") for n in names],
                          [v["st"] / 1e3 + offsets[k] for _, v in items], [v["dur"] / 1e3 for _, v in items])
        return out

    base, moved = build([0, 0, 0, 0]), build(list(rng.uniform(-50, 50, 4)))
    keys = {r: join_keys(o.names) for r, o in base.items()}
    assert group_stages(base, {}, keys) == {0: 0, 1: 0, 2: 1, 3: 1}  # MindInsight's stage0 / stage1
    s0, _ = align(base, group_stages(base, {}, keys), keys)
    s1, _ = align(moved, group_stages(moved, {}, keys), keys)
    for r in base:
        np.testing.assert_allclose(base[r].start + s0[r], moved[r].start + s1[r] - (moved[0].start[0] - base[0].start[0]),
                                   atol=1e-6)


def test_marey_names_the_slow_device_and_shows_the_slow_operator(pipe32, pipe32_healthy):
    a = _analysis(pipe32)
    h = _analysis(pipe32_healthy)
    m = a.execution.marey[0]
    assert len(m.devices) == 32 and {d.stage for d in m.devices} == {0, 1, 2, 3}
    assert m.step == 3 or m.reason.startswith("representative")
    d13 = next(d for d in m.devices if d.rank == 13)
    peers = [d.busy_ms["compute"] for d in m.devices if d.stage == 1 and d.rank != 13]
    assert d13.busy_ms["compute"] / np.median(peers) == pytest.approx(1.3, rel=0.05)
    slow_types = {s.name: s for s in m.type_spread if s.stage == 1 and s.max_rank == 13 and s.ratio > 1.2}
    assert "MatMulV3" in slow_types and "RmsNorm" in slow_types  # (slow-op:LayerNorm is RmsNorm, its new name)
    # the slow-everywhere operator: RmsNorm's share of the step grows ~4x on every device, in every stage

    def share(an, typ):
        return {s.stage: s.share for s in an.execution.marey[0].type_spread if s.name == typ}
    for st in range(4):
        assert share(a, "RmsNorm")[st] / share(h, "RmsNorm")[st] > 2.5
        assert share(a, "MatMulV3")[st] / share(h, "MatMulV3")[st] < 1.0  # the others lose share
    # rules: the timeline's slow device is rank 13 (folded into the step-trace finding); nothing on the healthy run
    from reportgen.rules import run_rules
    found = [f.to_dict() for f in run_rules(a)[0]]
    slow = next(f for f in found if f["id"] == "slow-rank.compute")
    assert slow["ranks"] == [13] and any(r["id"] == "operator-spread.slow-device" for r in slow["evidence"]["related"])
    healthy = [f.to_dict() for f in run_rules(h)[0]]
    assert not [f for f in healthy if f["id"].startswith("execution.") and f["severity"] != "info"]
    assert not [f for f in healthy if f["id"] == "operator-spread.slow-device"]


def test_type_spread_strips_operator_numbers():
    ops = {0: _ops(0, ["a/LayerNorm-op1", "a/LayerNorm-op2", "hcom_allReduce__5_0_1"],
                   ["compute", "compute", "collective"], [0, 1, 2], [1, 1, 3]),
           1: _ops(1, ["a/LayerNorm-op1", "a/LayerNorm-op2", "hcom_allReduce__5_0_1"],
                   ["compute", "compute", "collective"], [0, 1, 2], [2, 2, 3])}
    out = {s.name: s for s in type_spread(ops, {0: 0, 1: 0}, 10.0)}
    assert set(out) == {"LayerNorm", "hcom_allReduce"}
    assert (out["LayerNorm"].median_ms, out["LayerNorm"].max_ms, out["LayerNorm"].max_rank) == (3.0, 4.0, 1)


def test_real_pytorch_trace_view_two_ranks():
    a = _analysis(sample("ascend/msinsight_pytorch_2rank_level1_text"))
    m = a.execution.marey[0]
    assert m.step == 50 and [d.rank for d in m.devices] == [0, 1]
    for d in m.devices:
        assert d.busy_ms["collective"] > 90 and d.busy_ms["compute"] > 5  # allReduce-dominated toy job
    first = "hcom_allReduce__586_0_1"
    ends = []
    for d in m.devices:  # the analysis' aligned times, and the bars drawn from them
        o = m.ops[d.rank]
        i = o.names.index(first)
        ends.append(float(m.aligned_start(d.rank)[i] + o.dur[i]))
        b = next(x for x in marey_layout.layout(m).bars if x["rank"] == d.rank and x["name"] == first)
        assert b["end"] == pytest.approx(ends[-1], abs=1e-3)
    assert ends[0] == pytest.approx(ends[1], abs=1e-3)  # aligned on the end of the first shared collective


def test_real_legacy_timeline_uses_step_trace_windows():
    a = _analysis(sample("mindinsight/single_device_run2_rank1_full"))
    m = a.execution.marey[0]
    d = m.devices[0]
    assert m.step == 1 and "output_timeline_data" in m.window
    assert 50 < d.n_ops <= 107 and d.busy_ms["compute"] <= d.step_ms
    bars = marey_layout.layout(m).bars
    assert min(b["start"] for b in bars) >= 0 and max(b["end"] for b in bars) <= d.step_ms + 1e-6


def test_marey_layout_caps_bars_and_keeps_communication():
    """The view's caps live in the layout (charts), not in the analysis: the analysis keeps every operator."""
    ops = {r: StepOps(rank=r, step=1, source="t", step_ms=100.0,
                      names=["hcom_allReduce"] + [f"MatMul-op{i}" for i in range(30)],
                      classes=["collective"] + ["compute"] * 30,
                      start=np.arange(31, dtype=float), dur=np.array([5.0] + [1.0 + i for i in range(30)]))
           for r in (0, 1)}
    m = marey_step(1, "representative", ops, {})
    assert all(len(m.ops[r].names) == 31 for r in (0, 1))
    lay = marey_layout.layout(m, max_bars=5)
    assert lay.drawn == {0: 5, 1: 5} and lay.not_drawn == 2 * 26
    drawn = {b["name"] for b in lay.bars if b["rank"] == 0}
    assert drawn == {"hcom_allReduce", "MatMul-op29", "MatMul-op28", "MatMul-op27", "MatMul-op26"}


def test_execution_pages_and_marey_step_option(pipe32, tmp_path):
    out = tmp_path / "r"
    assert main([str(pipe32), "-o", str(out), "-q", "--marey-step", "4"]) == 0
    soup = BeautifulSoup((out / "cluster" / "execution.html").read_text(), "html.parser")
    assert len(soup.select("#marey-devices-table tbody tr")) == 32
    assert {f.get("id") for f in soup.select("figure.chart")} >= {"fig-time-overview", "fig-marey-" +
                                                                 soup.select_one("h2#marey").text.split()[-1]}
    links = [x.get("href") for x in soup.select(".step-tabs a")]
    assert "execution-step-4.html" in links and (out / "cluster" / "execution-step-4.html").exists()
    spec = json.loads(soup.select_one("#fig-time-overview script.spec").string)
    assert {p["step"] for p in spec["datasets"]["points"]} >= {4}
    assert [a.text for a in soup.select("header nav a")][4:6] == ["Execution", "Strategy"]
    # the Marey view's bars and joins are carried columnar beside its spec (thousands of bars at scale): the rows
    # report.js expands hold a bar per drawn operator on every device's lane and the stage means
    from reportgen.charts.column_codec import decode
    fig = next(f for f in soup.select("figure.chart") if f["id"].startswith("fig-marey-"))
    marey = json.loads(fig.select_one("script.spec").string)
    assert marey["datasets"] == {"bars": [], "joins": []}
    cols = json.loads(fig.select_one("script.columns").string)
    bars, joins = decode(cols["bars"]), decode(cols["joins"])
    assert {b["rank"] for b in bars} == set(range(32)) | {-1}  # every device, and the stage means (-1)
    assert all(b["end"] >= b["start"] and abs(b["end"] - b["start"] - b["dur"]) < 2e-4 for b in bars)
    assert {b["cls"] for b in bars} <= {"compute", "collective", "send", "receive"} and bars[0]["name"]
    lanes = {b["row"] for b in bars}
    assert joins and {j["row"] for j in joins} <= lanes and all(j["end"] >= j["t"] for j in joins)
    single = tmp_path / "one.html"
    assert main([str(pipe32), "-o", str(single), "--single-file", "-q"]) == 0
    s = BeautifulSoup(single.read_text(), "html.parser")
    assert s.select_one("section#execution #marey-devices-table") is not None
    assert s.select_one("section#strategy svg.strategy-graph") is not None


def test_device_cap_keeps_slowest_fastest_and_median_per_stage():
    from reportgen.analysis.execution import choose_ranks
    import pandas as pd
    per_step = pd.DataFrame({"rank": list(range(128)), "step": 1, "total": [100.0 + r % 64 for r in range(128)]})
    per_step.loc[per_step["rank"] == 77, "total"] = 500.0
    stage_of = {r: r // 64 for r in range(128)}
    picks, skipped = choose_ranks(list(range(128)), stage_of, per_step, 1, cap=16)
    assert len(picks) == 16 and len(skipped) == 112
    assert {77, 64, 0, 63} <= set(picks)


def test_the_execution_view_read_in_a_pool_is_the_one_read_here(tmp_path, monkeypatch):
    """The execution view's passes over the ranks' timelines run in the local pool (`load_execution(jobs=2)`):
    the same steps, reasons, notes, operators of every rank and data-quality entries, in rank order, as read in
    this process; through the cache beside the output (entries written by the pool's workers) a second reading
    gives them again. One rank's trace is cut off: its entry is named the same way whichever process read it."""
    from reportgen import rankcache
    from reportgen.layouts import run as run_mod
    from reportgen.loaders import dispatch

    monkeypatch.setattr(run_mod, "EXEC_MIN_POOL_BYTES", 0)  # (the synthetic traces are small)
    pooled: list = []
    real_pool = dispatch._in_pool
    monkeypatch.setattr(dispatch, "_in_pool", lambda fn, items, *a: pooled.append(len(items)) or real_pool(fn, items, *a))
    root = generate_run(tmp_path / "run", layout="ascend", ranks=6, steps=3, seed=4, trace_view=True)
    traces = sorted(root.rglob("trace_view.json"))
    assert len(traces) == 6
    traces[2].write_bytes(traces[2].read_bytes()[: traces[2].stat().st_size * 4 // 5])  # rank 2's trace cut off
    lay = discover(root)[0]
    run = load_run(lay)
    sel = select(run, timeline_ranks(lay), None)
    assert len(sel.ranks) == 6

    def read(jobs: int):
        n = len(run.issues)
        ex = load_execution(lay, run, sel.steps, dict(sel.reasons), sel.ranks, sel.skipped, jobs=jobs)
        ops = {s: {r: (o.names, o.classes, o.start.tolist(), o.dur.tolist(), o.lanes, o.shapes, o.host_names,
                       o.host_start, o.host_launch, o.step_ms) for r, o in by.items()} for s, by in ex.ops.items()}
        return ex.steps, ex.reasons, ex.notes, ops, [(i.file, i.code, i.params, i.severity) for i in run.issues[n:]]

    from reportgen.loaders import traces as traces_mod

    parsed: list = []
    real_whole = traces_mod._whole
    with monkeypatch.context() as m:
        m.setattr(traces_mod, "_whole", lambda path, root, *a: parsed.append(Path(path))
                  or real_whole(path, root, *a))
        here = read(1)
    # both passes of a rank over one parse of its trace (`_exec_job`); the cut-off one is streamed by each pass
    assert sorted(parsed) == sorted(traces + [traces[2]])
    steps, _, _, ops, entries = here
    assert steps and all(len(by) == 6 for by in ops.values())  # every rank has operators in the chosen step(s)
    assert any(code == "trace.cut-short" and file.endswith(traces[2].relative_to(root).as_posix())
               for file, code, _, _ in entries)
    assert not pooled
    assert read(2) == here
    assert pooled == [6]  # both passes of the six ranks in the pool, in one job a rank
    import functools
    import multiprocessing

    with rankcache.use(tmp_path / "cache"), monkeypatch.context() as m:  # workers started by spawn (no inherited
        m.setattr(dispatch, "ProcessPoolExecutor", functools.partial(  # cache folder): they write the entries
            dispatch.ProcessPoolExecutor, mp_context=multiprocessing.get_context("spawn")))
        assert read(2) == here
    with rankcache.use(tmp_path / "cache"):
        written = sorted(p.name for p in (tmp_path / "cache").iterdir())
        assert len(written) == 12  # a layout and a step's operators per rank
        assert read(1) == here  # read back here
        assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == written
        sent: list = []
        real = run_mod.map_ranks
        run_mod.map_ranks = lambda fn, items, *a, **kw: sent.append(len(items)) or real(fn, items, *a, **kw)
        try:
            assert read(2) == here  # a rebuild: every pass from the cache, in this process (no pool started)
        finally:
            run_mod.map_ranks = real
        assert sent == [0]


def test_steps_no_timeline_has_fall_back_to_the_middle_step_read_as_if_asked(tmp_path):
    """Chosen steps that no rank's trace_view.json marks: pass 2 (run again for the step picked then) gives every
    rank the operators that asking for that step gives, and the note names the swap."""
    root = generate_run(tmp_path / "run", layout="ascend", ranks=3, steps=3, seed=5, trace_view=True)
    lay = discover(root)[0]
    run = load_run(lay)
    ranks = timeline_ranks(lay)
    asked = load_execution(lay, run, [99], {}, ranks, [])
    (pick,) = asked.steps
    assert pick != 99 and set(asked.ops[pick]) == set(ranks)
    assert asked.notes == [f"steps 99 are not in the timelines; step {pick} of the timelines is shown"]
    direct = load_execution(lay, run, [pick], {}, ranks, [])
    assert direct.steps == [pick] and not direct.notes

    def table(ex):
        return {r: (o.names, o.start.tolist(), o.dur.tolist(), o.lanes) for r, o in ex.ops[pick].items()}

    assert table(asked) == table(direct) and all(len(t[0]) for t in table(direct).values())
