"""A device event that no host launch maps to a step (its `correlation` id lost, or carried by no runtime launch)
counts in no step, as in HTA: the numbers stay HTA's and an entry names the file, the rank, how many events and
how long they last (before: the time went to "free" without a word)."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from reportgen.dataquality import dq
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.kineto import launches
from reportgen.loaders.kineto.rank import load_kineto
from reportgen.model import RankData, RankInfo
from reportgen.synth import parse_injections, simulate
from reportgen.synth.kineto import write_kineto

CODE = "kineto.kernels-without-launch"


@pytest.fixture(scope="module")
def trace(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("launches")
    plan = parse_injections([])
    plan.seed = 7
    m = simulate(2, 4, stages=1, plan=plan, seed=7)
    write_kineto(root / "gpu", m, 2, 4, plan, per_host=2, first_step=1)
    return sorted((root / "gpu").glob("*.pt.trace.json"))[0]


def _load(tmp_path: Path, name: str, src: Path, doc: dict):
    path = tmp_path / name / src.name
    path.parent.mkdir()
    path.write_text(json.dumps(doc), encoding="utf-8")
    log = IssueLog(path.parent, rank=1)
    return load_kineto(path, RankData(info=RankInfo(rank=1, source_dir=".")), log), log.issues


def _step_kernels(doc: dict, step: int) -> list[int]:
    """Indices of the kernels launched in host step `step`, in start order, the step's first one left out (it
    starts the step's window on the device)."""
    ev = doc["traceEvents"]
    host = next(e for e in ev if e.get("name") == f"ProfilerStep#{step}" and e.get("cat") == "user_annotation")
    a, b = float(host["ts"]), float(host["ts"]) + float(host["dur"])
    launched = {e["args"]["correlation"] for e in ev if e.get("cat") == "cuda_runtime"
                and a <= float(e["ts"]) < b and "correlation" in e.get("args", {})}
    ks = sorted((i for i, e in enumerate(ev) if e.get("cat") == "kernel"
                 and e.get("args", {}).get("correlation") in launched), key=lambda i: float(ev[i]["ts"]))
    return ks[1:]


@pytest.mark.parametrize("how", ["kernel-without-id", "launch-without-id", "id-matching-nothing"])
def test_a_kernel_without_its_launch_is_named_and_counts_in_no_step(trace, tmp_path, how):
    doc = json.loads(trace.read_text(encoding="utf-8"))
    ev = doc["traceEvents"]
    ks = _step_kernels(doc, 2)
    assert len(ks) >= 4
    hit = [ks[len(ks) // 3], ks[2 * len(ks) // 3]]
    bad = copy.deepcopy(doc)
    for k in hit:
        corr = ev[k]["args"]["correlation"]
        if how == "kernel-without-id":
            del bad["traceEvents"][k]["args"]["correlation"]
        else:
            rt = next(i for i, e in enumerate(ev) if e.get("cat") == "cuda_runtime"
                      and e.get("args", {}).get("correlation") == corr)
            if how == "launch-without-id":
                del bad["traceEvents"][rt]["args"]["correlation"]
            else:
                bad["traceEvents"][rt]["args"]["correlation"] = 10 ** 12 + k
    gone = copy.deepcopy(doc)
    gone["traceEvents"] = [e for i, e in enumerate(ev) if i not in hit]
    got = {name: _load(tmp_path, name, trace, d) for name, d in (("clean", doc), ("bad", bad), ("gone", gone))}
    assert all(i.code != CODE for name in ("clean", "gone") for i in got[name][1])
    entry = next(i for i in got["bad"][1] if i.code == CODE)
    first = min(hit, key=lambda i: float(ev[i]["ts"]))
    ms = sum(float(ev[k]["dur"]) for k in hit) / 1e3
    params = dict(entry.params)
    share = params.pop("share")
    assert params == {"n": 2, "no_id": 2 if how == "kernel-without-id" else 0, "ms": format(ms, ".3f"),
                            "example": f"{ev[first]['name'][:80]!r} at ts {float(ev[first]['ts'])}"}
    assert entry.file == trace.name and entry.ranks == (1,) and entry.kind == ""  # (no door class: real traces
    # have such events, `test_clean_real_samples_gain_no_door_entry`)
    # a warning (a finding naming the rank) from a tenth of the step windows' time, else information
    span = sum(w[2] - w[1] for w in got["bad"][0].events.windows) / 1e3
    assert share == format(ms / span, ".1%")
    assert entry.severity == ("warning" if ms / span >= launches.UNLAUNCHED_WARNING_SHARE else "info")
    assert entry.problem.startswith("2 device event(s) in the step windows have no host launch in the trace (")
    assert re.search(r"[\u4e00-\u9fff]", dq(entry.code, **entry.params).render("zh"))
    # the numbers: HTA's (those of the trace without the two kernels), named; not the clean trace's
    steps = {name: got[name][0].step_trace.steps for name in got}
    assert steps["bad"].equals(steps["gone"])
    row = steps["clean"]["step"] == 2
    assert (steps["bad"].loc[row, "computing"].iloc[0] < steps["clean"].loc[row, "computing"].iloc[0])
    assert steps["bad"].loc[~row].equals(steps["clean"].loc[~row])


def test_a_kernel_launched_outside_the_steps_is_not_named(trace, tmp_path):
    """Events outside every step window (before the first step, after the last) change no step: no entry."""
    doc = json.loads(trace.read_text(encoding="utf-8"))
    ev = doc["traceEvents"]
    k0 = min((i for i, e in enumerate(ev) if e.get("cat") == "kernel"), key=lambda i: float(ev[i]["ts"]))
    early = copy.deepcopy(ev[k0])
    early["ts"] = float(ev[k0]["ts"]) - 10 * float(ev[k0]["dur"]) - 1000.0
    del early["args"]["correlation"]
    doc["traceEvents"].append(early)
    _, issues = _load(tmp_path, "early", trace, doc)
    assert all(i.code != CODE for i in issues)


def test_the_entry_is_a_warning_from_its_share_of_the_steps(trace, tmp_path, monkeypatch):
    doc = json.loads(trace.read_text(encoding="utf-8"))
    for k in _step_kernels(doc, 2)[1:3]:
        del doc["traceEvents"][k]["args"]["correlation"]
    got = {}
    for limit in (0.0, 1.0):
        monkeypatch.setattr(launches, "UNLAUNCHED_WARNING_SHARE", limit)
        _, issues = _load(tmp_path, f"at-{limit}", trace, doc)
        got[limit] = next(i for i in issues if i.code == CODE)
    assert got[0.0].severity == "warning" and got[1.0].severity == "info"
    assert got[0.0].ranks == got[1.0].ranks == (1,)


def test_the_real_a100_trace_gets_information_not_a_warning():
    """The A100 sample (a healthy job) has 868 device events in its steps that no runtime launch in the trace carries (4.8 % of its
    steps): named, as information; no finding is made of it."""
    from tests.conftest import sample

    path = sample("external/hta_a100_16rank_job_rank0_5steps/rank0.pt.trace.json.gz")
    log = IssueLog(path.parent, rank=0)
    load_kineto(path, RankData(info=RankInfo(rank=0, source_dir=".")), log)
    (entry,) = [i for i in log.issues if i.code == CODE]
    assert entry.params["n"] == 868 and entry.severity == "info"
    assert float(entry.params["share"].rstrip("%")) / 100 < launches.UNLAUNCHED_WARNING_SHARE
