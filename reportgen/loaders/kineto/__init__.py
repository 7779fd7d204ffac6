"""PyTorch profiler (Kineto) traces, `*.pt.trace.json[.gz]`, one per rank: everything the report needs in one
pass (the trace decoded whole by msgspec into gc-free typed events up to `trace_typed.TYPED_MAX_BYTES`, else
streamed by ijson; summarised into compact arrays of interval ends, never a list of event dicts).

What is read (Kineto's Chrome-trace export, as `torch.profiler` writes it; the 2021 schema's capitalised
categories `Operator` / `Runtime` / `Kernel` / `Memcpy` / `Memset` too):

* the header before `traceEvents`: `distributedInfo` (backend, rank, world_size, `pg_config`: process groups
  with their ranks), `deviceProperties` (device model, `totalGlobalMem` in bytes), `host_name`;
* the host's `ProfilerStep#N` ranges (`user_annotation` / `cpu_op`, host clock, µs). ROCm and recent CUDA traces
  repeat them on the GPU lane (`gpu_user_annotation`, a few µs at the step's first kernel): annotations, never
  steps (used, with a warning, only when the host has none);
* device activity of every accelerator Kineto records (`kernel`, `gpu_memcpy` / `gpu_memset` and the other
  backends' copies and sets; µs) and the host launches (`cuda_runtime` / `cuda_driver` / `xpu_runtime` /
  `privateuse1_runtime` / ...) whose `correlation` id names the kernel they launched;
* communication: a collective library's kernel by name (NCCL `ncclKernel_*`, NCCL >= 2.19 and RCCL
  `ncclDevKernel_*`, MSCCL, HCCL, NVSHMEM, expert-parallel libraries: DeepEP `deep_ep::` / `dpsk::ep::`, pplx,
  UCCL-EP), or a kernel launched inside a collective's host op on the same thread (`record_param_comms`,
  `nccl:*`, `c10d::*`, functional collectives): custom all-to-all kernels. Copies and sets stay computation.
  NCCL kernels of PyTorch >= 2.1 carry `Collective name`, `Process Group Name` and, later, `Seq`;
* host operators (`cpu_op`): per-operator self time (nesting per thread), and, for a run without any device
  activity (CPU training with gloo), the device *is* the CPU: computation is the time covered by operators of the
  step's thread, communication the `gloo:*` work slices of gloo's worker threads (one union over the threads);
* `[memory]` instant events (`Total Allocated` / `Total Reserved`, bytes -> MB of 2^20 bytes; `Device Type` 1 =
  CUDA, 0 = CPU, others = other accelerators).

What Kineto always writes and a damaged trace may lack is named, never read as a silent zero: a complete event
without a category (`cat`: its kind unknown; left out), a `[memory]` sample without a field the trace's other
samples carry (left out of the curve), a header without `distributedInfo.rank` / `world_size`, a process group's
`pg_name`, a device's `name` / `totalGlobalMem` (libkineto's output_json.cpp writes `ph`, `cat`, `name`, `pid`, `tid`,
`ts`, `dur` on every complete event; the missing lane ids, phases, names and times are named by `TraceDoor` and
`traces`). A field no event of the trace carries (the 2021 schema's `[memory]` samples have no totals) is the
writer's schema: read without it, as before.

Steps (HTA's mapping): each device event belongs to the step whose host range holds its launch; a step lasts from
its first device event to the next step's first one (the device's period, which a host running ahead of the GPU
does not shorten). The last step, which no next step ends, is *partial*: kept in `StepTrace.partial_steps`, left
out of `steps` (so of averages, spreads and the slowest step), named in data quality. One step alone, or device
events that cannot be mapped, use the host ranges; a trace without ProfilerStep is one window (step id empty).

Per step (HTA's temporal and overlap breakdowns, written as Ascend's step_trace_time.csv columns): computing =
union of the step's computation events; communication = union of its communication events; overlapped = their
intersection; communication not overlapped = communication − overlapped; free = step − computing − communication
not overlapped (never below 0). Operator totals count the complete steps' events only (the site divides them by
the number of steps).

Communication wait needs every rank: `match_collectives` pairs each collective instance across ranks (by process
group and `Seq` when written, else by step and order within the step and group, checking the kind) and sets
wait = elapsed − the shortest elapsed of that instance on any rank (all leave together; the last to arrive waits
least), transit = the shortest elapsed.

The package, one concern a module (at run time a module imports only those above it
in this list):

* `events`: what each trace event is (device activity, launches, host operators, communication kernels by name);
* `header`: the header before `traceEvents` (distributedInfo, deviceProperties, host_name);
* `launches`: each device event's host launch (correlation id) and the collective host op a launch lies in;
* `steps`: step detection (device windows, partial steps) and the step trace;
* `flops`: the operators with FLOPs and their device time per step;
* `scan`: the one pass into compact arrays;
* `communication`, `operators`, `memory`, `timeline`: one rank's summaries from the pass's arrays;
* `rank`: `load_kineto`, one rank's trace into the model objects;
* `run`: the run-level pass (`match_collectives`, `check_step_ranges`, `run_note`);
* `execution`: the execution view's passes (`step_windows`, `read_step_ops`, `load_execution`: both on one
  decode of a rank's trace).
"""

from reportgen.loaders.kineto.events import EP_KERNEL_RE, collective_kind, is_comm_kernel, kernel_type
from reportgen.loaders.kineto.execution import load_execution, read_step_ops, step_windows
from reportgen.loaders.kineto.header import device_properties, read_header
from reportgen.loaders.kineto.rank import KinetoRank, load_kineto
from reportgen.loaders.kineto.run import check_step_ranges, match_collectives, run_note
from reportgen.loaders.kineto.steps import DeviceEvents

__all__ = ["EP_KERNEL_RE", "DeviceEvents", "KinetoRank", "check_step_ranges", "collective_kind", "device_properties",
           "is_comm_kernel", "kernel_type", "load_execution", "load_kineto", "match_collectives", "read_header",
           "read_step_ops", "run_note", "step_windows"]
