"""Rank detail and resource utilisation: operators, FLOPs, data preparation, CPU, memory, timeline.

Numbers are checked against the profilers' own files and MindInsight's formulas (reference §3.6-3.12, §6.1-6.2),
computed here independently of the loaders.
"""

from __future__ import annotations

import csv
import gzip
import json
import math
from pathlib import Path

import pandas as pd
import pytest
from bs4 import BeautifulSoup

from reportgen.analysis import analyze
from reportgen.analysis.resources import pipeline_bottleneck, queue_summary
from reportgen.cli import main
from reportgen.layouts import discover, load_run
from reportgen.loaders import operators as ops_loader
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.dataprep import load_dataprep
from reportgen.loaders.flops import load_flops_per_op
from reportgen.loaders.timeline import export_trace
from reportgen.synth import generate_run
from tests.conftest import SAMPLES, sample

CPU_CASES = sorted(p.name for p in (SAMPLES / "real").glob("mindspore_cpu_*")) if (SAMPLES / "real").exists() else []


def _analysis(path: Path, **kw):
    return analyze(load_run(discover(path)[0]), **kw)


# --- operators ------------------------------------------------------------------------------------


def test_aicore_and_aicpu_types_follow_mindinsight():
    d = sample("mindinsight/single_device_run2_rank1_full") / "profiler"
    run = load_run(discover(d.parent)[0])
    bt = run.ranks[1].operators.by_type
    with open(d / "aicore_intermediate_1_type.csv") as f:
        rows = list(csv.DictReader(f))
    aic = bt[bt["side"] == "aicore"].set_index("op_type")
    assert len(aic) == len(rows)
    for row in rows:  # AicoreTypeAnalyser: time as written, frequency, percent (0-100 in this generation)
        got = aic.loc[row["op_type"]]
        assert got["total_ms"] == pytest.approx(float(row["execution_time"]))
        assert got["count"] == float(row["execution_frequency"])
        assert got["share"] == pytest.approx(float(row["percent"]) / 100)
    # AicpuTypeAnalyser: group by op_type.split('-')[0], total = sum, count = rows, percent of the sum
    with open(d / "aicpu_intermediate_1.csv") as f:
        execs = [(r["kernel_type"].split("-")[0], float(r["total_time"])) for r in csv.DictReader(f)]
    grand = sum(t for _, t in execs)
    cpu = bt[bt["side"] == "aicpu"].set_index("op_type")
    for name in {n for n, _ in execs}:
        tot = sum(t for n, t in execs if n == name)
        assert cpu.loc[name, "total_ms"] == pytest.approx(tot)
        assert cpu.loc[name, "count"] == sum(1 for n, _ in execs if n == name)
        assert cpu.loc[name, "share"] == pytest.approx(tot / grand)
    # the detail file has no types: they come from framework_raw
    det = run.ranks[1].operators.detail
    conv = det[det["name"].str.endswith("conv1-Conv2d/Conv2D-op5")]
    assert list(conv["op_type"]) == ["Conv2D"]


@pytest.mark.parametrize("case", CPU_CASES)
def test_host_cpu_operator_types_equal_the_files(case):
    run = load_run(discover(sample(f"real/{case}"))[0])
    checked = 0
    for r, data in run.ranks.items():
        files = [Path(run.root / f) for f in data.files if Path(f).name == f"cpu_op_type_info_{r}.csv"]
        if not files:
            continue
        with open(files[0]) as f:
            rows = list(csv.reader(f))
        t = data.operators.by_type.set_index("op_type")
        assert len(t) == len(rows) - 1
        for row in rows[1:]:  # op_type, occurrences, per-step frequency, total, avg, proportion
            assert t.loc[row[0], "count"] == float(row[1])
            assert t.loc[row[0], "total_ms"] == pytest.approx(float(row[3]))
            assert t.loc[row[0], "avg_ms"] == pytest.approx(float(row[4]))
            assert t.loc[row[0], "share"] == pytest.approx(float(row[5]))
        checked += 1
    assert checked == len(run.ranks) or checked >= 1


@pytest.mark.parametrize("case", ["msinsight_st_qwen3_4rank_tp1pp2dp2_level2_text", "msinsight_pytorch_2rank_level1_text",
                                  "msinsight_pytorch_2rank_level2_text"])
