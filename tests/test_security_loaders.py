"""The loader door (reportgen.loaders: files, screen, tables, jsonfile, traces): regular files only, bounded parsing, one numeric normaliser."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from reportgen.loaders.files import open_file, read_text, run_root
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.jsonfile import read_json
from reportgen.loaders.screen import number_problem
from reportgen.loaders.tables import read_csv_rows, read_frame
from reportgen.loaders.traces import trace_events
from reportgen.numbers import to_float, to_int

REPO = Path(__file__).resolve().parents[1]


def _finishes(fn, seconds=10.0):
    out = {}

    def run():
        try:
            out["v"] = fn()
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller
            out["e"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), "blocked"
    if "e" in out:
        raise out["e"]
    return out.get("v")


@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_non_regular_files_are_named_never_opened(tmp_path, kind):
    p = tmp_path / "step_trace_time.csv"
    if kind == "fifo":
        os.mkfifo(p)
    else:
        p.mkdir()
    for reader in (lambda log: read_csv_rows(p, log), lambda log: read_json(p, log),
                   lambda log: read_frame(p, log, ("a",)), lambda log: read_text(p, log)):
        log = IssueLog(tmp_path)
        assert _finishes(lambda: reader(log)) is None
        assert log.issues and log.issues[0].file == "step_trace_time.csv"
        assert ("pipe" in log.issues[0].problem or "directory" in log.issues[0].problem), log.issues[0].problem
    with pytest.raises(OSError):
        _finishes(lambda: list(trace_events(p)))


def test_link_out_of_the_run_is_not_followed(tmp_path):
    secret = tmp_path / "outside.csv"
    secret.write_text("a,b\n1,2\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "x.csv").symlink_to(secret)
    log = IssueLog(run)
    assert read_csv_rows(run / "x.csv", log) is None
    assert "symbolic link out of the run" in log.issues[0].problem


@pytest.mark.parametrize("value,problem", [("inf", "not a finite number"), ("nan", "not a finite number"),
                                           ("1e400", "out of range"), ("9" * 30, "out of range"),
                                           ("abc", "text in a numeric column"), ("-Infinity", "not a finite number"),
                                           ("N/A", None), ("", None), ("12.5", None), ("-3e2", None)])
def test_number_problem(value, problem):
    assert number_problem(value) == problem


def test_to_float_and_to_int_never_give_infinities():
    for v in ("inf", "1e400", "9" * 30, float("inf"), 10 ** 40, "nan"):
        assert math.isnan(to_float(v)) and to_int(v) is None
    assert to_int("12") == 12 and to_float("1.5") == 1.5


def test_numeric_normaliser_names_file_line_column(tmp_path):
    p = tmp_path / "k.csv"
    p.write_text("Name,Start Time(us),Duration(us)\nA,1,2\nB,3,inf\nC,5,-4\nD,7,abc\nE,9," + "9" * 30
                 + "\nF,11,1\nF,11,1\nG,13,1\n")
    log = IssueLog(tmp_path)
    header, rows = read_csv_rows(p, log)
    assert [c[0] for _, c in rows] == ["A", "F", "G"]
    text = " | ".join(i.problem for i in log.issues)
    assert "4 row(s) with an unusable number" in text and "line 3, column 'Duration(us)': 'inf'" in text
    assert "1 duplicated row(s)" in text and all(i.file == "k.csv" for i in log.issues)
    log = IssueLog(tmp_path)
    df = read_frame(p, log, ("Name", "Duration(us)"))
    assert list(df["Name"]) == ["A", "F", "G"]  # duplicates judged on the whole row (timestamps included)
    assert any("negative duration" in i.problem or "unusable" in i.problem for i in log.issues)


def test_truncated_csv_is_reported_as_truncated(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("a,b,c\n1,2,3\n4,5,6\n7,8")
    log = IssueLog(tmp_path)
    header, rows = read_csv_rows(p, log)
    assert len(rows) == 2 and "ends mid-row (truncated?): 2 complete row(s) read" in log.issues[0].problem
    log = IssueLog(tmp_path)
    df = read_frame(p, log, ("a", "b", "c"))
    assert len(df) == 2 and "ends mid-row" in log.issues[0].problem


def test_deep_and_non_finite_json(tmp_path):
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    log = IssueLog(tmp_path)
    assert _finishes(lambda: read_json(deep, log)) is None and "nested" in log.issues[0].problem
    trace = tmp_path / "trace.json"
    trace.write_text('{"traceEvents": ' + "[" * 200_000 + "]" * 200_000 + "}")
    with pytest.raises(ValueError, match="nested"):
        _finishes(lambda: list(trace_events(trace)))
    nf = tmp_path / "nf.json"
    nf.write_text('{"a": Infinity, "b": NaN, "c": 1e400, "d": ' + "9" * 30 + ', "e": 2}')
    log = IssueLog(tmp_path)
    assert read_json(nf, log) == {"a": None, "b": None, "c": None, "d": None, "e": 2}
    assert "4 non-finite or out-of-range" in log.issues[0].problem
    ev = tmp_path / "ev.json"
    ev.write_text('[{"ph": "X", "ts": 1e300, "dur": 1}, {"ph": "X", "ts": 1, "dur": 2}]')
    assert [e["ts"] for e in trace_events(ev)] == [1]


def test_binary_garbage_in_a_huge_csv_costs_little(tmp_path):
    """A header and 1 GB of NUL bytes (sparse): named, skipped, no memory balloon (it peaked at 4.2 GB for 2 GB)."""
    p = tmp_path / "kernel_details.csv"
    p.write_text("Name,Type,Accelerator Core,Duration(us)\n")
    os.truncate(p, 1 << 30)
    code = ("import resource, sys; from pathlib import Path; from reportgen.loaders.issuelog import IssueLog; "
            "from reportgen.loaders.tables import read_frame, read_csv_rows; p = Path(sys.argv[1]); log = IssueLog(p.parent); "
            "assert read_frame(p, log, ('Name',)) is None and read_csv_rows(p, log) is None; "
            "print(log.issues[0].problem); print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)")
    t0 = time.monotonic()
    out = subprocess.run([sys.executable, "-c", code, str(p)], cwd=REPO, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    problem, rss_kb = out.stdout.strip().splitlines()
    assert "binary data (NUL byte" in problem
    assert int(rss_kb) < 600 * 1024, f"peak {int(rss_kb) // 1024} MB"  # the interpreter and pandas: ~200 MB
    assert time.monotonic() - t0 < 60


# --- regressions from the fuzz sweep (issue 18) -------------------------------------------------------------------


def test_streamed_json_nested_absurdly_deep_is_refused_fast(tmp_path):
    """200,000 nested arrays made ijson build gigabyte prefixes (a hang, then the OOM killer): now refused at once,
    in the trace reader and in discovery's Kineto header peek alike."""
    from reportgen.discover.peek import kineto_header
    from reportgen.jsonguard import JsonTooDeep

    d = 200_000
    for name, data in (("obj.json", b'{"traceEvents": ' + b"[" * d + b"]" * d + b"}"), ("list.json", b"[" * d + b"]" * d)):
        p = tmp_path / name
        p.write_bytes(data)
        t0 = time.monotonic()
        with pytest.raises(JsonTooDeep):
            _finishes(lambda: list(trace_events(p)))
        assert _finishes(lambda: kineto_header(p)) == {}
        assert time.monotonic() - t0 < 5


