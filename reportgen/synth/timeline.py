"""Synthetic operator timelines and the overlap files the profilers derive from them.

The layout of one step (ms, on the device clock) is the same in both layouts, so the overlap values are
known in closed form and the files agree with each other by construction, not by running our algorithm:

    start | data wait (step interval) | Receive (bubble, pipeline only) | compute ........ | collective alone |
          optimizer op | host gap (free) | next step

The collective (AllReduce) starts `overlapped` ms before the compute ends, so that much of it is hidden.
Pure communication = bubble + collective alone; pure receive = bubble; pure collective = collective alone;
computation = step - pure communication; stage = step - pure receive.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from reportgen.synth.execution import trace_view_kernels

OPS_PER_STEP = 8  # compute operators written per step (a coarse but honest timeline)
OPT_MS = 0.05
MIN_RECV_MS = 0.002
RECEIVE = "stream_48_0_Receive-op663"
ALLREDUCE = "stream_12_0_AllReduce-op101"


@dataclass
class StepLayout:
    start: float
    fp: float
    recv: float  # receive duration (0 when not pipeline)
    compute_end: float
    overlapped: float
    alone: float
    end: float

    @property
    def bp(self) -> float:
        return self.compute_end


def legacy_layout(m, r: int, steps: int, pipeline: bool, t0: float) -> list[StepLayout]:
    """Step layouts of rank `r` from the shared step model (see module doc)."""
    out, t = [], t0
    for s in range(steps):
        ii = 0.0 if s == 0 else float(m.data_wait[r, s])
        recv = max(float(m.bubble[r, s]), MIN_RECV_MS) if pipeline else 0.0
        comp = float(m.computing[r, s])
        ov = min(float(m.overlapped[r, s]), comp * 0.5)
        alone = max(float(m.comm_nov[r, s]) - float(m.bubble[r, s]), 0.01)
        fp = t + ii
        ce = fp + recv + comp
        end = ce + alone + OPT_MS + float(m.free[r, s])
        out.append(StepLayout(t, fp, recv, ce, ov, alone, end))
        t = end
    return out


def expected_overlap(lay: StepLayout) -> dict[str, float]:
    dur = lay.end - lay.start
    pure = lay.recv + lay.alone
    return {"computation": dur - pure, "communication_alone": pure, "stage": dur - lay.recv,
            "receive_alone": lay.recv, "collective_alone": lay.alone, "step_duration": dur}


def write_legacy_timeline(d: Path, r: int, layouts: list[StepLayout]) -> None:
    """`output_timeline_data_{r}.txt`: compute operators (ms, 5 decimals = the 10 ns clock)."""
    lines = ["op_name, stream_id, start_time(ms), duration(ms)",
             f"Default/InitDataSetQueue-op0,519,{layouts[0].start - 0.03:.5f},0.01000"]
    for lay in layouts:
        c0 = lay.fp + lay.recv
        step = (lay.compute_end - c0) / OPS_PER_STEP
        for k in range(OPS_PER_STEP):
            name = f"Default/network-TrainOneStepCell/network-Net/MatMul-op{100 + k}"
            lines.append(f"{name},519,{c0 + k * step:.5f},{step:.5f}")
        opt0 = lay.compute_end + lay.alone
        lines.append(f"Default/optimizer-Momentum/ApplyMomentum-op900,519,{opt0:.5f},{OPT_MS:.5f}")
    (d / f"output_timeline_data_{r}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_cluster_analyse(d: Path, r: int, layouts: list[StepLayout], mode: str, stages: int, ranks: int,
                          pipeline: bool) -> None:
    """`ascend_cluster_analyse_{mode}_{stages}_{size}_{rank}.csv`: one row per step, then the mean of steps 2..N."""
    cols = ["computation", "communication_alone"] + (["stage", "receive_alone", "collective_alone"] if pipeline else [])
    header = ("computation_time,communication_alone_time,stage_time,receive_alone_time,"
              "collective_communication_alone_time" if pipeline else "computation_time,communication_alone_time")
    vals = [[round(expected_overlap(lay)[c], 4) for c in cols] for lay in layouts]
    body = vals[1:] if len(vals) > 1 else vals
    avg = [round(float(np.mean(c)), 4) for c in zip(*body)]
    text = header + "\n" + "\n".join(",".join(f"{v:.4f}" for v in row) for row in vals + [avg]) + "\n"
    (d / f"ascend_cluster_analyse_{mode}_{stages}_{ranks}_{r}.csv").write_text(text, encoding="utf-8")


# --- modern trace_view.json ----------------------------------------------------------------------------------


def write_trace_view(out: Path, r: int, m, steps: int, first_step: int, device: int, t0_us: float,
                     kernels: Optional[tuple] = None, body=None) -> None:
    """A `trace_view.json` with host ProfilerStep slices, host-to-device flows and the Overlap Analysis lanes.

    Lane sums per step equal the step_trace_time.csv row the generator writes from the same model:
    Computing = compute, Communication = bubble + overlapped + collective alone, Communication(Not Overlapped) =
    bubble + collective alone, Free = host gap, hcom_receive = bubble.
    `body(s, c0, comp, host0)` (the realistic size, `synth.large`): the device kernels of step index s as JSON text
    (times relative to t0_us), written after the events above.
    """
    pid_host, pid_dev, pid_ovl = 4242, 3170820576, 3170820999
    ev: list[dict] = [
        {"ph": "M", "name": "process_name", "pid": pid_host, "tid": 0, "args": {"name": "Python"}},
        {"ph": "M", "name": "process_labels", "pid": pid_host, "tid": 0, "args": {"labels": "CPU"}},
        {"ph": "M", "name": "process_name", "pid": pid_dev, "tid": 0, "args": {"name": "HCCL"}},
        {"ph": "M", "name": "process_labels", "pid": pid_dev, "tid": 0, "args": {"labels": f"NPU {device}"}},
        {"ph": "M", "name": "process_name", "pid": pid_ovl, "tid": 0, "args": {"name": "Overlap Analysis"}},
        {"ph": "M", "name": "process_labels", "pid": pid_ovl, "tid": 0, "args": {"labels": f"NPU {device}"}},
        {"ph": "M", "name": "thread_name", "pid": pid_dev, "tid": 0, "args": {"name": "Group 0 Communication"}},
    ]
    pid_hw, pid_cann, launch_tid = 3170820512, 3170820320, 4243
    if kernels is not None:
        ev.append({"ph": "M", "name": "process_name", "pid": pid_hw, "tid": 0, "args": {"name": "Ascend Hardware"}})
        ev.append({"ph": "M", "name": "thread_name", "pid": pid_hw, "tid": 2, "args": {"name": "Stream 2"}})
        ev.append({"ph": "M", "name": "process_name", "pid": pid_cann, "tid": 0, "args": {"name": "CANN"}})
        ev.append({"ph": "M", "name": "process_labels", "pid": pid_cann, "tid": 0, "args": {"labels": "CPU"}})
        ev.append({"ph": "M", "name": "thread_name", "pid": pid_cann, "tid": launch_tid,
                   "args": {"name": f"Thread {launch_tid}"}})

    def x(name, pid, tid, ts, dur, **extra):
        ev.append({"ph": "X", "name": name, "pid": pid, "tid": tid, "ts": f"{ts:.3f}", "dur": round(dur, 3), **extra})

    t = t0_us
    us = 1000.0
    chunks: list[bytes] = []
    if body is not None:
        from reportgen.synth.large import trace_meta
        ev.extend(trace_meta())
    for s in range(steps):
        bub = float(m.bubble[r, s]) * us
        comp = float(m.computing[r, s]) * us
        ov = min(float(m.overlapped[r, s]) * us, comp * 0.5)
        alone = max(float(m.comm_nov[r, s]) * us - bub, 0.0)
        free = float(m.free[r, s]) * us
        prep = float(m.preparing[r, s]) * us
        d0 = t
        ce = d0 + bub + comp
        end = ce + alone + free
        host0 = d0 - prep
        x(f"ProfilerStep#{first_step + s}", pid_host, 1, host0, (end - prep) - host0)
        fid = 10_000 + s
        ev.append({"ph": "s", "bp": "e", "name": "torch_to_npu", "id": fid, "pid": pid_host, "tid": 1,
                   "ts": f"{host0 + 1.0:.3f}", "cat": "async_npu"})
        ev.append({"ph": "f", "bp": "e", "name": "torch_to_npu", "id": fid, "pid": pid_dev, "tid": 0,
                   "ts": f"{d0:.3f}", "cat": "async_npu"})
        if bub > 0:
            x(f"hcom_receive__{s}_0_1", pid_dev, 0, d0, bub)
            x("Communication", pid_ovl, 1, d0, bub)
            x("Communication(Not Overlapped)", pid_ovl, 2, d0, bub)
        x("Computing", pid_ovl, 0, d0 + bub, comp)
        if kernels is not None:
            ks = trace_view_kernels(kernels[0], kernels[1], kernels[2], d0 + bub, ce, pid_hw, pid_dev)
            ev.extend(ks)
            ev.extend(_launches(ks, pid_hw, pid_cann, launch_tid, host0, end - prep, 100_000 * (s + 1)))
        if body is not None:
            chunks.append(body(s, d0 + bub - t0_us, comp, host0 - t0_us))
        x(f"hcom_allReduce__{s}_0_1", pid_dev, 0, ce - ov, ov + alone)
        x("Communication", pid_ovl, 1, ce - ov, ov + alone)
        if alone > 0:
            x("Communication(Not Overlapped)", pid_ovl, 2, ce, alone)
        if free > 0:
            x("Free", pid_ovl, 3, ce + alone, free)
        t = end
    if chunks:
        with open(out / "trace_view.json", "wb") as f:
            f.write(json.dumps(ev)[:-1].encode())
            for c in chunks:
                f.write(c)
            f.write(b"]")
        return
    (out / "trace_view.json").write_text(json.dumps(ev), encoding="utf-8")


LAUNCH_US = 12.0  # an AscendCL launch call's duration on the host
LAUNCH_EVERY = 3  # a launch slice for every third kernel (torch_npu writes one per kernel): the file stays small


def _launches(kernels: list[dict], pid_hw: int, pid_cann: int, tid: int, host0: float, host_end: float,
              first_id: int) -> list[dict]:
    """torch_npu's host dispatch of the step's device kernels: an `AscendCL@aclnn<op>` slice on the CANN process
    ahead of every LAUNCH_EVERY-th kernel, linked to it by `connection_id` (in both events' args; the step's first launch also by
    a `HostToDevice` flow). A launch lies inside the step's host ProfilerStep (the step windows built from the
    flows stay as they were)."""
    out = []
    for k, e in enumerate(x for x in kernels if x["pid"] == pid_hw):
        if k % LAUNCH_EVERY:
            continue
        kts = float(e["ts"])
        ts = max(host0 + 1.0, kts - 40.0 - (k % 5) * 3.0)
        if ts + LAUNCH_US >= kts or ts >= host_end - 1.0:
            continue
        cid = first_id + k
        e.setdefault("args", {})["connection_id"] = cid
        api = e["name"].split("_")[0]  # aclnnMm_MatMulV3_MatMulV3 -> aclnnMm
        out.append({"ph": "X", "name": f"AscendCL@{api}", "pid": pid_cann, "tid": tid, "ts": f"{ts:.3f}",
                    "dur": LAUNCH_US, "args": {"connection_id": cid}})
        if not k:  # the flow pair torch_npu also writes per launch: once a step keeps the file small
            out.append({"ph": "s", "name": f"HostToDevice{cid}", "cat": "HostToDevice", "id": str(cid),
                        "pid": pid_cann, "tid": tid, "ts": f"{ts:.3f}"})
            out.append({"ph": "f", "bp": "e", "name": f"HostToDevice{cid}", "cat": "HostToDevice", "id": str(cid),
                        "pid": pid_hw, "tid": e["tid"], "ts": e["ts"]})
    return out