def test_kernel_details_reproduce_op_statistic(case):
    root = sample(f"ascend/{case}")
    stats = sorted(root.glob("*/ASCEND_PROFILER_OUTPUT/op_statistic.csv"))
    assert stats
    log = IssueLog(root)
    for st in stats:
        kernels, _ = ops_loader.load_kernel_details(st.with_name("kernel_details.csv"), log)
        mine = kernels[kernels["side"] != "communication"].set_index(["core", "op_type"])
        with open(st) as f:
            rows = list(csv.DictReader(f))
        assert len(mine) == len(rows)
        for row in rows:
            got = mine.loc[(row["Core Type"], row["OP Type"])]
            assert got["count"] == float(row["Count"])
            # kernel_details rounds each duration to 0.01 us in some versions: allow half of that per kernel
            assert got["total_ms"] * 1e3 == pytest.approx(float(row["Total Time(us)"]), abs=0.005 * got["count"] + 1e-6)
            assert got["max_ms"] * 1e3 == pytest.approx(float(row["Max Time(us)"]), rel=1e-5)
            assert got["share"] * 100 == pytest.approx(float(row["Ratio(%)"]), abs=1e-3)
    assert not [i for i in log.issues if i.severity != "info"]


def test_skewed_cpu_rank_is_slow_at_its_convolutions():
    a = _analysis(sample("real/mindspore_cpu_dist4_new_graph_skew"))
    by_type = {o["op_type"]: o for o in a.resources.operator_summary}
    assert by_type["Conv2D"]["slow_rank"] == 3  # 3x batch: 1660 ms vs 601-745 ms (SOURCES.md)
    assert by_type["Conv2D"]["max_ms"] == pytest.approx(1659.75)
    assert by_type["AllReduce"]["slow_rank"] is None  # rank 3 waits least, nobody is slow at it
    # small types with noisy ratios are not flagged: the gap must be >= 1 % of a rank's operator time
    assert by_type["BiasAdd"]["slow_rank"] is None


# --- FLOPs ----------------------------------------------------------------------------------------


def test_stage_flops_reproduce_parallel_proposer():
    a = _analysis(sample("mindinsight/cluster_pipeline_parallel_4rank"))
    st = {s["stage"]: s for s in a.resources.stage_flops}
    assert round(st[1]["flops_m"], 4) == 329610.3845  # MindInsight: stage 2 329610.3845 (+50.94 %)
    assert round(st[1]["vs_mean"] * 100, 2) == 50.94
    f = a.resources.flops.set_index("rank")
    assert f.loc[3, "flops_norm"] == 1.0
    assert f.loc[0, "flops_norm"] == pytest.approx(107146.763 / 329612.4)


def test_flops_txt_header_variants():
    d = sample("mindinsight/misc_profiler_fixtures") / "profiler"
    log = IssueLog(d)
    legacy = load_flops_per_op(d / "flops_0.txt", log)
    assert list(legacy["mflops"][:2]) == [333, 333] and "util_pct" in legacy
    split = load_flops_per_op(d / "flops_1.txt", log)
    assert split["cube_mflops"].iloc[0] == 333 and split["vector_mflops"].iloc[0] == 333
    assert split["mflops"].iloc[0] == 666 and split["gflops"].iloc[0] == 666
    assert not log.issues


# --- data preparation -----------------------------------------------------------------------------


def _queue_counts(path: Path) -> tuple[int, int, int]:
    """MindInsight's analyse_device_queue_info, restated: type-1 lines, empty = size 0, full = size == capacity."""
    total = empty = full = 0
    for line in path.read_text().splitlines():
        p = line.split()
        if p and p[0] == "1":
            total += 1
            empty += p[3] == "0"
            full += p[1] == p[3]
    return total, empty, full


@pytest.mark.parametrize("rel", ["mindinsight/single_device_run2_rank1_full", "mindinsight/misc_profiler_fixtures",
                                 "real/mindspore_cpu_legacy_graph_databound",
                                 "real/mindspore_cpu_ms272_legacy_graph_minddata"])
