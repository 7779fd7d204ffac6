"""Issue 17, loading side: the realistic synthetic shape, the columnar fast paths (same frames and data-quality
entries as the careful readers), the local process pool and the Dask scheduler (same summary.json)."""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reportgen.loaders import arrow_csv as columnar, jsonfile, screen, tables
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.jsonfile import read_json
from reportgen.loaders.tables import read_frame
from reportgen.report import build_report
from reportgen.synth import generate_run
from tests.conftest import SAMPLES

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("fidelity", ROOT / "scripts" / "fidelity.py")
fidelity = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fidelity)
_strip = fidelity._strip  # summary.json without its timing fields


# --- the realistic shape -------------------------------------------------------------------------------------------


def test_realistic_shape_sizes_and_identities(tmp_path):
    run = generate_run(tmp_path / "r", ranks=8, steps=3, stages=2, tp=2, kernels_per_step=700, comm_ops_per_step=11,
                       inject=["slow-rank:5:compute:1.3"])
    outs = sorted(run.glob("*/ASCEND_PROFILER_OUTPUT"))
    assert len(outs) == 8
    for out in outs:
        with open(out / "kernel_details.csv", newline="") as f:
            rows = list(csv.DictReader(f))
        assert len(rows) == 3 * 700
        per_step = {}
        for r in rows:
            per_step[r["Step Id"]] = per_step.get(r["Step Id"], 0.0) + float(r["Duration(us)"])
        # the kernels of a step add up to the step trace's computing time (µs, rounding of 700 durations aside)
        with open(out / "step_trace_time.csv", newline="") as f:
            comp = {r["Step"]: float(r["Computing"]) for r in csv.DictReader(f)}
        for step, us in per_step.items():
            assert us == pytest.approx(comp[step], rel=0.03)
        # op_statistic.csv holds the same kernels
        with open(out / "op_statistic.csv", newline="") as f:
            stats = list(csv.DictReader(f))
        assert sum(int(s["Count"]) for s in stats) == len(rows)
        assert sum(float(s["Total Time(us)"]) for s in stats) == pytest.approx(sum(per_step.values()), rel=1e-6)
        # the start times are distinct and increasing within a step, written like torch_npu (3 decimals, a tab)
        starts = [r["Start Time(us)"] for r in rows if r["Step Id"] == "2"]
        assert all(s.endswith("\t") and len(s.strip().split(".")[1]) == 3 for s in starts)
        assert [float(s) for s in starts] == sorted(float(s) for s in starts)
        comm = json.loads((out / "communication.json").read_text())
        assert sorted(comm) == ["step1", "step2", "step3"]
        n_ops = [len(v["collective"]) + len(v["p2p"]) for v in comm.values()]
        assert n_ops == [11, 11, 11]
    slow, fast = outs[5], outs[4]  # rank directories sort by rank (node000_100005_...)

    def total(out: Path) -> float:
        with open(out / "kernel_details.csv", newline="") as f:
            return sum(float(r["Duration(us)"]) for r in csv.DictReader(f))
    assert total(slow) / total(fast) == pytest.approx(1.3, rel=0.05)


def test_comm_ops_split_keeps_the_bytes(tmp_path):
    """Splitting the tensor-parallel collectives into more operators moves the same bytes per step."""
    small = generate_run(tmp_path / "a", ranks=8, steps=1, stages=2, tp=2)
    big = generate_run(tmp_path / "b", ranks=8, steps=1, stages=2, tp=2, comm_ops_per_step=15)

    def size(run: Path) -> tuple[int, float]:
        out = sorted(run.glob("*/ASCEND_PROFILER_OUTPUT"))[0]
        ops = json.loads((out / "communication.json").read_text())["step1"]
        infos = [i for kind in ops.values() for i in kind.values()]
        mb = sum(b["Transit Size(MB)"] for i in infos for t, b in i["Communication Bandwidth Info"].items()
                 if t != "SDMA")
        return len(infos), mb
    n_small, mb_small = size(small)
    n_big, mb_big = size(big)
    assert (n_small, n_big) == (5, 15)
    assert mb_big == pytest.approx(mb_small, rel=1e-4)


def test_shape_preset_report_flags_the_slow_rank(tmp_path):
    run = generate_run(tmp_path / "r", ranks=32, steps=2, shape="torch_npu_large", inject=["slow-rank:11:compute:1.3"])
    meta = json.loads(next(run.glob("*/profiler_metadata.json")).read_text())
    assert meta["distributed_args"]["tensor_model_parallel_size"] == 8
    assert meta["distributed_args"]["pipeline_model_parallel_size"] == 4
    res = build_report(run, tmp_path / "o")
    assert any(f["category"] == "slow_rank" and 11 in f["ranks"] for f in res.summary["findings"])
    # every generated file reads cleanly: no data-quality entry names one
    assert not [q for q in res.summary["data_quality"] if q["file"] and q["severity"] != "info"]
    mem = res.summary["metrics"].get("memory") or {}
    assert mem  # the dense memory_record.csv was read


