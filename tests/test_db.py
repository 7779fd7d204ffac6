"""DB exports (export_type=db): read in full, the same numbers as the text export, unread DBs named."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reportgen.analysis import analyze
from reportgen.layouts import discover, load_run
from reportgen.loaders import db as dbl
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.groups import double_hash
from reportgen.loaders.step_trace import load_db_step_trace
from reportgen.rules import run_rules
from reportgen.synth import generate_run
from tests.conftest import sample

DB_SAMPLE = "ascend/msinsight_pytorch_2rank_level1_db"
TEXT_SAMPLE = "ascend/msinsight_pytorch_2rank_level1_text"
ACTION = ("critical", "warning")


def _load(path: Path):
    return load_run(discover(Path(path))[0], jobs=1)


def _findings(path: Path):
    return [f.to_dict() for f in run_rules(analyze(_load(path)))[0]]


def _eq(a: pd.DataFrame, b: pd.DataFrame, keys: list[str], **tol) -> None:
    a = a.sort_values(keys, kind="stable").reset_index(drop=True)
    b = b.sort_values(keys, kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(a, b, check_dtype=False, rtol=tol.get("rtol", 1e-6), atol=tol.get("atol", 1e-9))


# --- the real DB sample --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def db_run():
    return _load(sample(DB_SAMPLE))


def test_db_sample_fills_communication_operators_memory_and_index(db_run):
    assert db_run.rank_ids == [0, 1]
    for r, d in db_run.ranks.items():
        c = d.communication
        assert c is not None and len(c.ops) == 4 and set(c.ops["kind"]) == {"collective"}
        assert c.ops["op"].str.startswith("hcom_allReduce_").all()
        # the group id is the hashed form of COMMUNICATION_OP's unhashed group name, as in communication.json
        assert set(c.ops["group"]) == {str(double_hash("90.91.105.46%enp189s0f0_60000_0_1736410538306028"))}
        assert len(c.links) and c.self_local == {c.ops["group"].iloc[0]: r}
        # Σ elapse of the operators = StepTraceTime's communication (analysis.db), in ms
        assert c.ops["communication_ms"].sum() == pytest.approx(float(d.step_trace.steps["communication"].iloc[0]),
                                                                rel=1e-6)
        ops = d.operators
        assert ops is not None and ops.by_type["count"].sum() == 191  # 187 compute tasks + 4 HCCL, as kernel_details
        assert set(ops.by_type["side"]) >= {"aicore", "communication"}
        assert d.memory is not None and d.memory.peak_mb and d.memory.top is not None and len(d.memory.components)
        assert d.info.device == r
    assert db_run.info.parallel_index == {0: {"tp": 0, "dp": 0, "pp": 0}, 1: {"tp": 0, "dp": 1, "pp": 0}}
    assert db_run.info.parallel_sizes["dp"] == 8
    assert "inferred" in db_run.info.parallel_mode_source  # not credited to a profiler_metadata.json that is absent
    probs = [i.problem for i in db_run.all_issues()]
    assert any(p.startswith("read from the DB export: step trace (StepTraceTime); communication") for p in probs)
    assert any("operators (TASK, COMPUTE_TASK_INFO, COMMUNICATION_OP)" in p for p in probs)


def test_db_sample_memory_units(db_run):
    m = db_run.ranks[0].memory
    f = sample(DB_SAMPLE) / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db"
    con = sqlite3.connect(f.resolve().as_uri() + "?mode=ro&immutable=1", uri=True)  # the sample stays untouched
    (app_max,) = con.execute("SELECT MAX(hbm) FROM NPU_MEM WHERE type = (SELECT id FROM STRING_IDS "
                             "WHERE value = 'app')").fetchone()
    con.close()
    # the whole process (memory_record.csv's APP rows = NPU_MEM type app), bytes -> MB of 2^20
    assert m.peak_mb == pytest.approx(app_max / 2 ** 20)
    # MEMORY_RECORD max reserved 1600913408 bytes bounds the allocator's allocated peak
    assert m.allocated_peak_mb is not None and m.allocated_peak_mb <= 1600913408 / 2 ** 20
    assert m.top["size_mb"].is_monotonic_decreasing


def test_step_trace_from_overlap_analysis_equals_step_trace_time():
    """Without analysis.db the profiler DB's STEP_TIME + OVERLAP_ANALYSIS give StepTraceTime's numbers."""
    out = sample(DB_SAMPLE) / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    log = IssueLog(out)
    d = dbl.Db(out / "ascend_pytorch_profiler_0.db", log)
    try:
        got = dbl.read_step_trace(d)
    finally:
        d.close()
    want = load_db_step_trace(out / "analysis.db", log)
    _eq(got.steps, want.steps, ["step"], rtol=1e-9)


def test_db_sample_without_analysis_db(tmp_path):
    """Only the profiler DB: step trace from OVERLAP_ANALYSIS where the generation has it, communication from
    COMMUNICATION_OP (spans and waitNs)."""
    run = tmp_path / "run"
    shutil.copytree(sample(DB_SAMPLE), run)
    for p in run.glob("*/ASCEND_PROFILER_OUTPUT/analysis.db"):
        p.unlink()
    loaded = _load(run)
    r0 = loaded.ranks[0]
    assert r0.step_trace is not None and r0.step_trace.steps["computing"].iloc[0] == pytest.approx(8.903431)
    assert r0.communication is not None and len(r0.communication.ops) == 4
    assert r0.communication.ops["wait_ms"].iloc[0] == pytest.approx(0.693394) or \
        r0.communication.ops["wait_ms"].max() == pytest.approx(0.693394)
    # rank 1's DB has no OVERLAP_ANALYSIS table: no step trace, said so, nothing raised
    assert loaded.ranks[1].step_trace is None
    assert any(i.severity == "warning" for i in loaded.ranks[1].issues)


def test_db_and_text_samples_are_the_same_workload_not_the_same_run(db_run):
    """The two samples are separate captures of the same job (different epochs and group ids): the kernels match
    by type and count, the times do not, so exact equality is tested on the synthetic twin below."""
    text = _load(sample(TEXT_SAMPLE))
    for r in (0, 1):
        a = text.ranks[r].operators.by_type.groupby(["side", "op_type"])["count"].sum()
        b = db_run.ranks[r].operators.by_type.groupby(["side", "op_type"])["count"].sum()
        pd.testing.assert_series_equal(a.sort_index(), b.sort_index(), check_dtype=False)
        assert set(text.ranks[r].communication.ops["group"]) != set(db_run.ranks[r].communication.ops["group"])


def test_communication_bound_finding_names_the_collectives():
    fs = _findings(sample(DB_SAMPLE))
    f = next(f for f in fs if f["id"] == "communication-bound.rate")
    assert f["severity"] == "critical" and "hcom_allReduce__210_0_1" in f["title"]
    assert f["evidence"]["top_operators"][0]["op"] == "hcom_allReduce__210_0_1"


# --- synthetic: text and DB of the same run -----------------------------------------------------------


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    base = tmp_path_factory.mktemp("dbtwin")
    kw = dict(ranks=8, steps=5, seed=4, inject=["slow-rank:3"])
    both = generate_run(base / "both", export="both", **kw)
    only = generate_run(base / "db", export="db", **kw)
    return _load(both), _load(only), only


def test_synthetic_db_has_no_text_files(twin):
    only = twin[2]
    names = {p.name for p in only.rglob("*") if p.is_file()}
    assert "analysis.db" in names and "ascend_pytorch_profiler_0.db" in names
    assert not names & {"step_trace_time.csv", "communication.json", "kernel_details.csv", "memory_record.csv",
                        "profiler_metadata.json"}
    con = sqlite3.connect(f"file:{next(only.rglob('ascend_pytorch_profiler_0.db'))}?mode=ro", uri=True)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    con.close()
    assert {"STRING_IDS", "META_DATA", "TASK", "COMPUTE_TASK_INFO", "COMMUNICATION_OP", "MEMORY_RECORD", "NPU_MEM",
            "OP_MEMORY", "STEP_TIME", "RANK_DEVICE_MAP"} <= tables


def test_db_numbers_equal_text_numbers(twin):
    text, db, _ = twin
    assert text.rank_ids == db.rank_ids == list(range(8))
    for r in text.rank_ids:
        a, b = text.ranks[r], db.ranks[r]
        _eq(a.step_trace.steps, b.step_trace.steps, ["step"])
        ca, cb = a.communication, b.communication
        _eq(ca.ops, cb.ops, ["step", "op", "group"])
        _eq(ca.steps, cb.steps, ["step"])
        _eq(ca.links, cb.links, ["step", "scope", "op", "group", "src", "dst", "transport"])
        assert ca.self_local == cb.self_local
        # op_statistic.csv rounds Ratio(%) to 3 decimals: shares agree to 1e-5
        _eq(a.operators.by_type, b.operators.by_type, ["side", "core", "op_type"], atol=1e-5)
        _eq(a.operators.detail, b.operators.detail, ["side", "name"])
        for f in ("peak_mb", "allocated_peak_mb"):
            assert getattr(a.memory, f) == pytest.approx(getattr(b.memory, f), rel=1e-9)
        # the CSV's µs timestamps near 1.7e15 carry 0.25 µs of float resolution; the DB's ns do not
        _eq(a.memory.curve, b.memory.curve, ["x"], atol=1e-3)
        _eq(a.memory.top, b.memory.top, ["name", "size_mb"])
        for f in ("device", "host", "distributed_args", "parallel_groups", "rank_size"):
            assert getattr(a.info, f) == getattr(b.info, f), f
    assert text.info.parallel_index == db.info.parallel_index and text.info.parallel_index
    assert text.info.parallel_mode == db.info.parallel_mode
    assert db.info.parallel_mode_source == "ascend_pytorch_profiler_0.db META_DATA distributed_args"


def test_unread_db_is_named_in_data_quality(twin):
    text = twin[0]
    probs = [(i.file, i.problem) for i in text.ranks[0].issues]
    # the text export holds everything but the chip type, which only the DB's NPU_INFO names (issue 32)
    assert any(f.endswith("ascend_pytorch_profiler_0.db") and p == "read from the DB export: rank facts (NPU_INFO)"
               for f, p in probs)
    assert text.ranks[0].info.device_model == "Ascend910B"
    assert any(f.endswith("analysis.db") and p.startswith("not read") for f, p in probs)
    db = twin[1]
    assert any(i.problem.startswith("read from the DB export") for i in db.ranks[0].issues)


def test_second_profiler_db_is_not_hidden(tmp_path):
    run = generate_run(tmp_path / "run", ranks=2, steps=3, seed=1, export="db")
    d = next(run.glob("*_ascend_pt"))
    prof = d / "PROF_000001_20261121093000000_ABC"
    prof.mkdir()
    shutil.copy(next(d.glob("ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_*.db")), prof / "msprof_20261121.db")
    loaded = _load(run)
    rank = next(r for r in loaded.ranks.values() if any("msprof_20261121.db" in f for f in r.files))
    msg = [i.problem for i in rank.issues if i.file.endswith("msprof_20261121.db")]
    assert msg and msg[0].startswith("not read: a second database")


def test_synthetic_db_slow_rank_found_and_nothing_else(twin):
    fs = _findings(twin[2])
    act = [f for f in fs if f["severity"] in ACTION]
    assert next(f for f in act if f["id"] == "slow-rank.compute")["ranks"] == [3]
    # every other warning is about the same rank (it arrives last, its operators are slower): nothing else
    assert all(f["ranks"] == [3] for f in act), [f["title"] for f in act]
    # and the text export of the same run gives the same findings
    text = twin[2].parent / "both"
    assert sorted((f["id"], f["severity"]) for f in _findings(text)) == sorted((f["id"], f["severity"]) for f in fs)


def test_synthetic_db_healthy_is_silent(tmp_path):
    run = generate_run(tmp_path / "run", ranks=8, steps=6, seed=8, export="db")
    fs = _findings(run)
    assert [f["title"] for f in fs if f["severity"] in ACTION] == []
    assert not any(f["id"].endswith(".failed") for f in fs)


# --- tolerance -----------------------------------------------------------------------------------------


def test_broken_and_partial_databases_never_raise(tmp_path):
    run = generate_run(tmp_path / "run", ranks=2, steps=3, seed=2, export="db")
    dirs = sorted(run.glob("*_ascend_pt"))
    # rank 0: the profiler DB is garbage; rank 1: the analysis DB lost its communication tables
    next(dirs[0].glob("ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_*.db")).write_bytes(b"not a database" * 50)
    con = sqlite3.connect(dirs[1] / "ASCEND_PROFILER_OUTPUT" / "analysis.db")
    con.execute("DROP TABLE CommAnalyzerTime")
    con.execute("DROP TABLE CommAnalyzerMatrix")
    con.commit()
    con.close()
    loaded = _load(run)
    r0, r1 = loaded.ranks[0], loaded.ranks[1]
    assert r0.step_trace is not None and r0.communication is not None  # analysis.db still read
    assert r0.operators is None and any(i.severity == "error" for i in r0.issues)
    assert r1.communication is not None and r1.communication.unit_note.startswith("profiler DB COMMUNICATION_OP")
    assert np.isnan(r1.communication.ops["transit_ms"]).all()


def test_communication_page_names_the_database_it_read(tmp_path):
    """The Communication page's "Source:" names the DB (analysis.db / the profiler DB), not communication.json,
    which a DB export does not have; the text export keeps its label (issue 15)."""
    from bs4 import BeautifulSoup

    from reportgen.cli import main

    def source_line(run: Path, out: Path) -> str:
        assert main([str(run), "-o", str(out), "-q", "--lang", "en"]) == 0
        soup = BeautifulSoup((out / "cluster" / "communication.html").read_text(), "html.parser")
        return next(p.get_text() for p in soup.select("#communication p.muted") if p.get_text().startswith("Source:"))

    db_line = source_line(sample(DB_SAMPLE), tmp_path / "db")
    assert "CANN analysis.db (CommAnalyzerTime" in db_line and "communication.json +" not in db_line
    only_profiler_db = tmp_path / "run"
    shutil.copytree(sample(DB_SAMPLE), only_profiler_db)
    for p in only_profiler_db.glob("*/ASCEND_PROFILER_OUTPUT/analysis.db"):
        p.unlink()
    assert "profiler DB (COMMUNICATION_OP)" in source_line(only_profiler_db, tmp_path / "pdb")
    assert "CANN communication.json + communication_matrix.json" in source_line(sample(TEXT_SAMPLE), tmp_path / "txt")


def test_reading_a_db_export_leaves_the_run_folder_untouched(tmp_path):
    """The DB files (WAL mode) are opened read-only and immutable: no -shm / -wal file appears in the run."""
    run = tmp_path / "run"
    shutil.copytree(sample(DB_SAMPLE), run, ignore=shutil.ignore_patterns("*.db-shm", "*.db-wal"))
    for d in (run, *run.rglob("*")):  # the sample is read-only; the copy is made writable to convert it
        d.chmod(0o755 if d.is_dir() else 0o644)
    for db in run.rglob("*.db"):  # every database in WAL mode (the profiler DB is; analysis.db too, here)
        con = sqlite3.connect(db)
        assert con.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal"
        con.close()
    before = sorted(p.relative_to(run) for p in run.rglob("*"))
    loaded = _load(run)
    assert loaded.ranks[0].communication is not None and loaded.ranks[0].step_trace is not None
    analyze(loaded)
    assert sorted(p.relative_to(run) for p in run.rglob("*")) == before


# --- a standalone msprof database; Level0 exports without operator types (issue 34) ------------------------------


def _task_counts(db_path: Path) -> dict[str, tuple[int, float]]:
    """Kernels per name (count, total ms) read straight from TASK x COMPUTE_TASK_INFO, independently of the loader."""
    con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    names = dict(con.execute("SELECT id, value FROM STRING_IDS"))
    out: dict[str, tuple[int, float]] = {}
    for n, ns in con.execute("SELECT c.name, t.endNs - t.startNs FROM TASK t JOIN COMPUTE_TASK_INFO c "
                             "ON c.globalTaskId = t.globalTaskId"):
        c, ms = out.get(names[n], (0, 0.0))
        out[names[n]] = (c + 1, ms + ns / 1e6)
    con.close()
    return out


def test_standalone_msprof_database_is_discovered_and_read():
    """PROF_*/msprof_*.db with no *_ascend_* folder around it (the real msinsight fixture): one rank, its operators
    equal to TASK x COMPUTE_TASK_INFO counted here with sqlite; the missing step trace is named for the DB."""
    root = sample("external/msinsight_msprof_db_single")
    runs = discover(root)
    assert len(runs) == 1 and sorted(runs[0].ranks) == [0]
    db_path = next(root.glob("PROF_*/msprof_*.db"))
    assert runs[0].ranks[0].files["profiler_db"] == [db_path]
    loaded = load_run(runs[0], jobs=1)
    ops = loaded.ranks[0].operators
    assert ops is not None
    want = _task_counts(db_path)
    got = ops.detail.set_index("name")
    assert set(want) <= set(got.index)
    for name, (count, ms) in want.items():
        assert got.loc[name, "count"] == count and got.loc[name, "total_ms"] == pytest.approx(ms)
    problems = [i.problem for i in loaded.ranks[0].issues]
    assert any("no step trace in the msprof database" in p for p in problems), problems
    assert not any("ASCEND_PROFILER_OUTPUT" in p for p in problems), problems


def test_msprof_database_alone_equals_the_framework_database(tmp_path):
    """The same database moved out of its rank folder into PROF_*/msprof_*.db alone: discovered, the same
    operators as when it was read as the framework's DB (synthetic, so no sample needed)."""
    run = generate_run(tmp_path / "run", ranks=1, steps=3, seed=3, export="db")
    src = next(run.glob("*_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_*.db"))
    alone = tmp_path / "alone" / "PROF_000001_20261121093000000_ABC"
    alone.mkdir(parents=True)
    shutil.copy(src, alone / "msprof_20261121093000.db")
    a, b = _load(run).ranks[0].operators, _load(tmp_path / "alone").ranks[0].operators
    assert a is not None and b is not None
    _eq(a.by_type, b.by_type, ["side", "core", "op_type"])
    _eq(a.detail, b.detail, ["side", "name"])


