"""Synthetic runs: realistic profiler output in both layouts, for any rank count, with injected problems.

Over 500 lines: the step model and the Ascend and MindInsight writers share the injected-problem plan (the
other families' writers have their own modules).

Used by `msreport --example`, the tests and the benchmarks. The files copy the real ones byte for byte in
shape (names, headers, units, quirks such as the trailing tab-free µs floats of step_trace_time.csv or the
10 ns ticks and '-' average row of step_trace_raw), and the numbers obey the same identities as real data:
collectives are synchronous, so a rank that computes longer makes the others wait.

Injections (`inject=[...]`, strings):

* ``slow-rank:R[:PHASE[:FACTOR]]``: rank R is slow in PHASE (compute | data | host), default compute x1.5;
* ``unbalanced-stage:S[:FACTOR]``: pipeline stage S computes FACTOR times longer (default 1.6);
* ``corrupt-step-trace:R``: rank R's step-trace file is truncated mid-row;
* ``corrupt-info:R``: rank R's profiler_info file is not valid JSON;
* ``missing-step-trace:R``: rank R has no step-trace file;
* ``missing-rank:R``: rank R's output is absent altogether;
* ``slow-link:SRC-DST[:FACTOR]``: the link from global rank SRC to DST runs at FACTOR of its bandwidth
  (default 0.3), so every operator that uses it takes longer;
* ``missing-comm:R`` / ``corrupt-comm:R``: rank R's communication files are absent / truncated;
* ``memory-near-capacity:R[:RATIO]``: rank R's peak device memory is RATIO of the capacity (default 0.96;
  healthy ranks sit near 70 %; Ascend runs record no capacity: build with --device-memory-gb 64);
* ``slow-op:TYPE[:FACTOR]``: operator type TYPE of the operator timelines (MatMulV3, Add, RmsNorm, Mul; the old
  names MatMul, BiasAdd, LayerNorm, Gelu still work) takes FACTOR times longer on every device (default 3.0);
  visible in the operator timelines (execution view);
* ``op-mix:TYPE[:FACTOR]``: a changed operator mix on every device: operator type TYPE of the operator
  statistics (MatMulV3, FlashAttentionScore, Add, Cast, ... of ``resources.OP_MIX``) takes FACTOR times longer
  (default 1.5); a TYPE not in the mix is a new operator type taking FACTOR of the computing time (default 0.1);
  the computing time grows by the added time;
* ``throttled-host:H[:FACTOR]``: every rank of host H (its index, or its name such as ``node001``) computes FACTOR
  times longer (default 1.3): a throttled server;
* ``slow-nic:R[:FACTOR]`` / ``slow-nic:HOST[:FACTOR]``: the RDMA network port of rank R's device (or of every
  device of host HOST, e.g. ``node001``) runs at FACTOR of its bandwidth (default 0.3): every RDMA link from or to it
  is slow;
* ``stall:R:STEP[:MS]``: rank R stalls once, in the STEP-th recorded step (0-based), for MS ms of host time
  (default 200): a garbage-collection pause or a checkpoint;
* ``stall:R:backward[:MS]`` (or ``forward``; ``200ms`` also reads): rank R stalls for MS ms (default 200) in the
  backward (forward) pass of every step, its device idle (host time: a blocking host call, a slow data copy): the
  gradient all-reduce after it makes every other rank wait as long, so every rank's step time stays equal and the
  per-phase averages of the waiting ranks look alike (Kineto traces place the stall after the first gradient
  bucket's all-reduce, before the last one);
* ``rotating-stall[:MS[:EVERY]]``: every EVERY-th step (default 1) a different rank stalls for MS ms (default 120):
  a job-level hiccup that lands on whichever rank is unlucky;
* ``overlap:F``: the share of transfer time hidden by computation (default 0.35; 0 = nothing hidden, 1 = all);
* ``slow-op-rank:R:TYPE[:FACTOR]``: like ``slow-op`` but on rank R only (default 3.0);
* ``starving-queue:R``: rank R's host data queue is empty in 4 steps of 5 and its MapOp cannot keep up
  (MindInsight layout, which carries the MindData files); the rank also waits for data before each step.

`export="db"` writes what torch_npu writes with `export_type=db` (analysis.db and ascend_pytorch_profiler_{rank}.db,
no text files; see `reportgen.synth.db`), `export="both"` keeps the text files beside them.

Communication follows the groups of `profiler_metadata.json`: every data-parallel group all-reduces the
gradients in a ring (2 operators per step), tensor-parallel groups all-gather, pipeline neighbours exchange
activations with batchSendRecv. Links inside a host are HCCS at about 19 GB/s, between hosts RDMA at about
12 GB/s; a rank waits in its collectives for as long as the slowest member of the group computes longer.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from reportgen.synth.execution import op_share, op_type_of, write_legacy_display, write_strategy
from reportgen.synth.comm import mindinsight_groups as _mindinsight_groups, nominal_transit, write_ascend_comm, write_hccl_raw
from reportgen.synth.resources import write_ascend_resources, write_mindinsight_resources
from reportgen.synth.timeline import (
    ALLREDUCE, RECEIVE, legacy_layout, write_cluster_analyse, write_legacy_timeline, write_trace_view,
)

MODERN_HEADER = ("Device_id,Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,"
                 "Bubble,Communication(Not Overlapped and Exclude Receive),Preparing")
LEGACY_HEADER = ("step_num,start_point,end_point,total,fp_point,bp_point,iteration_interval,fp_and_bp,tail")
STALL_PHASES = ("forward", "backward")
SHAPES = {
    # issue 17's production rank: 5,200 kernels and 43 communication operators per step, no trace_view.json
    "torch_npu_large": {"kernels_per_step": 5200, "comm_ops_per_step": 43, "tp": 8, "stages": 4},
    # issue 33's torch_npu level 1 with trace_view.json (kernels, launches, host operators, flows; ~75 % of a rank)
    "torch_npu_trace": {"kernels_per_step": 1000, "comm_ops_per_step": 43, "tp": 8, "stages": 4, "trace_view": True},
    # issue 33's communication-heavy rank: many small collectives (tensor-parallel ones split per layer), full-mesh
    # links inside the tensor-parallel groups and every top/middle/bottom entry in communication_matrix.json
    "torch_npu_comm": {"kernels_per_step": 600, "comm_ops_per_step": 400, "tp": 8, "stages": 4, "mesh": True},
    # issue 33's GPU rank: a gzipped Kineto trace with the real A100 trace's event mix (synth/kineto.py `_dense`),
    # ~25 MB a rank (1,600 kernels a step, 4 steps)
    "kineto": {"layout": "kineto", "kernels_per_step": 1600, "comm_ops_per_step": 0, "tp": 1, "stages": 1,
               "dense": True, "compress": True},
}
LAYOUTS = ("ascend", "mindinsight", "kineto", "mindspore_gpu")
EXPORTS = ("text", "db", "both")  # Ascend export_type: text files, SQLite DBs only, or both
SUPPORTED = ("slow-rank", "unbalanced-stage", "corrupt-step-trace", "corrupt-info", "missing-step-trace",
             "missing-rank", "slow-link", "missing-comm", "corrupt-comm", "memory-near-capacity", "starving-queue",
             "slow-op", "op-mix", "throttled-host", "slow-nic", "stall", "rotating-stall", "overlap",
             "slow-op-rank")


@dataclass
class Plan:
    """Parsed injections."""

    slow: dict[int, tuple[str, float]] = field(default_factory=dict)
    stage_factor: dict[int, float] = field(default_factory=dict)
    corrupt_step: set[int] = field(default_factory=set)
    corrupt_info: set[int] = field(default_factory=set)
    missing_step: set[int] = field(default_factory=set)
    missing_rank: set[int] = field(default_factory=set)
    slow_link: dict[tuple[int, int], float] = field(default_factory=dict)
    missing_comm: set[int] = field(default_factory=set)
    corrupt_comm: set[int] = field(default_factory=set)
    memory: dict[int, float] = field(default_factory=dict)  # rank -> peak / capacity
    starving: set[int] = field(default_factory=set)
    slow_ops: dict[str, float] = field(default_factory=dict)  # operator type -> factor, on every device
    op_mix: dict[str, float] = field(default_factory=dict)  # operator statistics: type -> factor (or new share)
    seed: int = 0
    kernels_per_step: int = 0  # realistic size (synth.large): kernel_details.csv rows per rank and step
    comm_ops_per_step: int = 0  # realistic size: communication operators per rank and step
    mesh: bool = False  # realistic size: full-mesh links in tensor-parallel groups, all matrix entries
    throttled: dict[str, float] = field(default_factory=dict)  # host index or name -> compute factor
    slow_nic: dict[str, float] = field(default_factory=dict)  # rank number or host name -> RDMA bandwidth factor
    stalls: dict[tuple[int, int], float] = field(default_factory=dict)  # (rank, step index) -> extra host ms
    # rank -> (phase, ms): a stall in that phase of every step (`stall:R:backward:200ms`)
    phase_stalls: dict[int, tuple[str, float]] = field(default_factory=dict)
    rotating: Optional[tuple[float, int]] = None  # (ms, every) of a rotating stall
    hidden: float = 0.35  # share of transfer time hidden by computation
    rank_slow_ops: dict[int, dict[str, float]] = field(default_factory=dict)  # rank -> {operator type: factor}

    def rank_ops(self, r: int) -> dict[str, float]:
        """Operator slowdowns on rank r: every device's (`slow_ops`) and its own (`rank_slow_ops`)."""
        own = self.rank_slow_ops.get(r)
        return {**self.slow_ops, **own} if own else self.slow_ops

    def nic_factor(self, rank: int, per_host: int) -> float:
        if not self.slow_nic:
            return 1.0
        return self.slow_nic.get(str(rank), self.slow_nic.get(f"node{rank // per_host:03d}", 1.0))