def test_small_runs_unchanged_by_the_new_knobs(tmp_path):
    """Without the knobs the generator writes exactly what it wrote before (0 means: not given)."""
    a = generate_run(tmp_path / "a", ranks=4, steps=2, stages=2)
    b = generate_run(tmp_path / "b", ranks=4, steps=2, stages=2, kernels_per_step=0, comm_ops_per_step=0)
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files)
    with pytest.raises(ValueError):
        generate_run(tmp_path / "c", layout="mindinsight", ranks=2, steps=1, kernels_per_step=10)


# --- the fast paths: same result as the careful readers ------------------------------------------------------------


def _careful_frame(path: Path, columns: tuple[str, ...], monkeypatch):
    log = IssueLog(path.parent)
    with monkeypatch.context() as m:
        m.setattr(columnar, "read_clean", lambda *a, **k: None)
        df = read_frame(path, log, columns)
    return df, [i.problem for i in log.issues]


@pytest.mark.parametrize("body,fast", [
    ("Name,Start Time(us),Duration(us)\nMatMul,1763717400000000.120\t,12.5\nAdd,1763717400000013.000\t,3\n", True),
    ("Name,Start Time(us),Duration(us)\nMatMul,10\t,12.5\nMatMul,10\t,12.5\n", False),  # duplicated row
    ("Name,Start Time(us),Duration(us)\nMatMul,10,-1\nAdd,11,2\n", False),  # negative duration
    ("Name,Start Time(us),Duration(us)\nMatMul,10,inf\nAdd,11,2\n", False),  # not finite
    ("Name,Start Time(us),Duration(us)\nMatMul,10,12\nAdd,11\n", None),  # short row (pandas pads it: no entry)
    ("Name,Start Time(us),Duration(us)\nMatMul,10,12\n\nAdd,11,2\n", None),  # blank line (skipped, fine)
    ("Name,Start Time(us),Duration(us)\nMatMul,10,12\nAdd,11,2", None),  # no final line break (complete row)
    ("Name,Start Time(us),Duration(us)\nMatMul,10,12\nAdd,11,2\nMul,1", False),  # cut off mid-row
    ("Name,Start Time(us),Duration(us)\nMatMul,10,abc\nAdd,11,2\nMul,12,3\nCast,13,4\n", False),  # text
    ('Name,Start Time(us),Duration(us)\n"Mat,Mul",10,1e400\nAdd,11,2\n', False),  # out of range
    ("\ufeffName,Start Time(us),Duration(us)\nN/A,10,\nAdd,11,2\n", True),  # BOM, missing marks
])
def test_read_frame_fast_path_equals_careful_path(tmp_path, monkeypatch, body, fast):
    p = tmp_path / "kernel_details.csv"
    p.write_text(body, encoding="utf-8")
    cols = ("Name", "Duration(us)")
    took_fast = columnar.read_clean(p, cols, (), True, screen.STAMP_RE, screen.DURATION_RE) is not None
    assert took_fast == bool(fast)
    log = IssueLog(tmp_path)
    df = read_frame(p, log, cols)
    ref, ref_issues = _careful_frame(p, cols, monkeypatch)
    assert [i.problem for i in log.issues] == ref_issues
    assert (df is None) == (ref is None)
    if df is not None:
        assert df.equals(ref) and list(df.dtypes) == list(ref.dtypes) and list(df.columns) == list(ref.columns)
    if fast is False:
        assert ref_issues  # the irregular files above are named in data quality


@pytest.mark.parametrize("text,fast", [
    ('{"a": [1, 2.5, {"b": "x"}], "c": null, "d": true}', True),
    ('{"a": NaN}', False), ('{"a": 1e400}', False), ('{"a": 123456789012345678901234567890}', False),
    ('{"a": 5000000000000000000}', False), ('\ufeff{"a": 1}', True), ('{"a": 1,}', False),
    ('{"a": ' + "[" * 300 + "]" * 300 + "}", False),  # deeper than MAX_JSON_DEPTH: never handed to orjson
    ('{"a": "]]]]", "b": ' + "[" * 150 + "]" * 150 + "}", True),  # brackets inside strings do not count
    ('[1.5e+20]', False), ('{"a": 99999999999e9}', False), ('{"a": [-4611686018427387905]}', False),
    ('{"op@3985311011064145515": [1, 2.5e-05, 1700000000001000.0, -12]}', True),  # long digits in a key: fine
])
def test_read_json_fast_path_equals_careful_path(tmp_path, monkeypatch, text, fast):
    p = tmp_path / "communication.json"
    p.write_text(text, encoding="utf-8")
    assert (jsonfile._fast_json(p.read_bytes()) is not jsonfile._MISS) == fast
    log = IssueLog(tmp_path)
    got = read_json(p, log)
    ref_log = IssueLog(tmp_path)
    with monkeypatch.context() as m:
        m.setattr(jsonfile, "_fast_json", lambda raw: jsonfile._MISS)
        ref = read_json(p, ref_log)
    assert repr(got) == repr(ref)
    assert [i.problem for i in log.issues] == [i.problem for i in ref_log.issues]


