"""One rank's Kineto trace into the model objects (`load_kineto`): the header into the rank's info, the
streamed pass, then every per-rank summary built from the pass's arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from reportgen.dataquality import dq
from reportgen.loaders.issuelog import IssueLog
from reportgen.model import Communication, Memory, OpFlops, Operators, RankData, StepTrace, TimelineSummary
from reportgen.loaders.kineto.header import device_properties, header_gaps, read_header
from reportgen.loaders.kineto.scan import _Acc, _note_duplicates, _scan
from reportgen.loaders.kineto.flops import _op_flops
from reportgen.loaders.kineto.steps import _device_events, _intervals, _step_trace
from reportgen.loaders.kineto.communication import _communication, _note_comm
from reportgen.loaders.kineto.launches import note_unlaunched
from reportgen.loaders.kineto.operators import _operators
from reportgen.loaders.kineto.memory import _memory
from reportgen.loaders.kineto.timeline import _idle_hook, _timeline

if TYPE_CHECKING:
    from reportgen.loaders.kineto.steps import DeviceEvents


@dataclass
class KinetoRank:
    step_trace: Optional[StepTrace] = None
    communication: Optional[Communication] = None
    operators: Optional[Operators] = None
    memory: Optional[Memory] = None
    idle: object = None  # reportgen.idle.IdleBreakdown (`timeline._idle_hook`)
    timeline: Optional[TimelineSummary] = None
    device: str = "cpu"  # "gpu" (device activity, any accelerator) or "cpu"
    events: Optional[DeviceEvents] = None
    op_flops: Optional[OpFlops] = None


def load_kineto(path: Path, data: RankData, log: IssueLog) -> KinetoRank:
    """Read one rank's trace into `data` (info) and return the model objects."""
    info = data.info
    head = read_header(path)
    dist = head.get("distributedInfo")
    dist = dist if isinstance(dist, dict) else {}
    if dist:
        ws = dist.get("world_size")
        info.rank_size = int(ws) if isinstance(ws, (int, float)) else info.rank_size
        # not `distributed_args` (Megatron's tp/pp/dp sizes, which Kineto does not record): the run is then
        # "data-parallel assumed from the rank count" unless groups say more
        if dist.get("nccl_version"):
            info.versions["NCCL"] = str(dist["nccl_version"])
        for pg in dist.get("pg_config") or []:
            if isinstance(pg, dict) and "pg_name" in pg:
                info.parallel_groups[str(pg["pg_name"])] = {
                    "group_name": str(pg.get("pg_desc") or pg["pg_name"]),
                    "global_ranks": [int(x) for x in pg.get("ranks") or [] if isinstance(x, (int, float))],
                    "backend": str(pg.get("backend_config") or dist.get("backend") or "")}
    gaps = header_gaps(head)
    if gaps:
        log.add(path, dq("kineto.header-fields-missing", fields=", ".join(gaps)), "warning", "schema drift")
    if head.get("host_name") and not info.host:
        info.host = str(head["host_name"])
    if info.framework is None:
        info.framework = "PyTorch"
    acc = _Acc()
    _scan(path, acc, log)
    _note_duplicates(acc, path, log)
    try:
        return _build(acc, head, dist, info, path, log)
    except (ValueError, TypeError, KeyError, IndexError, OverflowError) as err:  # loaders never raise
        log.add(path, dq("kineto.not-summarised", err=type(err).__name__, err2=str(err)[:120]), "error")
        return KinetoRank()


def _build(acc: _Acc, head: dict, dist: dict, info, path: Path, log: IssueLog) -> KinetoRank:
    out = KinetoRank()
    rel = log.rel(path)
    out.device = "gpu" if len(acc.dev_s) else "cpu"
    if out.device == "gpu" and acc.devices and info.device is None:
        dev = max(acc.devices, key=acc.devices.get)
        info.device = int(dev) if isinstance(dev, (int, float)) else None
    if out.device == "gpu":
        model, mem = device_properties(head, info.device)
        if model and not getattr(info, "device_model", None):
            info.device_model = model
        if mem and not getattr(info, "device_memory_mb", None):
            info.device_memory_mb = mem
    host = sorted((k, v[0], v[1]) for k, v in acc.steps.items())
    if not host and acc.lane_steps:
        host = sorted((k, v[0], v[1]) for k, v in acc.lane_steps.items())
        log.add(path, dq("kineto.steps-on-device-lane-only"), "warning")
    ev = _device_events(acc, host) if out.device == "gpu" else None
    out.events = ev
    if ev is not None:
        _note_comm(acc, ev, path, log)
        note_unlaunched(acc, ev, path, log)
        if host and not (ev.step >= 0).any():
            log.add(path, dq("kineto.kernels-not-mapped-to-steps"), "info")
    comp, comm = _intervals(acc, ev)
    out.step_trace = _step_trace(acc, ev, comp, comm, host, rel, out.device)
    if not host:
        log.add(path, dq("kineto.no-profiler-steps"), "info")
    elif ev is not None and ev.partial:
        last = sorted(ev.partial)
        log.add(path, dq("kineto.partial-steps", map=", ".join(map(str, last[:8]))), "info")
    out.communication = _communication(acc, ev, out.step_trace, host, rel, dist, out.device)
    out.operators = _operators(acc, ev, host, rel, out.device)
    out.memory = _memory(acc, head, rel)
    out.idle = _idle_hook(acc, out, log, path)
    out.timeline = _timeline(acc, comp, comm, path, rel)
    out.op_flops = _op_flops(acc, ev, rel)
    if not acc.colls and not (ev is not None and ev.comm.any()) and (info.rank_size or 1) > 1:
        log.add(path, dq("kineto.no-collectives"), "warning")
    return out