def test_queue_counts_follow_mindinsight(rel):
    root = sample(rel)
    run = load_run(discover(root)[0])
    a = analyze(run)
    checked = 0
    for r, data in run.ranks.items():
        qf = [run.root / f for f in data.files if Path(f).name in (f"device_queue_profiling_{r}.txt",
                                                                   f"dataset_iterator_profiling_{r}.txt")]
        if not qf:
            continue
        qf.sort(key=lambda p: "dataset_iterator" in p.name)  # the device-queue file wins, as MindInsight
        total, empty, full = _queue_counts(qf[0])
        q = a.resources.queues[r]
        assert (q.host_total, q.host_empty, q.host_full) == (total, empty, full)
        checked += 1
    assert checked


def test_get_next_queue_counts():
    d = sample("mindinsight/single_device_run2_rank1_full") / "profiler"
    dp = load_dataprep({"aicpu": d / "minddata_aicpu_1.txt"}, IssueLog(d))
    q = queue_summary(dp)
    lines = [x.split() for x in (d / "minddata_aicpu_1.txt").read_text().splitlines() if x.strip()]
    assert q.device_total == len(lines) and q.device_empty == sum(p[3] == "0" for p in lines)
    assert q.get_next_ms == pytest.approx(sum((float(p[2]) - float(p[1])) / 1e3 for p in lines) / len(lines))


@pytest.mark.parametrize("variant, expected", [(0, ([4], "operator")), (1, ([1], "operator")),
                                               (2, ([0], "consumer")), (3, ([2, 3], "source"))])
def test_pipeline_bottleneck_variants(variant, expected):
    """MindInsight's _filter_outside_threshold (0.8 / 0.6) on its own unit-test pipelines."""
    root = sample(f"mindinsight/minddata_pipeline_variants/profiler_{variant}")
    run = load_run(discover(root)[0])
    (rank,) = run.ranks
    assert pipeline_bottleneck(run.ranks[rank].dataprep.ops) == expected


def test_data_bound_cpu_run_names_the_map_op():
    a = _analysis(sample("real/mindspore_cpu_legacy_graph_databound"))
    (r,) = a.run.rank_ids
    assert a.resources.queues[r].verdict == "data_process"  # empty in 39 of 40 steps
    assert a.resources.bottlenecks[r] == ([1], "queue_drop")  # Map: input 75 %, output 0 % (the map sleeps)
    assert any("Map(id=1)" in w for w in a.run.ranks[r].dataprep.warnings)


def test_cpu_utilisation_averages():
    """MindInsight's rule (see tests/test_consistency.py for the selection): the databound run has 6 samples and a
    dataset_iterator queue file; MindInsight keeps samples 0-4 (the last one has no step) and rounds the mean."""
    root = sample("real/mindspore_cpu_legacy_graph_databound")
    a = _analysis(root)
    (r,) = a.run.rank_ids
    raw = json.loads(next(root.glob("*/FRAMEWORK/minddata_cpu_utilization_0.json")).read_text())
    idle = raw["device_info"]["idle_utilization"][0:5]
    c = a.resources.cpu[r]
    assert c.machine["idle"] == round(sum(idle) / len(idle))
    assert c.busy == 100 - round(sum(idle) / len(idle))
    assert len(c.ops) == len([o for o in raw["op_info"] if o["op_id"] != -1])


# --- memory ----------------------------------------------------------------------------------------


def test_modern_memory_peak_is_the_process_reserved_peak():
    root = sample("ascend/msinsight_st_qwen3_4rank_tp1pp2dp2_level2_text")
    a = _analysis(root, device_memory_mb=64 * 1024)
    for r, d in [(0, "rank_0_ascend_pt"), (2, "rank_2_ascend_pt")]:
        with open(root / d / "ASCEND_PROFILER_OUTPUT" / "memory_record.csv") as f:
            rows = list(csv.DictReader(f))
        app = max(float(x["Total Reserved(MB)"]) for x in rows if x["Component"] == "APP")
        pta = max(float(x["Total Allocated(MB)"]) for x in rows if x["Component"] == "PTA+GE" and x["Total Allocated(MB)"])
        m = a.resources.memory.set_index("rank")
        assert m.loc[r, "peak_mb"] == app
        assert m.loc[r, "allocated_peak_mb"] == pytest.approx(pta)
        assert m.loc[r, "ratio"] == pytest.approx(app / 65536)
    assert set(a.resources.memory["rank"]) == {0, 2}  # ranks 1 and 3 were trimmed upstream


