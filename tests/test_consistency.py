"""Issue 16, "numbers that cannot be true are caught, and pages agree": one source of truth per number, the
synthetic generator's files describe the same time, impossible values in real data become data-quality notes,
and host CPU averages equal MindSpore Insight's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from tests.conftest import sample


def _ms(text: str) -> float:
    return float(re.search(r"-?[\d,]+(?:\.\d+)?", text).group(0).replace(",", ""))


# --- two pages, one number ---------------------------------------------------------------------------


def test_rank_page_and_execution_page_show_the_same_communication(sample_report):
    """MindSpore CPU traces put AllReduce-opN in the "CPU OP" process: the rank page's timeline summary used to
    count it as computation (communication 0 ms) while the execution page, from the same trace, said 2,749 ms."""
    code, out = sample_report("real/mindspore_cpu_dist4_new_graph_skew")
    assert code in (0, 3)
    ex = BeautifulSoup((out / "cluster" / "execution.html").read_text(encoding="utf-8"), "html.parser")
    checked = 0
    for r in range(4):
        row = ex.find("tr", id=f"marey-rank-{r}")
        cells = row.find_all("td")
        compute_ex, comm_ex = _ms(cells[5].get_text()), _ms(cells[6].get_text())
        page = BeautifulSoup((out / "ranks" / f"rank-{r}.html").read_text(encoding="utf-8"), "html.parser")
        facts = {th.get_text(strip=True): td.get_text(" ", strip=True)
                 for th, td in (tr.find_all(["th", "td"])[:2] for tr in page.find(id="rank-timeline-summary")("tr"))}
        # the execution view covers the whole profiled window here (the traces mark no steps): same window
        assert _ms(facts["Merged communication"]) == pytest.approx(comm_ex, abs=0.01)
        assert _ms(facts["Merged computation"]) == pytest.approx(compute_ex, abs=0.01)
        checked += 1
    assert checked == 4
    assert comm_ex == pytest.approx(2749.359, abs=0.01)  # rank 3, read from the trace by hand: Σ AllReduce-op* dur


# --- the synthetic generator: communication files and step trace describe the same time ---------------


def _analyze(root: Path):
    from reportgen.analysis import analyze
    from reportgen.layouts import discover, load_run

    return analyze(load_run(discover(root)[0]))


@pytest.fixture(scope="module")
def example_analysis(tmp_path_factory):
    from reportgen.cli import EXAMPLE
    from reportgen.synth import generate_run

    return _analyze(generate_run(tmp_path_factory.mktemp("ex") / "run", **EXAMPLE))


def test_example_communication_page_equals_step_trace(example_analysis):
    """Before: rank 0 communication 142.2 ms on the Communication page, 71.2 ms on the Step-trace page (the
    operators moved 1200 MB gradients, ~100 ms of transfer, while the step model assumed 30 ms). Now the step
    model takes each rank's transfer time from the operators: per rank and step, Σ elapse of the operators in
    communication.json = the step trace's Communication (overlapped + not overlapped)."""
    a = example_analysis
    ps = a.comm.per_rank_step.merge(a.steps.per_step[["rank", "step", "communication", "total"]],
                                    on=["rank", "step"])
    assert len(ps) >= 15 * 12
    # idle (0.02 ms per operator) is inside the elapse; a rank that never waits keeps it on top: at most 0.1 ms
    assert (ps["communication_ms"] - ps["communication"]).abs().max() < 0.11
    assert (ps["communication_ms"] < ps["total"]).all() and (ps["wait_ms"] < ps["total"]).all()
    assert a.comm.per_rank.loc[0, "communication_ms"] == pytest.approx(a.steps.average.loc[0, "communication"],
                                                                       abs=0.05)
    assert not [i for i in a.issues if i.problem.startswith("rank ") and "than the step" in i.problem]


