"""Command line: usage errors, exit codes, safe output."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from reportgen import __version__
from reportgen.cli import main


def _run(*args):
    return subprocess.run([sys.executable, "-m", "reportgen", *args], capture_output=True, text=True)


def test_version():
    r = _run("--version")
    assert r.returncode == 0 and __version__ in r.stdout


@pytest.mark.parametrize("args", [[], ["somewhere"], ["--bogus", "x", "-o", "y"], ["--example", "x", "-o", "y"]])
def test_bad_command_line_is_one_line_and_exit_2(args):
    r = _run(*args)
    assert r.returncode == 2
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert lines[0].startswith("usage: msreport") and lines[-1].startswith("msreport: error:")
    assert sum(l.startswith("msreport: error:") for l in lines) == 1  # one error line, then nothing else


def test_no_profiler_data_is_exit_2(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "notes.txt").write_text("hello")
    r = _run(str(tmp_path / "run"), "-o", str(tmp_path / "out"))
    assert r.returncode == 2
    assert "no profiler output found" in r.stderr and "step_trace_raw" in r.stderr
    assert not (tmp_path / "out").exists()


def test_missing_run_folder_is_exit_2(tmp_path):
    assert main([str(tmp_path / "nope"), "-o", str(tmp_path / "o"), "-q"]) == 2


def test_failed_run_leaves_previous_report_intact(tmp_path, synth_8):
    out = tmp_path / "report"
    assert main([str(synth_8), "-o", str(out), "-q"]) == 0
    before = (out / "summary.json").read_text()
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main([str(empty), "-o", str(out), "-q"]) == 2
    assert (out / "summary.json").read_text() == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".report")]  # no temp leftovers


def test_rebuild_replaces_report_and_keeps_files_the_user_added(tmp_path, synth_8):
    out = tmp_path / "report"
    assert main([str(synth_8), "-o", str(out), "-q"]) == 0
    (out / "index.html").write_text("old")  # ours: replaced
    (out / "user-notes.html").write_text("mine")  # not ours: kept (see test_output.py)
    assert main([str(synth_8), "-o", str(out), "-q"]) == 0
    assert (out / "index.html").read_text() != "old"
    assert (out / "user-notes.html").read_text() == "mine"


def test_refuses_to_overwrite_a_foreign_folder(tmp_path, synth_8):
    out = tmp_path / "mydocs"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    assert main([str(synth_8), "-o", str(out), "-q"]) == 2
    assert (out / "thesis.tex").read_text() == "precious"


def test_refuses_output_that_contains_the_run(tmp_path, synth_8):
    assert main([str(synth_8), "-o", str(synth_8.parent), "-q"]) == 2


def test_symlink_outside_the_run_is_not_followed(tmp_path, synth_8):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(synth_8, run)
    outside = tmp_path / "outside_ascend_pt"
    shutil.copytree(next(run.glob("*_ascend_pt")), outside)
    (run / "link_ascend_pt").symlink_to(outside)
    out = tmp_path / "o"
    assert main([str(run), "-o", str(out), "-q"]) == 0
    s = json.loads((out / "summary.json").read_text())
    assert any("outside the run folder" in d["problem"] for d in s["data_quality"])


def test_final_line_names_the_report(tmp_path, synth_8):
    r = _run(str(synth_8), "-o", str(tmp_path / "r"))
    assert r.returncode == 0
    assert r.stdout.strip().splitlines()[-1].startswith("Wrote report to file://")
