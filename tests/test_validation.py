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


@pytest.mark.parametrize("kind", ["duration", "size", "bandwidth", "timestamp", "count", "rank", "index", "id",
                                  "link", "percent", "number"])
def test_bad_mask_is_the_elementwise_rule_whatever_the_column(kind):
    """`bad_mask` (which first looks at a column's extremes and skips the mask when none can break the rule)
    flags exactly the values that break their kind, one value at a time; missing values never."""
    import numpy as np

    from reportgen.loaders.schema import bad_mask

    def breaks(x: float) -> bool:
        whole = float(np.floor(x)) == x  # (infinities are whole)
        return not math.isnan(x) and {
            "count": x < 0 or not whole, "rank": x < 0 or not whole, "index": x < 0 or not whole,
            "id": not whole, "link": x < -1 or not whole, "percent": x < 0 or x > 100 + 1e-6,
            "number": math.isinf(x)}.get(kind, x < 0)

    pool = [0.0, -0.0, 1.0, 2.5, 99.0, 100.0, 100.5, 1e6, -1.0, -2.0, -0.5, math.nan, math.inf, -math.inf, 7.0]
    rng = np.random.default_rng(5)
    columns = [np.array(pool), np.array([]), np.array([math.nan, math.nan]), np.array([3.0, 4.0, math.nan]),
               np.array([0.0, 100.0]), np.array([-1.0, 0.0, 5.0])]
    columns += [rng.choice(pool, size=int(rng.integers(1, 8))) for _ in range(300)]
    for v in columns:
        assert bad_mask(kind, v).tolist() == [breaks(x) for x in v.tolist()], (kind, v)


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


def test_key_shape_limits_equal_a_plain_walk():
    """json_shape counts a leaf where its object is read and reads each repeated key once: on random documents
    (digit keys, lists longer than 50, nesting past depth 6, both limits reached or not) it equals a plain walk
    that visits every value one by one."""
    import random
    import re as _re

    def plain(data, limit):  # every value pushed and popped, the visit and path limits checked as it goes
        if not isinstance(data, dict):
            return None
        out, stack, visits = set(), [(data, "", 0)], 0
        while stack:
            v, p, depth = stack.pop()
            visits += 1
            if visits > 20 * limit:
                return None
            if depth > 6:
                continue
            if isinstance(v, dict):
                for k, x in v.items():
                    k = "*" if _re.search(r"\d", str(k)) else str(k)
                    q = f"{p}.{k}" if p else k
                    out.add(q)
                    if len(out) > limit:
                        return None
                    stack.append((x, q, depth + 1))
            elif isinstance(v, list):
                stack.extend((x, p + "[]", depth + 1) for x in v[:50] if isinstance(x, (dict, list)))
        return frozenset(out)

    rng = random.Random(5)

    def gen(d):
        r = rng.random()
        if d > 7 or r < 0.35:
            return rng.choice([1, "x", None, 2.5, True])
        if r < 0.7:
            n = rng.randint(0, 40 if d < 2 else 5)
            return {rng.choice("abcdefgh") + (str(rng.randint(0, 3)) if rng.random() < 0.2 else ""): gen(d + 1)
                    for _ in range(n)}
        return [gen(d + 1) for _ in range(rng.randint(0, 60 if d < 2 and rng.random() < 0.3 else 4))]

    # the shapes of the profilers' files: sibling objects under `*` keys (every key written the same), objects of
    # few shared keys, objects whose keys are their own (operator names beside a fixed key)
    made = [{"1": {f"op{i}": {"Time": {"a": 1, "b": [1, {"c": 2}]}, "Links": {f"{i}-{j}": {"bw": 1} for j in range(4)}}
                   for i in range(n)}, "2": {"op1": {"Time": {}}}} for n in (5, 90, 800)]
    made += [{"ops": [{f"op{i}": {"a": {"b": 1}}, "x": {"c": [1, [2]]}, "y": i} for i in range(n)]} for n in (3, 60)]
    made += [{"a": {"b": {"c": {"d": {"e": {"f": {"g": {"h": 1}}, "f2": [[{"i": 1}]]}}}}}}]
    for doc in made:
        for limit in (3, 20, 400):
            assert json_shape(doc, limit) == plain(doc, limit)
    assert json_shape(made[0]) == plain(made[0], 400) and json_shape(made[2]) is None  # (over the visits' cap)
    seen = {True: 0, False: 0}
    for _ in range(800):
        doc = {"k": gen(0), "z": gen(0)}
        for limit in (3, 20, 400):
            want = plain(doc, limit)
            seen[want is None] += 1
            assert json_shape(doc, limit) == want
    assert min(seen.values()) > 100  # both outcomes exercised


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
    from reportgen.layouts import discover
    from reportgen.synth import generate_run

    run = generate_run(tmp_path / "run", ranks=2, steps=2, seed=1, layout="ascend")
    import shutil

    orig = sorted(p for p in run.iterdir() if p.name.endswith("_ascend_pt"))[0]
    shutil.copytree(orig, run / "rank0_copy_ascend_pt")
    (lay,) = discover(run)
    assert sorted(lay.ranks) == [0, 1] and lay.ranks[0].dir == orig
    (e,) = [i for i in lay.issues if i.file == "rank0_copy_ascend_pt"]
    assert e.kind == "conflict" and f"as {orig.name} does; that one was used" in e.problem


