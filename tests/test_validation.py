"""The door (reportgen/loaders/schema.py): every damaged value is named, with file, rank, class, count and example.

Each test writes a small file by hand, loads it with the product's loader, and checks both the numbers (against
hand-computed values: the damaged row dropped, the duplicate counted once) and the data-quality entry (one per
file and problem, with the count of rows and an example).
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.tables import read_csv_rows
from reportgen.loaders.communication import load_modern_communication
from reportgen.loaders.operators import load_kernel_details, load_op_statistic
from reportgen.loaders.schema import SCHEMAS, compare_shapes, json_shape, schema_for
from reportgen.loaders.step_trace import load_legacy_step_trace, load_modern_step_trace
from reportgen.loaders.timeline import summarize_trace
from reportgen.model import DataIssue, RankData, RankInfo
from tests.conftest import SAMPLES as _SAMPLES

SAMPLES = Path(os.environ.get("MSREPORT_SAMPLES") or _SAMPLES)  # (as tests/test_fuzz.py: a worktree elsewhere)

OP_STAT = ("OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%)\n"
           "MatMul,AI_CORE,4,400.0,90.0,100.0,110.0,40.0\n"
           "Add,AI_VECTOR_CORE,10,500.0,40.0,50.0,60.0,50.0\n"
           "Cast,AI_VECTOR_CORE,2,100.0,50.0,50.0,50.0,10.0\n")


def _w(d: Path, name: str, text, sub: str = "") -> Path:
    p = d / sub / name if sub else d / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p


def _mine(log: IssueLog, name: str) -> list[DataIssue]:
    return [i for i in log.issues if i.file.endswith(name)]


def test_every_schema_field_has_a_known_kind_and_families_match_their_names():
    kinds = {"duration", "size", "bandwidth", "count", "id", "rank", "percent", "timestamp", "number"}
    for pat, sch in SCHEMAS:
        assert all(f.kind in kinds for f in sch.fields.values()), sch.family
        assert all(f.on_bad in ("drop", "missing") for f in sch.fields.values()), sch.family
    assert schema_for(Path("x/op_statistic.csv")).family == "op_statistic.csv"
    assert schema_for(Path("aicore_intermediate_3_detail.csv")).family == "aicore_intermediate_detail"
    assert schema_for(Path("op_statistic.csv.bak")) is None


def test_negative_count_dropped_and_named_with_rank_count_and_example(tmp_path):
    log = IssueLog(tmp_path, rank=3)
    text = OP_STAT.replace("Add,AI_VECTOR_CORE,10,", "Add,AI_VECTOR_CORE,-10,")
    df = load_op_statistic(_w(tmp_path, "op_statistic.csv", text), log)
    assert sorted(df["op_type"]) == ["Cast", "MatMul"]  # the impossible row is left out
    assert df["total_ms"].sum() == pytest.approx(0.5)  # 400 + 100 us
    (e,) = _mine(log, "op_statistic.csv")
    assert e.ranks == (3,) and e.kind == "impossible value" and e.severity == "warning"
    assert e.problem.startswith("1 row(s) dropped: 'Count' not a whole number >= 0")
    assert "line 3" in e.problem and "-10" in e.problem
    assert e.to_dict()["kind"] == "impossible value" and e.to_dict()["ranks"] == [3]


def test_percent_over_100_read_as_missing(tmp_path):
    log = IssueLog(tmp_path, rank=0)
    df = load_op_statistic(_w(tmp_path, "op_statistic.csv", OP_STAT.replace(",40.0\n", ",250\n")), log)
    assert len(df) == 3 and math.isnan(df.loc[df["op_type"] == "MatMul", "share"].iloc[0])
    (e,) = _mine(log, "op_statistic.csv")
    assert "'Ratio(%)' outside 0-100" in e.problem and "250" in e.problem


def test_exact_duplicate_rows_of_a_keyed_table_counted_once(tmp_path):
    log = IssueLog(tmp_path, rank=1)
    lines = OP_STAT.splitlines(keepends=True)
    df = load_op_statistic(_w(tmp_path, "op_statistic.csv", "".join(lines[:2] + [lines[1]] + lines[2:])), log)
    assert df["count"].sum() == 16  # 4 + 10 + 2, not 20
    (e,) = _mine(log, "op_statistic.csv")
    assert e.kind == "duplicate" and e.problem.startswith("1 exact duplicate row(s)") and "counted once" in e.problem


def test_header_only_table_is_named_as_missing_operators(tmp_path):
    log = IssueLog(tmp_path, rank=3)
    out = load_kernel_details(_w(tmp_path, "kernel_details.csv", "Name,Type,Accelerator Core,Duration(us)\n"), log)
    assert out is None or not len(out[0])
    (e,) = _mine(log, "kernel_details.csv")
    assert e.problem == "kernel_details.csv has a header and no rows: rank 3's operators are missing"
    assert e.kind == "empty table"


def test_every_row_rejected_is_named(tmp_path):
    log = IssueLog(tmp_path, rank=0)
    text = OP_STAT.splitlines(keepends=True)[0] + "MatMul,AI_CORE,-4,400.0,90.0,100.0,110.0,40.0\n"
    load_op_statistic(_w(tmp_path, "op_statistic.csv", text), log)
    problems = [e.problem for e in _mine(log, "op_statistic.csv")]
    assert any(p.startswith("every row of op_statistic.csv (1) was rejected: rank 0's operator types") for p in problems)


def test_undecodable_bytes_named_with_their_line(tmp_path):
    log = IssueLog(tmp_path, rank=0)
    data = OP_STAT.encode().replace(b"Cast,", b"Ca\xff\xfest,")
    df = load_op_statistic(_w(tmp_path, "op_statistic.csv", data), log)
    assert len(df) == 3  # the row is kept (the name garbled), the numbers unchanged
    (e,) = [e for e in _mine(log, "op_statistic.csv") if e.kind == "encoding"]
    assert "line 4" in e.problem and "not UTF-8" in e.problem


def test_two_steps_with_the_same_number_are_named(tmp_path):
    log = IssueLog(tmp_path, rank=0)
    text = ("Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
            "Communication(Not Overlapped and Exclude Receive),Preparing\n"
            "1,10,2,1,3,1,13,0,2,0\n2,11,2,1,3,1,14,0,2,0\n2,22,4,2,6,2,28,0,4,0\n")
    load_modern_step_trace(_w(tmp_path, "step_trace_time.csv", text), log)
    (e,) = [e for e in _mine(log, "step_trace_time.csv") if e.kind == "conflict"]
    assert "'Step' 2 on 2 rows" in e.problem


def test_legacy_step_row_that_disagrees_with_its_time_points(tmp_path):
    log = IssueLog(tmp_path, rank=0)
    head = "step_num,start_point,end_point,total,fp_point,bp_point,iteration_interval,fp_and_bp,tail\n"
    ok = "1,1000,5000,4000,1500,4000,500,2500,1000\n"
    bad = "2,5000,9000,4000,5500,8000,250,2500,1000\n"  # interval should be 500
    t = load_legacy_step_trace(_w(tmp_path, "step_trace_raw_0_detail_time.csv", head + ok + bad), log)
    assert list(t.steps["step"]) == [1, 2]
    (e,) = _mine(log, "step_trace_raw_0_detail_time.csv")
    assert "disagree with the row's own time points" in e.problem and "line 3" in e.problem
    log2 = IssueLog(tmp_path, rank=0)
    load_legacy_step_trace(_w(tmp_path, "step_trace_raw_1_detail_time.csv", head + ok), log2)
    assert not log2.issues


COMM = {"step1": {"collective": {
    "hcom_allReduce__1_1_1@9": {"Communication Time Info": {
        "Start Timestamp(us)": 1.0, "Elapse Time(ms)": 10.0, "Transit Time(ms)": 6.0, "Wait Time(ms)": 4.0,
        "Synchronization Time(ms)": 1.0, "Idle Time(ms)": 0.0},
        "Communication Bandwidth Info": {"SDMA": {"Transit Size(MB)": 8.0, "Transit Time(ms)": 4.0,
                                                  "Bandwidth(GB/s)": 2.0}}},
    "hcom_allReduce__1_1_2@9": {"Communication Time Info": {
        "Start Timestamp(us)": 2.0, "Elapse Time(ms)": 20.0, "Transit Time(ms)": 12.0, "Wait Time(ms)": 8.0,
        "Synchronization Time(ms)": 2.0, "Idle Time(ms)": 0.0}}}}}


@pytest.mark.parametrize("value, why", [(-4.0, "a negative duration"), (None, "null where a number belongs"),
                                        ("slow", "text where a number belongs"), (True, "a bool where a number")])
def test_communication_json_impossible_wait_named_and_read_as_missing(tmp_path, value, why):
    data = json.loads(json.dumps(COMM))
    data["step1"]["collective"]["hcom_allReduce__1_1_2@9"]["Communication Time Info"]["Wait Time(ms)"] = value
    log = IssueLog(tmp_path, rank=5)
    c = load_modern_communication(_w(tmp_path, "communication.json", json.dumps(data)), None, log)
    assert c.ops["wait_ms"].tolist()[0] == 4.0 and math.isnan(c.ops["wait_ms"].tolist()[1])
    assert c.ops["communication_ms"].sum() == 30.0  # the other fields of the entry are kept
    (e,) = _mine(log, "communication.json")
    assert why in e.problem and "'Wait Time(ms)'" in e.problem and e.ranks == (5,)
    assert e.problem.startswith("1 value(s) read as missing")


def test_communication_json_missing_key_and_clean_file(tmp_path):
    data = json.loads(json.dumps(COMM))
    del data["step1"]["collective"]["hcom_allReduce__1_1_1@9"]["Communication Time Info"]["Transit Time(ms)"]
    log = IssueLog(tmp_path, rank=0)
    load_modern_communication(_w(tmp_path, "communication.json", json.dumps(data)), None, log)
    (e,) = _mine(log, "communication.json")
    assert e.kind == "schema drift" and "'Transit Time(ms)'" in e.problem
    clean = IssueLog(tmp_path, rank=0)
    load_modern_communication(_w(tmp_path, "communication.json", json.dumps(COMM)), None, clean)
    assert not clean.issues


def test_empty_link_matrix_is_named(tmp_path):
    log = IssueLog(tmp_path, rank=2)
    load_modern_communication(_w(tmp_path, "communication.json", json.dumps(COMM)),
                              _w(tmp_path, "communication_matrix.json", "{}"), log)
    (e,) = _mine(log, "communication_matrix.json")
    assert e.kind == "empty table" and "rank 2's links are missing" in e.problem


def test_key_shapes_compared_across_ranks():
    a = json_shape({"rank_id": 0, "config": {"common_config": {"activities": ["CPU"]}}, "cann_version": "8"})
    b = json_shape({"rank_id": 1, "config": {"common_config": {"activities": ["CPU"]}}, "cann_version": "8"})
    c = json_shape({"rank_id": 2, "config": {"common_config": {}}, "cann_version_x": "8"})
    assert a == b and "config.common_config.activities" in a
    ranks = {}
    for r, shape in enumerate((a, b, c)):
        ranks[r] = RankData(info=RankInfo(rank=r, source_dir=f"r{r}"), json_shapes={f"r{r}/profiler_info_{r}.json": shape})
    issues: list[DataIssue] = []
    compare_shapes(ranks, issues)
    assert [i.file for i in issues] == ["r2/profiler_info_2.json"]
    assert "lacks key(s) every other rank's copy has (cann_version, config.common_config.activities)" in \
        issues[0].problem and "cann_version_x" in issues[0].problem and issues[0].ranks == (2,)


def test_duplicated_trace_events_counted_once(tmp_path):
    ev = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "Ascend Hardware"}},
          {"ph": "X", "name": "MatMul", "pid": 1, "tid": 1, "ts": "100.5", "dur": "10"},
          {"ph": "X", "name": "Add", "pid": 1, "tid": 1, "ts": "120.5", "dur": "5"}]
    clean = summarize_trace(_w(tmp_path, "trace_view.json", json.dumps(ev)), IssueLog(tmp_path))
    log = IssueLog(tmp_path, rank=0)
    dup = summarize_trace(_w(tmp_path, "t2/trace_view.json", json.dumps(ev + [ev[2]])), log)
    assert dup.n_ops == clean.n_ops == 2 and dup.compute_ms == pytest.approx(clean.compute_ms) == 0.015
    (e,) = _mine(log, "trace_view.json")
    assert e.kind == "duplicate" and e.problem.startswith("1 duplicated complete event(s)")


def test_empty_trace_named(tmp_path):
    log = IssueLog(tmp_path, rank=4)
    summarize_trace(_w(tmp_path, "trace_view.json", "[]"), log)
    (e,) = _mine(log, "trace_view.json")
    assert e.kind == "empty table" and "no events" in e.problem


def test_huge_field_in_a_json_file_named(tmp_path):
    from reportgen.loaders.jsonfile import read_json

    log = IssueLog(tmp_path, rank=0)
    data = read_json(_w(tmp_path, "flops_summary_0.json", json.dumps({"FLOPs": 1.0, "note": "x" * 70000})), log)
    assert data["FLOPs"] == 1.0
    assert any("a string of 70,000 characters (longer than 65,536)" in e.problem for e in _mine(log, "flops_summary_0.json"))


def test_null_mark_in_a_row_table_named(tmp_path):
    log = IssueLog(tmp_path, rank=0)
    text = ("op_id,op_type,num_workers,output_queue_average_size,output_queue_length,output_queue_usage_rate\n"
            "0,Batch,2,8.0,16,0.5\n1,Map,null,4.0,16,0.25\n")
    header, rows = read_csv_rows(_w(tmp_path, "minddata_pipeline_raw_0.csv", text), log)
    assert len(rows) == 2
    (e,) = _mine(log, "minddata_pipeline_raw_0.csv")
    assert "null mark in 'num_workers'" in e.problem and "'null'" in e.problem


def test_duplicated_rank_folder_without_a_time_stamp_is_named(tmp_path):
    from reportgen.discover import discover
    from reportgen.synth import generate_run

    run = generate_run(tmp_path / "run", ranks=2, steps=2, seed=1, layout="ascend")
    import shutil

    orig = sorted(p for p in run.iterdir() if p.name.endswith("_ascend_pt"))[0]
    shutil.copytree(orig, run / "rank0_copy_ascend_pt")
    (lay,) = discover(run)
    assert sorted(lay.ranks) == [0, 1] and lay.ranks[0].dir == orig
    (e,) = [i for i in lay.issues if i.file == "rank0_copy_ascend_pt"]
    assert e.kind == "conflict" and f"as {orig.name} does; that one was used" in e.problem


@pytest.mark.parametrize("rel", ["real/torch_gloo_4rank", "real/mindspore_cpu_legacy_graph_minddata",
                                 "ascend/msinsight_pytorch_2rank_level0_text", "mindinsight/msprof_raw_2rank_10iter",
                                 "mindinsight/cluster_pipeline_parallel_4rank"])
def test_clean_real_samples_gain_no_door_entry(rel):
    """No false alarm on real data: the door's classed entries never fire on the clean samples."""
    from reportgen.discover import discover
    from reportgen.layouts import load_run

    p = SAMPLES / rel
    if not p.exists():
        pytest.skip(f"sample {rel} not available")
    for lay in discover(p):
        run = load_run(lay)
        entries = list(run.issues) + [i for d in run.ranks.values() for i in d.issues]
        classed = [i for i in entries if i.kind]
        assert not classed, [i.to_dict() for i in classed][:5]


def test_huge_string_in_a_streamed_trace_named(tmp_path):
    ev = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "Ascend Hardware"}},
          {"ph": "X", "name": "MatMul", "pid": 1, "tid": 1, "ts": "100.5", "dur": "10", "args": {"x": "y" * 200000}}]
    log = IssueLog(tmp_path, rank=0)
    s = summarize_trace(_w(tmp_path, "trace_view.json", json.dumps(ev)), log)
    assert s.n_ops == 1 and s.compute_ms == pytest.approx(0.01)
    (e,) = _mine(log, "trace_view.json")
    assert e.kind == "schema drift" and "a string longer than 65,536 characters" in e.problem