KD = "Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us)\n"


@pytest.mark.parametrize("small", [True, False])  # small files: str.split (`_read_small`), else pyarrow
@pytest.mark.parametrize("body,fast", [
    (KD + "1,MatMul_1,MatMul,AI_CORE,1763717400000000.120\t,12.5\n1, Add_2 ,Add,AI_VECTOR_CORE,1763717400000013.0\t,3\n"
     "1,hcom_allReduce_1,hcom_allReduce_,HCCL,1763717400000020\t,40\n1,MatMul_1,MatMul,AI_CORE,1763717400000070,2\n", True),
    (KD + "1,MatMul,MatMul,AI_CORE,10,12.5\n1,MatMul,MatMul,AI_CORE,10,12.5\n", False),  # duplicated row
    (KD + "1,MatMul,MatMul,AI_CORE,10,-1\n1,Add,Add,AI_CORE,11,2\n", False),  # negative duration
    (KD + "1,MatMul,MatMul,AI_CORE,10,inf\n1,Add,Add,AI_CORE,11,2\n", False),  # not finite
    (KD + "1,MatMul,MatMul,AI_CORE,10,N/A\n1,Add,Add,AI_CORE,11,2\n", True),  # a missing duration: NaN, named
    (KD + "1,MatMul,MatMul,AI_CORE,10,n/a\n1,Add,Add,AI_CORE,11,abc\n", False),  # text in a number column
    (KD + "1,MatMul,MatMul,AI_CORE,10,1\n1,Add,Add,AI_CORE,11\n", False),  # short row
    (KD + "1,MatMul,MatMul,AI_CORE,10,1\n1,Add,Add,AI_CORE,11,2\n1,Mul,Mul", False),  # cut off mid-row
    (KD + "1,123,MatMul,AI_CORE,10,1\n1,Add,Add,AI_CORE,11,2\n", False),  # a number in a text column
    (KD + "1,NaN,MatMul,AI_CORE,10,1\n1,Add,Add,AI_CORE,11,2\n", False),  # a non-finite token in a text column
    (KD + "1,MatMul,MatMul,AI_CORE,,1\n1,Add,Add,AI_CORE,11,2\n", False),  # a time stamp missing
    ("\ufeff" + KD.replace("\n", "\r\n") + "1,MatMul,MatMul,AI_CORE,10,1\r\n1,Add,Add,AI_CORE,11,2\r\n", True),
    ("Name,Type,Duration(us)\nMatMul,MatMul,1\nAdd,Add,2\nMatMul,MatMul,4\n", True),  # no core, no stamp
    ("Name,Type,Duration(us)\rMatMul,MatMul,1\rAdd,Add,2\n", False),  # old Mac line breaks: counted, careful
    ('Name,Type,Duration(us)\n"Mat\nMul",MatMul,1\nAdd,Add,2\n', False),  # a line break inside a value
    (KD + "1,MatMul,MatMul,AI_CORE,30,1\n1,Add,Add,AI_CORE,11,2\n1,Mul,Mul,AI_CORE,20,3\n", True),  # stamps unsorted
    (KD + "".join(f"1,{' MatMul ' if i % 3 else 'MatMul'},MatMul,AI_CORE,{10 + i},{i % 5}\n" for i in range(400)),
     True),  # two spellings of one name merged by stripping: codes renumbered (> 8 KB: pyarrow)
    (KD + "1,MatMul,MatMul,AI_CORE,30,1\n1,Add,Add,AI_CORE,11,2\n1,MatMul,MatMul,AI_CORE,30,1\n", False),  # dup, apart
    (KD + "".join(f"1,Op{i % 7},Op,AI_CORE,{10 + i},{i % 5}\n" for i in range(4000)), True),  # > 64 KB, sorted
    (KD + "".join(f"1,Op{i % 7},Op,AI_CORE,{10 + i},{i % 5}\n" + ("\n" if i == 2000 else "") for i in range(4000)),
     False),  # > 64 KB with a blank line: lines counted, the careful path
    (KD + "".join(f"1,Op{i % 7},Op,AI_CORE,{10 + i},{i % 5}\n" for i in range(4000))
     + "1,Op0,Op,AI_CORE,10,0\n", False),  # > 64 KB, the first row repeated last
])
def test_typed_fast_path_equals_careful_path(tmp_path, monkeypatch, body, fast, small):
    """kernel_details.csv through the typed reader (pyarrow, dictionary-encoded names) gives the tables and the
    data-quality entries of the careful path, on clean and on broken files."""
    from reportgen.loaders import operators

    if not small:
        monkeypatch.setattr(columnar, "SMALL_BYTES", -1)
    p = tmp_path / "kernel_details.csv"
    p.write_bytes(body.encode("utf-8"))
    took_fast = columnar.read_typed(p, ("Name", "Type", "Accelerator Core"), ("Duration(us)",),
                                    ("Accelerator Core",), screen.STAMP_RE, screen.DURATION_RE) is not None
    assert took_fast == fast
    log = IssueLog(tmp_path)
    got = operators.load_kernel_details(p, log)
    ref_log = IssueLog(tmp_path)
    with monkeypatch.context() as m:
        m.setattr(columnar, "read_typed", lambda *a, **k: None)
        m.setattr(columnar, "read_clean", lambda *a, **k: None)
        ref = operators.load_kernel_details(p, ref_log)
    assert [i.problem for i in log.issues] == [i.problem for i in ref_log.issues]
    assert (got is None) == (ref is None)
    if got is not None:
        for a, b in zip(got, ref):
            assert a.equals(b) and list(a.dtypes) == list(b.dtypes)
    if "hcom_allReduce_1" in body:  # hand-computed: MatMul_1 twice (12.5 + 2 us), the share of computing time
        by_type, detail = got
        assert list(detail["name"]) == ["MatMul_1", "Add_2", "hcom_allReduce_1"]  # first appearance, stripped
        assert list(by_type["op_type"]) == ["MatMul", "Add", "hcom_allReduce_"]
        d = detail.set_index("name")
        assert d.loc["MatMul_1", "count"] == 2 and d.loc["MatMul_1", "total_ms"] == pytest.approx(0.0145)
        assert d.loc["MatMul_1", "share"] == pytest.approx(14.5 / 17.5)
        assert d.loc["hcom_allReduce_1", "side"] == "communication" and d.loc["hcom_allReduce_1", "share"] == 1.0


