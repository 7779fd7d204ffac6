"""Cluster communication: loaders and analysis against the producers' own output and msprof-analyze's."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from reportgen.analysis import analyze
from reportgen.layouts import discover, load_run
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.communication import load_hccl_raw, load_hccl_traces
from reportgen.loaders.step_trace import load_legacy_step_trace
from reportgen.loaders.groups import double_hash
from tests.conftest import sample

GOLDEN = "ascend/_golden_outputs_msprof_analyze_local_run"


def _analysis(path: Path):
    return analyze(load_run(discover(path)[0]))


def test_double_hash_matches_the_group_suffix():
    assert double_hash("group_name_19") == 3985310405473756128


def test_raw_hccl_traces_reproduce_hccl_raw():
    d = sample("mindinsight/mindspore_ut_hccl_dev6") / "profiler"
    log = IssueLog(d)
    trace = load_legacy_step_trace(d / "step_trace_raw_6_detail_time.csv", log)
    traces = load_hccl_traces(sorted((d / "hccl_info").rglob("*.trace")), trace, log)
    raw = load_hccl_raw(d / "hccl_raw_6.csv", log)
    assert log.issues == []
    ours = traces.ops.set_index("step")
    theirs = raw.ops.dropna(subset=["step"]).set_index("step")
    assert list(ours.index) == [1, 2]
    assert ours.loc[1, "op"] == theirs.loc[1, "op"] == "AllReduce-op3143"
    for s in (1, 2):
        for c in ("communication_ms", "wait_ms", "sdma_mb", "sdma_ms"):
            assert ours.loc[s, c] == pytest.approx(theirs.loc[s, c], rel=1e-9, abs=1e-12)
    ls = traces.links[traces.links["scope"] == "step"].set_index(["step", "src", "dst"])
    lr = raw.links[(raw.links["scope"] == "step") & raw.links["step"].notna()].set_index(["step", "src", "dst"])
    for key in lr.index:
        for c in ("time_ms", "size_mb", "stored_bandwidth_gbps"):
            assert ls.loc[key, c] == pytest.approx(lr.loc[key, c], rel=1e-9)
    # the hand numbers: step 1, link 1-0 SDMA 4.36566 ms, 94356.992 KB at 21613454.09 KB/s
    assert lr.loc[(1, 1, 0), "time_ms"] == pytest.approx(4.36566)
    assert lr.loc[(1, 1, 0), "size_mb"] == pytest.approx(94.356992)
    assert lr.loc[(1, 1, 0), "stored_bandwidth_gbps"] == pytest.approx(21.61345409399724)


def test_hccl_raw_generations_are_detected_from_the_numbers(tmp_path):
    link_kbs = {"0-1": {"SDMA": [2.0, 4000.0, 2000000.0]}}  # 4000 KB in 2 ms = 2e6 KB/s
    link_gbs = {"0-1": {"SDMA": [2.0, 4000.0, 2.0]}}  # the newer producer: GB/s
    for name, link, comm, expect_ms, expect_avg in (("old", link_kbs, 2.0, 2.0, True),
                                                     ("new", link_gbs, 2000.0, 2.0, False)):
        p = tmp_path / f"hccl_raw_{name}.csv"
        with open(p, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["step_num", "communication_cost", "wait_cost", "link_info", "communication_operator_cost"])
            for step in ("1", "2", "-"):
                op = {"stream_1_0_AllReduce-op1": [step, comm, comm / 2, link]}
                w.writerow([step, comm, comm / 2, json.dumps(link), json.dumps(op)])
        log = IssueLog(tmp_path)
        c = load_hccl_raw(p, log)
        assert c.stored_average is expect_avg
        assert c.ops["communication_ms"].iloc[0] == pytest.approx(expect_ms)
        assert c.ops["wait_ms"].iloc[0] == pytest.approx(expect_ms / 2)
        step_links = c.links[c.links["scope"] == "step"]
        assert step_links["stored_bandwidth_gbps"].iloc[0] == pytest.approx(2.0)
        assert step_links["bandwidth_gbps"].iloc[0] == pytest.approx(2.0)  # 4 MB / 2 ms
        if not expect_avg:
            assert step_links["step"].notna().all()  # the copied '-' row is dropped
            assert any("copies the last iteration" in i.problem for i in log.issues)


def test_broken_hccl_raw_row_is_reported_not_fatal(tmp_path):
    p = tmp_path / "hccl_raw_0.csv"
    p.write_text('step_num,communication_cost,wait_cost,link_info,communication_operator_cost\n'
                 '1,1.0,0.5,"{""0-1"": {""SDMA"": [1.0, 1000.0, 1000000.0]}}",\n'
                 '2,1.0,0.5,"{""0-1"": {""SDMA"": [1.0, 10',)
    log = IssueLog(tmp_path)
    c = load_hccl_raw(p, log)
    assert c is not None and list(c.ops["step"]) == [1]
    assert any("invalid" in i.problem or "wrong number" in i.problem for i in log.issues)


def test_mindinsight_cluster_matches_mindinsight_formulas():
    a = _analysis(sample("mindinsight/cluster_pipeline_parallel_4rank"))
    c = a.comm
    # per rank: the '-' row of hccl_raw (MindInsight's ClusterHcclAnalyser reads it verbatim)
    assert c.per_rank.loc[0, "communication_ms"] == pytest.approx(2.2688550000000003, rel=1e-12)
    assert c.per_rank.loc[2, "wait_ms"] == pytest.approx(1005.0460600000009, rel=1e-12)
    # link figures of the averaged step: rank 1's 0-1 SDMA link, bandwidth as MindInsight shows it
    lt = c.links.set_index(["src", "dst", "transport"])
    row = lt.loc[(0, 1, "SDMA")]
    assert row["time_ms"] == pytest.approx(0.21956333333333333)
    assert row["size_mb"] == pytest.approx(1.1099306666666669)
    assert row["stored_bandwidth_gbps"] * 1e6 == pytest.approx(107910491.88737924)  # KB/s, ParallelProposer's value
    # that link is the slow one (MindInsight: -74.26 % against the mean); ours: far below the SDMA median
    assert row["vs_median"] < 0.5
    flat = lt.reset_index()
    others = flat[(flat["transport"] == "SDMA") & ~flat["self"] & (flat["size_mb"] >= 1.0)
                  & ~((flat["src"] == 0) & (flat["dst"] == 1))]
    assert (others["vs_median"] >= 0.5).all()
    # group-local link keys mapped to global ranks: ranks 2 and 3 run the same operators
    assert (3, 2, "SDMA") in lt.index and (2, 3, "SDMA") in lt.index


def test_per_rank_per_group_totals_equal_msprof_analyze():
    golden = json.loads((sample(GOLDEN) / "st_qwen3_4rank_text/cluster_analysis_output/cluster_communication.json")
                        .read_text())
    a = _analysis(sample("ascend/msinsight_st_qwen3_4rank_tp1pp2dp2_level2_text"))
    pg = a.comm.per_group_rank.set_index(["rank", "group"])
    n = 0
    for _, steps in golden.items():
        for _, ops in steps.items():
            for name, per_rank in ops.items():
                if not name.startswith("Total Op Info@"):
                    continue
                group = name.split("@")[1]
                for r, info in per_rank.items():
                    t = info["Communication Time Info"]
                    row = pg.loc[(int(r), group)]
                    assert row["communication_ms"] == pytest.approx(t["Elapse Time(ms)"], abs=1e-6)
                    assert row["wait_ms"] == pytest.approx(t["Wait Time(ms)"], abs=1e-6)
                    assert row["transit_ms"] == pytest.approx(t["Transit Time(ms)"], abs=1e-6)
                    assert row["sync_ms"] == pytest.approx(t["Synchronization Time(ms)"], abs=1e-6)
                    assert row["idle_ms"] == pytest.approx(t["Idle Time(ms)"], abs=1e-6)
                    assert row["wait_ratio"] == pytest.approx(t["Wait Time Ratio"], abs=1e-4)
                    sd = info["Communication Bandwidth Info"]["SDMA"]
                    assert row["sdma_mb"] == pytest.approx(sd["Transit Size(MB)"], abs=1e-6)
                    assert row["sdma_ms"] == pytest.approx(sd["Transit Time(ms)"], abs=1e-6)
                    if sd["Transit Time(ms)"]:
                        assert row["sdma_gbps"] == pytest.approx(sd["Bandwidth(GB/s)"], abs=1e-4)
                    n += 1
    assert n == 24  # 7 rank sets, 12 groups, 24 (group, rank) totals


@pytest.mark.parametrize("case,run", [("st_qwen3_4rank_text", "ascend/msinsight_st_qwen3_4rank_tp1pp2dp2_level2_text"),
                                      ("pytorch_2rank_level1_text", "ascend/msinsight_pytorch_2rank_level1_text")])
def test_links_equal_msprof_analyze_matrix(case, run):
    golden = json.loads((sample(GOLDEN) / case / "cluster_analysis_output/cluster_communication_matrix.json")
                        .read_text())
    a = _analysis(sample(run))
    lt = a.comm.links[a.comm.links["mapped"]].set_index(["group", "src", "dst", "transport"])
    n = 0
    for _, steps in golden.items():
        for _, ops in steps.items():
            for name, links in ops.items():
                if not name.startswith("Total Op Info@"):
                    continue
                group = name.split("@")[1]
                for key, li in links.items():
                    s, d = (int(x) for x in key.split("-"))
                    row = lt.loc[(group, s, d, li["Transport Type"])]
                    assert row["time_ms"] == pytest.approx(li["Transit Time(ms)"], rel=1e-9)
                    assert row["size_mb"] == pytest.approx(li["Transit Size(MB)"], rel=1e-9)
                    assert round(row["bandwidth_gbps"], 4) == pytest.approx(li["Bandwidth(GB/s)"], abs=1e-4)
                    n += 1
    assert n == len(lt)  # nothing more, nothing less than msprof-analyze keeps


def test_partial_group_links_are_counted_not_dropped():
    a = _analysis(sample("ascend/msinsight_pytorch_2rank_level1_text"))
    c = a.comm
    # the 2-rank sample comes from an 8-rank job: links to local ranks 2..7 cannot be mapped
    assert c.unmapped_links > 0
    assert (~c.links["mapped"]).sum() == 12  # 2 ranks x 6 absent peers, all HCCS
    assert any("could not be mapped" in i.problem for i in a.issues)


def test_group_names_come_from_parallel_group_info():
    a = _analysis(sample("ascend/msinsight_st_qwen3_4rank_tp1pp2dp2_level2_text"))
    names = {g.name for g in a.comm.groups.values()}
    assert {"pp", "dp", "tp", "default_group"} <= names
    pp = a.comm.groups[str(double_hash("group_name_19"))]
    assert pp.name == "pp" and pp.local_to_global == {0: 0, 1: 2}


def test_msprof_raw_hccl_timelines():
    a = _analysis(sample("mindinsight/msprof_raw_2rank_10iter"))
    c = a.comm
    assert c.producers == ["msprof_hccl"]
    assert c.per_rank["n_steps"].tolist() == [10, 10]
    # AscendHCCLGenerator: wait = sum of Notify_Wait, communication = every other task (µs -> ms)
    path = next(sample("mindinsight/msprof_raw_2rank_10iter").rglob("hccl_0_2_1.json"))
    events = [e for e in json.loads(path.read_text()) if e.get("ph") == "X" and e["tid"] < 100]
    wait = sum(e["dur"] for e in events if e["name"] == "Notify_Wait") / 1e3
    comm = sum(e["dur"] for e in events if e["name"] != "Notify_Wait") / 1e3
    step1 = c.per_rank_step[(c.per_rank_step["rank"] == 0) & (c.per_rank_step["step"] == 1)].iloc[0]
    assert step1["wait_ms"] == pytest.approx(wait)
    assert step1["communication_ms"] == pytest.approx(comm)
    assert c.unmapped_links == 0  # msprof writes global ranks


def test_missing_communication_file_is_no_data_not_zero(tmp_path):
    from reportgen.synth import generate_run

    run = generate_run(tmp_path / "run", ranks=8, steps=4, seed=3, inject=["missing-comm:3"])
    a = _analysis(run)
    assert 3 in a.comm.ranks_without_data
    assert 3 not in a.comm.per_rank.index
    assert any("no communication data" in i.problem for i in a.issues)


# --- communication.json read by columns (issue 33): the same frames and entries as operator by operator ---------


@pytest.fixture(scope="module")
def comm_json(tmp_path_factory):
    from reportgen.synth import generate_run

    run = generate_run(tmp_path_factory.mktemp("cj") / "run", ranks=2, steps=2, seed=5)
    out = sorted(run.glob("*_ascend_pt/ASCEND_PROFILER_OUTPUT/communication.json"))[0]
    return run, out, json.loads(out.read_text())


def _both_ways(run: Path, path: Path, monkeypatch):
    """load_modern_communication as it is and with the column reader switched off: (frames, entries) each."""
    from reportgen.loaders import communication as C

    got = []
    for fast in (True, False):
        with monkeypatch.context() as m:
            if not fast:
                m.setattr(C, "_modern_columns", lambda data: None)
            log = IssueLog(run, 0)
            c = C.load_modern_communication(path, path.with_name("communication_matrix.json"), log, {}, 0)
        got.append((c, [(i.file, str(i.problem), i.severity, i.kind) for i in log.issues]))
    return got


def _damage(data: dict, case: str) -> None:
    step = next(iter(data.values()))
    name, op = next(iter(step["collective"].items()))
    t, bw = op["Communication Time Info"], op["Communication Bandwidth Info"]
    if case == "negative time":
        t["Elapse Time(ms)"] = -1.0
    elif case == "time as text":
        t["Transit Time(ms)"] = "1.5"
    elif case == "time true":
        t["Wait Time(ms)"] = True
    elif case == "time missing":
        del t["Idle Time(ms)"]
    elif case == "time beyond the limit":
        t["Elapse Time(ms)"] = 2 ** 62 + 1
    elif case == "start null":
        t["Start Timestamp(us)"] = None
    elif case == "start missing":
        del t["Start Timestamp(us)"]
    elif case == "bandwidth info a list":
        op["Communication Bandwidth Info"] = []
    elif case == "bandwidth info a text":
        op["Communication Bandwidth Info"] = "x"
    elif case == "sdma null":
        bw["SDMA"] = None
    elif case == "sdma a number":
        bw["SDMA"] = 3
    elif case == "rdma size missing":
        del bw["RDMA"]["Transit Size(MB)"]
    elif case == "bandwidth negative":
        bw["SDMA"]["Bandwidth(GB/s)"] = -2
    elif case == "info a list":
        step["collective"][name] = []
    elif case == "kinds a list":
        step["p2p"] = []


FAST_OK = {"clean", "start null", "start missing", "bandwidth info a list", "sdma null", "rdma size missing"}


@pytest.mark.parametrize("case", ["clean", "negative time", "time as text", "time true", "time missing",
                                  "time beyond the limit", "start null", "start missing", "bandwidth info a list",
                                  "bandwidth info a text", "sdma null", "sdma a number", "rdma size missing",
                                  "bandwidth negative", "info a list", "kinds a list"])
def test_communication_json_by_columns_equals_operator_by_operator(comm_json, tmp_path, monkeypatch, case):
    from pandas.testing import assert_frame_equal

    from reportgen.loaders.communication import _modern_columns

    run, src, data = comm_json
    data = json.loads(json.dumps(data))
    _damage(data, case)
    path = tmp_path / "ASCEND_PROFILER_OUTPUT" / "communication.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data))
    (path.parent / "communication_matrix.json").write_bytes(src.with_name("communication_matrix.json").read_bytes())
    # the columns are read only where no value needs a word: anything else goes operator by operator
    assert (_modern_columns(data) is not None) == (case in FAST_OK)
    (fast, fast_log), (slow, slow_log) = _both_ways(tmp_path, path, monkeypatch)
    assert fast_log == slow_log
    if case not in FAST_OK and case != "time as text":  # (a number written as text is read as the number)
        assert len(fast_log) > len(_both_ways(tmp_path, src, monkeypatch)[0][1])  # what is wrong is named
    for k in ("steps", "ops", "links", "instances"):
        a, b = getattr(fast, k), getattr(slow, k)
        assert_frame_equal(a, b, check_exact=True)
        assert list(a.dtypes) == list(b.dtypes)
    n_ops = sum(len(v) for s in data.values() if isinstance(s, dict) for v in s.values() if isinstance(v, dict))
    assert len(fast.ops) == n_ops - (case == "info a list")
    # an operator is an instance when its start and elapse are numbers
    assert len(fast.instances) == int(fast.ops["communication_ms"].notna().sum()) - (case in ("start null",
                                                                                           "start missing"))


def _damage_matrix(data: dict, case: str) -> None:
    step = next(iter(data.values()))
    key, links = next(iter(step["collective"].items()))
    lk, li = next(iter(links.items()))
    if case == "size as text":
        li["Transit Size(MB)"] = "2.5"
    elif case == "time negative":
        li["Transit Time(ms)"] = -1
    elif case == "bandwidth missing":
        del li["Bandwidth(GB/s)"]
    elif case == "bandwidth beyond the limit":
        li["Bandwidth(GB/s)"] = 1e300
    elif case == "link a list":
        links[lk] = [1, 2]
    elif case == "link key not src-dst":
        links["a-b-c"] = dict(li)
    elif case == "transport missing":
        del li["Transport Type"]
    elif case == "time zero":
        li["Transit Time(ms)"] = 0
    elif case == "links a list":
        step["collective"][key] = [1]
    elif case == "operator keys":  # older CANN: one entry per operator, "<op>@<group>"
        step["collective"]["hcom_allReduce__12_0_1@77"] = {"0-1": dict(li), "1-0": dict(li, **{"Op Name": "x"})}
    elif case == "kinds a list":
        step["p2p"] = []


MATRIX_FAST_OK = {"clean", "transport missing", "time zero", "links a list", "operator keys"}


@pytest.mark.parametrize("case", ["clean", "size as text", "time negative", "bandwidth missing",
                                  "bandwidth beyond the limit", "link a list", "link key not src-dst",
                                  "transport missing", "time zero", "links a list", "operator keys", "kinds a list"])
def test_communication_matrix_by_columns_equals_link_by_link(comm_json, tmp_path, monkeypatch, case):
    """communication_matrix.json read as columns (a clean file) gives the frames, self links and entries the
    link-by-link reader gives, whatever is damaged; anything that needs a word goes link by link."""
    from pandas.testing import assert_frame_equal

    from reportgen.loaders import communication as C

    run, src, _ = comm_json
    data = json.loads(src.with_name("communication_matrix.json").read_text())
    _damage_matrix(data, case)
    path = tmp_path / "ASCEND_PROFILER_OUTPUT" / "communication_matrix.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data))
    (path.parent / "communication.json").write_bytes(src.read_bytes())
    assert (C._modern_link_columns(data) is not None) == (case in MATRIX_FAST_OK)
    got = []
    for fast in (True, False):
        with monkeypatch.context() as m:
            if not fast:  # (neither the typed path nor the columns: link by link)
                m.setattr(C, "_modern_link_columns", lambda data: None)
                m.setattr(C, "_typed_links", lambda *a: None)
            log = IssueLog(tmp_path, 0)
            c = C.load_modern_communication(path.with_name("communication.json"), path, log, {}, 0)
        got.append((c, [(i.file, str(i.problem), i.severity, i.kind) for i in log.issues]))
    (a, a_log), (b, b_log) = got
    assert a_log == b_log and a.self_local == b.self_local
    if case not in MATRIX_FAST_OK and case != "size as text":  # (a number written as text is read as the number)
        assert any("communication_matrix" in f for f, *_ in a_log)  # what is wrong is named
    assert_frame_equal(a.links, b.links, check_exact=True)
    assert [str(t) for t in a.links.dtypes] == [str(t) for t in b.links.dtypes]
    if case == "clean":
        assert len(a.links) > 4 and set(a.links["transport"]) >= {"HCCS"}


def _scaled_comm(data: dict, n_ops: int) -> dict:
    """A communication.json document with `n_ops` operators in one step, each a copy of the first one's entry."""
    step = next(iter(data.values()))
    name, op = next(iter(step["collective"].items()))
    base, _, group = name.partition("@")
    ops = {f"hcom_allReduce__{i}_0_1@{group}": json.loads(json.dumps(op)) for i in range(n_ops)}
    return {"step1": {"collective": ops}}