LEVEL0 = ("external/msinsight_pytorch_2rank_level0_db", "ascend/msinsight_pytorch_2rank_level0_text")


@pytest.mark.parametrize("rel", LEVEL0)
def test_level0_operator_types_come_from_the_names(rel):
    """torch_npu Level0 records Type N/A for every kernel. The types are read from the names and equal the types the
    profiler recorded for the same kernels of the same workload at Level2; data quality says where they came from."""
    level2 = pd.read_csv(sample("ascend/msinsight_pytorch_2rank_level2_text") / "rank0_ascend_pt" /
                         "ASCEND_PROFILER_OUTPUT" / "kernel_details.csv", usecols=["Name", "Type"])
    truth = dict(zip(level2["Name"], level2["Type"]))
    loaded = _load(sample(rel))
    for rank in loaded.ranks.values():
        ops = rank.operators
        assert ops is not None
        assert not ({"N/A", ""} & set(ops.by_type["op_type"])), ops.by_type["op_type"].tolist()
        known = ops.detail[ops.detail["name"].isin(truth)]
        assert len(known) >= 20
        assert (known["op_type"] == known["name"].map(truth)).all(), known[["name", "op_type"]]
        assert any("recorded no operator types" in i.problem for i in rank.issues)


def test_kernel_type_from_name_rules():
    from reportgen.loaders.operators import kernel_type_from_name as t

    assert t("aclnnMm_MatMulCommon_MatMulV2") == "MatMulV2"
    assert t("trans_TransData_12") == "TransData"
    assert t("Conv2DBackpropFilter6") == "Conv2DBackpropFilter"
    assert t("Conv2DBackpropFilter6_MemSet") == "MemSet"
    assert t("hcom_allReduce__576_0_1") == "hcom_allReduce_"
    assert t("atomic_memset-1_68_1413001_1_0") == "MemSet"
    assert t("MatMul") == "MatMul" and t("42") == "42" and t("") == ""