def test_memory_near_capacity_is_plain(tmp_path):
    run = generate_run(tmp_path / "run", layout="mindinsight", ranks=16, steps=4, stages=2,
                       inject=["memory-near-capacity:5"])
    out = tmp_path / "site"
    assert main([str(run), "-o", str(out), "-q"]) == 0
    s = json.loads((out / "summary.json").read_text())
    mem = s["metrics"]["memory"]["per_rank"]
    assert mem["5"]["peak_ratio"] == pytest.approx(0.96) and mem["5"]["capacity_mb"] == 32 * 1024
    assert max(v["peak_ratio"] for k, v in mem.items() if k != "5") < 0.8
    page = BeautifulSoup((out / "cluster/resources.html").read_text(), "html.parser")
    hot = [tr for tr in page.select("#memory-table tbody tr") if tr.select_one("td.hot")]
    assert [tr.td.get_text(strip=True) for tr in hot] == ["5"]
    spec = json.loads(page.select_one("#fig-memory-heatmap script.spec").string)
    cells = {c["rank"]: c["value"] for c in spec["datasets"]["cells"]}
    assert max(cells, key=cells.get) == 5 and len(cells) == 16
    rank5 = BeautifulSoup((out / "ranks/rank-5.html").read_text(), "html.parser")
    assert "96.0 %" in rank5.select_one("#rank-memory-summary").get_text()
    assert rank5.find(class_="hot-note", string=lambda t: t and "capacity" in t)


def test_ascend_memory_needs_a_capacity_to_be_judged(tmp_path):
    run = generate_run(tmp_path / "run", ranks=8, steps=3, inject=["memory-near-capacity:3:0.95"])
    plain = _analysis(run)
    assert not plain.resources.capacity_known and plain.resources.memory["ratio"].isna().all()
    given = _analysis(run, device_memory_mb=64 * 1024)
    m = given.resources.memory.set_index("rank")["ratio"]
    assert m.idxmax() == 3 and m[3] == pytest.approx(0.95, abs=0.01) and m.drop(3).max() < 0.8


def test_starving_queue_is_plain_and_healthy_ranks_are_quiet(tmp_path):
    run = generate_run(tmp_path / "run", layout="mindinsight", ranks=8, steps=10, inject=["starving-queue:6"])
    a = _analysis(run)
    warned = [r for r, q in a.resources.queues.items() if q.verdict in ("data_process", "data_transmission")]
    assert warned == [6]
    assert a.resources.queues[6].host_empty == 8
    assert a.resources.bottlenecks[6] == ([1], "operator")  # the MapOp
    assert all(a.resources.bottlenecks[r][1] == "consumer" for r in a.run.rank_ids if r != 6)
    out = tmp_path / "site"
    assert main([str(run), "-o", str(out), "-q"]) == 0
    page = BeautifulSoup((out / "cluster/resources.html").read_text(), "html.parser")
    first = page.select("#dataprep-table tbody tr")[0]
    assert "slow" in first.get("class", []) and first.td.get_text(strip=True) == "6"
    assert len(page.select("#dataprep-table tbody tr.slow")) == 1
    rank6 = BeautifulSoup((out / "ranks/rank-6.html").read_text(), "html.parser")
    flagged = rank6.select("#rank-pipeline tbody tr.slow")
    assert len(flagged) == 1 and "MapOp" in flagged[0].get_text()


# --- timeline ---------------------------------------------------------------------------------------


def test_trace_lanes_match_the_step_trace_and_export_for_perfetto(tmp_path):
    root = sample("ascend/msinsight_pytorch_2rank_level1_text")
    run = load_run(discover(root)[0])
    for r, d in run.ranks.items():
        t, st = d.timeline, d.step_trace.steps
        assert t.compute_ms == pytest.approx(float(st["computing"].sum()), rel=1e-9)
        assert t.pure_communication_ms == pytest.approx(float(st["communication_not_overlapped"].sum()), rel=1e-9)
        assert t.free_ms == pytest.approx(float(st["free"].sum()), rel=1e-9)
        assert t.trace_needs_numbers
    src = root / run.ranks[0].timeline.source
    dst = tmp_path / "t.json"
    with open(dst, "w") as f:
        n = export_trace(src, f, convert=True)
    events = json.loads(dst.read_text())
    original = json.loads(src.read_text())
    assert n == len(events) == len(original)
    stamped = [(e, o) for e, o in zip(events, original) if "ts" in o]
    assert all(isinstance(e["ts"], (int, float)) for e, _ in stamped)
    assert all(e["ts"] == pytest.approx(float(o["ts"]), abs=1e-3) for e, o in stamped)