@pytest.mark.parametrize("n_ops", [3, 400, 1200])
def test_communication_json_shape_is_what_reading_it_whole_notes(comm_json, tmp_path, n_ops):
    """The key paths kept for the cross-rank schema check (`IssueLog.shapes`) are those `read_json` notes for the
    file: a small document's, none for a larger one (400 operators: the walk says so), none where the operators
    prove it (~1,150 and more: not walked); the collector is on again after the read."""
    import gc

    from reportgen.loaders.communication import load_modern_communication
    from reportgen.loaders.jsonfile import read_json
    from reportgen.loaders.schema import json_shape

    _, src, data = comm_json
    path = tmp_path / "ASCEND_PROFILER_OUTPUT" / "communication.json"
    path.parent.mkdir(parents=True)
    doc = _scaled_comm(data, n_ops)
    path.write_text(json.dumps(doc))
    want = IssueLog(tmp_path, 0)
    read_json(path, want)
    got = IssueLog(tmp_path, 0)
    assert gc.isenabled()
    c = load_modern_communication(path, None, got, {}, 0)
    assert gc.isenabled()
    assert len(c.ops) == n_ops and not got.issues
    assert got.shapes == want.shapes
    shape = json_shape(doc)
    assert (shape is None) == (n_ops > 3)  # (each operator ~25 values: 400 of them are past the cap, 8,000)
    assert got.shapes == ({} if shape is None else {"ASCEND_PROFILER_OUTPUT/communication.json": shape})


