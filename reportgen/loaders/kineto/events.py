"""What each Kineto trace event is: the categories of device activity, launches and host operators, the
communication kernels and collective host ops by name, a kernel's short operator type, and the trace's
numbers and correlation ids as the loader reads them.
"""

from __future__ import annotations

import re

from reportgen import collectives
from reportgen.numbers import to_float


STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")
# Device activity by Kineto category (libkineto ActivityType names; the 2021 schema wrote `Kernel`, `Memcpy`,
# `Memset`, `Runtime`, `Operator`, compared in lower case). Kernels of every accelerator Kineto records (CUDA,
# ROCm, XPU, MTIA, privateuse1 backends) are `kernel`; copies and sets carry the backend's prefix.
DEVICE_CATS = frozenset(("kernel", "gpu_memcpy", "gpu_memset", "memcpy", "memset", "mtia_ccp_events", "hpu_op",
                         "gcu_memcpy", "gcu_memset", "mlu_memcpy", "mlu_memset"))
HOST_OP_CATS = frozenset(("cpu_op", "operator"))  # `Operator`: the 2021 schema's cpu_op
# Communication kernels by name: NCCL (`ncclKernel_*`, NCCL >= 2.19 `ncclDevKernel_*`), RCCL (same names,
# `ncclDevKernel_Generic`), MSCCL/MSCCL++, HCCL, NVSHMEM; expert-parallel all-to-all libraries (DeepEP
# `deep_ep::...::dispatch|combine`, its `dpsk::ep` fork, pplx-kernels, UCCL-EP).
COMM_KERNEL_RE = re.compile(
    r"^(?:void\s+)?(?:\w+::)*(?:nccl|rccl|msccl|hccl|hcom_|nvshmem|c10d::)"
    r"|ncclDevKernel|ncclKernel|(?:^|[\s:<(])(?:deep_ep|dpsk::ep|pplx|uccl_ep|uccl::ep)::", re.I)
EP_KERNEL_RE = collectives.EP_KERNEL_RE  # collective naming has one home: reportgen/collectives.py
# Host ops of a process group's collective (the kernels launched inside them are its communication): c10d's
# `record_param_comms`, the backend's `nccl:*` / `gloo:*` / `hccl:*` ranges, `c10d::` and functional collectives.
HOST_COMM_RE = re.compile(r"^(?:gloo:|nccl:|rccl:|hccl:|ucc:|mpi:|c10d::|_?c10d_functional::|record_param_comms|"
                          r"torch\.distributed)", re.I)


def is_device_cat(cat: str) -> bool:
    return cat in DEVICE_CATS


def is_runtime_cat(cat: str) -> bool:
    """Host-side launch APIs (`cuda_runtime`, `cuda_driver`, `xpu_runtime`, `privateuse1_runtime`, 2021 `Runtime`)."""
    return cat == "runtime" or cat.endswith("_runtime") or cat.endswith("_driver")


def is_comm_kernel(name: str) -> bool:
    """A device event that is communication by its name alone (collective and expert-parallel libraries)."""
    return bool(COMM_KERNEL_RE.search(name))


def collective_kind(name: str) -> str:
    """`ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)` / `gloo:all_reduce` -> `allreduce`; an expert-parallel
    library's dispatch / combine kernel -> `alltoall` (one home: reportgen.collectives)."""
    return collectives.kineto_kind(name)


def kernel_type(name: str) -> str:
    """A short operator type for a CUDA kernel name: the function name without return type, namespaces,
    template arguments and parameters (`void at::native::elementwise_kernel<128, 2, ...>(...)` ->
    `elementwise_kernel`); a generic `Kernel` / `Kernel2` wrapper (cutlass) is named by its first template
    argument."""
    s = name.strip()
    if s.startswith("void "):
        s = s[5:]
    depth, out, arg, args_open = 0, [], [], True
    for ch in s:  # drop template arguments and parameters
        if ch in "<(":
            depth += 1
            if ch == "(":
                args_open = False
        elif ch in ">)":
            depth = max(0, depth - 1)
        elif depth == 0:
            out.append(ch)
        elif depth == 1 and args_open:
            if ch == ",":
                args_open = False
            else:
                arg.append(ch)
    s = "".join(out).strip()
    s = s.rsplit("::", 1)[-1].strip() or name
    first = "".join(arg).strip().rsplit("::", 1)[-1].strip()
    if re.fullmatch(r"(?i)(device_)?kernel\d*", s) and first:
        s = first
    return s[:80]


def _num(v) -> float:
    return float(v) if isinstance(v, (int, float)) else to_float(v)


def _corr(v) -> int:
    try:
        c = int(v)
    except (TypeError, ValueError, OverflowError):
        return -1
    return c if 0 <= c < 2**62 else -1
