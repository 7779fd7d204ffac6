"""Synthetic operator statistics, FLOPs, memory and data-queue files (both layouts).

Operator times follow each rank's simulated computing time, so a slow rank is slow in every operator type.
`memory-near-capacity:R[:RATIO]` puts rank R's peak at RATIO of the device capacity (others sit near 70 %);
`starving-queue:R` empties rank R's host data queue in most steps, with a MapOp whose input queue is full and
output queue nearly empty (MindInsight's bottleneck pattern); healthy ranks keep their queues full.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

# (type, core, share of computing time, kernels per step)
OP_MIX = (
    ("MatMulV3", "AI_CORE", 0.34, 6), ("FlashAttentionScore", "MIX_AIC", 0.14, 2),
    ("FlashAttentionScoreGrad", "MIX_AIC", 0.22, 2), ("Add", "AI_VECTOR_CORE", 0.06, 5),
    ("Cast", "AI_VECTOR_CORE", 0.05, 4), ("RmsNorm", "AI_VECTOR_CORE", 0.05, 2),
    ("TransData", "AI_CORE", 0.04, 2), ("Mul", "AI_VECTOR_CORE", 0.04, 3),
    ("ApplyAdamWV2", "AI_VECTOR_CORE", 0.03, 1), ("GatherV2", "AI_CPU", 0.03, 1),
)


def mix_share(op_type: str) -> float:
    return sum(sh for t, _, sh, _ in OP_MIX if t == op_type)


def mix_growth(op_mix: dict) -> float:
    """Factor on the computing time for `op-mix` (see `op_mix`)."""
    return 1.0 + sum(mix_share(t) * (f - 1) if mix_share(t) else f for t, f in op_mix.items())


def op_mix(plan) -> tuple:
    """OP_MIX changed by `op-mix:TYPE:FACTOR` (shares scaled to the grown computing time, so the other types keep
    their absolute time; a new type is added as an AI-core operator with one kernel per step)."""
    changes = getattr(plan, "op_mix", None) or {}
    if not changes:
        return OP_MIX
    g = mix_growth(changes)
    out = [(t, core, sh * changes.get(t, 1.0) / g, n) for t, core, sh, n in OP_MIX]
    out += [(t, "AI_CORE", f / g, 1) for t, f in changes.items() if not mix_share(t)]
    return tuple(out)


CAPACITY_GB = 64.0  # Ascend 910B
MINDINSIGHT_CAPACITY_GB = 32.0  # Ascend 910A, MindInsight era
HEALTHY_PEAK = 0.70


def peak_ratio(r: int, plan, rng: np.random.Generator) -> float:
    return plan.memory.get(r, HEALTHY_PEAK + rng.normal(0, 0.01))


def write_ascend_resources(out: Path, r: int, comp_ms: np.ndarray, first_step: int, plan, seed: int) -> None:
    """kernel_details.csv and op_statistic.csv (the same kernels), memory_record.csv, operator_memory.csv."""
    rng = np.random.default_rng(seed * 7919 + r)
    t0 = 1_763_717_400_000_000.0 + r * 37.5
    kernels = getattr(plan, "kernels_per_step", 0)
    if kernels:  # the realistic size (synth.large): a separate generator, so small runs stay byte for byte
        from reportgen.synth.large import write_large_kernels, write_large_memory

        write_large_kernels(out, r, comp_ms, first_step, op_mix(plan), kernels, seed)
        peak = peak_ratio(r, plan, rng) * CAPACITY_GB * 1024
        write_large_memory(out, r, peak, max(60, kernels * len(comp_ms) // 10))
        _write_operator_memory(out, r, peak, t0)
        return
    rows = ["Step Id,Name,Type,Accelerator Core,Start Time(us),Duration(us),Wait Time(us),Block Dim"]
    stats: dict = {}
    for s, comp in enumerate(comp_ms):
        t = t0 + s * 200_000.0
        for op_type, core, share, n in op_mix(plan):
            for k in range(n):
                dur = round(comp * 1000.0 * share / n * (1 + rng.normal(0, 0.02)), 3)
                rows.append(f"{first_step + s},aclnn{op_type}_{k},{op_type},{core},{t:.3f}\t,{dur:.3f},0.5,24")
                t += dur + 0.5
                st = stats.setdefault((op_type, core), [])
                st.append(dur)
    (out / "kernel_details.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    total = sum(sum(v) for v in stats.values())
    lines = ["OP Type,Core Type,Count,Total Time(us),Min Time(us),Avg Time(us),Max Time(us),Ratio(%)"]
    for (op_type, core), v in sorted(stats.items(), key=lambda kv: -sum(kv[1])):
        lines.append(f"{op_type},{core},{len(v)},{sum(v):.3f},{min(v):.3f},{sum(v) / len(v):.3f},{max(v):.3f},"
                     f"{sum(v) / total * 100:.3f}")
    (out / "op_statistic.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    cap_mb = CAPACITY_GB * 1024
    peak = peak_ratio(r, plan, rng) * cap_mb
    mem = ["Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Total Active(MB),Stream Ptr,Device Type"]
    n = 60
    for i in range(n):
        frac = 0.55 + 0.45 * np.sin(np.pi * i / (n - 1)) ** 2
        ts = t0 + i * 5000.0
        mem.append(f"APP,{ts:.3f}\t,,{peak * (0.9 + 0.1 * frac):.6f},,,NPU:{r % 8}")
        alloc = peak * 0.85 * frac
        mem.append(f"PTA,{ts + 1:.3f}\t,{alloc:.6f},{peak * 0.92:.6f},{alloc:.6f},2,NPU:{r % 8}")
    (out / "memory_record.csv").write_text("\n".join(mem) + "\n", encoding="utf-8")
    _write_operator_memory(out, r, peak, t0)


def _write_operator_memory(out: Path, r: int, peak: float, t0: float) -> None:
    om = ["Name,Size(KB),Allocation Time(us),Release Time(us),Active Release Time(us),Duration(us),"
          "Active Duration(us),Allocation Total Allocated(MB),Allocation Total Reserved(MB),Allocation Total Active(MB),"
          "Release Total Allocated(MB),Release Total Reserved(MB),Release Total Active(MB),Stream Ptr,Device Type"]
    for i, (name, kb) in enumerate((("aten::empty_strided", peak * 1024 * 0.12), ("aten::mm", peak * 1024 * 0.05),
                                    ("aten::add", 4096.0))):
        om.append(f"{name},{kb:.1f},{t0 + i:.3f}\t,{t0 + 90000 + i:.3f}\t,{t0 + 90000 + i:.3f}\t,90000.000\t,"
                  f"90000.000\t,1,1,1,1,1,1,2,NPU:{r % 8}")
    (out / "operator_memory.csv").write_text("\n".join(om) + "\n", encoding="utf-8")


def write_mindinsight_resources(d: Path, r: int, comp_ms: np.ndarray, steps: int, first_step: int, plan,
                                seed: int, stage_factor: float) -> None:
    """aicore_intermediate type/detail, flops_summary, memory_usage_summary/details, MindData queue files."""
    rng = np.random.default_rng(seed * 7919 + r)
    mean_comp = float(np.mean(comp_ms))
    type_lines, detail_lines = ["op_type,execution_time,execution_frequency,percent"], ["full_op_name,execution_time"]
    aic = [(t, sh, n) for t, core, sh, n in op_mix(plan) if core != "AI_CPU"]
    tot_share = sum(sh for _, sh, _ in aic)
    for op_type, share, n in aic:
        tot = mean_comp * share / tot_share * (1 + rng.normal(0, 0.01))
        type_lines.append(f"{op_type},{tot:.6f},{n},{share / tot_share * 100:.2f}")
        for k in range(n):
            detail_lines.append(f"Default/network/layer{k}/{op_type}-op{k}{len(op_type)},{tot / n:.6f}")
    (d / f"aicore_intermediate_{r}_type.csv").write_text("\n".join(type_lines) + "\n", encoding="utf-8")
    (d / f"aicore_intermediate_{r}_detail.csv").write_text("\n".join(detail_lines) + "\n", encoding="utf-8")
    flops_m = 107_000.0 * stage_factor * (1 + rng.normal(0, 0.001))
    (d / f"flops_summary_{r}.json").write_text(json.dumps(
        {"FLOPs": round(flops_m, 3), "FLOPS": round(flops_m / mean_comp, 3),
         "FLOPS_Utilization": round(flops_m / mean_comp / 2.56e5 * 100, 3)}), encoding="utf-8")
    cap_gb = MINDINSIGHT_CAPACITY_GB
    peak_gb = peak_ratio(r, plan, rng) * cap_gb
    (d / f"memory_usage_summary_{r}.json").write_text(json.dumps(
        {"capacity": cap_gb, "allocations": 412, "deallocations": 398, "peak_mem": round(peak_gb, 4),
         "static_mem": round(peak_gb * 0.3, 4)}), encoding="utf-8")
    n = 120
    lines = [round(peak_gb * (0.3 + 0.7 * np.sin(np.pi * i / (n - 1)) ** 2), 5) for i in range(n)]
    (d / f"memory_usage_details_{r}.json").write_text(json.dumps({"0": {
        "graph_id": 0, "static_mem": round(peak_gb * 0.3, 4), "lines": lines, "fp_start": 2, "bp_end": n - 3,
        "nodes": [{"name": f"Op-op{i}", "node_id": i} for i in range(n)],
        "breakdowns": [[{"tensor_name": "Default/network/embedding/Gather-op3:0", "tensor_id": 3,
                         "size": round(peak_gb * 0.1, 5), "type": "output", "shape": [4096, 1024],
                         "data_type": "float16", "life_long": "LifeLongGraphAll"}]]}}), encoding="utf-8")
    starving = r in plan.starving
    cap = 64
    q = []
    for s in range(steps):
        size = 0 if starving and s % 5 != 0 else int(min(cap, max(1, rng.normal(48, 6))))
        q.append(f"1 {cap} {first_step + s} {size} {1_000_000 + s * 150}")
        q.append(f"0 2 {first_step + s} {0.4 + (20.0 if starving else 0):.3f} {1_000_000 + s * 150}")
    (d / f"device_queue_profiling_{r}.txt").write_text("\n".join(q) + "\n", encoding="utf-8")
    a = [f"GetNext_dequeue_wait {1000 + s * 150000} {1010 + s * 150000 + (9000 if starving else 0)} "
         f"{0 if starving and s % 5 != 0 else 3}" for s in range(steps)]
    (d / f"minddata_aicpu_{r}.txt").write_text("\n".join(a) + "\n", encoding="utf-8")
    # Batch <- Map <- TFReader: a starving rank's Map cannot keep up (input queue full, output nearly empty)
    usage = {0: 0.9, 1: 0.88, 2: 0.92} if not starving else {0: 0.05, 1: 0.04, 2: 0.95}
    pipe = ["op_id,op_type,num_workers,output_queue_size,output_queue_average_size,output_queue_length,"
            "output_queue_usage_rate,sample_interval,parent_id,children_id",
            f'0,BatchOp,4,"[{int(usage[0] * 64)}]",{usage[0] * 64},64,{usage[0]},10,,[1]',
            f'1,MapOp,8,"[{int(usage[1] * 64)}]",{usage[1] * 64},64,{usage[1]},10,0,[2]',
            f'2,TFReaderOp,8,"[{int(usage[2] * 64)}]",{usage[2] * 64},64,{usage[2]},10,1,']
    (d / f"minddata_pipeline_raw_{r}.csv").write_text("\n".join(pipe) + "\n", encoding="utf-8")