def test_brackets_inside_strings_do_not_count_as_nesting(tmp_path):
    ev = {"ph": "X", "name": 'a[b "x{ ' + "[" * 50, "ts": 1.0, "dur": 2.0, "args": {"s": "]" * 3 + "\\" + "q" * 70_000}}
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"traceEvents": [ev] * 3000}))
    assert len(list(trace_events(p))) == 3000


def test_a_byte_order_mark_before_a_trace_is_skipped(tmp_path):
    body = json.dumps({"traceEvents": [{"ph": "X", "name": "a", "ts": 1.0, "dur": 2.0}]}).encode()
    p = tmp_path / "t.json"
    p.write_bytes(b"\xef\xbb\xbf" + body)
    assert [e["name"] for e in trace_events(p)] == ["a"]
    p.write_bytes(b"\xef\xbb\xbf  [" + json.dumps({"ph": "X", "name": "b"}).encode() + b"]")
    assert [e["name"] for e in trace_events(p)] == ["b"]


def test_an_extra_column_in_the_overlap_file_changes_no_number(tmp_path):
    from reportgen.loaders.overlap import load_cluster_analyse

    good, extra = tmp_path / "a.csv", tmp_path / "b.csv"
    good.write_text("computation_time,communication_alone_time\n10.5,2.0\n11.5,3.0\n11.0,2.5\n")
    extra.write_text("computation_time,extra_col,communication_alone_time\n10.5,x,2.0\n11.5,x,3.0\n11.0,x,2.5\n")
    la, lb = IssueLog(tmp_path), IssueLog(tmp_path)
    a, b = load_cluster_analyse(good, la), load_cluster_analyse(extra, lb)
    assert a is not None and b is not None and a.steps.equals(b.steps)
    assert [i.severity for i in lb.issues] == ["info"] and "extra_col" in lb.issues[0].problem