def test_typed_reader_on_the_real_samples_equals_the_careful_path(monkeypatch):
    """Every kernel_details / op_statistic / memory_record CSV of the real samples: the typed reader's columns equal
    what the careful path makes of the same file."""
    root = SAMPLES
    files = sorted(root.glob("**/kernel_details.csv")) + sorted(root.glob("**/memory_record.csv"))
    if not files:
        pytest.skip(f"real samples not found under {root}")
    specs = {"kernel_details.csv": (("Name", "Type", "Accelerator Core"), ("Duration(us)",)),
             "memory_record.csv": (("Component",), ("Timestamp(us)", "Total Allocated(MB)", "Total Reserved(MB)"))}
    fast_count = 0
    for p in files:
        text, numeric = specs[p.name]
        fast = columnar.read_typed(p, text, numeric, ("Accelerator Core",), screen.STAMP_RE, screen.DURATION_RE)
        with monkeypatch.context() as m:
            m.setattr(columnar, "read_clean", lambda *a, **k: None)
            df = read_frame(p, IssueLog(p.parent), (*text, *numeric), ("Accelerator Core",))
        if fast is None or df is None:
            continue
        fast_count += 1
        ref = tables.typed_from_frame(df, text, numeric)
        assert set(fast) == set(ref), p
        for c in text:
            if c in fast:
                assert list(fast[c].codes) == list(ref[c].codes) and fast[c].uniques == ref[c].uniques, (p, c)
        for c in numeric:
            assert np.array_equal(fast[c], ref[c], equal_nan=True), (p, c)
    assert fast_count >= len(files) // 2  # the real files are clean: most take the fast path


# --- where the ranks are loaded: one process, a pool, a Dask cluster -----------------------------------------------


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("scale")
    return generate_run(base / "run", ranks=8, steps=3, stages=2, tp=2, kernels_per_step=200, comm_ops_per_step=9,
                        inject=["slow-rank:3:compute:1.3", "corrupt-comm:6"])


def test_process_pool_equals_one_process(small_run, tmp_path, monkeypatch):
    from reportgen.layouts import run

    monkeypatch.setattr(run, "PARALLEL_MIN_RANKS", 2)
    one = build_report(small_run, tmp_path / "one", jobs=1)
    two = build_report(small_run, tmp_path / "two", jobs=2)
    assert _strip(two.summary) == _strip(one.summary)
    assert any(q["file"].endswith("communication.json") for q in one.summary["data_quality"])


@pytest.mark.slow  # starts a Dask LocalCluster: CI's slow stage (issue 31: the default suite within 8 min)
def test_dask_local_cluster_equals_local_build(small_run, tmp_path):
    distributed = pytest.importorskip("distributed")
    local = build_report(small_run, tmp_path / "local", jobs=1)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None) as cluster:
        res = build_report(small_run, tmp_path / "dask", scheduler=cluster.scheduler_address)
        prefixes = set(cluster.scheduler.task_prefixes)
    assert "load_rank" in prefixes  # the ranks really were loaded on the cluster's workers
    assert _strip(res.summary) == _strip(local.summary)
    a = json.loads((tmp_path / "dask" / "summary.json").read_text())
    b = json.loads((tmp_path / "local" / "summary.json").read_text())
    assert _strip(a) == _strip(b)
    assert any(f["category"] == "slow_rank" and 3 in f["ranks"] for f in a["findings"])