def test_legacy_timeline_summary():
    d = sample("mindinsight/single_device_run2_rank1_full") / "profiler"
    run = load_run(discover(d.parent)[0])
    t = run.ranks[1].timeline
    events = json.loads((d / "ascend_timeline_display_1.json").read_text())
    ops = [e for e in events if e.get("ph") == "X" and e.get("pid") not in (9000, 10000, 11000, 12000)]
    lo = min(e["ts"] for e in ops)
    hi = max(e["ts"] + e["dur"] for e in ops)
    assert t.n_ops == 213  # ascend_timeline_summary_1.json num_of_ops
    assert t.span_ms == pytest.approx((hi - lo) / 1e3)
    assert t.compute_ms + t.free_ms == pytest.approx(t.span_ms)
    assert t.communication_ms == 0


# --- pages, summary, bad input ----------------------------------------------------------------------


def test_rank_page_sections_and_empty_sections_say_so(sample_report):
    code, out = sample_report("mindinsight/single_device_run2_rank1_full")
    assert code == 0
    page = BeautifulSoup((out / "ranks/rank-1.html").read_text(), "html.parser")
    for sid in ("operators", "flops", "data", "cpu", "memory", "timeline"):
        assert page.find(id=sid) is not None, sid
    assert "No FLOPs data for this rank" in page.get_text()
    assert "No memory data for this rank" in page.get_text()
    assert page.select("#rank-op-types tbody tr") and page.select("#rank-op-detail tbody tr")
    assert "empty in 1 of 1 steps" in page.select_one("#rank-queue-summary").get_text(" ", strip=True)
    # the copy is gzip-compressed (Perfetto and chrome://tracing open .json.gz as it is) and holds the trace's events
    copied = json.loads(gzip.decompress((out / "traces/rank-1.trace.json.gz").read_bytes()))
    src = sample("mindinsight/single_device_run2_rank1_full") / "profiler" / "ascend_timeline_display_1.json"
    assert len(copied) == len(json.loads(src.read_text())) > 0
    link = page.select_one('a[download]')
    assert link["href"] == "../traces/rank-1.trace.json.gz"


def test_operator_names_are_escaped(tmp_path):
    run = generate_run(tmp_path / "run", ranks=2, steps=2)
    kd = next(run.glob("*rank*/ASCEND_PROFILER_OUTPUT/kernel_details.csv"), None) or \
        sorted(run.glob("*/ASCEND_PROFILER_OUTPUT/kernel_details.csv"))[0]
    text = kd.read_text().replace("aclnnMatMulV3_0,MatMulV3", "<script>alert(1)</script>,<img src=x onerror=1>")
    kd.write_text(text)
    out = tmp_path / "site"
    assert main([str(run), "-o", str(out), "-q"]) == 0
    for html in (out / "ranks").glob("*.html"):
        raw = html.read_text()
        assert "<script>alert(1)" not in raw and "<img src=x" not in raw


