"""Synthetic PyTorch profiler (Kineto) traces: one `{host}_{pid}.{ns}.pt.trace.json[.gz]` per rank, as
`torch.profiler.tensorboard_trace_handler` names them, from an NCCL data-parallel run on NVIDIA GPUs.

What the files copy from real traces (PyTorch 2.x, Kineto schema 1): the header keys before `traceEvents`
(`distributedInfo` with `pg_config`, `deviceProperties` with `totalGlobalMem` in bytes, `host_name`,
`baseTimeNanoseconds`); metadata events (`process_name` "GPU n", `thread_name` "stream n"); `ProfilerStep#N`
user annotations on the training thread; `cpu_op` operators each launching its kernel through a `cuda_runtime`
`cudaLaunchKernel` with the same `correlation` and an `ac2g` flow pair; kernels (`cat` kernel, pid = device,
tid = stream) with Kineto's args (`device`, `stream`, `correlation`, `grid`, `block`, ...); NCCL kernels
(`ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)`) on their own stream with the collective args PyTorch >= 2.1
attaches (`Collective name`, `Process Group Name`, `Process Group Ranks`, `In msg nelems`, ...); `[memory]`
instant events in bytes. Times are µs floats with three decimals.

Per step (ms, from `StepModel`): host gap, forward kernels, backward kernels with the first gradient bucket's
all-reduce overlapped, then the last bucket's all-reduce exposed (it lasts until the slowest rank arrives: the
wait), so computing / overlapped / communication not overlapped / free add up as in the Ascend files.
The last step's kernels are followed by no next step: readers that map kernels to steps through their launches
(HTA, this report) measure a step from its first kernel to the next step's first kernel, so the last one is partial.
Like ROCm and recent CUDA traces, the GPU lane repeats each step marker as a `gpu_user_annotation`
`ProfilerStep#N` a few µs long on the compute stream (an annotation, not the step).

Variants (keyword arguments of `write_kineto`): `schema="2021"` writes the 2021 Kineto categories (`Operator`,
`Runtime`, `Kernel`, `Memcpy`, `Memset`; no `distributedInfo`, file names `worker{r}.{ms}.pt.trace.json`) with an
input copy (`Memcpy HtoD`) at each step's start; `expert_a2a=True` adds, in each forward pass, an expert-parallel
all-to-all done by a custom kernel (`moe_ep::a2a_dispatch_kernel`, a name no library table knows) launched under
`record_param_comms` (`Collective name` all_to_all) on the NCCL stream, fully under the forward kernels, and a
small unrecognised kernel on that stream launched outside any collective. `write_kineto_gloo` writes CPU-only
gloo runs whose all-reduce slices run on two gloo threads at once (as the HTA rank-34 trace).

Injections used: slow-rank (any phase adds to computation or host time), missing-rank, corrupt-step-trace
(the trace is cut mid-event), missing-step-trace (no ProfilerStep markers), memory-near-capacity. A slow link has
no per-link record in Kineto; it is not written.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np

GPU_MEM_BYTES = 85_899_345_920  # A100 80 GB as deviceProperties reports it
KERNELS = (  # (cpu op, kernel name, share of forward/backward time)
    ("aten::mm", "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize128x128x8_stage3_warpsize2x2x1_ffma_aligna4_alignc4"
                 "_execute_kernel__5x_cublas", 0.46),
    ("aten::addmm", "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>("
                    "cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4::Params)", 0.22),
    ("aten::native_layer_norm", "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>"
                                "(int, float, float const*, float const*, float const*, float*, float*, float*)",
     0.1),
    ("aten::gelu", "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::"
                   "TensorIteratorBase&, at::native::GeluType)::{lambda()#1}::operator()() const::{lambda()#2}::"
                   "operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >(int, at::native::"
                   "GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#1}::operator()() "
                   "const::{lambda()#2}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)", 0.12),
    ("aten::add_", "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
                   "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
                   "at::detail::Array<char*, 3>)", 0.1),
)
NCCL_KERNEL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
A2A_KERNEL = "void moe_ep::a2a_dispatch_kernel<__nv_bfloat16, 8>(moe_ep::DispatchArgs)"  # unknown to any name table
A2A_SHARE = 0.2  # of the forward pass, on the NCCL stream under the forward kernels
MISC_KERNEL = "void moe_ep::signal_ready_kernel(int*)"  # beside the collectives, launched outside them
MISC_US = 2.0
INPUT_COPY_US = 150.0  # 2021 variant: the batch's host-to-device copy at each step's start (computation)
LANE_MARK_US = 15.0  # the GPU lane's ProfilerStep annotation
COMPUTE_STREAM, NCCL_STREAM = 7, 20


def _ev(**kw) -> str:
    return json.dumps(kw, separators=(", ", ": "))


def phase_stall_at(plan, r: int) -> str:
    """The pass rank r stalls in every step ("forward" | "backward"), "" when none."""
    return getattr(plan, "phase_stalls", {}).get(r, ("", 0.0))[0]


def write_kineto(root: Path, m, ranks: int, steps: int, plan, per_host: int, first_step: int,
                 kernels_per_step: int = 30, compress: bool = False, schema: str = "2.x",
                 expert_a2a: bool = False, dense: bool = False) -> None:
    """Write one trace per rank under `root` (created). `dense`: each kernel comes with the host work a real trace
    records around it (`_dense`: the benchmark's `kineto` shape)."""
    old = schema == "2021"
    cat_op, cat_rt, cat_k = ("Operator", "Runtime", "Kernel") if old else ("cpu_op", "cuda_runtime", "kernel")
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(plan.seed + 17)
    pg = [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cuda:nccl", "pg_size": ranks,
           "ranks": list(range(ranks))}]
    nelems = 25_165_824  # 96 MB of fp32 gradients per bucket
    # the same model on every rank: one kernel sequence and one split of the time, per pass
    seq_rng = np.random.default_rng(plan.seed + 5)
    w = np.array([k[2] for k in KERNELS])
    w = w / w.sum()
    n_f = max(1, int(kernels_per_step * 0.35))
    n_b = max(1, kernels_per_step - n_f)
    plan_fwd = (seq_rng.choice(len(KERNELS), size=n_f, p=w), seq_rng.dirichlet(np.ones(n_f) * 20.0))
    plan_bwd = (seq_rng.choice(len(KERNELS), size=n_b, p=w), seq_rng.dirichlet(np.ones(n_b) * 20.0))
    for r in range(ranks):
        if r in plan.missing_rank:
            continue
        host, dev = f"node{r // per_host:03d}", r % per_host
        pid = 200000 + r
        t = 5_000_000_000.0 + r * 13.37  # µs, the host clock Kineto puts every event on
        lines: list[str] = []
        add = lines.append
        add(_ev(ph="M", name="process_name", ts=t, pid=pid, tid=0, args={"name": "python"}))
        add(_ev(ph="M", name="process_labels", ts=t, pid=pid, tid=0, args={"labels": "CPU"}))
        add(_ev(ph="M", name="thread_name", ts=t, pid=pid, tid=pid, args={"name": f"thread {pid} (python)"}))
        add(_ev(ph="M", name="process_name", ts=t, pid=dev, tid=0, args={"name": "python"}))
        add(_ev(ph="M", name="process_labels", ts=t, pid=dev, tid=0, args={"labels": f"GPU {dev}"}))
        for s_ in (COMPUTE_STREAM, NCCL_STREAM):
            add(_ev(ph="M", name="thread_name", ts=t, pid=dev, tid=s_, args={"name": f"stream {s_}"}))
        corr = 1000
        xcorr = 500_000_000  # the correlation ids of `_dense`'s launches (apart: the others' stay as they were)
        ext = 1
        base_mem = 0.30 * GPU_MEM_BYTES
        peak_ratio = plan.memory.get(r, 0.70)
        act = (peak_ratio * GPU_MEM_BYTES - base_mem)
        reserved = peak_ratio * GPU_MEM_BYTES * 1.02 if r in plan.memory else 0.74 * GPU_MEM_BYTES
        seq_ = 0
        t += 1000.0
        for s in range(steps):
            comp, nov, ov, free = (float(m.computing[r, s]) * 1e3, float(m.comm_nov[r, s]) * 1e3,
                                   float(m.overlapped[r, s]) * 1e3, float(m.free[r, s]) * 1e3)
            total = comp + nov + free
            # a stall in a pass of every step (`stall:R:backward`): taken from the host gaps, placed in the pass
            stall = getattr(plan, "phase_stalls", {}).get(r, ("", 0.0))[1]
            stall = min(stall * 1e3, free)
            free -= stall
            step_start = t
            if r not in plan.missing_step:
                add(_ev(ph="X", cat=cat_op if old else "user_annotation", name=f"ProfilerStep#{first_step + s}",
                        pid=pid, tid=pid, ts=round(t, 3), dur=round(total, 3),
                        args={"External id": ext, "Record function id": 0}))
                if not old:  # the GPU lane's copy of the marker, at the step's first kernel
                    add(_ev(ph="X", cat="gpu_user_annotation", name=f"ProfilerStep#{first_step + s}", pid=dev,
                            tid=COMPUTE_STREAM, ts=round(t + free * 0.6, 3), dur=LANE_MARK_US,
                            args={"External id": ext}))
            ext += 1
            cur = t + free * 0.6
            if old:  # the input batch's copy, the step's first device work (taken from its host gap)
                add(_ev(ph="X", cat=cat_op, name="aten::copy_", pid=pid, tid=pid, ts=round(cur - 60.0, 3), dur=20.0,
                        args={"External id": ext}))
                add(_ev(ph="X", cat=cat_rt, name="cudaMemcpyAsync", pid=pid, tid=pid, ts=round(cur - 55.0, 3),
                        dur=8.0, args={"External id": ext, "cbid": 41, "correlation": corr}))
                add(_ev(ph="X", cat="Memcpy", name="Memcpy HtoD (Pinned -> Device)", pid=dev, tid=COMPUTE_STREAM,
                        ts=round(cur, 3), dur=INPUT_COPY_US, args={"device": dev, "stream": COMPUTE_STREAM,
                                                                  "correlation": corr, "bytes": 25_690_112}))
                corr += 1
                ext += 1
                cur += INPUT_COPY_US
            fwd_start = cur
            gap = free * 0.4 / (2 * kernels_per_step)
            mem_now = base_mem
            bwd_start = None
            for phase, n, span in (("fwd", n_f, comp * 0.35), ("bwd", n_b, comp * 0.65)):
                if phase == "bwd":
                    bwd_start = cur
                seq_k, base = plan_fwd if phase == "fwd" else plan_bwd
                shares = base * (1 + rng.normal(0, 0.005, n))
                shares = shares / shares.sum()
                for i in range(n):
                    op, kname, _ = KERNELS[seq_k[i]]
                    d = span * shares[i]
                    launch = cur - 40.0 - 5.0 * (i % 3)
                    add(_ev(ph="X", cat=cat_op, name=op, pid=pid, tid=pid, ts=round(launch, 3), dur=18.5,
                            args={"External id": ext, "Sequence number": ext, "Fwd thread id": 0,
                                  "Record function id": 0}))
                    add(_ev(ph="X", cat=cat_rt, name="cudaLaunchKernel", pid=pid, tid=pid,
                            ts=round(launch + 4.0, 3), dur=9.2, args={"External id": ext, "cbid": 211,
                                                                      "correlation": corr}))
                    add(_ev(ph="s", id=corr, pid=pid, tid=pid, ts=round(launch + 4.0, 3), cat="ac2g",
                            name="ac2g"))
                    add(_ev(ph="X", cat=cat_k, name=kname, pid=dev, tid=COMPUTE_STREAM, ts=round(cur, 3),
                            dur=round(d, 3), args={"External id": ext, "queued": 0, "device": dev, "context": 1,
                                                   "stream": COMPUTE_STREAM, "correlation": corr,
                                                   "registers per thread": 128, "shared memory": 49152,
                                                   "blocks per SM": 2.5, "warps per SM": 10.0,
                                                   "grid": [216, 1, 1], "block": [128, 1, 1],
                                                   "est. achieved occupancy %": 25}))
                    add(_ev(ph="f", id=corr, pid=dev, tid=COMPUTE_STREAM, ts=round(cur, 3), cat="ac2g",
                            name="ac2g", bp="e"))
                    if dense:
                        xcorr = _dense(add, i, pid, dev, launch, cur, d, ext, xcorr)
                    # activations grow in the forward pass and are freed in the backward pass
                    delta = act / n_f if phase == "fwd" else -act / n
                    mem_now = max(base_mem, mem_now + delta)
                    add(_ev(ph="i", cat="cpu_instant_event", s="t", name="[memory]", pid=pid, tid=pid,
                            ts=round(launch + 1.0, 3),
                            args={"Total Reserved": int(reserved), "Total Allocated": int(mem_now),
                                  "Bytes": int(delta), "Device Id": dev, "Device Type": 1, "Addr": 139_800_000_000}))
                    corr += 1
                    ext += 1
                    cur += d + gap
                if phase == "fwd" and stall and phase_stall_at(plan, r) == "forward":
                    cur += stall
            compute_end = cur
            bwd_end = cur  # the first gradient bucket's all-reduce starts halfway through the backward kernels
            if stall and phase_stall_at(plan, r) == "backward":
                cur += stall  # stalled before the last bucket's all-reduce
                compute_end = cur
            if expert_a2a:  # the forward pass's expert all-to-all, a custom kernel under a collective's host op
                fwd_end = bwd_start
                a2a_start = fwd_start + (fwd_end - fwd_start) * 0.3
                a2a_dur = (fwd_end - fwd_start) * A2A_SHARE
                launch = a2a_start - 25.0
                add(_ev(ph="X", cat=cat_op, name="record_param_comms", pid=pid, tid=pid, ts=round(launch, 3),
                        dur=10.0, args={"External id": ext, "Collective name": "all_to_all",
                                        "Process Group Name": "0", "Process Group Description": "default_pg"}))
                add(_ev(ph="X", cat=cat_rt, name="cudaLaunchKernel", pid=pid, tid=pid, ts=round(launch + 3.0, 3),
                        dur=5.0, args={"External id": ext, "cbid": 211, "correlation": corr}))
                add(_ev(ph="X", cat=cat_k, name=A2A_KERNEL, pid=dev, tid=NCCL_STREAM, ts=round(a2a_start, 3),
                        dur=round(a2a_dur, 3), args={"device": dev, "stream": NCCL_STREAM, "correlation": corr,
                                                     "grid": [24, 1, 1], "block": [768, 1, 1]}))
                corr += 1
                ext += 1
                # a small signal kernel on the same stream, launched by no collective: counted as computation
                launch = a2a_start + a2a_dur - 20.0
                add(_ev(ph="X", cat=cat_op, name="moe_ep::signal", pid=pid, tid=pid, ts=round(launch - 2.0, 3),
                        dur=8.0, args={"External id": ext}))
                add(_ev(ph="X", cat=cat_rt, name="cudaLaunchKernel", pid=pid, tid=pid, ts=round(launch, 3),
                        dur=4.0, args={"External id": ext, "cbid": 211, "correlation": corr}))
                add(_ev(ph="X", cat=cat_k, name=MISC_KERNEL, pid=dev, tid=NCCL_STREAM,
                        ts=round(a2a_start + a2a_dur + 1.0, 3), dur=MISC_US,
                        args={"device": dev, "stream": NCCL_STREAM, "correlation": corr}))
                corr += 1
                ext += 1
            for k, (start, dur) in enumerate(((bwd_start + (bwd_end - bwd_start) * 0.5, ov),
                                              (compute_end, nov))):
                seq_ += 1
                launch = start - 30.0
                add(_ev(ph="X", cat=cat_op, name="record_param_comms", pid=pid, tid=pid, ts=round(launch, 3),
                        dur=12.0, args={"External id": ext, "Record function id": 0, "Collective name": "allreduce",
                                        "dtype": "Float", "In msg nelems": nelems, "Out msg nelems": nelems,
                                        "Group size": ranks, "In split size": "[]", "Out split size": "[]",
                                        "Process Group Name": "0", "Process Group Description": "default_pg",
                                        "Process Group Ranks": json.dumps(list(range(ranks)))}))
                add(_ev(ph="X", cat=cat_rt, name="cudaLaunchKernel", pid=pid, tid=pid,
                        ts=round(launch + 3.0, 3), dur=7.1, args={"External id": ext, "cbid": 211,
                                                                  "correlation": corr}))
                add(_ev(ph="X", cat=cat_k, name=NCCL_KERNEL, pid=dev, tid=NCCL_STREAM, ts=round(start, 3),
                        dur=round(dur, 3), args={"External id": ext, "queued": 0, "device": dev, "context": 1,
                                                 "stream": NCCL_STREAM, "correlation": corr,
                                                 "registers per thread": 96, "shared memory": 0,
                                                 "grid": [2, 1, 1], "block": [512, 1, 1],
                                                 "Collective name": "allreduce", "dtype": "Float",
                                                 "In msg nelems": nelems, "Out msg nelems": nelems,
                                                 "Group size": ranks, "In split size": "[]",
                                                 "Out split size": "[]", "Process Group Name": "0",
                                                 "Process Group Description": "default_pg",
                                                 "Process Group Ranks": json.dumps(list(range(ranks)))}))
                corr += 1
                ext += 1
            t = step_start + total
        head = {"schemaVersion": 1,
                "deviceProperties": [{"id": dev, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": GPU_MEM_BYTES,
                                      "computeMajor": 8, "computeMinor": 0, "maxThreadsPerBlock": 1024,
                                      "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536,
                                      "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 108}],
                "distributedInfo": {"backend": "nccl", "rank": r, "world_size": ranks, "pg_count": 1,
                                    "pg_config": pg, "nccl_version": "2.21.5"},
                "record_shapes": 1, "profile_memory": 1, "with_stack": 0, "host_name": host}
        if old:  # the 2021 schema: no distributedInfo yet, the rank is in the file name
            del head["distributedInfo"]
        text = ("{\n" + ",\n".join(f'  "{k}": {json.dumps(v)}' for k, v in head.items())
                + ',\n  "traceEvents": [\n' + ",\n".join(lines)
                + '\n  ],\n  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": 1763717400000000000,\n'
                + f'  "traceName": "/work/run/{host}_{pid}.1763717400{r:09d}.pt.trace.json"\n}}\n')
        if r in plan.corrupt_step:
            text = text[: int(len(text) * 0.6)]
        name = f"worker{r}.{1623143089861 + r}.pt.trace.json" if old else \
            f"{host}_{pid}.1763717400{r:09d}.pt.trace.json"
        if compress:
            with gzip.open(root / (name + ".gz"), "wt", encoding="utf-8") as f:
                f.write(text)
        else:
            (root / name).write_text(text, encoding="utf-8")


# `dense` (the benchmark's `kineto` shape): the event mix of the real A100 trace (samples/external/
# hta_a100_16rank_job_rank0_5steps: 108,936 events, 25.8 MB, 6,080 kernels: per kernel 4.1 cpu_op (95 % with
# Input Dims), 5.6 cuda_runtime, 5.8 + 1.1 ac2g flow ends, 0.23 gpu_memcpy, 0.05 gpu_memset, 0.06 user_annotation;
# 236 bytes an event) with the `[memory]` event a kernel of the V100 memory trace (1.4 a kernel there).
DENSE_OPS = (("aten::linear", 6.0, [[8, 4096, 4096], [4096, 4096], [4096]], ["c10::BFloat16"] * 3),
             ("aten::t", 1.2, [[4096, 4096]], ["c10::BFloat16"]),
             ("aten::transpose", 0.8, [[4096, 4096], [], []], ["c10::BFloat16", "Scalar", "Scalar"]))
DENSE_RUNTIME = ("cudaStreamIsCapturing", "cudaEventRecord", "cudaEventQuery", "cudaGetDevice",
                 "cudaStreamGetCaptureInfo")
COPY_STREAM = 13


def _dense(add, i: int, pid: int, dev: int, launch: float, k0: float, kd: float, ext: int, xcorr: int) -> int:
    """The host work around the launch of one kernel (at `launch`, running [k0, k0 + kd)): the module's operators
    (nested, with shapes), small runtime calls each with its flow end, every 4th kernel a copy and every 22nd a set
    on the copy stream inside the kernel's span (the step's computing union stays the model's), every 16th a module
    annotation. Returns the next correlation id."""
    for j, (op, dur, dims, types) in enumerate(DENSE_OPS):
        add(_ev(ph="X", cat="cpu_op", name=op, pid=pid, tid=pid, ts=round(launch - 3.0 + 0.4 * j, 3),
                dur=round(dur if j else 24.0, 3),
                args={"External id": ext, "Record function id": 0, "Ev Idx": 4 * ext + j, "Input Dims": dims,
                      "Input type": types, "Input Strides": [[d[-1], 1] if d else [] for d in dims],
                      "Concrete Inputs": ["" if d else "0" for d in dims], "Sequence number": ext}))
    for j in range(4 + i % 2):
        ts = launch + 13.5 + 0.9 * j
        add(_ev(ph="X", cat="cuda_runtime", name=DENSE_RUNTIME[j], pid=pid, tid=pid, ts=round(ts, 3), dur=0.4,
                args={"External id": ext, "cbid": 300 + j, "correlation": xcorr}))
        add(_ev(ph="f", id=xcorr, pid=pid, tid=pid, ts=round(ts, 3), cat="ac2g", name="ac2g", bp="e"))
        xcorr += 1
    for every, cat, name, api in ((4, "gpu_memcpy", "Memcpy DtoD (Device -> Device)", "cudaMemcpyAsync"),
                                  (22, "gpu_memset", "Memset (Device)", "cudaMemsetAsync")):
        if i % every == every - 1:
            add(_ev(ph="X", cat="cuda_runtime", name=api, pid=pid, tid=pid, ts=round(launch + 16.0, 3), dur=2.1,
                    args={"External id": ext, "cbid": 41, "correlation": xcorr}))
            add(_ev(ph="X", cat=cat, name=name, pid=dev, tid=COPY_STREAM, ts=round(k0 + 0.1 * kd, 3),
                    dur=round(0.4 * kd, 3), args={"device": dev, "context": 1, "stream": COPY_STREAM,
                                                  "correlation": xcorr, "bytes": 1_048_576,
                                                  "memory bandwidth (GB/s)": 812.5}))
            xcorr += 1
    if i % 16 == 0:
        add(_ev(ph="X", cat="user_annotation", name=f"## block {i // 16} ##", pid=pid, tid=pid,
                ts=round(launch - 4.0, 3), dur=30.0, args={"External id": ext}))
    return xcorr


def write_kineto_gloo(root: Path, ranks: int, steps: int, seed: int = 0, threads: int = 2,
                      first_step: int = 1) -> dict:
    """CPU-only DDP over gloo: per step a forward/backward on the training thread (`cpu_op`s) and one
    `gloo:all_reduce` slice per bucket on each of `threads` gloo threads, running at once (they overlap each other
    and the backward). Returns {rank: [(step, start µs, end µs, compute µs, comm union µs, comm sum µs)]}: what a
    reader must find (the communication of a step is the union of the threads' slices, not their sum)."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    truth: dict = {}
    for r in range(ranks):
        pid = 3000 + r
        t = 1_000_000.0 + r * 7.0
        lines = [_ev(ph="M", name="process_labels", ts=t, pid=pid, tid=0, args={"labels": "CPU"})]
        rows = []
        for s in range(steps):
            step = first_step + s
            fwd, bwd, gap = 40_000.0 * (1 + rng.normal(0, 0.01)), 80_000.0 * (1 + rng.normal(0, 0.01)), 5_000.0
            comm = [(t + gap + fwd + bwd * 0.5 + 300.0 * k, 50_000.0 + 2_000.0 * k) for k in range(threads)]
            end = max(t + gap + fwd + bwd, max(a + d for a, d in comm)) + gap
            lines.append(_ev(ph="X", cat="user_annotation", name=f"ProfilerStep#{step}", pid=pid, tid=pid,
                             ts=round(t, 3), dur=round(end - t, 3), args={}))
            lines.append(_ev(ph="X", cat="cpu_op", name="aten::linear", pid=pid, tid=pid, ts=round(t + gap, 3),
                             dur=round(fwd, 3), args={}))
            lines.append(_ev(ph="X", cat="cpu_op", name="autograd::engine::evaluate_function: MmBackward0",
                             pid=pid, tid=pid, ts=round(t + gap + fwd, 3), dur=round(bwd, 3), args={}))
            for k, (a, d) in enumerate(comm):
                lines.append(_ev(ph="X", cat="user_annotation", name="gloo:all_reduce", pid=pid, tid=pid + 1 + k,
                                 ts=round(a, 3), dur=round(d, 3), args={}))
            lo, hi = min(a for a, _ in comm), max(a + d for a, d in comm)
            rows.append((step, t, end, fwd + bwd, hi - lo, sum(d for _, d in comm)))
            t = end
        truth[r] = rows
        head = {"schemaVersion": 1, "deviceProperties": [],
                "distributedInfo": {"backend": "gloo", "rank": r, "world_size": ranks,
                                    "pg_config": [{"pg_name": "0", "pg_desc": "default_pg",
                                                   "backend_config": "cpu:gloo,cuda:gloo", "pg_size": ranks,
                                                   "ranks": list(range(ranks))}]}}
        text = ("{\n" + ",\n".join(f'  "{k}": {json.dumps(v)}' for k, v in head.items())
                + ',\n  "traceEvents": [\n' + ",\n".join(lines) + "\n  ]\n}\n")
        (root / f"rank-{r}.pt.trace.json").write_text(text, encoding="utf-8")
    return truth