FAST_SAMPLES = ["real/torch_gloo_4rank", "real/mindspore_cpu_legacy_graph_minddata",
                "ascend/msinsight_pytorch_2rank_level0_text", "mindinsight/msprof_raw_2rank_10iter",
                "mindinsight/cluster_pipeline_parallel_4rank", "external/hta_cpu_only_gloo_rank34",
                "external/param_dlrm_8rank_v100_nccl"]


def _every_sample() -> list:
    """Every sample case folder (real/, ascend/, mindinsight/, external/): the default run takes FAST_SAMPLES, the
    slow stage the rest; without ../shared/samples the one parameter skips."""
    found = [f"{g}/{d.name}" for g in ("real", "ascend", "mindinsight", "external") if (SAMPLES / g).is_dir()
             for d in sorted((SAMPLES / g).iterdir()) if d.is_dir()]
    return [pytest.param(r, marks=() if r in FAST_SAMPLES else pytest.mark.slow) for r in found] or FAST_SAMPLES


@pytest.mark.parametrize("rel", _every_sample())
def test_clean_real_samples_gain_no_door_entry(rel):
    """No false alarm on real data: the door's classed entries (impossible value, empty table, duplicate,
    conflict, schema drift) never fire on any clean sample, real traces from other teams included."""
    from reportgen.layouts import discover, load_run

    from reportgen.errors import NoProfilingData

    p = SAMPLES / rel
    if not p.exists():
        pytest.skip(f"sample {rel} not available")
    try:
        layouts = discover(p)
    except NoProfilingData:
        pytest.skip(f"{rel} holds no profiler run (a derived file set)")
    for lay in layouts:
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


def _kineto(tmp_path: Path, events: list, name: str = "rank0.pt.trace.json"):
    from reportgen.loaders.kineto import load_kineto

    meta = [{"ph": "M", "name": "process_name", "pid": 7, "tid": 0, "args": {"name": "python"}},
            {"ph": "M", "name": "thread_name", "pid": 7, "tid": 7, "args": {"name": "thread 7 (python)"}}]
    doc = {"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": meta + events}
    log = IssueLog(tmp_path, rank=0)
    data = RankData(info=RankInfo(rank=0, source_dir=str(tmp_path)))
    k = load_kineto(_w(tmp_path, name, json.dumps(doc)), data, log)
    return k, _mine(log, name)


def _ops(n: int = 4, tid=7, pid=7) -> list:
    out = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 7, "tid": 7, "ts": 1000.0,
            "dur": 1000.0}]
    for i in range(n):
        out.append({"ph": "X", "cat": "cpu_op", "name": f"aten::op{i}", "pid": pid if i == n - 1 else 7,
                    "tid": tid if i == n - 1 else 7, "ts": 1100.0 + 100 * i, "dur": 50.0,
                    "args": {"External id": i + 1}})
    return out


