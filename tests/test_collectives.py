"""Collective naming has one home (reportgen.collectives): the loaders, the execution view's classes, the expert
analysis and summary.json's display names all call it, and every kind a producer emits has a display name."""
from __future__ import annotations

import pytest

from reportgen import collectives, model
from reportgen.analysis import expert
from reportgen.loaders import communication, kineto
from reportgen.site.views import summary

KINETO_NAMES = {  # real kernel / host-range spellings -> NCCL's kind
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)": "allreduce",
    "ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)": "allgather",
    "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL": "reducescatter",
    "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)": "sendrecv",
    "nccl:all_to_all": "alltoall", "gloo:all_reduce": "allreduce", "nccl:recv 0<-1": "recv", "nccl:send 0->1": "send",
    "nccl:broadcast": "broadcast", "gloo:barrier": "barrier", "deep_ep::internode::dispatch<4>": "alltoall",
    "void at::native::vectorized_elementwise_kernel<4>": "collective",
}
ASCEND_NAMES = {  # torch_npu / MindSpore operator names -> torch_npu's matrix key, summary's display name
    "hcom_allReduce__1_4_1": ("allreduce", "AllReduce"), "Default/AllGather-op3": ("allgather", "AllGather"),
    "hcom_reduceScatter__2_0_1": ("reducescatter", "ReduceScatter"), "hcom_send__1_0_1": ("send", "Send"),
    "hcom_receive__1_0_1": ("receive", "Receive"), "hcom_alltoallvc__3_0_1": ("alltoallvc", "AlltoAllVC"),
    "hcom_batchSendRecv__4_0_1": ("batchsendrecv", "BatchSendRecv"), "hcom_broadcast__5_0_1": ("broadcast", "Broadcast"),
}


def test_the_loaders_and_the_summary_call_the_one_home():
    for name, kind in KINETO_NAMES.items():
        assert kineto.collective_kind(name) == collectives.kineto_kind(name) == kind, name
    for name, (optype, shown) in ASCEND_NAMES.items():
        assert communication.optype_of(name) == collectives.matrix_optype(name) == optype, name
        assert summary.collective_type(name) == collectives.collective_type(name) == shown, name
    assert not hasattr(model, "op_class") and not hasattr(model, "OP_CLASSES")  # one home: reportgen.collectives
    assert expert.ALLTOALL_RE is collectives.ALLTOALL_RE and kineto.EP_KERNEL_RE is collectives.EP_KERNEL_RE
    assert [collectives.op_class(n) for n in ("Default/AllReduce-op3", "hcom_send__1_0_1", "hcom_receive__1_0_1",
                                        "MatMulV3")] == ["collective", "send", "receive", "compute"]


@pytest.mark.parametrize("kind", sorted({k for k in KINETO_NAMES.values() if k != "collective"}
                                        | {v[0] for v in ASCEND_NAMES.values()}))
def test_every_kind_a_producer_emits_has_a_display_name(kind):
    """Before: DLRM's summary.json listed `AllReduce` beside lowercase `sendrecv` (Kineto's kind for NCCL's
    SendRecv kernel was missing from the display table); torch_npu's `alltoallvc` stayed lowercase too."""
    shown = collectives.collective_type(kind)
    assert shown == collectives.KINDS[kind] and shown[0].isupper() and shown.lower() != shown