def _cli(args: list[str], pre: str = "") -> subprocess.CompletedProcess:
    code = f"import sys;{pre}from reportgen.cli import main;sys.exit(main(sys.argv[1:]))"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)


def test_scheduler_without_dask_is_one_line_with_the_install_command(small_run, tmp_path):
    p = _cli([str(small_run), "-o", str(tmp_path / "o"), "--scheduler", "tcp://127.0.0.1:8786", "-q"],
             pre="sys.modules['distributed']=None;")
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and 'pip install "msreport[dask]"' in lines[0]
    assert not (tmp_path / "o").exists()


def test_scheduler_value_checked(small_run, tmp_path):
    p = _cli([str(small_run), "-o", str(tmp_path / "o"), "--scheduler", "somewhere", "-q"])
    assert p.returncode == 2 and "tcp://HOST:8786" in p.stderr and len(p.stderr.strip().splitlines()) == 1


@pytest.mark.slow  # waits for a Dask connection timeout: CI's slow stage (issue 31: the default suite within 8 min)
def test_scheduler_unreachable_is_a_user_error(small_run, tmp_path):
    pytest.importorskip("distributed")
    p = _cli([str(small_run), "-o", str(tmp_path / "o"), "--scheduler", "tcp://127.0.0.1:9", "-q"])
    assert p.returncode == 2, p.stderr
    assert "cannot reach the Dask scheduler" in p.stderr


# --- memory_record in numpy: the same peaks and curve as the pandas code it replaced ------------------------------


def _record_curve_reference(ts, alloc, res, comp_values):
    """The pandas implementation memory_record.csv had before `record_curve` (kept here as the oracle)."""
    from reportgen.loaders.memory import _downsample

    ts, alloc, res, comp = pd.Series(ts), pd.Series(alloc), pd.Series(res), pd.Series(comp_values, dtype=object)
    t0 = ts.min()
    app = comp == "APP"
    alloc_comp = next((c for c in ("PTA+GE", "PTA", "GE", "MindSpore", "MS") if (comp == c).any()), None)
    allocated_peak = None
    if app.any() and res[app].notna().any():
        curve = pd.DataFrame({"x": (ts[app] - t0) / 1e3, "used_mb": res[app]})
        peak = float(res[app].max())
    elif alloc_comp is not None:
        sel = comp == alloc_comp
        curve = pd.DataFrame({"x": (ts[sel] - t0) / 1e3, "used_mb": res[sel]})
        peak = float(res[sel].max())
    else:
        curve = pd.DataFrame({"x": (ts - t0) / 1e3, "used_mb": res})
        peak = float(res.max()) if res.notna().any() else None
    if alloc_comp is not None:
        sel = comp == alloc_comp
        allocated_peak = float(alloc[sel].max()) if alloc[sel].notna().any() else None
        allocated = pd.DataFrame({"x": (ts[sel] - t0) / 1e3, "allocated_mb": alloc[sel]})
        curve = pd.merge_asof(curve.dropna().sort_values("x"), allocated.dropna().sort_values("x"),
                              on="x", direction="backward")
    return peak, allocated_peak, _downsample(curve.dropna(subset=["used_mb"]).sort_values("x"), "used_mb")


