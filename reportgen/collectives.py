"""Collective communication names, one home: the kinds and their display names, and how each producer's operator
and kernel names map onto them.

- `display_name`: a kind as the report shows it (`allreduce`, `AllReduce`, `recv` -> `AllReduce` / `Receive`).
- `collective_type`: an Ascend / MindSpore operator name (`hcom_allReduce__1_4_1`, `Default/AllReduce-op3`, a
  Kineto kind) -> its display name (summary.json's `communication.collectives[].collective`); `collective_types`:
  the same for many names at once.
- `kineto_kind`: a Kineto device kernel or host range (`ncclDevKernel_AllReduce_Sum_f32_RING_LL`, `gloo:all_reduce`)
  -> NCCL's lowercase spelling (`allreduce`, `sendrecv`, `recv`; `collective` when unknown).
- `matrix_optype`: an operator name -> the class torch_npu's communication matrix keys spell (`allreduce`,
  `receive`, `batchsendrecv`; `other` when unknown).
- `op_class`: compute / collective / send / receive of an operator name or type (the execution view's classes).
- `ALLTOALL_RE`: an all-to-all (expert-parallel dispatch / combine included) by name.
"""

from __future__ import annotations

import re

# every kind a producer names (lowercase, no separators) -> the report's display name
KINDS: dict[str, str] = {
    "allreduce": "AllReduce", "allgather": "AllGather", "reducescatter": "ReduceScatter", "broadcast": "Broadcast",
    "alltoall": "AlltoAll", "alltoallv": "AlltoAllV", "alltoallvc": "AlltoAllVC", "send": "Send",
    "receive": "Receive", "recv": "Receive", "sendrecv": "SendRecv", "batchsendrecv": "BatchSendRecv",
    "reduce": "Reduce", "gather": "Gather", "scatter": "Scatter", "barrier": "Barrier"}


def display_name(word: str) -> str:
    """A collective's display name (`allreduce` / `all_reduce` / `AllReduce` -> `AllReduce`); a word the table does
    not know is returned as it is."""
    return KINDS.get(str(word).lower().replace("_", ""), word)


def collective_type(op: str) -> str:
    """The collective of a communication operator (`hcom_allReduce__1_4_1`, `Default/AllReduce-op3`) -> `AllReduce`."""
    s = str(op).rsplit("/", 1)[-1]
    s = re.sub(r"^hcom_", "", s, flags=re.I)
    m = re.match(r"[A-Za-z]+", s)
    return display_name(m.group(0) if m else s)


def collective_types(names) -> list[str]:
    """`collective_type` of every name at once (pyarrow's regular expressions over the distinct names: a Python
    call per name costs seconds over the hundreds of thousands of operator names of a 1,024-rank run)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    texts = [n if type(n) is str else str(n) for n in names]
    if not texts:
        return []
    try:
        arr = pa.array(texts, pa.string())
    except (pa.ArrowException, UnicodeError):  # text pyarrow cannot hold (lone surrogates): a name at a time
        return [collective_type(t) for t in texts]
    last = pc.replace_substring_regex(arr, pattern=r"(?s)^.*/", replacement="")  # rsplit("/", 1)[-1]
    s = pc.replace_substring_regex(last, pattern=r"(?i)^hcom_", replacement="", max_replacements=1)
    word = pc.struct_field(pc.extract_regex(s, pattern=r"^(?P<w>[A-Za-z]+)"), [0])
    enc = pc.dictionary_encode(pc.if_else(pc.is_null(word), s, word))  # each distinct word named once
    shown = [display_name(w) for w in enc.dictionary.to_pylist()]
    return [shown[i] for i in enc.indices.to_numpy(zero_copy_only=False).tolist()]


# --- Kineto (NCCL, RCCL, gloo, expert-parallel libraries) -------------------------------------------------------

EP_KERNEL_RE = re.compile(r"(?:deep_ep|dpsk::ep|pplx|uccl_ep|uccl::ep)::", re.I)
KIND_RE = re.compile(r"(all_?reduce|all_?gather|reduce_?scatter|all_?to_?all|broadcast|send_?recv|barrier|"
                     r"reduce|send|recv|gather|scatter)", re.I)


def kineto_kind(name: str) -> str:
    """`ncclDevKernel_AllReduce_Sum_f32_RING_LL(...)` / `gloo:all_reduce` -> `allreduce`; an expert-parallel
    library's dispatch / combine kernel -> `alltoall`; `collective` when the name says no kind."""
    m = KIND_RE.search(name.replace("To", "to"))
    if m:
        return m.group(1).lower().replace("_", "")
    if EP_KERNEL_RE.search(name) and re.search(r"dispatch|combine", name, re.I):
        return "alltoall"
    return "collective"


# --- torch_npu / MindSpore --------------------------------------------------------------------------------------

OPTYPE_RE = re.compile(r"(send|receive|allreduce|allgather|reducescatter|broadcast|alltoallvc|alltoallv|alltoall|"
                       r"batchsendrecv|reduce|scatter)")


def matrix_optype(name: str) -> str:
    """The operator class of an op name, as torch_npu's matrix keys spell it (e.g. `allreduce`)."""
    m = OPTYPE_RE.search(str(name).lower().replace("_", ""))
    return m.group(1) if m else "other"


OP_CLASSES: tuple[str, ...] = ("compute", "collective", "send", "receive")
_COLLECTIVE_RE = re.compile(r"^(?:[\w-]*/)*(All|ReduceScatter|Broadcast|Reduce-|AlltoAll|hcom_(all|reduce|broadcast))"
                            r"|^stream_\d+_parallel", re.I)
_SEND_RE = re.compile(r"^(?:[\w-]*/)*(Send|hcom_send)", re.I)
_RECEIVE_RE = re.compile(r"^(?:[\w-]*/)*(Receive|hcom_receive)", re.I)


def op_class(name: str) -> str:
    """One of OP_CLASSES for an operator name or type (MindSpore `scope/AllReduce-op3`, torch_npu `hcom_send__1_0_1`)."""
    if _SEND_RE.match(name):
        return "send"
    if _RECEIVE_RE.match(name):
        return "receive"
    if _COLLECTIVE_RE.match(name):
        return "collective"
    return "compute"


# an all-to-all by name: the collective, or an expert-parallel library's dispatch / combine
ALLTOALL_RE = re.compile(r"all_?to_?all|alltoallv?|a2a|dispatch|combine", re.I)
