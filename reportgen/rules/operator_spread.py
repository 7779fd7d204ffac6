"""The Marey view's two readings (MindInsight's cluster profiling guide): an operator long on one device points
at a slow node; an operator long on every device points at the operator (for gradient all-reduces, the
all-reduce fusion setting). Read from the operator timelines of the steps the execution view draws."""

from __future__ import annotations

from dataclasses import dataclass

from reportgen import urls
from reportgen.analysis.impact import compute_saving
from reportgen.rules import policy
from reportgen.i18n import N_, lazy
from reportgen.rules.base import Context, Finding, Rule, fmt_ms, fmt_pct, gpu_run
from reportgen.rules.thresholds import th

@dataclass(frozen=True)
class Thresholds:
    min_rel: float = th(0.15, N_("an operator type counts as slow on a device at this much above its stage's median"))
    min_share: float = th(0.03, N_('and when its excess is at least this share of the step'))
    min_abs_ms: float = th(1.0, N_('and at least this many ms'))
    min_devices: float = th(3.0, N_('devices of the stage that ran the type (a median needs a few)'))
    warning_share: float = th(0.05, N_("a device's summed excess (share of the step) from which it is a warning"))
    everywhere_share: float = th(0.25, N_('a collective taking this share of the step on every device is reported'))
    everywhere_compute_share: float = th(0.4, N_('a compute type taking this share of the step on every device is '
                                              'reported'))
    everywhere_spread: float = th(0.2, N_('... when its max / median stays below 1 + this'))


ADVICE_DEVICE = N_("""\
One device runs the same operators longer than the other devices of its stage, so the whole stage waits for it
at the next collective (the other devices' collectives are longer by about the same amount):
- check the device: temperature, clocks (AI Core frequency), errors in the device log, other processes on it;
- check its host: CPU binding, memory pressure, a noisy neighbour;
- if the excess is in one operator type only, compare its input shapes with the other devices (uneven data).
Open the rank's page and the execution view: its bars are longer and the lines joining the same operator bend at
its lane.""")

ADVICE_COLLECTIVE = N_("""\
A collective takes a large share of the step on every device, so it is not one slow node:
- gradient all-reduces: revisit `all_reduce_fusion_config` (fewer, larger fused all-reduces start later but
  cost less; more, smaller ones overlap better with the backward pass);
- move the communication off the critical path: enable overlap of gradient communication with computation,
  or shard the optimizer state to replace the all-reduce by reduce-scatter + all-gather;
- check the parallel strategy: a smaller data-parallel group or a different split shrinks the volume.""")

ADVICE_DEVICE_GPU = N_("""\
One GPU runs the same kernels longer than the other GPUs of its stage, so the whole stage waits for it at the next
collective (the other GPUs' collectives are longer by about the same amount):
- check the GPU: `nvidia-smi -q -d CLOCK,PERFORMANCE,TEMPERATURE` (or `rocm-smi`) for throttled clocks and power
  limits, ECC / Xid errors in the kernel log, other processes on it;
- check its host: CPU binding (NUMA), memory pressure, a noisy neighbour;
- if the excess is in one kernel type only, compare its input shapes with the other GPUs (uneven data).
Open the rank's page and the execution view: its bars are longer and the lines joining the same operator bend at
its lane.""")

ADVICE_COLLECTIVE_GPU = N_("""\
A collective takes a large share of the step on every GPU, so it is not one slow node:
- gradient all-reduces: tune DDP's `bucket_cap_mb` (fewer, larger buckets cost less; smaller ones overlap better
  with the backward pass) or FSDP's prefetching;
- move the communication off the critical path: overlap gradient communication with computation, or shard the
  optimizer state (ZeRO / FSDP) to replace the all-reduce by reduce-scatter + all-gather;
- check NCCL's transports (`NCCL_DEBUG=INFO`: NVLink inside a node, InfiniBand / RoCE with GPUDirect RDMA across
  nodes) and the parallel strategy: a smaller data-parallel group or a different split shrinks the volume.""")

ADVICE_COMPUTE = N_("""\
One operator type takes a large share of the step on every device, so it is the operator, not a device:
- check its precision (float32 where float16 / bfloat16 would do) and its shapes (multiples of 16);
- look for a fused kernel that replaces it, or a cheaper formulation;
- for recompute-heavy backward operators, review the recomputation settings.""")


IMPACT_BASIS = N_("rank {rank}'s computation set to its stage's median in every step, at most its excess in the "
                  "representative step")