def test_example_keeps_its_injected_problems(example_analysis):
    from reportgen.rules import run_rules

    findings = [f.to_dict() for f in run_rules(example_analysis, None)[0]]
    by = {f["id"]: f for f in findings}
    assert "Rank 5" in by["slow-rank.compute"]["title"] and by["slow-rank.compute"]["severity"] == "critical"
    assert "8-9" in by["slow-link.bandwidth"]["title"]
    assert by["slow-link.bandwidth"]["evidence"]["lost_share_of_step"] < 1
    assert any("node001_100011" in f["title"] and "step_trace_time.csv" in f["title"] for f in findings)


def test_mindinsight_hccl_equals_step_trace_reduce_column(tmp_path):
    """hccl_raw: communication cost + wait of a step = the AllReduce column of step_trace_raw (its duration)."""
    from reportgen.synth import generate_run

    a = _analyze(generate_run(tmp_path / "run", layout="mindinsight", ranks=8, steps=4, stages=2, seed=3,
                              inject=["slow-rank:5:compute:1.3", "slow-link:2-3"]))
    ps = a.comm.per_rank_step
    for r in range(8):
        ev = a.run.ranks[r].step_trace.comm_events
        ev = ev[ev["name"].str.contains("AllReduce")]
        col = (ev["end_ms"] - ev["start_ms"]).groupby(ev["step"]).sum()
        mine = ps[ps["rank"] == r].set_index("step")
        got = mine["communication_ms"] + mine["wait_ms"]
        assert got.reindex(col.index).to_numpy() == pytest.approx(col.to_numpy(), abs=0.05), r  # idle 0.02 per op
    assert not [i for i in a.issues if "than the step" in i.problem]


# --- the consistency check on impossible values -------------------------------------------------------


def _inflate(path: Path, keys: tuple[str, ...], factor: float) -> None:
    import json

    def walk(x):
        if isinstance(x, dict):
            return {k: (v * factor if k in keys and isinstance(v, (int, float)) else walk(v)) for k, v in x.items()}
        return x

    path.write_text(json.dumps(walk(json.loads(path.read_text(encoding="utf-8")))), encoding="utf-8")


def test_consistency_names_file_and_rank_of_impossible_communication(tmp_path):
    """The old generator's bug, made worse on purpose: rank 2's operators say 30x the time of the step trace."""
    from reportgen.analysis.consistency import check_consistency
    from reportgen.synth import generate_run

    root = generate_run(tmp_path / "run", ranks=4, steps=3, seed=2)
    assert check_consistency(_analyze(root)) == []
    (d,) = [p for p in root.iterdir() if "_100002_" in p.name]
    out = d / "ASCEND_PROFILER_OUTPUT"
    _inflate(out / "communication.json", ("Elapse Time(ms)", "Wait Time(ms)", "Transit Time(ms)"), 30.0)
    _inflate(out / "communication_matrix.json", ("Transit Time(ms)",), 40.0)
    a = _analyze(root)
    issues = check_consistency(a)
    assert issues and all(i.severity == "warning" for i in issues)
    assert all(i.problem.startswith("rank 2:") for i in issues)
    assert {i.file for i in issues} == {f"{d.name}/ASCEND_PROFILER_OUTPUT/communication.json"}
    text = " ".join(i.problem for i in issues)
    assert "longer than the step itself" in text  # communication and wait per step
    assert "link 2-3" in text  # the link's time per step is more than the step
    # each sentence is its check's code (summary.json readers filter on it), its English the template filled in
    assert {i.code for i in issues} <= {"analysis.comm-over-step", "analysis.comm-over-step-steps",
                                        "analysis.wait-over-step", "analysis.wait-over-step-steps",
                                        "analysis.link-over-step"}
    assert "analysis.link-over-step" in {i.code for i in issues}
    link_issue = next(i for i in issues if i.code == "analysis.link-over-step")
    assert link_issue.params["rank"] == 2 and link_issue.params["what"].startswith("The link 2-3 (")
    assert set(link_issue.params) == {"rank", "what", "value", "total", "pct"}  # only what the sentence shows
    assert all(i in a.issues for i in issues)  # analyze() appends them to the run's data-quality entries
    # the slow-link finding no longer says "780 % of the step" (it said 165.2 % on a 512-rank run)
    from reportgen.rules import run_rules

    (link,) = [f.to_dict() for f in run_rules(a, None)[0] if f.id == "slow-link.bandwidth"]
    assert "2-3" in link["title"] and "more than the step itself" in link["why"] and "%" not in link["why"]