@pytest.mark.parametrize("shape", ["steps", "missing step", "missing values", "one step", "int64 times"])
def test_steps_from_ops_equal_pandas_groupby_sum(shape):
    """`communication._steps_from_ops` (the columns off the frame's arrays and the sums' block) against pandas'
    own `groupby(step, dropna=False).sum(min_count=1)` of the same rows, bit for bit, the step <NA> row first."""
    import numpy as np
    import pandas as pd

    from reportgen.model import COMM_OP_COLUMNS, COMM_TIME_COLUMNS

    rng = np.random.default_rng(7)
    n = 300
    steps = rng.integers(1, 5, n).astype(float)
    if shape == "missing step":
        steps[rng.random(n) < 0.2] = np.nan
    if shape == "one step":
        steps[:] = 3
    vals = {c: rng.random(n) * 10.0 ** rng.integers(-3, 6, n) for c in COMM_OP_COLUMNS[4:]}
    if shape == "missing values":
        vals["sync_ms"][steps == 2] = np.nan  # a step with no number: NaN (min_count=1)
        vals["idle_ms"][::3] = np.nan
    frame = {"step": pd.array([None if s != s else int(s) for s in steps], dtype="Int64"),
             "op": ["x"] * n, "group": ["g"] * n, "kind": ["collective"] * n, **vals}
    if shape == "int64 times":  # (not the loaders' floats: the general way)
        frame["wait_ms"] = rng.integers(0, 9, n)
    of = pd.DataFrame(frame)
    from reportgen.loaders import communication as C

    got = C._steps_from_ops(of)
    cols = list(COMM_TIME_COLUMNS)
    ref = of.groupby("step", dropna=False, sort=True)[cols].sum(min_count=1)
    ref = pd.concat([ref[ref.index.isna()], ref[ref.index.notna()]])  # (<NA> first, as the loaders write it)
    assert got["step"].tolist() == ref.index.tolist()
    for c in cols:
        assert got[c].to_numpy(dtype=float).tobytes() == ref[c].to_numpy(dtype=float).tobytes(), c
    assert list(got.columns) == ["step", *cols] and str(got["step"].dtype) == "Int64"


