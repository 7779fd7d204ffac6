"""Kineto's data-quality problems are codes (`kineto.*`, reportgen/dataquality.py): each entry keeps the English text
the loader always wrote (summary.json's `problem`), carries its code and parameters, and renders in Chinese through
the catalog. One small synthetic run per kind (GPU with a custom all-to-all, CPU over gloo), loaded rank by rank."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from reportgen import idle
from reportgen.dataquality import dq
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.kineto import rank as kineto_rank
from reportgen.loaders.kineto.communication import _named
from reportgen.loaders.kineto.execution import load_execution
from reportgen.loaders.kineto.rank import load_kineto
from reportgen.loaders.kineto.run import check_step_ranges, match_collectives, run_note
from reportgen.model import DataIssue, ExecutionData, RankData, RankInfo
from reportgen.synth import parse_injections, simulate
from reportgen.synth.kineto import write_kineto, write_kineto_gloo

CJK = re.compile(r"[\u4e00-\u9fff]")
CPU_TAIL = (": the CPU is the device (computation = operators of the training thread, communication = the backend's "
            "collective work slices, gloo:*)")


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> dict[str, list[Path]]:
    root = tmp_path_factory.mktemp("kineto-dq")
    plan = parse_injections([])
    plan.seed = 11
    m = simulate(2, 4, stages=1, plan=plan, seed=11)
    write_kineto(root / "gpu", m, 2, 4, plan, per_host=2, first_step=1, expert_a2a=True)
    write_kineto_gloo(root / "cpu", ranks=2, steps=3, seed=5)
    return {k: sorted((root / k).glob("*.pt.trace.json")) for k in ("gpu", "cpu")}


def _load(path: Path, rank: int = 0) -> tuple[RankData, list[DataIssue]]:
    log = IssueLog(path.parent, rank=rank)
    data = RankData(info=RankInfo(rank=rank, source_dir="."))
    k = load_kineto(path, data, log)
    data.step_trace, data.communication = k.step_trace, k.communication
    return data, log.issues


def _by_code(issues: list[DataIssue]) -> dict[str, DataIssue]:
    return {i.code: i for i in issues if i.code}


def test_every_entry_of_a_gpu_rank_is_coded_and_reads_as_before(traces):
    _, issues = _load(traces["gpu"][0])
    assert issues and all(i.code.startswith(("kineto.", "trace.")) for i in issues), [i.problem for i in issues]
    got = _by_code(issues)
    # 4 steps recorded: the last has no next step to end it
    part = got["kineto.partial-steps"]
    assert part.params == {"map": "4"} and part.severity == "info"
    assert part.problem == ("step(s) 4 partial: no next step in the trace marks where the step ends on the device (its "
                            "kernels may run past the trace's end); left out of the averages, spreads and the slowest "
                            "step")
    # the custom all-to-all kernel under record_param_comms, and the signal kernel beside the collectives
    a2a = got["kineto.comm-by-host-op"]
    assert "a2a_dispatch_kernel" in a2a.params["n"] and a2a.params["by_op"] > 0
    assert a2a.problem.startswith(f"{a2a.params['by_op']} device event(s) launched inside a collective's host op ")
    beside = got["kineto.unknown-beside-comm"]
    assert beside.params["got"] == 1 and "signal_ready_kernel" in beside.params["n"]
    for i in (part, a2a, beside):  # the same sentence through the catalog, and in Chinese
        assert dq(i.code, **i.params).render("en") == i.problem
        zh = dq(i.code, **i.params).render("zh")
        assert CJK.search(zh) and "partial" not in zh and "device event" not in zh
    assert "a2a_dispatch_kernel" in dq(a2a.code, **a2a.params).render("zh")


def test_duplicated_host_and_device_events_are_two_codes(traces, tmp_path):
    doc = json.loads(traces["gpu"][0].read_text(encoding="utf-8"))
    ev = doc["traceEvents"]
    ops = [e for e in ev if e.get("cat") == "cpu_op"][:5]
    kernels = [e for e in ev if e.get("cat") == "kernel"][:3]
    doc["traceEvents"] = ev + copy.deepcopy(ops) + copy.deepcopy(kernels)
    path = tmp_path / traces["gpu"][0].name
    path.write_text(json.dumps(doc), encoding="utf-8")
    _, issues = _load(path)
    got = _by_code(issues)
    host, dev = got["kineto.duplicate-host-ops"], got["kineto.duplicate-device-events"]
    assert (host.params, dev.params) == ({"k": 5}, {"k": 3})
    assert host.problem == ("5 host operator event(s) identical to an earlier one (same lane, name, start and "
                            "duration: a duplicated event?); counted as written")
    assert dev.problem.startswith("3 device event(s) identical to an earlier one")
    assert host.kind == dev.kind == "duplicate" and host.ranks == (0,)
    zh = dq(host.code, **host.params).render("zh")
    assert zh.startswith("5 个 Host 算子事件") and "host operator" not in zh


def test_an_event_with_a_negative_start_is_left_out_and_named(traces, tmp_path):
    """A complete event whose `ts` is negative (the fuzz sweep's "negative" on a gloo trace moved an operator out of
    every step window and changed its time without a word): left out, as trace_view.json's reader does, and named by
    the file's entry; the other operators' numbers as without it."""
    doc = json.loads(traces["gpu"][0].read_text(encoding="utf-8"))
    ops = [i for i, e in enumerate(doc["traceEvents"]) if e.get("cat") == "cpu_op"]
    bad = copy.deepcopy(doc)
    bad["traceEvents"][ops[3]]["ts"] = -bad["traceEvents"][ops[3]]["ts"]
    gone = copy.deepcopy(doc)
    del gone["traceEvents"][ops[3]]
    got = {}
    for name, d in (("bad", bad), ("gone", gone)):
        path = tmp_path / name / traces["gpu"][0].name
        path.parent.mkdir()
        path.write_text(json.dumps(d), encoding="utf-8")
        got[name] = _load(path)
    codes = _by_code(got["bad"][1])
    assert codes["trace.complete-event-without-usable"].params == {"n": 1}
    assert "trace.complete-event-without-usable" not in _by_code(got["gone"][1])
    st_bad, st_gone = got["bad"][0].step_trace, got["gone"][0].step_trace
    assert st_bad.steps.equals(st_gone.steps)


def test_kernel_lists_name_five_and_count_the_rest():
    short = _named("kineto.unknown-beside-comm", "kineto.unknown-beside-comm-more", ["a", "b"], beside=4, got=2)
    assert short.code == "kineto.unknown-beside-comm" and short.en.endswith("computation: a, b")
    names = [f"k{i}" for i in range(7)]
    more = _named("kineto.comm-by-host-op", "kineto.comm-by-host-op-more", names, by_op=9)
    assert more.code == "kineto.comm-by-host-op-more" and more.params["max_named"] == 2
    assert more.en.endswith("stay computation): k0, k1, k2, k3, k4 and 2 more")
    zh = more.render("zh")
    assert CJK.search(zh) and "k4" in zh and "2" in zh and "more" not in zh


def test_run_note_says_which_ranks_ran_on_the_cpu(traces):
    gpu0, _ = _load(traces["gpu"][0], 0)
    cpu0, _ = _load(traces["cpu"][0], 0)
    cpu1, _ = _load(traces["cpu"][1], 1)
    read = run_note({0: gpu0})
    assert read.code == "kineto.read" and read.en.startswith("Kineto traces: read distributedInfo")
    only = run_note({0: cpu0, 1: cpu1})
    assert only.code == "kineto.read-cpu-only" and only.en == read.en + ". No GPU/NPU activity on any rank" + CPU_TAIL
    some = run_note({0: gpu0, 1: cpu1})
    assert some.code == "kineto.read-cpu-ranks" and some.params == {"ranks": "1"}
    assert some.en == read.en + ". No GPU/NPU activity on rank(s) 1" + CPU_TAIL
    issue = DataIssue("", some, "info")  # as the layout's run pass writes it
    assert issue.to_dict()["code"] == "kineto.read-cpu-ranks" and issue.problem == some.en
    for note in (read, only, some):
        zh = note.render("zh")
        assert CJK.search(zh) and "Kineto traces" not in zh and "No GPU" not in zh
    assert "卡 1 " in some.render("zh")


def test_run_level_entries_are_coded(traces):
    ranks = {r: _load(p, r)[0] for r, p in enumerate(traces["gpu"])}
    inst = ranks[1].communication.instances
    first = inst.index[0]
    inst.loc[first, "kind"] = "allgather" if inst.loc[first, "kind"] != "allgather" else "allreduce"
    ranks[1].communication.instances = inst.drop(inst.index[-1])  # one collective fewer on rank 1
    issues: list[DataIssue] = []
    match_collectives(ranks, issues)
    got = _by_code(issues)
    assert got["kineto.collective-kinds-differ"].params == {"mism": 1}
    assert got["kineto.collective-kinds-differ"].problem.startswith("1 collective instance(s) have different kinds")
    counts = got["kineto.collective-counts-differ"]
    assert counts.params == {"map": "0"} and counts.problem.startswith(
        "ranks recorded different numbers of collectives in process group(s) 0; ")
    # ranks profiled over different steps
    st = ranks[1].step_trace
    st.steps = st.steps.assign(step=st.steps["step"] + 100)
    issues = []
    check_step_ranges(ranks, issues)
    (i,) = issues
    assert i.code == "kineto.no-common-step" and i.params == {"parts": "rank(s) 0: steps 1-3; rank(s) 1: steps 101-103"}
    assert i.problem.startswith("the ranks' traces share no step (rank(s) 0: steps 1-3; rank(s) 1: steps 101-103): ")
    assert CJK.search(dq(i.code, **i.params).render("zh"))


def test_execution_notes_render_in_both_languages(traces, tmp_path):
    """Steps asked for that no trace has: the middle step is shown instead, and the note says so in either
    language."""

    class _Files:
        def __init__(self, path):
            self.path = path

        def first(self, kind):
            return self.path if kind == "kineto_trace" else None

    class _Layout:
        ranks = {r: _Files(p) for r, p in enumerate(traces["gpu"])}

    data = ExecutionData(steps=[99], reasons={}, ops={}, ranks=[0, 1])
    assert load_execution(_Layout(), None, data, [0, 1], IssueLog(tmp_path)) is True
    assert data.steps == [3] and set(data.ops[3]) == {0, 1}  # the traces hold steps 1-4: the middle one
    (note,) = data.notes
    assert note.render("en") == "steps 99 are not in the traces; step 3 is shown"
    assert note.render("zh") == "迭代 99 不在 trace 中；显示迭代 3"


def test_failures_inside_the_loader_are_coded_entries(traces, monkeypatch):
    def boom(*_a, **_k):
        raise ValueError("boom")

    with monkeypatch.context() as mp:
        mp.setattr(idle, "breakdown", boom)
        _, issues = _load(traces["gpu"][0])
    i = _by_code(issues)["kineto.idle-not-computed"]
    assert (i.problem, i.severity) == ("idle time by cause not computed (ValueError: boom)", "info")
    with monkeypatch.context() as mp:
        mp.setattr(kineto_rank, "_step_trace", boom)
        _, issues = _load(traces["gpu"][0])
    i = _by_code(issues)["kineto.not-summarised"]
    assert (i.problem, i.severity) == ("trace read but could not be summarised (ValueError: boom)", "error")
    assert i.params == {"err": "ValueError", "err2": "boom"}


def test_a_run_without_profiler_steps_builds_and_says_so(tmp_path):
    """Profiled without a schedule: one window over the whole trace, no step id. The build goes through (the rank
    page's idle table once crashed on the empty step), the entry is coded, and the step cell is empty."""
    from bs4 import BeautifulSoup

    from reportgen.cli import main
    from reportgen.synth import generate_run

    run = generate_run(tmp_path / "run", layout="kineto", ranks=2, steps=3, seed=4)
    for f in run.rglob("*.pt.trace.json"):
        doc = json.loads(f.read_text(encoding="utf-8"))
        doc["traceEvents"] = [e for e in doc["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")]
        f.write_text(json.dumps(doc), encoding="utf-8")
    out = tmp_path / "out"
    assert main([str(run), "-o", str(out), "-q", "--no-cache", "--lang", "en,zh"]) == 0
    dq_entries = json.loads((out / "summary.json").read_text(encoding="utf-8"))["data_quality"]
    none = [e for e in dq_entries if e.get("code") == "kineto.no-profiler-steps"]
    assert len(none) == 2 and all(e["params"] == {} and e["severity"] == "info" for e in none)
    assert none[0]["problem"].startswith("no ProfilerStep#N markers in the trace (profiled without a schedule?)")
    assert [e["code"] for e in dq_entries if not e["file"]] == ["kineto.read"]  # the run note
    page = BeautifulSoup((out / "ranks" / "rank-0.html").read_text(encoding="utf-8"), "html.parser")
    rows = page.select("#rank-idle tbody tr")
    assert len(rows) == 1 and rows[0].find("td").get_text() == ""
    zh = BeautifulSoup((out / "zh" / "ranks" / "rank-0.html").read_text(encoding="utf-8"), "html.parser")
    text = zh.get_text(" ")
    assert "没有 ProfilerStep#N 标记" in text and "no ProfilerStep#N markers" not in text
