"""What the Ascend and MindInsight layouts read alike from a rank's files: operators, FLOPs, the data pipeline,
CPU utilisation, memory and the timeline (the rank pages), and the step totals the overlap files are checked
against. Which file wins when several are present is decided here, once."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from reportgen.layouts.base import timeline_file
from reportgen.loaders import gpu, operators, safe
from reportgen.loaders.issuelog import IssueLog
from reportgen.model import RankData

if TYPE_CHECKING:
    from reportgen.discover import RankFiles


def load_resources(rf: "RankFiles", data: RankData, log: IssueLog) -> None:
    """Operators, FLOPs, data preparation, CPU utilisation, memory and the timeline (rank pages)."""
    f = rf.first
    data.operators = load_operators(rf, log)
    if f("flops_summary.json") or f("flops.txt"):
        data.flops = safe.load_flops(f("flops_summary.json"), f("flops.txt"), f("flops_scope.json"),
                                     f("flops_utilization_step.json") or f("flops_utilization_step.txt"), log)
    data.dataprep = safe.load_dataprep({
        "pipeline_raw": f("minddata_pipeline_raw.csv"), "pipeline_profiling": f("pipeline_profiling.json"),
        "summary": f("minddata_pipeline_summary.json") or f("minddata_pipeline_summary.csv"),
        "device_queue": f("device_queue_profiling.txt"), "dataset_iterator": f("dataset_iterator_profiling.txt"),
        "aicpu": f("minddata_aicpu.txt") or f("minddata_getnext_profiling.txt"), "dataset_csv": f("dataset.csv"),
    }, log)
    cpu = f("minddata_cpu_utilization.json")
    if cpu is not None:
        types = {}
        ops = data.dataprep.ops if data.dataprep is not None else None
        if ops is not None:
            types = {int(r.op_id): (r.op_type, r.num_workers) for r in ops.itertuples()}
        data.cpu = safe.load_cpu_usage(cpu, log, types)
    data.memory = (safe.load_mindinsight_memory(f("memory_usage_summary.json"), f("memory_usage_details.json"),
                                                f("memory_usage.pb"), log)
                   or safe.load_modern_memory(f("memory_record.csv"), f("operator_memory.csv"),
                                              f("npu_module_mem.csv"), log))
    if data.memory is None and f("cpu_ms_memory_record.txt") is not None:
        data.memory = safe.load_cpu_memory(f("cpu_ms_memory_record.txt"), log)
    trace = timeline_file(rf)
    if trace is None and f("gpu_timeline_display.json") is not None:
        data.timeline = safe.summarize_gpu_timeline(f("gpu_timeline_display.json"), log,
                                                    f("gpu_timeline_summary.json"))
    if trace is not None:
        data.timeline = safe.summarize_trace(
            trace, log, f("ascend_timeline_summary.json") or f("timeline_summary.json"))


def load_operators(rf: "RankFiles", log: IssueLog):
    f = rf.first
    if f("kernel_details.csv") is not None or f("op_statistic.csv") is not None:
        return safe.load_modern_operators(f("kernel_details.csv"), f("op_statistic.csv"), log)
    parts: list = []
    t = f("aicore_intermediate_type.csv")
    d = f("aicore_intermediate_detail.csv")
    at = safe.load_aicore_type(t, log) if t is not None else None
    ad = safe.load_aicore_detail(d, log, f("framework_raw.csv")) if d is not None else None
    src = t or d
    if at is None and f("output_op_compute_time_detail.txt") is not None:
        at = safe.load_compute_time_detail(f("output_op_compute_time_detail.txt"), log)
        src = src or f("output_op_compute_time_detail.txt")
    if ad is None and f("output_op_compute_time.txt") is not None:
        ad = safe.load_compute_time(f("output_op_compute_time.txt"), log)
        src = src or f("output_op_compute_time.txt")
    if at is not None or ad is not None:
        parts.append(("aicore", log.rel(src), at, ad, "per step"))
    ac = f("aicpu_intermediate.csv")
    if ac is not None:
        res = safe.load_aicpu(ac, log)
        if res is not None:
            parts.append(("aicpu", log.rel(ac), res[0], res[1], "profiled window"))
    if gpu.is_gpu(rf):
        parts.extend(safe.gpu_operator_parts(rf, log))
    ct, cd = f("cpu_op_type_info.csv"), f("cpu_op_detail_info.csv")
    if ct is not None or cd is not None:
        parts.append(("hostcpu", log.rel(ct or cd), safe.load_cpu_type(ct, log) if ct is not None else None,
                      safe.load_cpu_detail(cd, log) if cd is not None else None, "profiled window"))
    return operators.assemble(parts)


def step_totals(t) -> tuple[Optional[list[int]], Optional[dict]]:
    """Step ids of a step trace and {step: total ms, "average": the stored or mean total}."""
    if t is None or not len(t.steps):
        return None, None
    ids = [int(x) for x in t.steps["step"].dropna()]
    totals: dict = dict(zip(ids, t.steps.dropna(subset=["step"])["total"].astype(float)))
    avg = (t.stored_average or {}).get("total")
    totals["average"] = float(avg) if avg else float(t.steps["total"].mean())
    return ids, totals