def test_op_types_read_each_name_as_the_pattern_does():
    """`communication._op_types` (known names looked up at once, the others made one by one): each name's type as
    OP_TYPE_RE gives it, whatever the names (texts seen before or not, a text the pattern would empty, numbers,
    None, an unhashable value), in order."""
    from reportgen.loaders import communication as C

    class Text(str):
        pass

    names = ["hcom_allReduce__586_3_1", "hcom_send__1_2", "__12_3", "plain", 5, None, Text("hcom_broadcast__1_1")]
    want = [C.OP_TYPE_RE.sub("", str(n)) or str(n) for n in names]
    assert C._op_types(names) == want  # (first: unknown names)
    assert C._op_types(names) == want  # (again: known ones)
    assert C._op_types(names + [[1, 2]]) == want + ["[1, 2]"]
    assert C._op_types([]) == []


def test_group_rows_equal_the_groupby_way(monkeypatch):
    """The communication page's per-group rows are made over integer codes (issue 33: a sub-frame a group cost 1.7 s
    at 4,096 ranks): on random groups with missing groups, NaN waits and ties, the rows a groupby's sub-frames give
    (`Series.mean`'s digits, the first shortest wait's rank, groups in id order); other dtypes the groupby's way."""
    import numpy as np
    import pandas as pd

    import reportgen.site.views.communication as views
    from reportgen.numbers import finite

    monkeypatch.setattr(views, "group_label", lambda a, gid: f"label {gid}")
    rng = np.random.default_rng(7)
    for case in range(200):
        n = int(rng.integers(1, 50))
        comm = rng.random(n) * 10
        comm[rng.random(n) < 0.1] = np.nan
        pg = pd.DataFrame({"group": pd.Series(rng.choice(["g1", "g2", "tp-3", "dp_0", None], n).astype(object),
                                              dtype="str" if case % 2 else object),
                           "rank": rng.integers(0, 99, n), "communication_ms": comm,
                           "wait_ms": rng.choice([np.nan, 1.0, 2.5, 0.1, 0.30000000000000004, 7.0], n)})
        if case % 7 == 0:
            pg["wait_ms"] = pg["wait_ms"].astype("Float64")  # (not float64: the groupby's way)
        want = [{"group": f"label {gid}", "ranks": len(f), "communication_ms": finite(f["communication_ms"].mean()),
                 "wait_ms": finite(f["wait_ms"].mean()), "max_wait_ms": finite(f["wait_ms"].max()),
                 "min_wait_ms": finite(f["wait_ms"].min()),
                 "min_wait_rank": int(f.loc[f["wait_ms"].idxmin(), "rank"]) if f["wait_ms"].notna().any() else None}
                for gid, f in pg.groupby("group")]
        assert views.group_rows(None, pg) == want, case