def _link_out(tmp_path: Path, name: str, content: bytes) -> tuple[Path, Path]:
    """A run folder whose `name` is a symbolic link to a file outside it; (run, link)."""
    secret = tmp_path / ("secret-" + Path(name).name)
    secret.write_bytes(content)
    run = tmp_path / "run"
    link = run / name
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(secret)
    return run, link


def test_queue_file_link_out_of_the_run_is_named_not_read(tmp_path):
    """Sweep before: the MindSpore CPU sample's dataset_iterator_profiling_0.txt, linked out, was read (cpu_usage
    opened it with a plain open())."""
    from reportgen.loaders import cpu_usage

    run, link = _link_out(tmp_path, "FRAMEWORK/dataset_iterator_profiling_0.txt", b"1 0 1 0 100.0\n1 0 2 0 200.0\n")
    (run / "FRAMEWORK" / "minddata_cpu_utilization_0.json").write_text(
        json.dumps({"time_stamp": [100, 200], "device_info": {}, "process_info": {}, "op_info": []}))
    with run_root(run):  # the loading job's run folder: links out of it are refused
        assert cpu_usage.queue_step_times(link) == []
    log = IssueLog(run)
    cpu_usage.load_cpu_usage(run / "FRAMEWORK" / "minddata_cpu_utilization_0.json", log)
    assert any(i.file.endswith("dataset_iterator_profiling_0.txt") and "symbolic link" in i.problem
               for i in log.issues)


def test_db_link_out_of_the_run_is_named_not_opened(tmp_path):
    import sqlite3

    from reportgen.loaders.db import Db

    secret_db = tmp_path / "real.db"
    con = sqlite3.connect(secret_db)
    con.execute("CREATE TABLE STRING_IDS (id INTEGER, value TEXT)")
    con.commit()
    con.close()
    run, link = _link_out(tmp_path, "ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db", secret_db.read_bytes())
    log = IssueLog(run)
    db = Db(link, log)
    assert db.con is None and db.tables == set()
    assert "symbolic link out of the run" in log.issues[0].problem
    loop = run / "ASCEND_PROFILER_OUTPUT" / "analysis.db"
    loop.symlink_to("analysis.db.loop")
    (run / "ASCEND_PROFILER_OUTPUT" / "analysis.db.loop").symlink_to("analysis.db")
    log = IssueLog(run)
    assert Db(loop, log).con is None and log.issues  # a loop: named, never a RuntimeError