def parse_injections(items: list[str]) -> Plan:
    plan = Plan()
    for item in items:
        parts = item.split(":")
        kind = parts[0]
        try:
            if kind == "slow-rank":
                phase = parts[2] if len(parts) > 2 else "compute"
                if phase not in ("compute", "data", "host"):
                    raise ValueError(f"unknown phase {phase!r} (compute, data or host)")
                plan.slow[int(parts[1])] = (phase, float(parts[3]) if len(parts) > 3 else 1.5)
            elif kind == "unbalanced-stage":
                plan.stage_factor[int(parts[1])] = float(parts[2]) if len(parts) > 2 else 1.6
            elif kind == "corrupt-step-trace":
                plan.corrupt_step.add(int(parts[1]))
            elif kind == "corrupt-info":
                plan.corrupt_info.add(int(parts[1]))
            elif kind == "missing-step-trace":
                plan.missing_step.add(int(parts[1]))
            elif kind == "missing-rank":
                plan.missing_rank.add(int(parts[1]))
            elif kind == "slow-link":
                a, b = parts[1].split("-")
                plan.slow_link[(int(a), int(b))] = float(parts[2]) if len(parts) > 2 else 0.3
            elif kind == "missing-comm":
                plan.missing_comm.add(int(parts[1]))
            elif kind == "corrupt-comm":
                plan.corrupt_comm.add(int(parts[1]))
            elif kind == "memory-near-capacity":
                plan.memory[int(parts[1])] = float(parts[2]) if len(parts) > 2 else 0.96
            elif kind == "slow-op":
                if op_share(parts[1]) == 0:
                    raise ValueError(f"unknown operator type {parts[1]!r} for slow-op")
                plan.slow_ops[op_type_of(parts[1])] = float(parts[2]) if len(parts) > 2 else 3.0
            elif kind == "op-mix":
                from reportgen.synth.resources import mix_share

                default = 1.5 if mix_share(parts[1]) else 0.1
                plan.op_mix[parts[1]] = float(parts[2]) if len(parts) > 2 else default
            elif kind == "throttled-host":
                h = parts[1]
                plan.throttled[f"node{int(h):03d}" if h.isdigit() else h] = float(parts[2]) if len(parts) > 2 else 1.3
            elif kind == "slow-nic":
                plan.slow_nic[parts[1]] = float(parts[2]) if len(parts) > 2 else 0.3
            elif kind == "stall" and len(parts) > 2 and parts[2] in STALL_PHASES:
                ms = float(parts[3].removesuffix("ms")) if len(parts) > 3 else 200.0
                plan.phase_stalls[int(parts[1])] = (parts[2], ms)
            elif kind == "stall":
                plan.stalls[(int(parts[1]), int(parts[2]))] = (float(parts[3].removesuffix("ms")) if len(parts) > 3
                                                               else 200.0)
            elif kind == "rotating-stall":
                plan.rotating = (float(parts[1]) if len(parts) > 1 else 120.0, int(parts[2]) if len(parts) > 2 else 1)
            elif kind == "overlap":
                plan.hidden = float(parts[1])
                if not 0.0 <= plan.hidden <= 1.0:
                    raise ValueError("overlap must be between 0 and 1")
            elif kind == "slow-op-rank":
                if op_share(parts[2]) == 0:
                    raise ValueError(f"unknown operator type {parts[2]!r} for slow-op-rank")
                plan.rank_slow_ops.setdefault(int(parts[1]), {})[op_type_of(parts[2])] = (
                    float(parts[3]) if len(parts) > 3 else 3.0)
            elif kind == "starving-queue":
                plan.starving.add(int(parts[1]))
                plan.slow.setdefault(int(parts[1]), ("data", 1.2))
            else:
                raise ValueError(f"unknown injection {kind!r}; supported: {', '.join(SUPPORTED)}")
        except IndexError:
            raise ValueError(f"injection {item!r} is missing its rank or stage") from None
    return plan


