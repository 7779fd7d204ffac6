"""Real Kineto traces from other teams (`../shared/samples/external/`, see its SOURCES.md) read by the loader, checked
against a second computation written here with plain json / gzip and interval unions (not through the loaders).

The method (HTA's, as issue 28 asks): steps are the host's `ProfilerStep#N` ranges (CPU `user_annotation` /
`cpu_op`, the 2021 schema's `Operator`; the GPU lane's `gpu_user_annotation` copies are not steps); each device
event (kernel, copy, set) belongs to the step whose host range holds its launch (the runtime call with the same
correlation id); a step lasts from its first device event to the next step's first one, and the last step (no next
step ends it) is partial and left out; computation, communication and overlap are unions of the step's own events.
Communication: a collective library's kernel by name (NCCL/RCCL `ncclKernel_*` / `ncclDevKernel_*`, HCCL,
DeepEP, ...), or a kernel launched inside a collective's host op (`record_param_comms`, `nccl:*`, `c10d::*`) on
the same thread. CPU-only traces: computation = operators of the ProfilerStep's thread, communication = gloo:*
slices (all threads, one union), both cut at the step's range.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from reportgen.layouts import discover, load_run
from tests.conftest import sample

REL = 0.01  # "within 1 %"
CASES = ["tracelens_mi300x_resnet_rank0_of8", "hta_a100_16rank_job_rank0_5steps",
         "hta_v100_2rank_df_index_rank1_memory", "param_dlrm_8rank_v100_nccl", "hta_cpu_only_gloo_rank34",
         "kineto_tbplugin_rn50_v100_nw0", "kineto_tbplugin_rn50_v100_nw4"]
COMM_NAME = re.compile(r"^(?:void\s+)?(?:\w+::)*(?:nccl|rccl|msccl|hccl|hcom_)|ncclDevKernel|ncclKernel|"
                       r"deep_ep::|dpsk::ep::", re.I)
HOST_COMM = re.compile(r"^(?:gloo:|nccl:|c10d::|_?c10d_functional::|record_param_comms)", re.I)
DEVICE = {"kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset"}


# --- the second computation ---------------------------------------------------------------------------------

def _events(path: Path) -> tuple[dict, list]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as f:
        d = json.loads(f.read())
    return (d, d.get("traceEvents", [])) if isinstance(d, dict) else ({}, d)


def _union(ivs):
    out = []
    for s, e in sorted(ivs):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def _len(u):
    return sum(e - s for s, e in u)


def _cut(u, a, b):
    return [[max(s, a), min(e, b)] for s, e in u if min(e, b) > max(s, a)]


def _inter(x, y):
    return _len([[max(a[0], b[0]), min(a[1], b[1])] for a in x for b in y if min(a[1], b[1]) > max(a[0], b[0])]) \
        if len(x) * len(y) < 4_000_000 else _inter_sweep(x, y)


def _inter_sweep(x, y):
    i = j = 0
    t = 0.0
    while i < len(x) and j < len(y):
        s, e = max(x[i][0], y[j][0]), min(x[i][1], y[j][1])
        if e > s:
            t += e - s
        if x[i][1] < y[j][1]:
            i += 1
        else:
            j += 1
    return t


def expected(path: Path) -> dict:
    """{"steps": {step: (total, computing, communication, overlapped) ms}, "partial": [steps], ...}."""
    head, ev = _events(path)
    xs = [e for e in ev if isinstance(e, dict) and e.get("ph") == "X"]
    cat = [str(e.get("cat") or "").lower() for e in xs]
    host = sorted((int(e["name"].split("#")[1]), float(e["ts"]), float(e["ts"]) + float(e["dur"]), e.get("tid"))
                  for e, c in zip(xs, cat) if re.fullmatch(r"ProfilerStep#\d+", str(e.get("name")))
                  and c in ("user_annotation", "cpu_op", "operator"))
    launches = {e["args"]["correlation"]: (float(e["ts"]), e.get("pid"), e.get("tid")) for e, c in zip(xs, cat)
                if (c == "runtime" or c.endswith("_runtime") or c.endswith("_driver"))
                and isinstance(e.get("args"), dict) and "correlation" in e["args"]}
    comm_ops: dict = {}
    for e, c in zip(xs, cat):
        if c in ("cpu_op", "operator", "user_annotation") and HOST_COMM.match(str(e.get("name"))):
            comm_ops.setdefault((e.get("pid"), e.get("tid")), []).append(
                (float(e["ts"]), float(e["ts"]) + float(e["dur"])))
    comm_ops = {k: _union(v) for k, v in comm_ops.items()}
    dev = []  # (start, end, comm, step index)
    for e, c in zip(xs, cat):
        if c not in DEVICE:
            continue
        s, t = float(e["ts"]), float(e["ts"]) + float(e["dur"])
        corr = (e.get("args") or {}).get("correlation")
        launch = launches.get(corr)
        comm = bool(COMM_NAME.search(str(e.get("name"))))
        if not comm and c == "kernel" and launch is not None:
            comm = any(a <= launch[0] <= b for a, b in comm_ops.get((launch[1], launch[2]), []))
        step = next((i for i, (_n, a, b, _t) in enumerate(host) if launch is not None and a <= launch[0] < b), -1)
        dev.append((s, t, comm, step))
    out = {"steps": {}, "partial": [], "device": bool(dev), "head": head}
    if not host:
        return out
    if not dev:  # CPU only
        main = {t for *_x, t in host}
        for n, a, b, _t in host:
            comp = _union([(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e, c in zip(xs, cat)
                           if c in ("cpu_op", "operator") and e.get("tid") in main
                           and not HOST_COMM.match(str(e.get("name")))])
            comm = _union([(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e, c in zip(xs, cat)
                           if c == "user_annotation" and str(e.get("name")).startswith("gloo:")])
            cp, cm = _cut(comp, a, b), _cut(comm, a, b)
            out["steps"][n] = ((b - a) / 1e3, _len(cp) / 1e3, _len(cm) / 1e3, _inter(cp, cm) / 1e3)
        return out
    first = {i: min(s for s, _t, _c, k in dev if k == i) for i in range(len(host))}
    complete = {i for i in range(len(host) - 1) if host[i + 1][0] == host[i][0] + 1 and first[i + 1] > first[i]}
    for i, (n, a, b, _t) in enumerate(host):
        if len(host) > 1 and complete:
            if i not in complete:
                out["partial"].append(n)
                continue
            a, b = first[i], first[i + 1]
        cp = _union([(s, t) for s, t, c, k in dev if k == i and not c])
        cm = _union([(s, t) for s, t, c, k in dev if k == i and c])
        out["steps"][n] = ((b - a) / 1e3, _len(cp) / 1e3, _len(cm) / 1e3, _inter(cp, cm) / 1e3)
    return out


# --- the loader against it ----------------------------------------------------------------------------------

def _traces(case: Path) -> list[Path]:
    return sorted(p for p in case.iterdir() if re.search(r"\.json(\.gz)?$", p.name))


@pytest.fixture(scope="module", params=CASES)
def case(request):
    root = sample(f"external/{request.param}")
    runs = discover(root)
    assert len(runs) == 1, [r.name for r in runs]
    run = load_run(runs[0], jobs=1)
    want = {}
    for p in _traces(root):
        e = expected(p)
        rank = (e["head"].get("distributedInfo") or {}).get("rank", 0)
        want[rank] = e
    return request.param, run, want


def test_steps_computation_communication_overlap_within_1pct(case):
    name, run, want = case
    assert sorted(run.ranks) == sorted(want), name
    for r, e in want.items():
        st = run.ranks[r].step_trace
        assert st is not None and e["steps"], (name, r)
        got = st.steps.set_index("step")
        assert sorted(int(s) for s in got.index) == sorted(e["steps"]), (name, r)
        for n, (total, comp, comm, ovl) in e["steps"].items():
            row = got.loc[n]
            for col, v in (("total", total), ("computing", comp), ("communication", comm), ("overlapped", ovl)):
                assert float(row[col]) == pytest.approx(v, rel=REL, abs=1e-3), (name, r, n, col)
            # the parts add up to the step (free is what is left, never negative)
            assert float(row["free"]) >= 0
        partial = [] if st.partial_steps is None else sorted(int(s) for s in st.partial_steps["step"])
        assert partial == sorted(e["partial"]), (name, r)
        if partial:
            assert any("partial" in i.problem and str(partial[0]) in i.problem for i in run.ranks[r].issues)


def test_per_step_communication_is_one_union(case):
    """Communication per step (the communication view) equals the step trace's union: concurrent gloo threads
    and NCCL streams are counted once."""
    name, run, want = case
    for r in want:
        d = run.ranks[r]
        if d.communication is None:
            continue
        cs = d.communication.steps.set_index("step")["communication_ms"]
        st = d.step_trace.steps.set_index("step")["communication"]
        for s, v in cs.items():
            assert v == pytest.approx(float(st.loc[s]), rel=REL, abs=1e-3), (name, r, s)


def test_device_facts_and_memory_units(case):
    name, run, want = case
    for r, e in want.items():
        d = run.ranks[r]
        props = e["head"].get("deviceProperties") or []
        if e["device"] and props:
            p = next((p for p in props if p.get("id") == d.info.device), props[0])
            assert d.info.device_model == p["name"]
            assert d.info.device_memory_mb == pytest.approx(p["totalGlobalMem"] / 2 ** 20)
        if d.memory is not None and d.memory.capacity_mb is not None:
            assert d.memory.capacity_mb == pytest.approx(d.info.device_memory_mb)
        if not e["device"]:
            assert "CPU operators" in d.step_trace.label


def test_mi300x_steps_are_the_hosts():
    """ROCm writes ProfilerStep on the GPU lane too (a few µs): the steps are the host's, ~19 ms each, and the
    RCCL kernels (ncclDevKernel_Generic) are communication."""
    run = load_run(discover(sample("external/tracelens_mi300x_resnet_rank0_of8"))[0], jobs=1)
    st = run.ranks[0].step_trace.steps
    assert list(st["step"]) == [15, 16] and (st["total"] > 18).all() and (st["communication"] > 10).all()
    ops = run.ranks[0].operators.detail
    assert any("ncclDevKernel_Generic" in n for n in ops[ops["side"] == "communication"]["name"])


def test_a100_last_step_is_partial_and_left_out():
    run = load_run(discover(sample("external/hta_a100_16rank_job_rank0_5steps"))[0], jobs=1)
    st = run.ranks[0].step_trace
    assert list(st.steps["step"]) == [550, 551, 552, 553] and list(st.partial_steps["step"]) == [554]
    assert st.steps["total"].max() < 220 and st.partial_steps["total"].iloc[0] > 300


def test_gloo_threads_counted_once():
    run = load_run(discover(sample("external/hta_cpu_only_gloo_rank34"))[0], jobs=1)
    d = run.ranks[34]
    comm = float(d.communication.steps["communication_ms"].iloc[0])
    assert comm <= float(d.step_trace.steps["total"].iloc[0])  # 343.7 ms (two threads summed) before


def test_2021_schema_reads_operators_and_copies():
    run = load_run(discover(sample("external/kineto_tbplugin_rn50_v100_nw0"))[0], jobs=1)
    d = run.ranks[0]
    det = d.operators.detail
    assert any(n.startswith("[memset]") for n in det["name"]) and (det["side"] == "hostcpu").any()
    assert "aten::conv2d" in set(det["name"])


def test_operator_totals_cover_the_complete_steps_only():
    """The operator table divides its totals by the number of steps: they hold only the complete steps' kernels,
    so the GPU side per step equals the step trace's computation (no concurrent compute kernels in this trace)."""
    run = load_run(discover(sample("external/hta_v100_2rank_df_index_rank1_memory"))[0], jobs=1)
    d = run.ranks[1]
    gpu = d.operators.detail[d.operators.detail["side"] == "gpu"]["total_ms"].sum()
    assert gpu == pytest.approx(d.step_trace.steps["computing"].sum(), rel=0.02)


def test_two_real_jobs_in_one_folder_are_two_runs(tmp_path):
    import shutil

    d = tmp_path / "two"
    d.mkdir()
    for case, name in (("tracelens_mi300x_resnet_rank0_of8", "a.pt.trace.json.gz"),
                       ("hta_a100_16rank_job_rank0_5steps", "b.pt.trace.json.gz")):
        shutil.copy(_traces(sample(f"external/{case}"))[0], d / name)
    runs = discover(d)
    assert sorted(r.name for r in runs) == ["AMD Instinct MI300X, world size 8", "NVIDIA A100-SXM4-80GB, world size 16"]