def test_kineto_trace_link_out_of_the_run_is_not_read(tmp_path):
    from reportgen.loaders import kineto

    run, link = _link_out(tmp_path, "traces/node0_1.pt.trace.json",
                          json.dumps({"host_name": "secret-host", "traceEvents": [{"ph": "X", "ts": 1}]}).encode())
    with run_root(run):
        assert kineto.read_header(link) == {}
        with pytest.raises(OSError):
            list(trace_events(link))
    with pytest.raises(OSError):
        list(trace_events(link, IssueLog(run)))  # a log carries its run folder


def test_the_run_folder_is_passed_explicitly(tmp_path):
    """Issue 31: an IssueLog no longer registers its folder in a module-global list that every later open obeyed;
    the folder comes with the call (`root=`, a log's root) or from the loading job in progress (`run_root`)."""
    run, link = _link_out(tmp_path, "x.csv", b"a,b\n1,2\n")
    IssueLog(run)
    with open_file(link) as f:  # no run folder given: only the regular-file checks apply
        assert f.read() == "a,b\n1,2\n"
    with pytest.raises(OSError, match="symbolic link out of the run folder"):
        open_file(link, root=run)
    with run_root(run):
        with pytest.raises(OSError, match="symbolic link out of the run folder"):
            open_file(link)
        with open_file(link, root=tmp_path) as f:  # an explicit folder wins over the job's
            assert f.read(1) == "a"
    with open_file(link):  # the block ended: its folder no longer applies
        pass
    log = IssueLog(run)
    assert read_text(link, log) is None and "symbolic link out of the run" in log.issues[0].problem


def test_json_writer_turns_non_finite_values_into_null():
    """Ratios over zero computed in analysis reached json.dumps(allow_nan=False) in the writers and crashed."""
    import numpy as np

    from reportgen.site.render.output import json_text

    value = {"ratio": float("inf"), "rows": [1.5, float("nan"), np.float32("nan"), np.float64("-inf"), 2],
             "nested": ({"x": -math.inf},), "ok": "NaN"}
    back = json.loads(json_text(value, indent=2))
    assert back == {"ratio": None, "rows": [1.5, None, None, None, 2], "nested": [{"x": None}], "ok": "NaN"}
    assert json_text({"a": 1}, separators=(",", ":")) == '{"a":1}'


def test_every_json_writer_goes_through_json_text():
    """No writer calls json.dumps(allow_nan=False) itself (that is where non-finite values crashed)."""
    offenders = []
    for p in (REPO / "reportgen").rglob("*.py"):
        if p.name != "output.py" and "allow_nan=False" in p.read_text(encoding="utf-8"):
            offenders.append(str(p.relative_to(REPO)))
    assert not offenders


@pytest.mark.parametrize("bad", ["9" * 30, "1e400", "inf", "abc"])
def test_one_row_step_trace_with_a_bad_cell_is_named(tmp_path, bad):
    """Sweep before: in a one-row step_trace_time.csv (the real level0 sample) a 30-digit Preparing value made the
    column look like text, so it was never screened: the rank's Preparing became empty, nothing in data quality."""
    from reportgen.loaders.step_trace import load_modern_step_trace

    p = tmp_path / "step_trace_time.csv"
    p.write_text("Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
                 f"Communication(Not Overlapped and Exclude Receive),Preparing\n"
                 f"50,8813.17,64616.1,3989.6,68605.7,27172.9,100602.25,0,64616.1,{bad}\n")
    log = IssueLog(tmp_path)
    load_modern_step_trace(p, log)
    assert any("Preparing" in i.problem and i.file == "step_trace_time.csv" for i in log.issues), log.issues