@dataclass
class StepModel:
    """Per-rank, per-step phase durations in ms (modern semantics), derived from a shared timing model."""

    computing: np.ndarray  # [rank, step]
    comm_nov: np.ndarray
    overlapped: np.ndarray
    free: np.ndarray
    bubble: np.ndarray
    preparing: np.ndarray
    data_wait: np.ndarray  # host-side data wait before the step (legacy iteration interval)
    transit: Optional[np.ndarray] = None  # transfer time of the communication operators (ring times)
    hidden: float = 0.35  # share of it hidden by computation (the `overlap` injection)


def simulate(ranks: int, steps: int, *, stages: int, plan: Plan, seed: int,
             compute_ms: float = 120.0, comm_ms: float = 30.0,
             transit_ms: Optional[np.ndarray] = None, slow_ring_ms: Optional[np.ndarray] = None,
             ranks_per_host: int = 8) -> StepModel:
    """`transit_ms`: per rank, the transfer time of its communication operators per step (`comm.nominal_transit`,
    so that the communication files and the step trace describe the same time); default `comm_ms` for all.
    `slow_ring_ms`: per rank, how much of that is due to slow links (a rank whose rings are slow arrives late at
    the next collective, like a slow computer)."""
    rng = np.random.default_rng(seed)
    shape = (ranks, steps)
    per_stage = max(1, ranks // stages)
    stage = np.minimum(np.arange(ranks) // per_stage, stages - 1)
    comp = compute_ms * (1 + rng.normal(0, 0.01, shape))
    comp *= (1 + rng.normal(0, 0.004, (ranks, 1)))  # steady per-device differences
    data = 0.3 + rng.gamma(2.0, 0.05, shape)
    host = 2.0 + rng.gamma(2.0, 0.2, shape)
    for s, f in plan.stage_factor.items():
        comp[stage == s] *= f
    for op, f in plan.slow_ops.items():
        comp *= 1 + op_share(op) * (f - 1)
    if plan.op_mix:
        from reportgen.synth.resources import mix_growth

        comp *= mix_growth(plan.op_mix)
    for r, (phase, f) in plan.slow.items():
        if 0 <= r < ranks:
            if phase == "compute":
                comp[r] *= f
            elif phase == "data":
                data[r] += compute_ms * (f - 1)
            else:
                host[r] += compute_ms * (f - 1)
    for r, ops in plan.rank_slow_ops.items():
        if 0 <= r < ranks:
            for op, f in ops.items():
                comp[r] *= 1 + op_share(op) * (f - 1)
    for h, f in plan.throttled.items():
        for r in range(ranks):
            if f"node{r // ranks_per_host:03d}" == h:
                comp[r] *= f
    for (r, s_), extra in plan.stalls.items():
        if 0 <= r < ranks and 0 <= s_ < steps:
            host[r, s_] += extra
    for r, (_phase, extra) in plan.phase_stalls.items():
        if 0 <= r < ranks:
            host[r] += extra
    if plan.rotating is not None:
        extra, every = plan.rotating
        for s_ in range(0, steps, max(1, every)):
            host[(s_ * 5 + 1) % ranks, s_] += extra
    if steps > 1:  # the first recorded step carries compilation / warm-up
        comp[:, 0] *= 1.08
    base = np.full(ranks, comm_ms) if transit_ms is None else np.asarray(transit_ms, dtype=float)
    transit = base[:, None] * (1 + rng.normal(0, 0.02, shape))
    hidden, exposed = (0.35, 0.65) if plan.hidden == 0.35 else (plan.hidden, 1.0 - plan.hidden)
    overlap = transit * hidden
    # Synchronous collectives: everyone leaves the last collective when the slowest rank arrives. A rank whose
    # rings are slower than usual (a slow link) arrives late at the next collective (35 % of transit is hidden).
    late = np.zeros(ranks) if slow_ring_ms is None else exposed * np.asarray(slow_ring_ms, dtype=float)
    busy = comp + host + data + late[:, None]
    if stages > 1:
        # Pipeline: a stage waits (bubble) for the slowest stage; within a stage, collectives synchronise.
        stage_busy = np.stack([busy[stage == s].max(axis=0) for s in range(stages)])
        slowest = stage_busy.max(axis=0)
        bubble = (slowest[None, :] - stage_busy)[stage] * 0.9
        stage_max = stage_busy[stage]
        wait = stage_max - busy
    else:
        bubble = np.zeros(shape)
        wait = busy.max(axis=0)[None, :] - busy
    comm_nov = transit - overlap + wait + bubble
    return StepModel(computing=comp, comm_nov=comm_nov, overlapped=overlap, free=host, bubble=bubble,
                     preparing=0.15 + rng.gamma(2.0, 0.03, shape), data_wait=data, transit=transit, hidden=hidden)


def step_model(ranks: int, steps: int, *, stages: int, tp: int, plan: Plan, seed: int, layout: str = "ascend",
               ranks_per_host: int = 8) -> StepModel:
    """The step model of `generate_run`: transfer times come from the communication operators the files hold
    (the groups of the layout), so the communication files and the step trace describe the same time."""
    if layout not in ("ascend", "mindinsight"):  # their communication is drawn from the step model itself
        return simulate(ranks, steps, stages=stages, plan=plan, seed=seed, ranks_per_host=ranks_per_host)
    groups = _parallel_groups(ranks, stages, tp) if layout == "ascend" else _mindinsight_groups(ranks, stages)
    hosts = ranks_per_host if layout == "ascend" else 8
    transit = nominal_transit(ranks, groups, hosts, plan)
    healthy = nominal_transit(ranks, groups, hosts, Plan())
    return simulate(ranks, steps, stages=stages, plan=plan, seed=seed, transit_ms=transit,
                    slow_ring_ms=np.maximum(transit - healthy, 0.0), ranks_per_host=hosts)


def _hosts(rank: int, per_host: int) -> tuple[str, int]:
    return f"node{rank // per_host:03d}", rank % per_host


def generate_run(path: Path, *, layout: str = "ascend", ranks: int = 8, steps: int = 10, stages: int = 1,
                 tp: int = 1, seed: int = 0, inject: Optional[list[str]] = None, ranks_per_host: int = 8,
                 first_step: int = 1, trace_view: bool = False, compress: bool = False,
                 export: str = "text", kernels_per_step: Optional[int] = None,
                 comm_ops_per_step: Optional[int] = None, shape: Optional[str] = None) -> Path:
    """Write a synthetic run under `path` (created) and return it.

    `kernels_per_step` / `comm_ops_per_step` (Ascend layout) give each rank the size of a production torch_npu
    run: that many `kernel_details.csv` rows (level-1 columns) and communication operators per step, and a dense
    `memory_record.csv` (`reportgen.synth.large`). `shape="torch_npu_large"` is the preset of issue 17: 5,200
    kernels and 43 communication operators per step, tp 8 and 4 pipeline stages (when `tp` and `stages` are left
    at 1). Without them the files are the small ones, unchanged.

    MindInsight runs get step traces with communication columns, operator timelines and the profiler's
    cluster-analyse overlap files; Ascend runs get step_trace_time.csv and, with `trace_view`, a
    trace_view.json per rank whose Overlap Analysis lanes add up to the same values.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {', '.join(LAYOUTS)}")
    if export not in EXPORTS or (export != "text" and layout != "ascend"):
        raise ValueError(f"export must be one of {', '.join(EXPORTS)} (db only for the ascend layout)")
    if ranks < 1 or steps < 1 or stages < 1 or ranks % stages:
        raise ValueError("need ranks >= 1, steps >= 1 and a stage count that divides the rank count")
    if shape is not None:
        if shape not in SHAPES:
            raise ValueError(f"shape must be one of {', '.join(SHAPES)}")
        preset = SHAPES[shape]
        layout = preset.get("layout", layout)
        compress = compress or preset.get("compress", False)
        kernels_per_step = kernels_per_step or preset["kernels_per_step"]
        comm_ops_per_step = comm_ops_per_step or preset["comm_ops_per_step"]
        trace_view = trace_view or preset.get("trace_view", False)
        if tp == 1 and stages == 1 and ranks % (preset["tp"] * preset["stages"]) == 0:
            tp, stages = preset["tp"], preset["stages"]
    if (kernels_per_step or comm_ops_per_step) and layout != "ascend" and shape != "kineto":
        raise ValueError("kernels_per_step / comm_ops_per_step / shape: only for the ascend layout")
    plan = parse_injections(inject or [])
    plan.seed = seed
    plan.kernels_per_step = int(kernels_per_step or 0)
    plan.comm_ops_per_step = int(comm_ops_per_step or 0)
    plan.mesh = bool(shape is not None and SHAPES[shape].get("mesh"))
    model = step_model(ranks, steps, stages=stages, tp=tp, plan=plan, seed=seed, layout=layout,
                       ranks_per_host=ranks_per_host)
    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    if layout == "ascend":
        _write_ascend(path, model, ranks, steps, stages, tp, plan, ranks_per_host, first_step, trace_view)
        if export != "text":
            _to_db(path, ranks, plan, ranks_per_host, keep_text=export == "both")
    elif layout == "kineto":
        from reportgen.synth.kineto import write_kineto
        dense = shape is not None and SHAPES[shape].get("dense", False)
        write_kineto(path / "traces", model, ranks, steps, plan, ranks_per_host, first_step, compress=compress,
                     **({"kernels_per_step": plan.kernels_per_step, "dense": True} if dense else {}))
    elif layout == "mindspore_gpu":
        from reportgen.synth.gpu import write_mindspore_gpu
        write_mindspore_gpu(path / "profiler", model, ranks, steps, plan, first_step)
    else:
        _write_mindinsight(path / "profiler", model, ranks, steps, stages, tp, plan, first_step)
    return path


# --- Ascend (torch_npu 8.3-era) ---------------------------------------------------------------------


def _parallel_groups(ranks: int, stages: int, tp: int) -> dict:
    groups: dict[str, dict] = {"group_name_0": {"group_name": "default_group", "global_ranks": list(range(ranks))}}
    per_stage = ranks // stages
    n = 1
    if stages > 1:
        for i in range(per_stage):
            groups[f"group_name_{n}"] = {"group_name": "pp", "global_ranks": [s * per_stage + i for s in range(stages)]}
            n += 1
    for s in range(stages):
        members = list(range(s * per_stage, (s + 1) * per_stage))
        if tp > 1:
            for j in range(0, len(members), tp):
                groups[f"group_name_{n}"] = {"group_name": "tp", "global_ranks": members[j:j + tp]}
                n += 1
        dp_groups = [members[k::tp] for k in range(tp)] if tp > 1 else [members]
        for g in dp_groups:
            groups[f"group_name_{n}"] = {"group_name": "dp", "global_ranks": g}
            n += 1
    return groups


def _write_ascend(root: Path, m: StepModel, ranks: int, steps: int, stages: int, tp: int, plan: Plan,
                  per_host: int, first_step: int, trace_view: bool) -> None:
    groups = _parallel_groups(ranks, stages, tp)
    dp = max(1, ranks // (stages * tp))
    for r in range(ranks):
        if r in plan.missing_rank:
            continue
        host, dev = _hosts(r, per_host)
        d = root / f"{host}_{100000 + r}_20261121093000{r % 1000:03d}_ascend_pt"
        out = d / "ASCEND_PROFILER_OUTPUT"
        out.mkdir(parents=True, exist_ok=True)
        info = {"config": {"common_config": {"activities": ["ProfilerActivity.CPU", "ProfilerActivity.NPU"],
                                             "schedule": {"wait": 0, "active": steps, "warmup": 1, "repeat": 1,
                                                          "skip_first": first_step - 1}},
                           "experimental_config": {"_profiler_level": "Level1", "_export_type": ["text"],
                                                   "_aic_metrics": "ACL_AICORE_PIPE_UTILIZATION"}},
                "torch_npu_version": "2.7.1", "cann_version": "8.3.RC1", "rank_id": str(r)}
        text = json.dumps(info, indent=4)
        if r in plan.corrupt_info:
            text = text[: len(text) // 2]
        (d / f"profiler_info_{r}.json").write_text(text, encoding="utf-8")
        meta = {"distributed_args": {"tensor_model_parallel_size": tp, "pipeline_model_parallel_size": stages,
                                     "data_parallel_size": dp, "context_parallel_size": 1,
                                     "expert_model_parallel_size": 1, "sequence_parallel": False, "rank": r,
                                     "world_size": ranks},
                "ENV_VARIABLES": {"ASCEND_GLOBAL_LOG_LEVEL": "3", "HCCL_ALGO": ""},
                # like torch_npu: only the groups this rank belongs to
                "parallel_group_info": {k: {**v, "group_rank": v["global_ranks"].index(r)}
                                        for k, v in groups.items() if r in v["global_ranks"]}}
        (d / "profiler_metadata.json").write_text(json.dumps(meta), encoding="utf-8")
        if r not in plan.missing_comm:
            write_ascend_comm(out, r, m, groups, per_host, first_step, steps, plan)
        write_ascend_resources(out, r, m.computing[r], first_step, plan, plan.seed)
        if trace_view and plan.kernels_per_step:  # the realistic size: every kernel of kernel_details.csv's mix
            from reportgen.synth.large import trace_kernel_events
            from reportgen.synth.resources import op_mix

            rng = np.random.default_rng(plan.seed * 104729 + r)
            mix, nk = op_mix(plan), plan.kernels_per_step
            write_trace_view(out, r, m, steps, first_step, dev, 1_763_717_400_000_000.0 + r * 37.5,
                             body=lambda s, c0, comp, h0: trace_kernel_events(
                                 mix, nk, comp, c0, h0, 1_763_717_400_000_000.0 + r * 37.5,
                                 1_000_000 * (s + 1), rng))
        elif trace_view:
            write_trace_view(out, r, m, steps, first_step, dev, 1_763_717_400_000_000.0 + r * 37.5,
                             kernels=(min(stages - 1, r // max(1, ranks // stages)), stages, plan.rank_ops(r)))
        if r in plan.missing_step:
            continue
        lines = [MODERN_HEADER]
        for s in range(steps):
            us = 1000.0
            comp, nov, ov = m.computing[r, s] * us, m.comm_nov[r, s] * us, m.overlapped[r, s] * us
            free, bub, prep = m.free[r, s] * us, m.bubble[r, s] * us, m.preparing[r, s] * us
            stage = comp + nov + free - bub
            lines.append(",".join(_f(x) for x in (dev, first_step + s, comp, nov, ov, nov + ov, free, stage, bub,
                                                   nov - bub, prep)))
        text = "\n".join(lines) + "\n"
        if r in plan.corrupt_step:
            text = text[: int(len(text) * 0.6)]
        (out / "step_trace_time.csv").write_text(text, encoding="utf-8")


def _to_db(root: Path, ranks: int, plan: Plan, per_host: int, keep_text: bool) -> None:
    """export_type db (or text + db): each rank's text export rewritten into analysis.db and
    ascend_pytorch_profiler_{rank}.db (reportgen.synth.db); the text files are removed unless kept."""
    from reportgen.synth.db import write_rank_db

    for r in range(ranks):
        if r in plan.missing_rank:
            continue
        host, dev = _hosts(r, per_host)
        d = root / f"{host}_{100000 + r}_20261121093000{r % 1000:03d}_ascend_pt"
        write_rank_db(d, r, keep_text, host=host, device=dev)
        info = d / f"profiler_info_{r}.json"
        if r not in plan.corrupt_info:
            data = json.loads(info.read_text(encoding="utf-8"))
            data["config"]["experimental_config"]["_export_type"] = ["text", "db"] if keep_text else ["db"]
            info.write_text(json.dumps(data, indent=4), encoding="utf-8")


def _f(x) -> str:
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    v = float(x)
    return "0" if v == 0 else repr(round(v, 6))


# --- MindInsight flat folder --------------------------------------------------------------------------


def _write_mindinsight(d: Path, m: StepModel, ranks: int, steps: int, stages: int, tp: int, plan: Plan,
                       first_step: int) -> None:
    d.mkdir(parents=True, exist_ok=True)
    mode = ("pipeline-parallel" if stages > 1 else "model-parallel" if tp > 1
            else "data-parallel" if ranks > 1 else "stand_alone")
    pmode = {"pipeline-parallel": "semi_auto_parallel", "model-parallel": "semi_auto_parallel",
             "data-parallel": "data_parallel"}.get(mode, "stand_alone")
    pipeline = stages > 1
    for r in range(ranks):
        if r in plan.missing_rank:
            continue
        info = {"context_mode": "graph", "rank_id": str(r), "ms_version": "2.2.14", "parallel_mode": pmode,
                "stage_num": stages, "rank_size": ranks, "profiling_start_time": "2026-11-21 09:30:00",
                "graph_ids": [0]}
        text = json.dumps(info)
        if r in plan.corrupt_info:
            text = text[: len(text) // 2]
        (d / f"profiler_info_{r}.json").write_text(text, encoding="utf-8")
        if r not in plan.missing_comm:
            write_hccl_raw(d, r, m, ranks, stages, first_step, steps, plan)
        write_mindinsight_resources(d, r, m.computing[r], steps, first_step, plan, plan.seed,
                                    plan.stage_factor.get(r // max(1, ranks // stages), 1.0))
        ticks = 1e5  # per ms
        layouts = legacy_layout(m, r, steps, pipeline, (61688106196804 + r * 1234) / ticks)
        stage = min(stages - 1, r // max(1, ranks // stages))
        write_legacy_display(d, r, r % 8, stage, stages, layouts, first_step, plan.rank_ops(r), ranks > 1)
        if ranks > 1 and mode != "stand_alone":
            write_cluster_analyse(d, r, layouts, mode, stages, ranks, pipeline)
            write_legacy_timeline(d, r, layouts)
            write_strategy(d, r, ranks, stages, tp, pmode)
        if r in plan.missing_step:
            continue
        names = ([RECEIVE] if pipeline else []) + ([ALLREDUCE] if ranks > 1 else [])
        rows = []
        for s, lay in enumerate(layouts):
            tk = [int(round(v * ticks)) for v in (lay.start, lay.end, lay.fp, lay.bp)]
            start, end, fp, bp = tk
            row = [first_step + s, start, end, end - start, fp, bp, fp - start, bp - fp, end - bp]
            for name in names:
                if name == RECEIVE:
                    a_, b_ = lay.fp, lay.fp + lay.recv
                else:
                    a_, b_ = lay.compute_end - lay.overlapped, lay.compute_end + lay.alone
                ra, rb = int(round(a_ * ticks)), int(round(b_ * ticks))
                row += [rb - ra, ra, rb]
            rows.append(row)
        body = rows[1:] if len(rows) > 1 else rows  # MindSpore averages steps 2..N
        avg = ["-"] + [int(round(sum(c) / len(body))) for c in zip(*[row[1:] for row in body])]
        header = LEGACY_HEADER + "".join(f",{n},{n}_start_point,{n}_end_point" for n in names)
        text = header + "\n" + "\n".join(",".join(str(x) for x in row) for row in rows + [avg]) + "\n"
        if r in plan.corrupt_step:
            text = text[: int(len(text) * 0.6)]
        (d / f"step_trace_raw_{r}_detail_time.csv").write_text(text, encoding="utf-8")
