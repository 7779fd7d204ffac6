"""Synthetic operator-level timelines and parallel-strategy graphs (the execution and strategy views).

Every device of a pipeline stage runs the same operator program (forward and backward of its layers for each
micro-batch, Send/Receive to the neighbouring stages, a gradient AllReduce and the optimizer). The compute
operators tile the step layout's compute span exactly, so the overlap values the other files carry are unchanged;
a device that computes longer (``slow-rank``) stretches all its operators, and ``slow-op:TYPE[:FACTOR]`` makes one
operator type FACTOR times longer on every device (the step model's compute time grows by the same amount).
"""

from __future__ import annotations

import json
from pathlib import Path

LAYERS_PER_STAGE = 3
MICRO_BATCHES = 2
# (type, relative weight) of one layer's forward pass; backward ops weigh twice as much. The types are those of
# the operator statistics (`resources.OP_MIX`), so every file of a synthetic run names an operator the same way
# (issue 29: the execution view said MatMulV2 / MatMulV2Grad, the operator tables MatMulV3). Backward operators
# keep their type (as MindSpore and torch_npu name them); MindSpore's full names put them under `Gradients/`.
LAYER_OPS = (("MatMulV3", 4.0), ("Add", 0.5), ("RmsNorm", 1.0), ("Mul", 1.0), ("MatMulV3", 3.0), ("Add", 0.5))
# torch_npu kernel names (aclnn API _ kernel _ type): the loader takes the type from the last part
TORCH_KERNELS = {"MatMulV3": "aclnnMm_MatMulV3_MatMulV3", "Add": "aclnnAdd_AddAiCore_Add",
                 "RmsNorm": "aclnnRmsNorm_RmsNorm_RmsNorm", "Mul": "aclnnMul_MulAiCore_Mul"}
# the names `slow-op` took before the types followed the operator statistics
OLD_TYPES = {"MatMul": "MatMulV3", "BiasAdd": "Add", "LayerNorm": "RmsNorm", "Gelu": "Mul"}


def op_type_of(name: str) -> str:
    """`slow-op`'s TYPE: a type of `LAYER_OPS`, or its old name (MatMul, BiasAdd, LayerNorm, Gelu)."""
    return OLD_TYPES.get(name, name)


def op_share(op_type: str) -> float:
    """Share of the compute time spent in `op_type` (for the step model of ``slow-op``)."""
    total = sum(w for _, w in LAYER_OPS)
    op_type = op_type_of(op_type)
    return sum(w for t, w in LAYER_OPS if t == op_type) / total


def program(stage: int, stages: int, slow_ops: dict[str, float]) -> list[tuple[str, str, str, float]]:
    """(name, type, scope, weight) of one step's compute operators for `stage`, in execution order, plus the
    Send markers (weight 0) after each micro-batch's forward and backward pass."""
    out = []
    base = 1000 * (stage + 1)
    n = 0
    for mb in range(MICRO_BATCHES):
        for phase, mult in (("forward", 1.0), ("backward", 2.0)):
            layers = range(LAYERS_PER_STAGE) if phase == "forward" else reversed(range(LAYERS_PER_STAGE))
            for layer in layers:
                g = stage * LAYERS_PER_STAGE + layer
                for t, w in LAYER_OPS:
                    n += 1
                    grad = "Gradients/" if phase == "backward" else ""
                    scope = (f"{grad}Default/network-PipelineCell/_backbone-GPT/blocks-CellList/{g}-Block/"
                             + ("attention-Attention" if t in ("MatMul", "BiasAdd") else "mlp-MLP"))
                    out.append((f"{scope}/{t}-op{base + n}", t, scope, w * mult * slow_ops.get(t, 1.0)))
            send_to = stage + 1 if phase == "forward" else stage - 1
            if 0 <= send_to < stages:
                out.append((f"Default/network-PipelineCell/Send-op{base + 900 + 2 * mb + (phase == 'backward')}",
                            "Send", "Default/network-PipelineCell", 0.0))
    return out


