"""Pages that agree with the findings (issue 29): the synthetic example names operators the same way in every
file, its run folder outlives the build, and the marks and captions follow the findings in force."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from reportgen.synth import generate_run
from reportgen.synth.execution import OLD_TYPES, op_share


def _trace_types(path: Path) -> set[str]:
    ev = json.loads(path.read_text())
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    # the compute kernels of the device lanes (torch_npu "aclnnX_Kernel_Type": the type is the last part)
    return {e["name"].rsplit("_", 1)[-1] for e in ev if e.get("ph") == "X" and e.get("name", "").startswith("aclnn")}


def test_synthetic_operator_names_agree_across_files(tmp_path):
    run = generate_run(tmp_path / "run", layout="ascend", ranks=4, steps=2, stages=2, seed=1, trace_view=True)
    for out in sorted(run.glob("*/ASCEND_PROFILER_OUTPUT")):
        with open(out / "op_statistic.csv", newline="") as f:
            stats = {row["OP Type"] for row in csv.DictReader(f)}
        with open(out / "kernel_details.csv", newline="") as f:
            kernels = {row["Type"] for row in csv.DictReader(f)}
        timeline = _trace_types(out / "trace_view.json")
        assert timeline and timeline <= stats, (out, timeline - stats)
        assert kernels <= stats
        # no invented gradient types (MatMulV2Grad): backward kernels keep their type
        assert not {t for t in timeline if t.endswith("Grad")}
        assert not {t for t in timeline | stats if t.startswith("MatMulV2")}


def test_slow_op_takes_the_old_type_names():
    for old, new in OLD_TYPES.items():
        assert op_share(old) == op_share(new) > 0
    assert op_share("NoSuchOp") == 0


def test_mindinsight_timeline_names_follow_the_statistics(tmp_path):
    run = generate_run(tmp_path / "mi", layout="mindinsight", ranks=4, steps=2, stages=2, seed=1)
    names = set()
    for p in run.rglob("ascend_timeline_display_*.json"):
        names |= {e["name"].rsplit("/", 1)[-1].split("-op")[0] for e in json.loads(p.read_text())
                  if e.get("ph") == "X" and "-op" in e.get("name", "") and e.get("pid") != 10000}
    assert {"MatMulV3", "RmsNorm"} <= names
    assert not {n for n in names if n.endswith("Grad") or n in OLD_TYPES}


def test_example_run_folder_is_kept_beside_the_report(example_site):
    kept = example_site.with_name(example_site.name + "-run")
    assert kept.is_dir() and (kept / ".msreport-example").is_file()
    assert len(list(kept.glob("*_ascend_pt"))) == 16
    overview = BeautifulSoup((example_site / "index.html").read_text(), "html.parser")
    assert str(kept) in overview.get_text() or kept.name in overview.get_text()


def test_example_replaces_its_own_run_but_not_a_stranger(tmp_path, capsys):
    from reportgen.cli import example_run_path, main

    out = tmp_path / "rep.html"
    assert example_run_path(out) == tmp_path / "rep-run"
    assert example_run_path(tmp_path / "site") == tmp_path / "site-run"
    stranger = tmp_path / "rep-run"
    stranger.mkdir()
    (stranger / "mine.txt").write_text("keep")
    assert main(["--example", "-o", str(out), "--single-file", "-q"]) == 2
    assert (stranger / "mine.txt").read_text() == "keep"
    assert "not an example run" in capsys.readouterr().err