def test_consistency_flags_overlap_bars_over_the_step():
    """A real MindInsight fixture whose cluster-analyse file belongs to a longer run than its step trace."""
    from reportgen.analysis.consistency import check_consistency

    a = _analyze(sample("mindinsight/cluster_analyse_variants_single_rank") / "run_3")
    issues = check_consistency(a)
    assert len(issues) == 1 and issues[0].file.endswith("ascend_cluster_analyse_model-parallel_1_2_1.csv")
    assert issues[0].problem.startswith("rank 1: The overlap bars")


# --- host CPU utilisation as MindSpore Insight shows it ----------------------------------------------------


def test_cpu_averages_equal_mindinsight_single_device():
    """By hand, following MinddataCpuUtilizationAnalyser: time_stamp [10, 20, 30]; device_queue_profiling_1.txt
    has one queue (type 1) line, step 1 at t=10; samples after the first (t=20, 30) both fall in step 1, so
    steps_info = [1, 1] and the default filter (steps 1..1) keeps array positions 0-1: user [10, 20] -> round(15)
    = 15 (we showed 25 = mean of [20, 30]); idle [10, 10] -> 10; operator 1 user [10, 20] -> 15."""
    a = _analyze(sample("mindinsight/single_device_run2_rank1_full"))
    c = a.resources.cpu[1]
    assert c.machine == {"user": 15, "sys": 15, "io": 10, "idle": 10}
    assert c.busy == 90
    assert c.process == {"user": 15, "sys": 15}
    assert [(o["op_id"], o["user"], o["sys"]) for o in c.ops] == [(1, 15, 15)]
    assert c.ops_total == {"user": 15, "sys": 15}


def test_cpu_averages_equal_mindinsight_real_minddata():
    """By hand: time_stamp [218897, 220103, 221260]; no device queue file, so dataset_iterator_profiling_0.txt
    (20 queue lines, steps 1-20 at 218899..222017); samples t=220103 and t=221260 fall in steps >= 1, so positions
    0-1 are kept: machine user [0, 0] -> 0 (we showed 37 = mean of [0, 74]); process user [106, 130] -> 118;
    idle [0, 0] -> 0 (busy 100, as MindInsight's helper reads it)."""
    a = _analyze(sample("real/mindspore_cpu_legacy_graph_minddata"))
    (r,) = a.run.rank_ids
    c = a.resources.cpu[r]
    assert c.machine["user"] == 0 and c.machine["idle"] == 0 and c.busy == 100
    assert c.process == {"user": 118, "sys": 32}  # sys [14, 49] -> round(31.5) = 32
    assert "samples 1-2 of 3" in c.selection


def test_cpu_selection_rules():
    from reportgen.loaders.cpu_usage import mindinsight_average, sample_steps, selection_window

    queue = [(1, 100.0), (2, 200.0), (3, 300.0)]
    # first sample dropped from the timestamps; a sample before step 1 is step 0; after the last, the last step
    assert sample_steps([50, 90, 150, 200, 400], queue) == [0, 1, 2, 3]
    assert selection_window([0, 1, 2, 3], 3) == (1, 3)
    assert selection_window([], 3) is None
    assert mindinsight_average([1, 2, 3, 4, 5], (1, 3)) == 3
    assert mindinsight_average([1, 2], None) == 2  # round(1.5) -> 2 (halves to even)
    assert mindinsight_average([2, 3], None) == 2  # round(2.5) -> 2
    assert mindinsight_average([], None) is None
