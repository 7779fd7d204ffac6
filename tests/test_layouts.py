"""The layout registry (issue 31): one object per layout, reached only through `reportgen.layouts`; the loaders'
safety net as a plain decorator."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reportgen import i18n
from reportgen.discover.runs import RankFiles, RunLayout
from reportgen.errors import NoProfilingData
from reportgen.layouts import LAYOUTS, Layout, discover, load_run, registry
from reportgen.layouts.find import what_we_look_for
from reportgen.loaders.guard import guarded
from reportgen.loaders.issuelog import IssueLog
from reportgen.model import HOST_PHASES, StepTrace


def test_every_layout_is_named_labelled_and_translated():
    assert list(LAYOUTS) == ["mindinsight", "ascend", "msprof", "kineto", "cluster_analysis"]
    for name, lay in LAYOUTS.items():
        assert lay.name == name and lay.looks_for
        with i18n.use("zh"):
            zh = i18n.gettext(lay.label)
        assert zh != lay.label, f"{name}: its label has no Chinese entry"
    # what only one family lacks, said once, on its object
    assert LAYOUTS["kineto"].cannot_show == {"links", "data_pipeline"} and LAYOUTS["kineto"].gpu
    assert not any(lay.gpu for n, lay in LAYOUTS.items() if n != "kineto")


def test_no_profiler_output_names_what_every_layout_looks_for(tmp_path):
    (tmp_path / "notes.txt").write_text("nothing here")
    with pytest.raises(NoProfilingData) as e:
        discover(tmp_path)
    assert str(e.value).endswith(
        "looked for a MindInsight profiler folder (step_trace_raw_{rank}_detail_time.csv, profiler_info_{rank}.json, "
        "...), *_ascend_pt / *_ascend_ms rank folders, PROF_* msprof folders, *.pt.trace.json files, or a "
        "msprof-analyze cluster_analysis_output folder")
    assert what_we_look_for() in str(e.value)


class _Lines(Layout):
    """A family made up here: `lines_{rank}.txt`, one step total (ms) per line."""

    name = "lines"
    label = "line files"
    looks_for = "lines_{rank}.txt files"
    cannot_show = frozenset({"links"})

    def claim_files(self, d, files):
        return [p for p in files if re.fullmatch(r"lines_\d+\.txt", p.name)]

    def detect(self, fs, scan, runs, layouts):
        out = []
        for d, files in scan.files.get(self.name, {}).items():
            run = RunLayout(root=fs.root, base=d, layout=self.name)
            for p in files:
                rank = int(re.search(r"\d+", p.name).group())
                run.ranks[rank] = RankFiles(rank=rank, dir=d, files={"lines": [p]})
            out.append(run)
        return out

    def load_rank(self, rf, data, log):
        totals = [float(x) for x in rf.first("lines").read_text().split()]
        import pandas as pd

        df = pd.DataFrame({"step": pd.array(range(1, len(totals) + 1), dtype="Int64"), "total": totals})
        data.step_trace = StepTrace(kind="host", steps=df[["step", *HOST_PHASES]], source=log.rel(rf.first("lines")))

    def run_pass(self, ranks, issues):
        from reportgen.model import DataIssue

        issues.append(DataIssue("", f"run pass saw ranks {sorted(ranks)}", "info"))


def test_a_new_layout_is_one_object_in_the_registry(tmp_path, monkeypatch):
    """Detection, per-rank loading, the run-level pass and the label all come from the registered object: nothing
    else names the family."""
    (tmp_path / "lines_0.txt").write_text("10\n12\n")
    (tmp_path / "lines_1.txt").write_text("11\n30\n")
    with pytest.raises(NoProfilingData):
        discover(tmp_path)
    monkeypatch.setitem(registry.LAYOUTS, "lines", _Lines())
    [lay] = discover(tmp_path)
    assert lay.layout == "lines" and sorted(lay.ranks) == [0, 1]
    run = load_run(lay)
    assert run.info.layout_label == "line files"
    assert [list(run.ranks[r].step_trace.steps["total"]) for r in (0, 1)] == [[10.0, 12.0], [11.0, 30.0]]
    assert any(i.problem == "run pass saw ranks [0, 1]" for i in run.issues)
    assert "lines_{rank}.txt files" in what_we_look_for()


def test_guarded_names_the_file_and_returns_the_empty_value(tmp_path):
    log = IssueLog(tmp_path)

    @guarded(empty=list)
    def reader(path: Path, log: IssueLog, scale: float = 1.0):
        return [1 / scale]

    assert reader(tmp_path / "a.csv", log) == [1.0]
    assert reader(tmp_path / "a.csv", log, scale=0.0) == [] and reader(tmp_path / "a.csv", log=log, scale=0) == []
    assert [(i.file, i.severity) for i in log.issues] == [("a.csv", "error")] * 2
    assert log.issues[0].problem.startswith("could not be read (ZeroDivisionError: ")

    @guarded
    def from_dict(files: dict, log: IssueLog):
        raise ValueError("bad")

    assert from_dict({"x": None, "y": tmp_path / "b.json"}, log) is None
    assert log.issues[-1].file == "b.json"  # the first file in a dict argument is named

    @guarded
    def no_file(n: int, log: IssueLog):
        raise KeyError(n)

    assert no_file(3, log) is None and log.issues[-1].file == "."  # nothing better to name: the run folder


def test_guarded_needs_a_log_and_lets_other_errors_through(tmp_path):
    with pytest.raises(TypeError, match="`log`"):
        guarded(lambda path: None)

    @guarded
    def reader(path: Path, log):
        raise ValueError("no log given")

    with pytest.raises(ValueError):
        reader(tmp_path, None)  # not an IssueLog: nowhere to name it, so it is not swallowed