def test_kineto_host_operator_on_a_thread_the_trace_never_names(tmp_path):
    """A damaged tid (-1 where the thread is 7) moves an operator to a thread of its own: named with the count and
    the lane; the clean trace, every operator on the thread its metadata names, has no entry."""
    _, clean = _kineto(tmp_path / "a", _ops())
    assert clean == []
    _, got = _kineto(tmp_path / "b", _ops(tid=-1))
    (e,) = got
    assert e.kind == "schema drift" and e.problem.startswith("1 host operator(s) on thread(s) the trace never names")
    assert "pid 7, tid -1" in e.problem and e.ranks == (0,)


def test_kineto_lane_ids_and_args_by_kind(tmp_path):
    """A pid written as text on a host operator (off every thread the trace names), a negative correlation id: each
    named once with its count and an example (the table TRACE_SCHEMAS, Kineto row); Device Id -1 (the CPU) is not;
    a pid written as digits is the same lane."""
    ev = _ops(pid="n/a") + [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7, "ts": 1150.0, "dur": 5.0,
         "args": {"correlation": -3}},
        {"ph": "i", "s": "t", "name": "[memory]", "pid": 7, "tid": 7, "ts": 1160.0,
         "args": {"Device Type": 0, "Device Id": -1, "Total Allocated": None, "Total Reserved": 10}}]
    _, got = _kineto(tmp_path, ev)
    texts = sorted(e.problem for e in got)
    assert any(t.startswith("1 host operator(s) on thread(s) the trace never names") and "pid 'n/a', tid 7" in t
               for t in texts)
    assert any(t.startswith("1 trace event(s) whose args value 'correlation' is not valid (not a whole number >= 0;"
                            " e.g. -3)") for t in texts)
    assert not any("Device Id" in t for t in texts)  # -1: the CPU, as Kineto writes it
    _, same = _kineto(tmp_path / "digits", _ops(pid="7"))
    assert same == []  # "7" and 7: one process, nothing lost


def test_gpu_timeline_lane_ids_one_lane_for_digit_text_and_bad_ids_named(tmp_path):
    from reportgen.loaders.gpu import summarize_gpu_timeline

    def ev(tid, pid=0, ts=100.0):
        return {"name": "volta_sgemm", "ph": "X", "tid": tid, "pid": pid, "ts": ts, "dur": 10.0,
                "args": {"op_full_name": "Default/MatMul-op1"}}

    log = IssueLog(tmp_path, rank=1)
    clean = summarize_gpu_timeline(_w(tmp_path, "gpu_timeline_display_1.json", json.dumps(
        [ev("17"), ev(17, ts=200.0), ev("Ops", ts=300.0)])), log, None)
    assert clean.n_streams == 1 and clean.compute_ms == pytest.approx(0.02) and _mine(log, "_1.json") == []
    log = IssueLog(tmp_path, rank=1)
    bad = summarize_gpu_timeline(_w(tmp_path, "b/gpu_timeline_display_1.json", json.dumps(
        [ev("17"), ev(-18.0, ts=200.0), ev("17", pid=None, ts=300.0), ev("17", ts=300.0)])), log, None)
    probs = sorted(e.problem for e in _mine(log, "gpu_timeline_display_1.json"))
    assert bad.n_streams == 3  # (0, 17), (0, -18), (None, 17): kept, each on a lane of its own
    assert any(p.startswith("1 trace event(s) whose tid is negative (e.g. -18.0)") for p in probs)
    assert any(p.startswith("1 trace event(s) whose pid is missing or not a number / name (e.g. None)") for p in probs)