def _compute_slices(prog, start: float, end: float) -> list[tuple[str, str, float, float]]:
    """(name, class, start, dur) tiling [start, end] with the compute ops; Sends as short ops at the boundary."""
    total = sum(w for *_, w in prog) or 1.0
    t = start
    out = []
    span = end - start
    for name, typ, _, w in prog:
        if typ == "Send":
            out.append((name, "send", t, min(0.02, span * 0.001)))
            continue
        d = span * w / total
        out.append((name, "compute", t, d))
        t += d
    return out


def write_legacy_display(d: Path, r: int, device: int, stage: int, stages: int, layouts, first_step: int,
                         slow_ops: dict[str, float], allreduce: bool) -> None:
    """`ascend_timeline_display_{r}.json`: AI Core ops (pid = device), communication (pid 10000), Steps lane."""
    prog = program(stage, stages, slow_ops)
    ev = []
    for s, lay in enumerate(layouts):
        us = 1e3
        ev.append({"name": str(first_step + s), "ph": "X", "pid": 12000, "tid": 100000,
                   "ts": round(lay.start * us, 3), "dur": round((lay.end - lay.start) * us, 3)})
        c0 = lay.fp + lay.recv
        if stage > 0 and lay.recv > 0:
            ev.append({"name": f"Receive-op{1000 * (stage + 1) + 950}", "ph": "X", "pid": 10000, "tid": 522,
                       "ts": round(lay.fp * us, 3), "dur": round(lay.recv * us, 3)})
        for name, cls, t, dur in _compute_slices(prog, c0, lay.compute_end):
            short = name.rsplit("/", 1)[-1]
            pid, tid = (device, 519) if cls == "compute" else (10000, 524)
            ev.append({"name": short, "ph": "X", "pid": pid, "tid": tid, "ts": round(t * us, 3),
                       "dur": round(dur * us, 3), "args": {"type": short.split("-")[0], "fullname": name}})
        if allreduce:
            a = lay.compute_end - lay.overlapped
            ev.append({"name": f"AllReduce-op{1000 * (stage + 1) + 990}", "ph": "X", "pid": 10000, "tid": 520,
                       "ts": round(a * us, 3), "dur": round((lay.compute_end + lay.alone - a) * us, 3)})
        ev.append({"name": f"ApplyMomentum-op{1000 * (stage + 1) + 999}", "ph": "X", "pid": device, "tid": 519,
                   "ts": round((lay.compute_end + lay.alone) * us, 3), "dur": 50.0})
    (d / f"ascend_timeline_display_{r}.json").write_text(json.dumps(ev), encoding="utf-8")


def trace_view_kernels(stage: int, stages: int, slow_ops: dict[str, float], d0: float, ce: float,
                       pid: int, comm_pid: int) -> list[dict]:
    """Ascend Hardware kernels (torch_npu names) tiling [d0, ce] µs, and hcom_send ops on the HCCL lane."""
    prog = program(stage, stages, slow_ops)
    ev = []
    for name, cls, t, dur in _compute_slices(prog, d0, ce):
        if cls == "send":
            ev.append({"ph": "X", "name": f"hcom_send__{name.rsplit('-op', 1)[-1]}_0_1", "pid": comm_pid, "tid": 0,
                       "ts": f"{t:.3f}", "dur": round(max(dur, 2.0), 3)})
            continue
        typ = name.rsplit("/", 1)[-1].split("-")[0]
        ev.append({"ph": "X", "name": TORCH_KERNELS.get(typ, typ),
                   "pid": pid, "tid": 2, "ts": f"{t:.3f}", "dur": round(dur, 3),
                   "args": {"Task Type": "AI_CORE", "Physic Stream Id": 2}})
    return ev


# --- parallel_strategy_{rank}.json ----------------------------------------------------------------------------


def _int(v: int) -> dict:
    return {"dtype": "DT_INT64", "intVal": str(v)}


def _tuple(vals) -> dict:
    return {"dtype": "DT_TUPLE", "values": [_tuple(v) if isinstance(v, (list, tuple)) else _int(v) for v in vals]}


