"""The benchmark shapes of issue 33 (reportgen.synth SHAPES torch_npu_trace / torch_npu_comm) write what their
documentation says: checked on small runs, against the files' own numbers."""

from __future__ import annotations

import csv
import json
from collections import Counter
from pathlib import Path

import pytest

from reportgen.synth import SHAPES, generate_run


@pytest.fixture(scope="module")
def trace_run(tmp_path_factory) -> Path:
    return generate_run(tmp_path_factory.mktemp("shape") / "trace", shape="torch_npu_trace", ranks=2, steps=2, seed=2)


@pytest.fixture(scope="module")
def comm_run(tmp_path_factory) -> Path:
    return generate_run(tmp_path_factory.mktemp("shape") / "comm", shape="torch_npu_comm", ranks=8, tp=8, steps=2,
                        seed=2, inject=["slow-link:4-5"])


def _out(run: Path, r: int) -> Path:
    return next(run.glob(f"*_{100000 + r}_*_ascend_pt")) / "ASCEND_PROFILER_OUTPUT"


def test_trace_shape_every_kernel_launched_and_the_trace_is_the_largest_file(trace_run):
    kernels = SHAPES["torch_npu_trace"]["kernels_per_step"]
    for r in (0, 1):
        out = _out(trace_run, r)
        sizes = {p.name: p.stat().st_size for p in out.iterdir()}
        assert max(sizes, key=sizes.get) == "trace_view.json"
        assert sizes["trace_view.json"] > 0.7 * sum(sizes.values())  # the real level-1 sample: 77 %
        ev = json.loads((out / "trace_view.json").read_text())
        names = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
        hw = [e for e in ev if e.get("ph") == "X" and names.get(e["pid"]) == "Ascend Hardware"]
        cann = [e for e in ev if e.get("ph") == "X" and names.get(e["pid"]) == "CANN"]
        assert len(hw) == 2 * kernels == len(cann)
        # every kernel has its launch (same connection_id) before it, and a HostToDevice flow pair
        launch_at = {e["args"]["connection_id"]: float(e["ts"]) for e in cann}
        assert all(launch_at[e["args"]["connection_id"]] < float(e["ts"]) for e in hw)
        flows = Counter(e["ph"] for e in ev if e.get("cat") == "HostToDevice")
        assert flows["s"] == flows["f"] == 2 * kernels
        # per step, the kernels tile the Computing lane: their durations sum to it less a 0.5 us gap each
        comp = sorted((float(e["ts"]), e["dur"]) for e in ev if e.get("name") == "Computing")
        for ts, dur in comp:
            inside = [e["dur"] for e in hw if ts - 1 <= float(e["ts"]) <= ts + dur]
            assert len(inside) == kernels
            assert sum(inside) == pytest.approx(dur - 0.5 * kernels, abs=1.0)
        # the same kernel count per step as kernel_details.csv
        with open(out / "kernel_details.csv", newline="") as f:
            steps = Counter(row["Step Id"] for row in csv.DictReader(f))
        assert sorted(steps.values()) == [kernels, kernels]


def test_comm_shape_many_small_collectives_and_full_mesh_matrix(comm_run):
    per_step = SHAPES["torch_npu_comm"]["comm_ops_per_step"]
    out = _out(comm_run, 4)
    comm = json.loads((out / "communication.json").read_text())
    for step, kinds in comm.items():
        assert sum(len(ops) for ops in kinds.values()) == per_step
    matrix = json.loads((out / "communication_matrix.json").read_text())
    for step, kinds in matrix.items():
        keys = [k for ops in kinds.values() for k in ops]
        tags = Counter(k.split("@")[0].split("-")[-1] for k in keys)
        assert {"top1", "middle", "bottom1", "bottom2", "bottom3", "total"} <= set(tags)
        # a tensor-parallel entry links rank 4 (local 4) to all 8 members (mesh), and only 4-5 is slow
        sample = next(ops[k] for ops in kinds.values() for k in ops if k.startswith("allgather-top1"))
        assert sorted(sample) == sorted(f"4-{p}" for p in range(8))
        bw = {lk: v["Bandwidth(GB/s)"] for lk, v in sample.items() if lk != "4-4"}
        assert min(bw, key=bw.get) == "4-5" and bw["4-5"] < 0.5 * sorted(bw.values())[1]