def _trace_of(run: Path) -> Path:
    names = ("trace_view.json", "gpu_timeline_display_0.json", ".pt.trace.json")
    return next(p for p in sorted(run.rglob("*.json")) if p.name.endswith(names))


@pytest.mark.parametrize("layout", ["ascend", "kineto", "mindspore_gpu"])
@pytest.mark.parametrize("value,words", [("1e300", "non-finite or out-of-range ts/dur"),
                                         ("5" + "0" * 18, "non-finite or out-of-range ts/dur"),
                                         ('"abc"', "without a usable ts/dur"),
                                         ("-5.0", "without a usable ts/dur")])
def test_trace_events_without_a_usable_duration_are_named(tmp_path, layout, value, words):
    """Sweep before: an event whose dur was absurd (1e300, 30 digits), text or negative was left out of the Kineto,
    trace_view and GPU summaries with nothing in data quality; such events are now counted in one entry naming the
    trace. (1e400 and 30-digit integers overflow the parser itself: the file is named as unreadable from there.)"""
    from reportgen.layouts import discover, load_rank
    from reportgen.synth import generate_run

    run = generate_run(tmp_path / "run", ranks=1, steps=2, seed=3, layout=layout,
                       **({"trace_view": True} if layout == "ascend" else {}))
    trace = _trace_of(run)
    data = json.loads(trace.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    x = [e for e in events if e.get("ph") == "X" and str(e.get("tid")) != "Ops" and
         not str(e.get("name", "")).startswith("ProfilerStep")]
    x[len(x) // 2]["dur"] = "@@MARK@@"
    trace.write_text(json.dumps(data).replace('"@@MARK@@"', value))
    (lay,) = discover(run)
    (r, rf), = lay.ranks.items()
    got = load_rank(rf, run, lay.layout)
    rel = trace.relative_to(run).as_posix()
    hits = [i for i in got.issues if i.file == rel and words in i.problem]
    assert len(hits) == 1 and hits[0].problem.startswith("1 "), got.issues


@pytest.mark.parametrize("rows", [1, 2])
@pytest.mark.parametrize("reader", ["rows", "frame"])
def test_text_in_a_unit_column_of_a_tiny_csv_is_named(tmp_path, rows, reader):
    """Sweep before: a CSV with one data row (or two) and text in a guessed numeric column gave no majority of
    numbers, so the column was not screened and the text was read as a missing value, nothing in data quality.
    A column of one or two cells whose header names a unit is screened; text columns stay unscreened."""
    p = tmp_path / "op_summary.csv"
    good = "Add,12.5,[1 2],3\n"
    p.write_text("Name,Duration(us),Input Shapes,Count\n" + good * (rows - 1) + "MatMul,abc,[4 4],7\n")
    log = IssueLog(tmp_path)
    if reader == "rows":
        header, kept = read_csv_rows(p, log)
        names = [cells[0] for _, cells in kept]
    else:
        df = read_frame(p, log, ("Name", "Duration(us)"))
        names = list(df["Name"])
    assert names == ["Add"] * (rows - 1)
    (issue,) = log.issues
    assert issue.file == "op_summary.csv" and "'Duration(us)'" in issue.problem and "'abc'" in issue.problem


def test_tiny_csv_text_columns_are_not_screened(tmp_path):
    """The header rule is narrow: names, shapes, lists and JSON in one-row files are kept (real files hold lists in
    `output_queue_size` and JSON in `communication_operator_cost`)."""
    p = tmp_path / "minddata_pipeline_raw_0.csv"
    p.write_text('op_id,op_type,output_queue_size,communication_operator_cost,Input Shapes\n'
                 '0,MapOp,"[0, 2]","{""a"": 1}",1;2\n')
    log = IssueLog(tmp_path)
    header, kept = read_csv_rows(p, log)
    assert len(kept) == 1 and not log.issues


def test_json_nested_two_hundred_thousand_deep_is_named_not_a_crash(tmp_path):
    """After the orjson fast path landed, a whole-file JSON nested 200,000 levels deep crashed the process
    (SIGSEGV inside orjson; exit -11 in the fuzz sample): the nesting is bounded before orjson sees the file.
    Run in a subprocess so that a crash fails the test instead of killing pytest."""
    p = tmp_path / "profiler_info_0.json"
    p.write_bytes(b'{"a": ' + b"[" * 200_000 + b"]" * 200_000 + b"}")
    code = ("import sys; from pathlib import Path; from reportgen.loaders.issuelog import IssueLog; "
            "from reportgen.loaders.jsonfile import read_json\n"
            "log = IssueLog(Path(sys.argv[1]).parent); print(read_json(Path(sys.argv[1]), log)); "
            "print(log.issues[0].problem)")
    r = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 0, r.stderr[-500:]
    assert r.stdout.splitlines() == ["None", "JSON nested too deeply to read; skipped"]


@pytest.mark.parametrize("column", ["Computing", "Communication(Not Overlapped)", "Overlapped", "Communication",
                                    "Free", "Stage", "Bubble", "Preparing"])
def test_negative_time_in_a_step_trace_is_named(tmp_path, column):
    """Sweep: a negative value in a step_trace_time.csv phase column (no header says "duration", so the door's
    negative-duration screen did not see it) changed the rank's numbers with nothing in data quality."""
    from reportgen.loaders.step_trace import load_modern_step_trace

    header = ["Step", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free", "Stage",
              "Bubble", "Preparing"]
    good = ["1", "8000", "6000", "400", "6400", "2000", "16000", "30", "100"]
    bad = ["2"] + [("-" + v if h == column else v) for h, v in zip(header[1:], good[1:])]
    p = tmp_path / "step_trace_time.csv"
    p.write_text(",".join(header) + "\n" + ",".join(good) + "\n" + ",".join(bad) + "\n")
    log = IssueLog(tmp_path)
    st = load_modern_step_trace(p, log)
    assert list(st.steps["step"]) == [1]
    (issue,) = log.issues
    assert issue.file == "step_trace_time.csv" and "line 3" in issue.problem and column in issue.problem


def test_outside_link_in_a_loading_job_equals_plain_realpath(tmp_path):
    """Inside `run_root` a folder's resolution is kept for the job and a plain file resolves as its folder plus its
    name: the same answer as os.path.realpath for plain files, file links in and out, folder links out, a `..`
    after a link, missing files and loops."""
    import os

    from reportgen.loaders.files import outside_link, run_root

    root, away = tmp_path / "run", tmp_path / "away"
    (root / "r0" / "OUT").mkdir(parents=True)
    (away / "sub").mkdir(parents=True)
    (away / "secret.csv").write_text("x\n")
    (root / "r0" / "OUT" / "a.csv").write_text("a\n")
    os.symlink(away / "secret.csv", root / "r0" / "OUT" / "out.csv")  # a file link out
    os.symlink(root / "r0" / "OUT" / "a.csv", root / "r0" / "in.csv")  # a file link inside
    os.symlink(away / "sub", root / "r0" / "dirlink")  # a folder link out
    os.symlink(root / "r0" / "loop", root / "r0" / "loop")
    paths = [root / "r0" / "OUT" / "a.csv", root / "r0" / "OUT" / "out.csv", root / "r0" / "in.csv",
             root / "r0" / "dirlink" / "f.csv", root / "r0" / "OUT" / "missing.csv", root / "r0" / "loop",
             Path(str(root / "r0" / "dirlink") + "/../secret.csv"), root / "r0" / "OUT" / ".." / "in.csv"]
    want = [outside_link(p, root) for p in paths]  # no job: plain os.path.realpath
    assert want == [False, True, False, True, False, False, True, False]
    with run_root(root):
        assert [outside_link(p) for p in paths] == want
        assert [outside_link(p) for p in paths] == want  # the folders kept from the first pass