def strategy_graph(stage: int, stages: int, dp: int, tp: int, per_stage: int) -> dict:
    """A stage's graph: the program's operators with sharding strategies, redistribution operators after the
    tensor-parallel MatMuls, gradient AllReduces (grad_mirror), and Send/Receive between stages."""
    nodes = []
    prev = None

    def add(op_type, scope, full, attrs=(), instance="", extra_inputs=()):
        nonlocal prev
        nid = str(len(nodes) + 1)
        inputs = ([{"name": prev, "type": "DATA_EDGE"}] if prev else []) + [{"name": i, "type": "DATA_EDGE"}
                                                                            for i in extra_inputs]
        nodes.append({"name": nid, "opType": op_type, "scope": scope, "fullName": full, "instanceName": instance,
                      "attribute": [{"name": k, "value": v} for k, v in attrs], "input": inputs,
                      "outputType": {"dataType": "DT_TENSOR", "tensorType": {"elemType": "DT_FLOAT16", "shape": {
                          "dim": [{"size": "8"}, {"size": "1024"}]}}}})
        prev = nid
        return nid

    base = 1000 * (stage + 1)
    if stage > 0:
        for mb in range(MICRO_BATCHES):
            add("Receive", "Default/network-PipelineCell", f"Default/network-PipelineCell/Receive-op{base + 950 + mb}",
                [("sr_tag", _int(mb)), ("src_rank", _int((stage - 1) * per_stage)), ("micro", _int(mb)),
                 ("group", {"dtype": "DT_STRING", "strVal": f"pp-{stage - 1}-{stage}"})])
    for name, typ, scope, _ in program(stage, stages, {}):
        if typ == "Send":
            continue
        attrs = []
        if typ == "MatMulV3":
            attrs.append(("in_strategy", _tuple([[dp, 1], [1, tp]])))
        elif typ == "Add":
            attrs.append(("in_strategy", _tuple([[dp, tp], [tp]])))
        elif typ in ("RmsNorm", "Mul"):
            attrs.append(("in_strategy", _tuple([[dp, 1]])))
        add(typ, scope, name, attrs)
        if typ == "MatMulV3" and tp > 1:
            add("AllGather", scope, f"{scope}/AllGather-op{base + 500 + len(nodes)}",
                [("group", {"dtype": "DT_STRING", "strVal": f"tp-{stage}"})], instance="redistribution_op_AllGather")
    if stage < stages - 1:
        for mb in range(MICRO_BATCHES):
            add("Send", "Default/network-PipelineCell", f"Default/network-PipelineCell/Send-op{base + 900 + mb}",
                [("sr_tag", _int(mb)), ("dest_rank", _int((stage + 1) * per_stage)), ("micro", _int(mb)),
                 ("group", {"dtype": "DT_STRING", "strVal": f"pp-{stage}-{stage + 1}"})])
    for layer in range(LAYERS_PER_STAGE):
        g = stage * LAYERS_PER_STAGE + layer
        scope = f"Gradients/Default/network-PipelineCell/_backbone-GPT/blocks-CellList/{g}-Block"
        add("AllReduce", scope, f"{scope}/AllReduce-op{base + 700 + layer}",
            [("group", {"dtype": "DT_STRING", "strVal": f"dp-{stage}"}), ("fusion", _int(1))],
            instance="grad_mirror_MirrorOperator")
    add("ApplyMomentum", "Default/optimizer-Momentum", f"Default/optimizer-Momentum/ApplyMomentum-op{base + 999}")
    return {"node": nodes, "parameters": [{"name": f"blocks.{stage * LAYERS_PER_STAGE}.attention.weight"}],
            "constVals": []}


def write_strategy(d: Path, r: int, ranks: int, stages: int, tp: int, pmode: str) -> None:
    per_stage = max(1, ranks // stages)
    stage = min(stages - 1, r // per_stage)
    dp = max(1, per_stage // tp)
    devices = [{"dim": [{"size": str(x)} for x in range(s * per_stage, (s + 1) * per_stage)]} for s in range(stages)]
    data = {"config": {"rankId": r, "stageId": stage, "parallelType": pmode, "stageDevices": devices},
            "graph": strategy_graph(stage, stages, dp, tp, per_stage)}
    (d / f"parallel_strategy_{r}.json").write_text(json.dumps(data), encoding="utf-8")