def test_bad_resource_files_are_reported_not_fatal(tmp_path):
    run = generate_run(tmp_path / "run", layout="mindinsight", ranks=4, steps=3)
    d = run / "profiler"
    (d / "flops_summary_1.json").write_text('{"FLOPs": 12')
    text = (d / "aicore_intermediate_2_type.csv").read_text()
    (d / "aicore_intermediate_2_type.csv").write_text(text[: len(text) // 2] + "\nbroken")
    (d / "memory_usage_summary_3.json").unlink()
    (d / "memory_usage_details_3.json").unlink()
    (d / "memory_usage_3.pb").write_bytes(b"\x08\x01")
    out = tmp_path / "site"
    assert main([str(run), "-o", str(out), "-q"]) == 0
    s = json.loads((out / "summary.json").read_text())
    problems = {(q["file"], q["severity"]) for q in s["data_quality"]}
    assert ("profiler/flops_summary_1.json", "error") in problems
    assert any(f == "profiler/aicore_intermediate_2_type.csv" for f, _ in problems)
    assert ("profiler/memory_usage_3.pb", "info") in problems
    assert set(s["metrics"]["flops"]["per_rank"]) == {"0", "2", "3"}
    assert set(s["metrics"]["memory"]["per_rank"]) == {"0", "1", "2"}
    assert s["metrics"]["memory"]["ranks_without_data"] == [3]


def test_truncated_kernel_details_keeps_the_rows_read(tmp_path):
    run = generate_run(tmp_path / "run", ranks=2, steps=3)
    kd = sorted(run.glob("*/ASCEND_PROFILER_OUTPUT/kernel_details.csv"))[0]
    (kd.with_name("op_statistic.csv")).unlink()
    lines = kd.read_text().splitlines()
    kd.write_text("\n".join(lines[:40]) + "\n" + lines[40][:20] + "\n")
    log = IssueLog(run)
    by_type, detail = ops_loader.load_kernel_details(kd, log)
    # the cut last line is named (the loaders' door: "1 row(s) dropped: no value in 'Duration(us)' ... line 41")
    assert by_type["count"].sum() == 39 and any(("skipped" in i.problem or "dropped" in i.problem)
                                                 for i in log.issues)


def test_summary_memory_and_flops_contract(sample_report):
    code, out = sample_report("mindinsight/cluster_pipeline_parallel_4rank")
    assert code == 0
    s = json.loads((out / "summary.json").read_text())
    f = s["metrics"]["flops"]["per_rank"]["2"]
    assert f["flops_m"] == 329608.369 and f["flops_per_s_g"] == 4859.39
    assert s["metrics"]["memory"]["per_rank"] == {} and s["metrics"]["memory"]["ranks_without_data"] == [0, 1, 2, 3]
    assert not any(math.isnan(v) for v in pd.json_normalize(s["metrics"]["flops"]["per_rank"]).select_dtypes("number")
                   .to_numpy().ravel())


@pytest.mark.parametrize("values", [3, 40, 5000])  # few combinations (a dense table) and many (hashed)
def test_kernel_group_codes_number_tuples_as_multiindex_factorize(values):
    """`operators._group_codes`: the codes of each row's tuple of per-column codes, numbered in order of first
    appearance as `MultiIndex.factorize` numbers them, and the row where each first appears."""
    import numpy as np

    from reportgen.loaders import operators

    rng = np.random.default_rng(values)
    for _ in range(200):
        n = int(rng.integers(1, 400))
        parts = [rng.integers(0, values, n).astype(np.int64) for _ in range(int(rng.integers(1, 4)))]
        codes, first = operators._group_codes(parts)
        want, _ = pd.MultiIndex.from_arrays(parts).factorize()
        assert codes.dtype == np.int64 and codes.tolist() == list(want)
        assert first.tolist() == [int(np.flatnonzero(codes == k)[0]) for k in range(codes.max() + 1)]
    empty, first = operators._group_codes([np.zeros(0, dtype=np.int64)])
    assert not len(empty) and not len(first)


def test_device_heatmap_outlines_the_largest_device_at_any_size():
    """The device with the largest value is outlined in red (at 4,096 ranks, 512 rows of ~3 px, its colour alone
    did not tell it from its peers); from MANY_HEAT_ROWS hosts on the cells lose their white border and the host
    labels are thinned (overlapping ones dropped)."""
    from reportgen.charts import resources as res_charts
    from reportgen.charts.theme import SLOW_COLOR

    def spec(hosts: int) -> dict:
        rows = [{"rank": h * 8 + s, "group": f"node{h:03d}", "slot": s, "value": 0.7 + 0.01 * ((h * 8 + s) % 7),
                 "label": "", "href": f"ranks/rank-{h * 8 + s}.html", "tip": ""} for h in range(hosts) for s in range(8)]
        rows[5]["value"] = 1.0
        return res_charts.device_heatmap(rows, "Peak / largest peak", res_charts.RELATIVE_RAMP)

    for hosts, many in ((4, False), (512, True)):
        layers = spec(hosts)["layer"]
        cells, largest = layers[0], layers[1]
        assert largest["mark"]["stroke"] == SLOW_COLOR and largest["mark"]["fill"] is None
        assert {"joinaggregate": [{"op": "max", "field": "value", "as": "top"}]} in largest["transform"]
        assert any("datum.value == datum.top" in t.get("filter", "") for t in largest["transform"])
        assert cells["mark"]["strokeWidth"] == (0 if many else 1)
        assert (cells["encoding"]["y"].get("axis", {}).get("labelOverlap") == "greedy") == many