def _step_label(step: int):
    """Runs without step ids (MindSpore CPU) give the whole profiled window step -1."""
    return lazy("step {step}", step=step) if step >= 0 else lazy("the profiled window")


def check(ctx: Context) -> list[Finding]:
    ev = ctx.a.execution
    if ev is None or not ev.marey:
        return []
    out: list[Finding] = []
    gpu = gpu_run(ctx.a)
    m = ev.marey[0]  # the representative step
    step_ms = max((d.step_ms for d in m.devices), default=0.0)
    if not step_ms > 0:
        return []
    per_device: dict[int, list] = {}
    for s in m.type_spread:
        if s.cls != "compute" or s.n < ctx.t.min_devices or s.median_ms <= 0:
            continue
        if (s.max_ms / s.median_ms - 1 >= ctx.t.min_rel and s.excess_ms >= ctx.t.min_share * step_ms
                and s.excess_ms >= ctx.t.min_abs_ms):
            per_device.setdefault(s.max_rank, []).append(s)
    stage_of = {d.rank: d.stage for d in m.devices}
    for r, items in sorted(per_device.items()):
        excess = sum(s.excess_ms for s in items)
        share = excess / step_ms
        names = ", ".join(s.name for s in items[:4]) + (f" and {len(items) - 4} more" if len(items) > 4 else "")
        imp = compute_saving(ctx.a.steps, [r], excess, lazy(IMPACT_BASIS, rank=r), step_ms)
        out.append(policy.judged(Finding(
            id="operator-spread.slow-device", category="slow_rank", impact=imp.to_dict() if imp else None,
            severity="warning" if share >= ctx.t.warning_share else "info",
            title=lazy("Rank {rank} runs {names} longer than the other devices of stage {stage} (+{excess} in {step})",
                       rank=r, names=names, stage=stage_of.get(r, 0), excess=fmt_ms(excess),
                       step=_step_label(m.step)),
            advice=lazy(ADVICE_DEVICE_GPU if gpu else ADVICE_DEVICE), ranks=[r], phase="compute",
            why=lazy("The stage waits for this device: {share} of the step in its timeline.", share=fmt_pct(share)),
            page=urls.marey_rank(r),
            evidence={"step": m.step, "stage": stage_of.get(r, 0), "excess_ms": excess, "step_ms": step_ms,
                      "types": {s.name: {"ms": s.max_ms, "median_ms": s.median_ms} for s in items}},
            table={"columns": [N_("Operator type"), N_("This rank"), N_("Stage median"), N_("Max / median")],
                   "rows": [[s.name, fmt_ms(s.max_ms), fmt_ms(s.median_ms), f"{s.max_ms / s.median_ms:.2f}"]
                            for s in items[:10]], "links": [None] * min(10, len(items))}), ctx.p))
    for s in m.type_spread:
        if s.n < ctx.t.min_devices or s.cls in ("receive", "send"):
            continue
        coll = s.cls == "collective"
        if (s.share >= (ctx.t.everywhere_share if coll else ctx.t.everywhere_compute_share)
                and s.ratio <= 1 + ctx.t.everywhere_spread):
            out.append(Finding(
                id="operator-spread.long-everywhere", category="communication_bound" if coll else "operator_hotspot",
                severity="info",
                title=lazy("{op} takes {share} of {step} on every device of stage {stage}", op=s.name,
                           share=fmt_pct(s.share), step=_step_label(m.step), stage=s.stage),
                advice=lazy((ADVICE_COLLECTIVE_GPU if gpu else ADVICE_COLLECTIVE) if coll else ADVICE_COMPUTE),
                stages=[s.stage],
                why=lazy("Long on all devices alike: the operator (or its configuration) is the lever, not a device."),
                page=urls.MAREY_TYPES,
                evidence={"step": m.step, "op_type": s.name, "median_ms": s.median_ms, "max_ms": s.max_ms,
                          "devices": s.n, "share": s.share}))
    return out


RULE = Rule(
    id="operator-spread", category="slow_rank", title=N_("Operators long on one device or on every device"),
    description=N_("""\
Reads the execution view (operator timelines of the representative step). Per stage and operator type, the
type's time on each device is compared with the stage's median: a device where types run `min_rel` above it
(by at least `min_share` of the step and `min_abs_ms`) is named as a slow node (a warning from `warning_share`
of the step). A collective taking `everywhere_share` (a compute type `everywhere_compute_share`) of the step on every device with little spread is reported as
information, with the all-reduce fusion advice for collectives. A device also named by the step-trace rules
carries this as related evidence."""),
    params=Thresholds, check=check, source=N_("MindInsight cluster profiling guide (Marey view)"))
