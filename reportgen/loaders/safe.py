"""Every loader entry point the layouts call, wrapped by `guard.guarded`: an unexpected exception in one of them
becomes an error entry naming the file, and the rank goes on with the entry's empty value. A layout calls a family
loader through this table (`safe.load_modern_step_trace(...)`); a function without a `log` (a pure helper such as
`gpu.is_gpu`) is called from its own module and is not guarded."""

from __future__ import annotations

from reportgen.loaders import (communication, cpu_usage, dataprep, db, flops, gpu, host_steps, memory, metadata,
                               op_flops, operators, overlap, step_ops, step_trace, strategy, timeline, trace_view)
from reportgen.loaders.kineto import execution as kineto_exec, rank as kineto_rank
from reportgen.loaders.guard import guarded

# metadata
load_profiler_info = guarded(metadata.load_profiler_info)
load_profiler_metadata = guarded(metadata.load_profiler_metadata)
load_msprof_info = guarded(metadata.load_msprof_info)
load_chip_info = guarded(metadata.load_chip_info)
# step traces
load_modern_step_trace = guarded(step_trace.load_modern_step_trace)
load_legacy_step_trace = guarded(step_trace.load_legacy_step_trace)
load_msprof_step_trace = guarded(step_trace.load_msprof_step_trace)
load_cluster_step_trace = guarded(step_trace.load_cluster_step_trace, empty=dict)
cluster_stage_sets = guarded(step_trace.cluster_stage_sets, empty=list)
load_trace_view_step_trace = guarded(trace_view.load_trace_view_step_trace)
load_host_steps = guarded(host_steps.load_host_steps)
# communication and overlap
load_modern_communication = guarded(communication.load_modern_communication)
load_hccl_raw = guarded(communication.load_hccl_raw)
load_hccl_traces = guarded(communication.load_hccl_traces)
load_msprof_hccl = guarded(communication.load_msprof_hccl)
load_cluster_analyse = guarded(overlap.load_cluster_analyse)
load_timeline_overlap = guarded(overlap.load_timeline_overlap)
load_msprof_overlap = guarded(overlap.load_msprof_overlap)
# operators and FLOPs
load_modern_operators = guarded(operators.load_modern)
load_aicore_type = guarded(operators.load_aicore_type)
load_aicore_detail = guarded(operators.load_aicore_detail)
load_compute_time_detail = guarded(operators.load_compute_time_detail)
load_compute_time = guarded(operators.load_compute_time)
load_aicpu = guarded(operators.load_aicpu)
load_cpu_type = guarded(operators.load_cpu_type)
load_cpu_detail = guarded(operators.load_cpu_detail)
gpu_operator_parts = guarded(gpu.operator_parts, empty=list)
load_flops = guarded(flops.load_flops)
load_kernel_gemms = guarded(op_flops.load_kernel_gemms)
# resources
load_dataprep = guarded(dataprep.load_dataprep)
load_cpu_usage = guarded(cpu_usage.load_cpu_usage)
load_mindinsight_memory = guarded(memory.load_mindinsight_memory)
load_modern_memory = guarded(memory.load_modern_memory)
load_cpu_memory = guarded(memory.load_cpu_memory)
# timelines and the execution view
summarize_trace = guarded(timeline.summarize_trace)
summarize_gpu_timeline = guarded(gpu.summarize_gpu_timeline)
trace_layout = guarded(step_ops.trace_layout)
read_step_ops = guarded(step_ops.read_step_ops, empty=dict)
# the DB export and PyTorch (Kineto) traces
load_db_rank = guarded(db.load_db_rank)
load_kineto = guarded(kineto_rank.load_kineto)
kineto_execution = guarded(kineto_exec.load_execution, empty=lambda: False)
# run level
load_parallel_strategy = guarded(strategy.load_parallel_strategy)