@pytest.mark.parametrize("seed", range(40))
def test_record_curve_equals_the_pandas_reference(seed):
    from reportgen.loaders.arrow_csv import Coded
    from reportgen.loaders.memory import record_curve

    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 5, 300, 700, 2500]))
    names = list(rng.choice(["APP", "PTA", "PTA+GE", "GE", "MS", "other"], size=int(rng.integers(1, 4)), replace=False))
    comp = [names[i] for i in rng.integers(0, len(names), n)]
    ts = np.round(1.7e15 + np.sort(rng.uniform(0, 5e6, n)) * (1 if seed % 3 else -1), 3)  # some runs out of order
    ts[rng.integers(0, n, n // 50)] = ts[rng.integers(0, n, n // 50)]  # equal time stamps
    alloc = np.round(rng.uniform(0, 60000, n), 3)
    res = np.round(alloc + rng.uniform(0, 4000, n), 3)
    for arr, share in ((alloc, 0.3), (res, 0.1), (ts, 0.02 if seed % 4 == 0 else 0.0)):
        arr[rng.random(n) < share] = np.nan
    if seed % 5 == 0:
        res[np.array(comp) == "APP"] = np.nan  # APP rows without a reserved figure
    codes, uniques = pd.factorize(pd.Series(comp, dtype=object))
    got = record_curve(ts, alloc, res, Coded(np.asarray(codes, dtype=np.int64), list(uniques)))
    ref = _record_curve_reference(ts, alloc, res, comp)
    for g, r in zip(got[:2], ref[:2]):
        assert (g is None and r is None) or (g is not None and r is not None and (g == r or (np.isnan(g) and np.isnan(r))))
    assert list(got[2].columns) == list(ref[2].columns)
    assert np.array_equal(got[2].to_numpy(dtype=float), ref[2].to_numpy(dtype=float), equal_nan=True)


@pytest.mark.parametrize("seed", range(20))
def test_downsample_equals_the_groupby_reference(seed):
    """The numpy bucket min/max of `_downsample` keeps the rows pandas' groupby idxmin/idxmax kept (ties: first)."""
    from reportgen.loaders.memory import MAX_CURVE_POINTS, _downsample

    rng = np.random.default_rng(seed)
    n = int(rng.choice([601, 1000, 4321, 20000]))
    df = pd.DataFrame({"x": np.arange(n, dtype=float), "used_mb": np.round(rng.uniform(0, 50, n), int(seed % 3))})
    got = _downsample(df, "used_mb")
    bucket = np.arange(n) * (MAX_CURVE_POINTS // 2) // n
    g = df.groupby(bucket)["used_mb"]
    ref = df.loc[np.unique(np.concatenate([g.idxmax().to_numpy(), g.idxmin().to_numpy()]))].reset_index(drop=True)
    assert got.equals(ref) and len(got) <= MAX_CURVE_POINTS


OS = "OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%)\n"
OM = "Name,Size(KB),Allocation Time(us),Release Time(us),Duration(us)\n"


@pytest.mark.parametrize("name,body,small", [
    ("op_statistic.csv", OS + "MatMul,AI_CORE,4,10.5,1,2.5,4,60\n Add ,AI_VECTOR_CORE,2,7,3,3.5,4,40\n", True),
    ("op_statistic.csv", OS + "MatMul,AI_CORE,+4,1e1,.5,5.,4\t, 60 \nAdd,AI_CORE,2,7,3,3.5,4,-0\n", True),
    ("op_statistic.csv", OS + "MatMul,AI_CORE,4,10.5,1,2.5,4,N/A\nAdd,AI_CORE,2,,3,3.5,4,NULL\n", True),
    ("op_statistic.csv", OS + "MatMul,AI_CORE,4,10.5,1,2.5,4,60\nMatMul,AI_CORE,4,10.5,1,2.5,4,60\n", True),  # dup
    ("op_statistic.csv", OS + "MatMul,AI_CORE,4,1_0,1,2.5,4,60\n", False),  # Python's float would take 1_0
    ("op_statistic.csv", OS + "MatMul,AI_CORE,4,0x10,1,2.5,4,60\n", False),
    ("op_statistic.csv", OS + "MatMul,AI_CORE,4,\u00a010,1,2.5,4,60\n", False),  # a no-break space
    ("op_statistic.csv", OS + "MatMul,AI_CORE,4,inf,1,2.5,4,60\n", False),
    ("op_statistic.csv", OS + "MatMul,AI_CORE,4,1e400,1,2.5,4,60\n", False),
    ("op_statistic.csv", OS + "MatMul,AI_CORE,4,99999999999999999999,1,2.5,4,60\n", False),  # past 2^62
    ("op_statistic.csv", OS + "MatMul,AI_CORE,4,4611686018427387904,1,2.5,4,60\n", True),  # 2^62 itself
    ("operator_memory.csv", OM + "aten::mm,4096,100,200,-0\naten::add,12,101,,0\n", True),  # -0: no negative
    ("operator_memory.csv", OM + "aten::mm,4096,100,200,1\naten::add,12,100,300,2\n", True),  # (no stamp column)
    ("operator_memory.csv", OM + "aten::mm,4096,100,200,1e400\naten::add,12,101,300,2\n", False),  # inf duration
    ("op_statistic.csv", OS + "MatMul,AI_CORE,4,-3,1,2.5,4,60\n", True),  # negative: named by the door, both paths
    ("op_statistic.csv", OS + "MatMul,AI_CORE,4,n/a,1,2.5,4,60\n", True),  # a null spelling
    ("op_statistic.csv", OS + "MatMul,AI_CORE,4, NA,1,2.5,4,60\n", False),  # a null spelling with a space
    ("op_statistic.csv", OS + "12,AI_CORE,4,10,1,2.5,4,60\n", False),  # a number in a text column
    ("op_statistic.csv", OS + "inf,AI_CORE,4,10,1,2.5,4,60\n", False),
    ("op_statistic.csv", OS + "MatMul,AI_CORE,4,10,1,2.5,4,60\n\nAdd,AI_CORE,2,7,3,3.5,4,40\n", False),  # blank
    ("op_statistic.csv", OS + "MatMul,AI_CORE,4,10,1,2.5,4\nAdd,AI_CORE,2,7,3,3.5,4,40\n", False),  # short row
    ("op_statistic.csv", OS.replace("\n", "\r\n") + "MatMul,AI_CORE,4,10,1,2.5,4,60\r\n", False),  # CRLF: pyarrow
    ("op_statistic.csv", OS + '"MatMul",AI_CORE,4,10,1,2.5,4,60\n', False),  # quoted: pyarrow
    ("op_statistic.csv", OS + "Mat\udc80Mul,AI_CORE,4,10,1,2.5,4,60\n", False),  # invalid UTF-8
    ("operator_memory.csv", OM + "aten::mm,4096,100.5\t,200\t,99.5\naten::add,12,101,,N/A\n", True),
    ("operator_memory.csv", OM + "aten::mm,4096,100,200,-100\n", False),  # a negative duration
    ("operator_memory.csv", OM + "aten::mm,4096,100,200,100\naten::mm,4096,100,200,100\n", True),  # the door's
    ("kernel_details.csv", KD + "1,MatMul,MatMul,AI_CORE,10,1\n1,Add,Add,AI_CORE,10,2\n", False),  # stamp repeated
    ("kernel_details.csv", KD + "1,MatMul,MatMul,AI_CORE,10,1\n1,Add,Add,AI_CORE,,2\n", False),  # stamp missing
    ("kernel_details.csv", KD + "1,MatMul,MatMul,AI_CORE,10,1\n1,Add,Add,AI_CORE,9,2\n", True),  # unsorted stamps
    ("kernel_details.csv", "Name,Type,Duration(us)\nMatMul,MatMul,1\nAdd,Add,2\n", True),  # no stamp
    ("kernel_details.csv", KD + "1,MatMul,MatMul,AI_CORE,10,12.5\n1,Add,Add,,11,3\n", True),
])
def test_small_reader_equals_pyarrow(tmp_path, monkeypatch, name, body, small):
    """A small CSV read with str.split (`arrow_csv._read_small`) gives pyarrow's typed columns exactly (codes,
    uniques, numbers, or None), and declines whatever it does not read as pyarrow does."""
    p = tmp_path / name
    p.write_bytes(body.encode("utf-8", errors="surrogateescape"))
    spec = {"op_statistic.csv": (("OP Type", "Core Type"), ("Count", "Total Time(us)", "Min Time(us)", "Avg Time(us)",
                                                             "Max Time(us)", "Ratio(%)"), ()),
            "operator_memory.csv": (("Name",), ("Size(KB)", "Duration(us)"), ()),
            "kernel_details.csv": (("Name", "Type", "Accelerator Core"), ("Duration(us)",), ("Accelerator Core",))}
    text, numeric, optional = spec[name]
    clean = columnar._open_clean(p, (*text, *numeric), optional, screen.STAMP_RE, None)
    took = clean is not None and columnar._read_small(clean, text, (*text, *numeric), screen.STAMP_RE,
                                                      screen.DURATION_RE) is not None
    assert took == small
    got = columnar.read_typed(p, text, numeric, optional, screen.STAMP_RE, screen.DURATION_RE)
    monkeypatch.setattr(columnar, "SMALL_BYTES", -1)
    ref = columnar.read_typed(p, text, numeric, optional, screen.STAMP_RE, screen.DURATION_RE)
    assert (got is None) == (ref is None)
    if got is not None:
        assert list(got) == list(ref)
        for c, v in got.items():
            if isinstance(v, np.ndarray):
                assert v.dtype == ref[c].dtype and np.array_equal(v, ref[c], equal_nan=True), c
                assert np.array_equal(np.signbit(v), np.signbit(ref[c])), c  # -0 stays -0
            else:
                assert v.codes.dtype == ref[c].codes.dtype and list(v.codes) == list(ref[c].codes), c
                assert v.uniques == ref[c].uniques, c
    if "10.5,1,2.5,4,60\n Add" in body:  # by hand: codes in order of first appearance, names stripped
        assert got["OP Type"].uniques == ["MatMul", "Add"] and list(got["Total Time(us)"]) == [10.5, 7.0]


def test_column_patterns_take_the_cells_one_cell_at_a_time_takes_in_linear_time():
    """The patterns that judge a whole column at once (`screen._PLAIN_CELLS`: cells `number_problem` accepts as
    numbers; `arrow_csv._PLAIN_COLUMN` / `_NUMBER_OR_NULL_COLUMN`: cells `_read_small` reads as numbers, or as
    numbers and null spellings) take a column exactly when each cell alone is taken, and refuse a long column whose
    last cell is bad without backtracking into the others."""
    import random
    import re
    import time

    number = re.compile(r"[ \t]*" + screen.NUMBER_RE.pattern + r"[ \t]*")
    one = {screen._PLAIN_CELLS: number.fullmatch, columnar._PLAIN_COLUMN: columnar._PLAIN_NUMBER.fullmatch,
           columnar._NUMBER_OR_NULL_COLUMN: lambda c: c in columnar._NULL_CELLS or columnar._PLAIN_NUMBER.fullmatch(c)}
    rng = random.Random(3)
    cells = ["".join(rng.choice("0123456789.eE+- \tx") for _ in range(rng.randint(0, 7))) for _ in range(20000)]
    cells += ["1", "1.", ".5", "1e5", "1.5E-3", "+.5", "-0", " 7\t", "1e", "e5", ".", "", "1.2.3", "--1", "1 2"]
    cells += [*columnar._NULL_CELLS, "NaN", "nan", " NA", "N/A ", "---", "-1", "n/a1", "None-"]
    for column, cell in one.items():
        for c in cells:
            assert bool(column.fullmatch(c)) == bool(cell(c)), repr(c)
        for _ in range(3000):
            col = rng.sample(cells, rng.randint(1, 5))
            assert bool(column.fullmatch("\n".join(col))) == all(cell(c) for c in col), col
        t = time.perf_counter()
        for last in ("1234567890123456x", "abc", "1e"):
            assert not column.fullmatch("\n".join(["1763717400000000.000\t"] * 20000 + [last]))
        assert time.perf_counter() - t < 2.0  # (a backtracking pattern: hours)


@pytest.mark.parametrize("body", [
    b"Step,Computing,Free\n1,10.5,2\n2,11,3\n", b"\xef\xbb\xbfStep,Computing\r\n1,10\r\n2,11\r\n",
    b"Step,Computing\r1,10\r2,11\r", b"Step,Computing,Free\n1,10,2\n2,11", b"Step,Computing,Free\n1,10\n2,11,3,4\n",
    b'Step,Name\n1,"a\nb"\n2,"c""d"\n', b"Step,Computing\n1,1\xff0\n", b"Step,Computing\n1,1\x000\n", b"",
    b"\n\n", b"Step,Computing,,\n1,10,,\n\n2,abc\n3,-1\n3,-1\n", b'Step,Name\n1,"unclosed\n2,x\n',
    b"Step,Computing\n1,10\n2,\xe4\xb8",  # cut inside a character
])
def test_csv_rows_read_once_equals_the_guarded_reads(tmp_path, monkeypatch, body):
    """`read_csv_rows` reads a small clean CSV once (no separate guard, encoding and tail reads): the same header,
    rows and data-quality entries as the guarded path, on clean, odd and damaged files."""
    p = tmp_path / "step_trace_time.csv"
    p.write_bytes(body)
    got_log, ref_log = IssueLog(tmp_path), IssueLog(tmp_path)
    got = tables.read_csv_rows(p, got_log)
    monkeypatch.setattr(tables, "SMALL_TEXT_BYTES", -1)
    ref = tables.read_csv_rows(p, ref_log)
    assert got == ref
    assert [(i.file, str(i.problem), i.severity) for i in got_log.issues] == \
        [(i.file, str(i.problem), i.severity) for i in ref_log.issues]


def test_small_reader_on_the_real_samples_equals_pyarrow(monkeypatch):
    """Every op_statistic / operator_memory / kernel_details / memory_record CSV of the real samples: the typed
    reader with the small-file reader on equals it with pyarrow alone (the small files really take the former)."""
    spec = {"op_statistic.csv": (("OP Type", "Core Type"), ("Count", "Total Time(us)", "Min Time(us)",
                                                             "Avg Time(us)", "Max Time(us)", "Ratio(%)"), ()),
            "operator_memory.csv": (("Name",), ("Size(KB)", "Duration(us)"), ()),
            "kernel_details.csv": (("Name", "Type", "Accelerator Core"), ("Duration(us)",), ("Accelerator Core",)),
            "memory_record.csv": (("Component",), ("Timestamp(us)", "Total Allocated(MB)", "Total Reserved(MB)"),
                                  ())}
    files = [(p, spec[n]) for n in spec for p in sorted(SAMPLES.glob(f"**/{n}"))]
    if not files:
        pytest.skip(f"real samples not found under {SAMPLES}")
    small = 0
    for p, (text, numeric, optional) in files:
        got = columnar.read_typed(p, text, numeric, optional, screen.STAMP_RE, screen.DURATION_RE)
        clean = columnar._open_clean(p, (*text, *numeric), optional, screen.STAMP_RE, None)
        small += clean is not None and len(clean.data) <= columnar.SMALL_BYTES and columnar._read_small(
            clean, text, (*text, *numeric), screen.STAMP_RE, screen.DURATION_RE) is not None
        with monkeypatch.context() as m:
            m.setattr(columnar, "SMALL_BYTES", -1)
            ref = columnar.read_typed(p, text, numeric, optional, screen.STAMP_RE, screen.DURATION_RE)
        assert (got is None) == (ref is None), p
        if got is not None:
            assert list(got) == list(ref), p
            for c, v in got.items():
                if isinstance(v, np.ndarray):
                    assert np.array_equal(v, ref[c], equal_nan=True), (p, c)
                else:
                    assert list(v.codes) == list(ref[c].codes) and v.uniques == ref[c].uniques, (p, c)
    assert small >= 1  # the samples' op_statistic / operator_memory files are small and clean
