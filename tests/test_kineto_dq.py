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


def _variants(tmp_path: Path, src: Path, docs: dict) -> dict:
    """Each variant of a trace written under its own folder (the file's name kept) and loaded as rank 1: the
    loader's model objects (`KinetoRank`) and entries."""
    out = {}
    for name, d in docs.items():
        path = tmp_path / name / src.name
        path.parent.mkdir()
        path.write_text(json.dumps(d), encoding="utf-8")
        log = IssueLog(path.parent, rank=1)
        out[name] = (load_kineto(path, RankData(info=RankInfo(rank=1, source_dir=".")), log), log.issues)
    return out


def test_an_event_without_its_category_is_left_out_and_named(traces, tmp_path):
    """The fuzz sweep's `j_rename_key` on a gloo trace renamed an operator's `cat`: the operator vanished from the
    rank's numbers without a word. Kineto writes `cat` on every complete event (libkineto output_json.cpp), so an
    event without one (absent, empty, not text) is damaged: left out -- the numbers are those of the trace without
    it -- and named in one entry (file, rank, count, the first one)."""
    src = traces["cpu"][0]
    doc = json.loads(src.read_text(encoding="utf-8"))
    ev = doc["traceEvents"]
    ops = [i for i, e in enumerate(ev) if e.get("cat") == "cpu_op" and e.get("dur", 0) > 0]
    a, b = ops[len(ops) // 2], ops[len(ops) // 3]
    bad = copy.deepcopy(doc)
    bad["traceEvents"][a]["cat_renamed"] = bad["traceEvents"][a].pop("cat")
    bad["traceEvents"][b]["cat"] = 7  # not text
    gone = copy.deepcopy(doc)
    gone["traceEvents"] = [e for i, e in enumerate(ev) if i not in (a, b)]
    got = _variants(tmp_path, src, {"clean": doc, "bad": bad, "gone": gone})
    entry = _by_code(got["bad"][1])["kineto.events-without-category"]
    first = min(a, b)
    assert entry.params == {"n": 2, "example": f"{ev[first]['name']!r} at ts {float(ev[first]['ts'])}"}
    assert entry.file == src.name and entry.ranks == (1,) and entry.severity == "warning"
    assert entry.problem.startswith("2 complete event(s) without a category ('cat' absent, empty or not text; ")
    assert CJK.search(dq(entry.code, **entry.params).render("zh"))
    for name in ("clean", "gone"):  # a healthy trace names nothing
        assert "kineto.events-without-category" not in _by_code(got[name][1])
    (bad_d, _), (gone_d, _), (clean_d, _) = got["bad"], got["gone"], got["clean"]
    assert bad_d.step_trace.steps.equals(gone_d.step_trace.steps)
    # the operator table: the two operators counted once less than in the clean trace (the test can fail)
    cnt = {k: v[0].operators.detail.groupby("name")["count"].sum() for k, v in got.items()}
    assert cnt["bad"].equals(cnt["gone"])
    names = [ev[a]["name"], ev[b]["name"]]
    for n in set(names):
        assert cnt["clean"][n] - cnt["bad"].get(n, 0) == names.count(n)
    assert clean_d.step_trace is not None and bad_d.operators is not None


def test_a_memory_sample_without_a_field_the_others_carry_is_left_out_and_named(traces, tmp_path):
    """A `[memory]` sample that lost `Total Allocated` vanished from the curve silently, one that lost
    `Total Reserved` became a hole in it: a field the trace's other samples carry is damage, the sample is left out
    (the peaks are the other samples') and named. A field no sample carries is the writer's schema: no entry."""
    src = traces["gpu"][0]
    doc = json.loads(src.read_text(encoding="utf-8"))
    ev = doc["traceEvents"]
    mem = [i for i, e in enumerate(ev) if e.get("name") == "[memory]"]
    top = max(mem, key=lambda i: ev[i]["args"]["Total Allocated"])
    ev[top]["args"]["Total Allocated"] += 2 ** 20  # (the one highest sample: the synthetic curve plateaus)
    other = mem[len(mem) // 2] if mem[len(mem) // 2] != top else mem[len(mem) // 2 + 1]
    bad = copy.deepcopy(doc)
    args = bad["traceEvents"][top]["args"]
    args["Total Allocated_renamed"] = args.pop("Total Allocated")
    del bad["traceEvents"][other]["args"]["Total Reserved"]
    gone = copy.deepcopy(doc)
    gone["traceEvents"] = [e for i, e in enumerate(ev) if i not in (top, other)]
    schema = copy.deepcopy(doc)  # a writer that never writes Total Reserved: read as allocated only, silently
    for i in mem:
        del schema["traceEvents"][i]["args"]["Total Reserved"]
    got = _variants(tmp_path, src, {"clean": doc, "bad": bad, "gone": gone, "schema": schema})
    entry = _by_code(got["bad"][1])["kineto.memory-events-incomplete"]
    first = min((top, other), key=lambda i: ev[i]["ts"])
    lost = "'Total Allocated'" if first == top else "'Total Reserved'"
    assert entry.params == {"n": 2, "fields": "'Total Allocated', 'Total Reserved'",
                            "example": f"ts {float(ev[first]['ts'])}, without {lost}"}
    assert entry.file == src.name and entry.ranks == (1,) and entry.kind == "schema drift"
    assert CJK.search(dq(entry.code, **entry.params).render("zh"))
    for name in ("clean", "gone", "schema"):
        assert "kineto.memory-events-incomplete" not in _by_code(got[name][1])
    m = {k: v[0] for k, v in got.items()}
    mb = 2 ** 20
    # hand-computed: the peak allocation is the highest of the samples left
    dev = [i for i in mem if i not in (top, other)]
    assert m["bad"].memory.allocated_peak_mb == max(ev[i]["args"]["Total Allocated"] for i in dev) / mb
    assert m["clean"].memory.allocated_peak_mb == ev[top]["args"]["Total Allocated"] / mb
    assert m["bad"].memory.allocated_peak_mb < m["clean"].memory.allocated_peak_mb
    assert m["bad"].memory.peak_mb == m["gone"].memory.peak_mb
    assert m["bad"].memory.curve.equals(m["gone"].memory.curve)
    assert m["schema"].memory.peak_mb == m["clean"].memory.allocated_peak_mb  # (no reserved: the allocated peak)


def test_the_real_gloo_operator_without_its_category_is_named(tmp_path):
    """The fuzz case itself, on the real torch 2.x gloo trace (rank 1): `aten::resolve_conj`'s `cat` renamed. The
    entry names the file and rank 1, and the numbers are those of the trace without that operator."""
    from tests.conftest import sample

    src = next(sample("real/torch_gloo_4rank").glob("rank1.*.pt.trace.json"))
    doc = json.loads(src.read_text(encoding="utf-8"))
    ev = doc["traceEvents"]
    at = next(i for i, e in enumerate(ev) if e.get("name") == "aten::resolve_conj" and e.get("cat") == "cpu_op")
    bad = copy.deepcopy(doc)
    bad["traceEvents"][at]["cat_renamed"] = bad["traceEvents"][at].pop("cat")
    gone = dict(doc, traceEvents=ev[:at] + ev[at + 1:])
    got = _variants(tmp_path, src, {"clean": doc, "bad": bad, "gone": gone})
    entry = _by_code(got["bad"][1])["kineto.events-without-category"]
    assert entry.params["n"] == 1 and entry.params["example"].startswith("'aten::resolve_conj' at ts ")
    assert entry.file == src.name and entry.ranks == (1,)
    assert [i.problem for i in got["clean"][1]] == [i.problem for i in got["gone"][1]]
    assert [i.problem for i in got["bad"][1] if i is not entry] == [i.problem for i in got["clean"][1]]
    (bad_k, _), (gone_k, _) = got["bad"], got["gone"]
    assert bad_k.step_trace.steps.equals(gone_k.step_trace.steps)
    assert bad_k.operators.detail.equals(gone_k.operators.detail)
    assert bad_k.memory.peak_mb == gone_k.memory.peak_mb


def test_a_header_without_the_fields_kineto_writes_is_named_and_stays_in_its_job(traces, tmp_path):
    """The fuzz sweep renamed `world_size` (the trace then made a job of its own: the other ranks vanished from the
    report), a process group's `pg_name` (the group silently dropped) and `totalGlobalMem` (the overview crashed
    sorting a model without memory beside one with). Kineto writes them whenever it writes the object
    (distributedInfo, pg_config, deviceProperties: every real trace here has them), so their absence is named."""
    from reportgen.layouts import discover
    from reportgen.loaders.kineto.header import header_gaps, read_header

    assert header_gaps({}) == [] and header_gaps({"deviceProperties": []}) == []  # single process, CPU, 2021
    run = tmp_path / "run"
    run.mkdir()
    for p in traces["gpu"]:
        (run / p.name).write_bytes(p.read_bytes())
    src = run / traces["gpu"][1].name
    clean = json.loads(src.read_text(encoding="utf-8"))
    assert header_gaps(read_header(src)) == []
    doc = copy.deepcopy(clean)
    dist = doc["distributedInfo"]
    dist["world_size_renamed"] = dist.pop("world_size")
    dist["pg_config"][0]["pg_name_renamed"] = dist["pg_config"][0].pop("pg_name")
    doc["deviceProperties"][0]["totalGlobalMem_renamed"] = doc["deviceProperties"][0].pop("totalGlobalMem")
    src.write_text(json.dumps(doc), encoding="utf-8")
    (layout,) = discover(run)  # one job: the trace that no longer says its world size stays with the others
    assert sorted(layout.ranks) == [0, 1]
    got = _variants(tmp_path, src, {"clean": clean, "bad": doc})
    entry = _by_code(got["bad"][1])["kineto.header-fields-missing"]
    assert entry.params == {"fields": "distributedInfo.world_size, distributedInfo.pg_config[].pg_name, "
                                      "deviceProperties[].totalGlobalMem"}
    assert entry.ranks == (1,) and entry.file == src.name and entry.severity == "warning"
    assert "kineto.header-fields-missing" not in _by_code(got["clean"][1])
    zh = dq(entry.code, **entry.params).render("zh")
    assert CJK.search(zh) and "distributedInfo.world_size" in zh
    # what the header gave is unknown, never a made-up value: no memory capacity from deviceProperties
    assert got["clean"][0].memory.capacity_mb == clean["deviceProperties"][0]["totalGlobalMem"] / 2 ** 20
    assert got["bad"][0].memory.capacity_mb is None
    # the report builds (the overview sorted (model, memory) pairs with None beside a number: a crash) and names it
    from bs4 import BeautifulSoup

    from reportgen.cli import main

    out = tmp_path / "out"
    assert main([str(run), "-o", str(out), "-q", "--no-cache"]) == 0
    entries = json.loads((out / "summary.json").read_text(encoding="utf-8"))["data_quality"]
    (e,) = [e for e in entries if e.get("code") == "kineto.header-fields-missing"]
    assert e["file"] == src.name and e["params"] == entry.params
    facts = BeautifulSoup((out / "index.html").read_text(encoding="utf-8"), "html.parser").get_text(" ")
    model = clean["deviceProperties"][0]["name"]
    assert f"{model} ({clean['deviceProperties'][0]['totalGlobalMem'] / 2 ** 20:,.0f} MB of memory)" in facts