def test_mindspore_gpu_tables_by_their_schema(tmp_path):
    from reportgen.loaders.gpu import load_activity

    head = ("name,type,op_full_name,stream_id,block_dim,grid_dim,occurrences,total_duration(us),avg_duration(us),"
            "max_duration(us),min_duration(us)\n")
    rows = ('k1,cuLaunchKernel,Default/MatMul-op1,17,"1,1,1","1,1,1",3,300.0,100.0,110.0,90.0\n'
            'k2,cuLaunchKernel,Default/Add-op2,17,"1,1,1","1,1,1",-2,50.0,25.0,30.0,20.0\n')
    log = IssueLog(tmp_path, rank=0)
    df = load_activity(_w(tmp_path, "gpu_activity_data_0.csv", head + rows), log)
    assert list(df["name"]) == ["k1"] and df["total_ms"].sum() == pytest.approx(0.3)
    (e,) = _mine(log, "gpu_activity_data_0.csv")
    assert "'occurrences' not a whole number >= 0" in e.problem and "line 3" in e.problem
    log = IssueLog(tmp_path, rank=0)
    load_activity(_w(tmp_path, "e/gpu_activity_data_0.csv", head + "\n\n"), log)
    (e,) = _mine(log, "gpu_activity_data_0.csv")
    assert e.kind == "empty table" and "rank 0's GPU kernels are missing" in e.problem


def test_cpu_utilisation_op_without_id_and_listed_time_stamp_named(tmp_path):
    from reportgen.loaders.cpu_usage import load_cpu_usage

    doc = {"cpu_processor_num": 2, "sampling_interval": 1000, "time_stamp": [100, [200], 300],
           "device_info": {"user_utilization": [10, 20, 30], "sys_utilization": [1, 2, 3],
                           "idle_utilization": [89, 78, 67], "io_utilization": [0, 0, 0]},
           "process_info": {"user_utilization": [5, 6, 7], "sys_utilization": [1, 1, 1]},
           "op_info": [{"op_id": 0, "metrics": {"user_utilization": [1, 2, 3], "sys_utilization": [0, 0, 0]}},
                       {"metrics": {"user_utilization": [4, 4, 4], "sys_utilization": [0, 0, 0]}}]}
    log = IssueLog(tmp_path, rank=0)
    cu = load_cpu_usage(_w(tmp_path, "minddata_cpu_utilization_0.json", json.dumps(doc)), log)
    assert list(cu.ops["op_id"]) == [0] and cu.ops["user"].iloc[0] == 2
    probs = " | ".join(e.problem for e in _mine(log, "minddata_cpu_utilization_0.json"))
    assert "op_info entr(y/ies) without an op_id (not read)" in probs
    assert "a list where a number belongs" in probs and "time_stamp[1]" in probs


def test_table_header_compared_across_ranks(tmp_path):
    """A column one rank's copy writes under another name (upper case) while the other ranks' copies agree: named
    as schema drift on that rank's file."""
    head = "Name,Type,Start Time(us),Duration(us),Wait Time(us)\n"
    ranks = {}
    for r in range(3):
        log = IssueLog(tmp_path, rank=r)
        h = head.replace("Duration(us)", "DURATION(US)") if r == 2 else head
        read_csv_rows(_w(tmp_path, "kernel_details.csv", h + "MatMul,AI_CORE,1,10,0\n", sub=f"r{r}"), log)
        ranks[r] = RankData(info=RankInfo(rank=r, source_dir=f"r{r}"), json_shapes=dict(log.shapes))
    issues: list[DataIssue] = []
    compare_shapes(ranks, issues)
    (e,) = issues
    assert e.file == "r2/kernel_details.csv" and e.kind == "schema drift" and e.ranks == (2,)
    assert "column Duration(us)" in e.problem  # named by the column the other copies agree on
    # an extra column on one rank (read by no loader) is harmless: not named, on two ranks or three
    for n in (2, 3):
        ranks = {}
        for r in range(n):
            log = IssueLog(tmp_path, rank=r)
            h = head.replace("\n", ",extra\n") if r == 1 else head
            row = "MatMul,AI_CORE,1,10,0" + (",x" if r == 1 else "") + "\n"
            read_csv_rows(_w(tmp_path, "kernel_details.csv", h + row, sub=f"x{n}r{r}"), log)
            ranks[r] = RankData(info=RankInfo(rank=r, source_dir=f"x{n}r{r}"), json_shapes=dict(log.shapes))
        issues = []
        compare_shapes(ranks, issues)
        assert issues == [], (n, [i.problem for i in issues])


