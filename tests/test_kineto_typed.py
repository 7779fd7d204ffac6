"""Kineto traces through the typed path (loaders/trace_typed.py's object form, issue 33): the rank loader's pass
(`kineto.scan._scan` via `load_kineto`) and the execution view's two passes (`step_windows`, `read_step_ops`) give
the same model objects, windows, operators and data-quality entries over msgspec's typed events as over orjson's /
the stream's dicts; the door judges Kineto's lanes a column at a time as it judges them event by event; and the
execution view parses each rank's trace once."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pandas as pd
import pytest

from conftest import SAMPLES, plain, typed_and_dicts
from reportgen.loaders import trace_typed, traces
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.kineto import load_kineto, read_step_ops, step_windows
from reportgen.model import RankData, RankInfo
from reportgen.synth import generate_run

H100 = Path(__file__).parent / "data" / "h100"


def _odd(path: Path, out: Path) -> Path:
    """The trace at `path` with odd events added (text numbers, a NaN ts, negative and text lane ids, a duplicate,
    an unusable duration, args values to name): what the door and the loader name, typed or not."""
    doc = json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes())
    ev = doc["traceEvents"]
    k = next(e for e in ev if e.get("cat") == "kernel")
    rt = next(e for e in ev if e.get("cat") == "cuda_runtime")
    op = next(e for e in ev if e.get("cat") == "cpu_op")
    ev += [dict(k, ts=str(k["ts"])), dict(k, ts="nan"), dict(k, dur=-1.0), dict(op), dict(op, tid=-77),
           dict(op, pid="Spans", cat="Trace"), dict(rt, args={"correlation": -5}), dict(k, args={"stream": 1.5}),
           {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": k["ts"],
            "args": {"Total Allocated": "12", "Total Reserved": 20, "Device Type": 1, "Device Id": 0}}]
    out.write_text(json.dumps(doc))
    return out


def _traces(tmp_path_factory) -> list[Path]:
    tmp = tmp_path_factory.mktemp("kt")
    run = generate_run(tmp / "run", layout="kineto", ranks=2, steps=4, seed=7)
    synth = sorted(run.rglob("*.pt.trace.json*"))
    paths = [synth[0], _odd(synth[1], tmp / "odd.pt.trace.json"), next(iter(sorted(H100.rglob("rank0*.gz"))))]
    for rel in ("external/param_dlrm_8rank_v100_nccl", "external/hta_cpu_only_gloo_rank34",
                "external/tracelens_mi300x_resnet_rank0_of8"):
        got = sorted((SAMPLES / rel).rglob("*.pt.trace.json*"))
        paths += got[:1]  # (absent samples: the synthetic and h100 traces only)
    return paths


@pytest.fixture(scope="module")
def trace_paths(tmp_path_factory) -> list[Path]:
    return _traces(tmp_path_factory)


def _read_all(path: Path):
    log = IssueLog(path.parent, 0)
    data = RankData(info=RankInfo(rank=0, source_dir="."))
    k = load_kineto(path, data, log)
    w = step_windows(path)
    steps = sorted(w)[:2]
    with traces.shared_reads():
        ops = read_step_ops(path, 0, w, steps, log)
    return plain((k, data.info, w, ops)), [(i.code, i.params, i.severity) for i in log.issues], (k, w, ops)


def test_the_kineto_readers_are_the_same_typed_and_as_dicts(trace_paths, monkeypatch):
    """load_kineto, step_windows and read_step_ops over the typed events and over the dict path (the typed decoder
    refused): the same objects and entries, on synthetic, odd, H100 and real A100 / V100 / MI300X / gloo traces."""
    assert len(trace_paths) >= 3
    for path in trace_paths:
        typed, plain, took = typed_and_dicts(lambda: _read_all(path), monkeypatch)
        assert took and all(r is not None for r in took), path  # (every pass read the typed events)
        assert typed[:2] == plain[:2], path
        k, w, ops = typed[2]
        assert w and k.step_trace is not None, path
        if path.name == "odd.pt.trace.json":  # the odd events are named, as the dict path names them
            codes = {c for c, _, _ in typed[1]}
            assert {"trace.args-value-invalid", "trace.complete-event-without-usable"} <= codes, codes


def test_the_kineto_readers_are_the_same_whole_and_streamed(trace_paths, monkeypatch):
    """Above the dict path's bound the trace is streamed by ijson; the typed path still reads it whole (up to
    TYPED_MAX_BYTES): the same objects and entries; above TYPED_MAX_BYTES the typed path steps aside."""
    path = trace_paths[1]  # (the odd one: entries to compare)
    typed = _read_all(path)
    monkeypatch.setattr(traces, "FAST_MAX_BYTES", 1024)
    took = []
    with monkeypatch.context() as m:
        m.setattr(traces, "typed_events", lambda *a: took.append(r := trace_typed.typed_events(*a)) or r)
        assert _read_all(path)[:2] == typed[:2]
    assert took and took[0] is not None
    monkeypatch.setattr(traces, "TYPED_MAX_BYTES", 1024)
    with monkeypatch.context() as m:
        m.setattr(traces, "typed_events", lambda *a: pytest.fail("decoded above TYPED_MAX_BYTES"))
        assert _read_all(path)[:2] == typed[:2]


def test_the_door_judges_kineto_lanes_a_column_at_a_time(trace_paths, monkeypatch, tmp_path):
    """Kineto's lanes -- thread ids of either sign, "Spans" / "Traces" / "" as process ids -- are judged a column at a
    time (no call of `TraceDoor.event`), with the lanes, counts and entries event-by-event judging gives; a digit
    text lane id (read as the number) or a float one is left to `event`."""
    from reportgen.loaders.schema import KINETO_TRACE, TraceDoor

    path = trace_paths[2]
    ev = json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]
    ev += [dict(e, tid=-1107294656) for e in ev if e.get("cat") in ("cpu_op", "cuda_runtime")][:50]  # (A100's)
    b = traces.Events(ev, whole=True)
    assert any(type(p) is str for p in b.col("pid")) and any(type(t) is int and t < 0 for t in b.col("tid"))

    def state(d):
        return (d.n_events, list(d.bad_lane.items()), list(d.bad_args.items()), d.malformed, d.unnamed, d.dups,
                sorted(map(repr, d.threads)), list(d.on_threads.items()))

    one = TraceDoor(IssueLog(tmp_path), path, KINETO_TRACE)
    want = [one.event(e) for e in b.events]
    calls = []
    two = TraceDoor(IssueLog(tmp_path), path, KINETO_TRACE)
    monkeypatch.setattr(two, "event", lambda e: calls.append(e) or TraceDoor.event(two, e))
    assert two.events(b) == want and not calls
    assert state(two) == state(one)
    for odd in ("7", 7.0, -2 ** 64, "x7", " -7"):
        ev = [dict(ph="X", name="a", cat="cpu_op", pid=1, tid=-3, ts=1, dur=1), dict(ph="X", name="b", pid=odd,
                                                                                       tid=2, ts=2, dur=1)]
        one, two = (TraceDoor(IssueLog(tmp_path), path, KINETO_TRACE) for _ in range(2))
        calls.clear()
        monkeypatch.setattr(two, "event", lambda e: calls.append(e) or TraceDoor.event(two, e))
        assert two.events(traces.Events(ev)) == [one.event(e) for e in ev] and state(two) == state(one)
        assert bool(calls) == (odd != "x7"), odd  # (only a name that is not digits is read as written)


def test_the_execution_view_parses_each_rank_once(tmp_path, monkeypatch):
    """load_execution reads a rank's windows and its operators from one decode of its trace (`shared_reads`), and
    the steps it draws and their operators are those the two reads gave apart."""
    from reportgen.analysis.execution import select
    from reportgen.layouts import discover, load_execution, load_run, timeline_ranks

    root = generate_run(tmp_path / "run", layout="kineto", ranks=3, steps=4, seed=5)
    lay = discover(root)[0]
    run = load_run(lay, jobs=1)
    sel = select(run, timeline_ranks(lay))
    took = []
    with monkeypatch.context() as m:
        m.setattr(traces, "typed_events", lambda *a: took.append(r := trace_typed.typed_events(*a)) or r)
        ex = load_execution(lay, run, sel.steps, sel.reasons, sel.ranks, sel.skipped)
    assert len(took) == 3 and all(r is not None for r in took)
    assert ex.steps and sorted(ex.ops[ex.steps[0]]) == [0, 1, 2]
    for r in range(3):  # the two passes apart, on a fresh parse each
        p = lay.ranks[r].first("kineto_trace")
        w = step_windows(p)
        got = read_step_ops(p, r, w, ex.steps, IssueLog(root, 0))
        assert plain({s: got[s] for s in ex.steps}) == plain({s: ex.ops[s][r] for s in ex.steps})


def test_the_dense_kineto_shape_has_the_real_mix_and_the_models_numbers(tmp_path):
    """The benchmark's `kineto` shape (`write_kineto(dense=True)`): per kernel the event mix of the real A100 trace
    (host operators with shapes, runtime calls, flow ends, copies, sets, annotations; counted here from the file),
    and the same step breakdown as the plain trace of the same model (the added copies and sets lie inside kernels,
    the added host work changes no device time)."""
    from collections import Counter

    from reportgen.layouts import discover, load_run
    from reportgen.synth import parse_injections, simulate
    from reportgen.synth.kineto import write_kineto

    plan = parse_injections([])
    plan.seed = 3
    m = simulate(2, 3, stages=1, plan=plan, seed=3)
    steps = {}
    for dense in (False, True):
        root = tmp_path / ("dense" if dense else "plain")
        write_kineto(root, m, 2, 3, plan, per_host=2, first_step=1, kernels_per_step=88, dense=dense)
        run = load_run(discover(root)[0], jobs=1)
        steps[dense] = [run.ranks[r].step_trace.steps.drop(columns=["source"], errors="ignore") for r in (0, 1)]
        if dense:
            ev = json.loads(next(root.glob("*.pt.trace.json")).read_text())["traceEvents"]
            n = Counter((e["ph"], e.get("cat", "")) for e in ev)
            k = n[("X", "kernel")] - 2 * 3  # (the compute kernels: less the all-reduces)
            assert k == 88 * 3
            # the A100 trace's ratios per kernel: 4.1 cpu_op, 5.6 cuda_runtime, 5.8 flow ends, 1.1 flow starts,
            # 0.23 copies, 0.05 sets, 0.06 annotations
            assert 3.9 <= n[("X", "cpu_op")] / k <= 4.2 and 5.4 <= n[("X", "cuda_runtime")] / k <= 6.0
            assert 5.3 <= n[("f", "ac2g")] / k <= 6.0 and 0.9 <= n[("s", "ac2g")] / k <= 1.2
            assert 0.2 <= n[("X", "gpu_memcpy")] / k <= 0.26 and 0.03 <= n[("X", "gpu_memset")] / k <= 0.06
            assert 0.05 <= n[("X", "user_annotation")] / (k + 3) <= 0.08
            dims = [e["args"]["Input Dims"] for e in ev if e.get("cat") == "cpu_op" and "Input Dims" in e["args"]]
            assert len(dims) >= 3 * k and any(isinstance(d[0], list) for d in dims)
    for a, b in zip(steps[False], steps[True]):
        pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-9, atol=1e-6)
