"""Synthetic MindSpore GPU profiler output: the legacy flat `profiler/` folder MindSpore (<= 2.2) writes on GPU.

Files and units, as MindSpore's GPU `DataSaver` (C++) and Python parsers write them:

* `step_trace_raw_{r}_detail_time.csv`: the legacy step-trace columns in **10 ns** ticks (the GPU saver divides its
  ns timestamps by 10 "to keep the same with ascend"); the async-launch parser names the reduce columns
  `stream_ops_{i}_{op}` (its reduce dict key is the literal `ops`); the last row `-` is the mean of **all** rows.
* `gpu_op_type_info_{r}.csv`: `op_type,type_occurrences,total_time(us),total_proportion,avg_time(us)`
  (operator time measured around the launch on the host, µs; proportion a fraction).
* `gpu_op_detail_info_{r}.csv`: `op_side,op_type,op_name,op_full_name,op_occurrences,op_total_time(us),
  op_avg_time(us),total_proportion,cuda_activity_cost_time(us),cuda_activity_call_count` (op_side `Device`;
  cuda_activity_cost_time = the op's kernels on the GPU).
* `gpu_activity_data_{r}.csv`: `name,type,op_full_name,stream_id,block_dim,grid_dim,occurrences,
  total_duration(us),avg_duration(us),max_duration(us),min_duration(us)`; kernel name and dims quoted.
* `gpu_timeline_display_{r}.json`: a Chrome-trace array, µs; pid = device id; tid "Ops" for operator ranges, the
  stream id (a string) for kernels with `args {type, op_full_name, block_dim, grid_dim}`.
  `gpu_timeline_summary_{r}.json` beside it.
* `gpu_cluster_analyse_{mode}_{stages}_{size}_{r}.csv`: `computation_time,communication_alone_time` per step in
  ms (the GPU generator divides µs by 1e3), then the mean of steps 2..N.
* `minddata_getnext_profiling_{r}.txt`: `GetNext_dequeue_wait start end queue_size`, ns.
* `profiler_info_{r}.json` with `device_target` GPU.
* `cpu_op_type_info_{r}.csv` / `cpu_op_detail_info_{r}.csv`: the host CPU kernels (ms), written by the CPU
  profiler that runs beside the GPU one.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from reportgen.synth.timeline import OPT_MS, expected_overlap, legacy_layout

GPU_OPS = (  # (op type, scope, kernel, share of computation)
    ("Conv2D", "network-ResNet/layer1-SequentialCell/0-ResidualBlock/conv1-Conv2d",
     "void cudnn::cnn::conv2d_grouped_direct_kernel<float, float, float, float, float, true, false, 0, 0, 0>"
     "(cudnnTensorStruct, float const*, cudnnFilterStruct, float const*, cudnnConvolutionStruct, cudnnTensorStruct, "
     "float*, float, float, cudnn::reduced_divisor, int, float const*, float const*, float const*, int)", 0.38),
    ("MatMul", "network-ResNet/end_point-Dense", "volta_sgemm_128x64_nn", 0.22),
    ("BatchNorm", "network-ResNet/layer1-SequentialCell/0-ResidualBlock/bn1-BatchNorm2d",
     "void cudnn::bn_fw_tr_1C11_kernel_NCHW<float, float, int, 512, true, 1>(cudnnTensorStruct, float const*, "
     "cudnnTensorStruct, float*, float const*, float const*, float, float, float*, float*, float*, float*, float, "
     "float)", 0.16),
    ("ReLU", "network-ResNet/layer1-SequentialCell/0-ResidualBlock/relu-ReLU",
     "void CalReLUKernel<float>(int, float*, float*)", 0.12),
    ("BiasAdd", "network-ResNet/end_point-Dense", "void BiasAddKernel<float>(unsigned long, float const*, "
                                                  "float const*, float*)", 0.12),
)
ALLREDUCE_OP = ("AllReduce", "Gradients/Default/network-ResNet/gradReduce",
                "ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)")
OPT_OP = ("ApplyMomentum", "optimizer-Momentum", "void MomentumUpdateVariableKernel<float, float, float>(unsigned "
                                                 "long, float*, float*, float const*, float const*, float const*, "
                                                 "bool)")
COMPUTE_STREAM, NCCL_STREAM = 17, 21
HEADER = "step_num,start_point,end_point,total,fp_point,bp_point,iteration_interval,fp_and_bp,tail"


def _full(op: tuple, k: int) -> str:
    return f"Default/{op[1]}/{op[0]}-op{k}"


def write_mindspore_gpu(d: Path, m, ranks: int, steps: int, plan, first_step: int) -> None:
    d.mkdir(parents=True, exist_ok=True)
    mode = "data-parallel" if ranks > 1 else "stand_alone"
    for r in range(ranks):
        if r in plan.missing_rank:
            continue
        info = {"device_target": "GPU", "context_mode": "graph", "rank_id": str(r), "ms_version": "2.2.14",
                "parallel_mode": "data_parallel" if ranks > 1 else "stand_alone", "stage_num": 1,
                "rank_size": ranks, "profiling_start_time": "2026-11-21 09:30:00", "graph_ids": [0]}
        text = json.dumps(info)
        if r in plan.corrupt_info:
            text = text[: len(text) // 2]
        (d / f"profiler_info_{r}.json").write_text(text, encoding="utf-8")
        t0_ms = (1_763_717_400_000_000_000 + r * 1_234_567) / 1e6  # GPU ns clock, in ms
        lays = legacy_layout(m, r, steps, False, t0_ms)
        events, stats = _timeline(r, lays, ranks > 1)
        (d / f"gpu_timeline_display_{r}.json").write_text(json.dumps(events), encoding="utf-8")
        (d / f"gpu_timeline_summary_{r}.json").write_text(json.dumps(
            {"total_time": round(sum(e["dur"] for e in events if e["tid"] == "Ops") / 1e3, 6),
             "num_of_streams": 2 if ranks > 1 else 1, "num_of_ops": len(stats),
             "op_exe_times": int(sum(s[0] for s in stats.values())), "max_scope_name_num": 0}), encoding="utf-8")
        _op_files(d, r, stats)
        _host_op_files(d, r, steps)
        if ranks > 1:
            rows = [[round(expected_overlap(lay)[c], 4) for c in ("computation", "communication_alone")]
                    for lay in lays]
            body = rows[1:] if len(rows) > 1 else rows
            avg = [round(float(np.mean(c)), 4) for c in zip(*body)]
            (d / f"gpu_cluster_analyse_{mode}_1_{ranks}_{r}.csv").write_text(
                "computation_time,communication_alone_time\n"
                + "\n".join(",".join(f"{v:.4f}" for v in row) for row in rows + [avg]) + "\n", encoding="utf-8")
        q = []
        for s, lay in enumerate(lays):
            a = int(round((lay.start - 0.05) * 1e6))
            q.append(f"GetNext_dequeue_wait {a} {a + 21_350 + 37 * s} {2 + (s % 3)}")
        (d / f"minddata_getnext_profiling_{r}.txt").write_text("\n".join(q) + "\n", encoding="utf-8")
        if r in plan.missing_step:
            continue
        ticks = 1e5  # 10 ns per tick
        reduce = f"stream_ops_0_{ALLREDUCE_OP[0]}-op{900}"
        out = []
        for s, lay in enumerate(lays):
            start, end, fp, bp = (int(round(v * ticks)) for v in (lay.start, lay.end, lay.fp, lay.bp))
            row = [first_step + s, start, end, end - start, fp, bp, fp - start, bp - fp, end - bp]
            if ranks > 1:
                ra = int(round((lay.compute_end - lay.overlapped) * ticks))
                rb = int(round((lay.compute_end + lay.alone) * ticks))
                row += [rb - ra, ra, rb]
            out.append(row)
        avg = ["-"] + [int(round(sum(c) / len(out))) for c in zip(*[row[1:] for row in out])]
        header = HEADER + (f",{reduce},{reduce}_start_point,{reduce}_end_point" if ranks > 1 else "")
        text = header + "\n" + "\n".join(",".join(str(x) for x in row) for row in out + [avg]) + "\n"
        if r in plan.corrupt_step:
            text = text[: int(len(text) * 0.6)]
        (d / f"step_trace_raw_{r}_detail_time.csv").write_text(text, encoding="utf-8")


def _timeline(r: int, lays, comm: bool) -> tuple[list[dict], dict]:
    """Timeline events (µs) and per-op statistics {full name: [count, host µs, device µs, kernel, type, stream]}."""
    dev = r % 8
    w = np.array([o[3] for o in GPU_OPS])
    w = w / w.sum()
    events: list[dict] = []
    stats: dict = {}

    def op(o, k, start_ms, dur_ms, stream):
        full = _full(o, k)
        ts, du = round(start_ms * 1e3, 3), round(dur_ms * 1e3, 3)
        host = round(du * 1.04 + 6.5, 3)  # the host-measured op time includes the launch
        events.append({"name": full, "ph": "X", "tid": "Ops", "ts": ts, "dur": host, "pid": dev})
        events.append({"name": o[2], "ph": "X", "tid": str(stream), "ts": ts, "dur": du, "pid": dev,
                       "args": {"type": "cuLaunchKernel", "op_full_name": full,
                                "block_dim": "256,1,1", "grid_dim": "1024,1,1"}})
        st = stats.setdefault(full, [0, 0.0, 0.0, o[2], o[0], stream, 1e18, 0.0])
        st[0] += 1
        st[1] += host
        st[2] += du
        st[6] = min(st[6], du)
        st[7] = max(st[7], du)

    for lay in lays:
        c0, c1 = lay.fp, lay.compute_end
        span = c1 - c0
        t = c0
        for i, o in enumerate(GPU_OPS * 2):  # forward, then backward
            d = span * w[i % len(GPU_OPS)] / 2
            op(o, 10 + i, t, d, COMPUTE_STREAM)
            t += d
        if comm:
            op(ALLREDUCE_OP, 900, c1 - lay.overlapped, lay.overlapped + lay.alone, NCCL_STREAM)
        op(OPT_OP, 950, c1 + lay.alone, OPT_MS, COMPUTE_STREAM)
    return events, stats


def _op_files(d: Path, r: int, stats: dict) -> None:
    host_total = sum(s[1] for s in stats.values())
    det = ["op_side,op_type,op_name,op_full_name,op_occurrences,op_total_time(us),op_avg_time(us),total_proportion,"
           "cuda_activity_cost_time(us),cuda_activity_call_count"]
    types: dict = {}
    for full, (n, host, devt, _k, typ, _s, _mn, _mx) in stats.items():
        det.append(f"Device,{typ},{full.rsplit('/', 1)[-1]},{full},{n},{host:g},{host / n:g},{host / host_total:g},"
                   f"{devt:g},{n}")
        t = types.setdefault(typ, [0, 0.0])
        t[0] += n
        t[1] += host
    (d / f"gpu_op_detail_info_{r}.csv").write_text("\n".join(det) + "\n", encoding="utf-8")
    typ_lines = ["op_type,type_occurrences,total_time(us),total_proportion,avg_time(us)"]
    for typ, (n, host) in types.items():
        typ_lines.append(f"{typ},{n},{host:g},{host / host_total:g},{host / n:g}")
    (d / f"gpu_op_type_info_{r}.csv").write_text("\n".join(typ_lines) + "\n", encoding="utf-8")
    act = ["name,type,op_full_name,stream_id,block_dim,grid_dim,occurrences,total_duration(us),avg_duration(us),"
           "max_duration(us),min_duration(us)"]
    for full, (n, _host, devt, kernel, _typ, stream, mn, mx) in stats.items():
        act.append(f'"{kernel}",cuLaunchKernel,{full},{stream},"256,1,1","1024,1,1",{n},{devt:g},{devt / n:g},'
                   f"{mx:g},{mn:g}")
    (d / f"gpu_activity_data_{r}.csv").write_text("\n".join(act) + "\n", encoding="utf-8")


HOST_OPS = (  # host CPU kernels of a GPU graph (the CPU profiler runs beside the GPU one): type, full name, ms
    ("GetNext", "Default/GetNext-op1", 0.21), ("Cast", "Default/network-WithLossCell/Cast-op3", 0.034),
    ("TensorMove", "Default/TensorMove-op7", 0.012),
)


def _host_op_files(d: Path, r: int, steps: int) -> None:
    """`cpu_op_type_info_{r}.csv` / `cpu_op_detail_info_{r}.csv` (ms), as the CPU profiler writes them."""
    total = sum(ms for _, _, ms in HOST_OPS) * steps
    typ = ["op_type,type_occurrences,execution_frequency(per-step),total_compute_time,avg_time(ms),percent"]
    det = ["op_side,op_type,op_name,full_op_name,op_occurrences,op_total_time(ms),op_avg_time(ms),total_proportion,"
           "subgraph,pid"]
    for t, full, ms in HOST_OPS:
        typ.append(f"{t},{steps},1,{ms * steps:g},{ms:g},{ms * steps / total:g}")
        det.append(f"Host,{t},{full.rsplit('/', 1)[-1]},{full},{steps},{ms * steps:g},{ms:g},{ms * steps / total:g},"
                   f"Default,{30000 + r}")
    (d / f"cpu_op_type_info_{r}.csv").write_text("\n".join(typ) + "\n", encoding="utf-8")
    (d / f"cpu_op_detail_info_{r}.csv").write_text("\n".join(det) + "\n", encoding="utf-8")