def test_a_word_in_a_number_column_is_named(tmp_path):
    """A word where a number belongs ("12.5ms", "8,0") is read as missing and named with its line; an empty cell or
    "-" is how the writers themselves mark a row with no value (the root operator has no queue), and is not."""
    head = "op_id,op_type,num_workers,output_queue_average_size,output_queue_length,output_queue_usage_rate\n"
    log = IssueLog(tmp_path, rank=2)
    header, rows = read_csv_rows(_w(tmp_path, "minddata_pipeline_raw_2.csv", head + "0,Batch,2,,,\n"
                                    "1,Map,4,8.0ms,16,0.25\n2,Shuffle,1,2.0,16,-\n"), log)
    assert [c[3] for _, c in rows] == ["", "8.0ms", "2.0"]  # kept: read as missing by the loader
    (e,) = _mine(log, "minddata_pipeline_raw_2.csv")
    assert "1 value(s) in 'output_queue_average_size' that are text, not a number (read as missing)" in e.problem
    assert "line 3" in e.problem and e.ranks == (2,) and e.kind == "schema drift"


def test_kineto_trace_with_a_bom_keeps_its_rank_and_odd_entries_are_named(tmp_path):
    """A BOM before a Kineto trace (a benign variant) leaves its rank where distributedInfo says; an entry of the
    event list that is not an object (null, a string) is named, not skipped silently."""
    from reportgen.discover.peek import kineto_header

    doc = {"distributedInfo": {"rank": 3, "world_size": 4}, "traceEvents": [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10.0, "dur": 5.0}, None, "x"]}
    p = _w(tmp_path, "w.pt.trace.json", b"\xef\xbb\xbf" + json.dumps(doc).encode())
    assert kineto_header(p)["rank"] == 3 and kineto_header(p)["world_size"] == 4
    _, got = _kineto(tmp_path / "odd", doc["traceEvents"])
    (e,) = [i for i in got if "not an object" in i.problem]
    assert e.problem.startswith("2 entr(y/ies) of the trace's event list that are not an object (first: None)")
    assert e.kind == "schema drift"


def test_trace_lane_id_beyond_any_id_named(tmp_path):
    ev = [{"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "Ascend Hardware"}},
          {"ph": "X", "name": "MatMul", "pid": 1, "tid": 2, "ts": "100.5", "dur": "10"},
          {"ph": "X", "name": "Add", "pid": 1, "tid": 1e300, "ts": "120.5", "dur": "5"}]
    log = IssueLog(tmp_path, rank=2)
    s = summarize_trace(_w(tmp_path, "trace_view.json", json.dumps(ev)), log)
    assert s.n_ops == 2 and s.compute_ms == pytest.approx(0.015)
    (e,) = _mine(log, "trace_view.json")
    assert e.problem.startswith("1 trace event(s) whose tid is beyond any id (e.g. 1e+300)") and e.ranks == (2,)


def test_kineto_duplicated_event_named_nested_namesakes_not(tmp_path):
    """An exact copy of a host operator (same External id) is named; two nested calls of one name at one time
    (different External ids, as real traces hold) are not."""
    ops = _ops()
    _, got = _kineto(tmp_path / "dup", ops + [dict(ops[2])])
    (e,) = got
    assert e.kind == "duplicate" and e.problem.startswith("1 host operator event(s) identical to an earlier one")
    twin = dict(ops[2], args={"External id": 99})
    _, clean = _kineto(tmp_path / "nested", ops + [twin])
    assert clean == []


def test_compare_shapes_names_families_by_file_name_as_a_path_would():
    from pathlib import Path

    from reportgen.loaders.schema import _file_name

    for rel in ("a/b/x_12.json", "x.json", "a//b.json", "/abs/c_1.json", "a/", "", ".", "a/.", "a/..", "a\\b.json",
                "rank_3/./x.json"):
        assert _file_name(rel) == Path(rel).name, rel
