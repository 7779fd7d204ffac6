"""Strategy perception: the pipeline between stages (Send/Receive operators, the stages they talk to, micro-batches).

Pure functions of `ParallelStrategy` (loaded from `parallel_strategy_{rank}.json`). Each stage's computational graph,
collapsed into scope blocks and laid out for the page, is view shaping: `charts/strategy_layout.py`.
"""

from __future__ import annotations

from reportgen.i18n import N_

import re
from collections import Counter
from dataclasses import dataclass
from typing import Optional

from reportgen.collectives import op_class
from reportgen.model import ParallelStrategy, StageStrategy
from reportgen.numbers import to_int as _int

MICRO_SCOPE_RE = re.compile(r"micro_inputs-CellList/(\d+)|/(\d+)-_MicroBatch")


@dataclass
class PipeOp:
    stage: int
    name: str
    kind: str  # "Send" | "Receive"
    tag: str
    peer: str  # dest_rank / src_rank as written
    peer_stage: Optional[int]
    micro: str


@dataclass
class PipelinePair:
    src_stage: int
    dst_stage: Optional[int]
    sends: int
    receives: int  # Receive operators in dst_stage naming src_stage (or with a matching tag)


@dataclass
class StrategyView:
    parallel_type: str
    stages: list[StageStrategy]  # each stage's operators (the page collapses them into a graph: charts.strategy_layout)
    pipeline_ops: list[PipeOp]
    pairs: list[PipelinePair]
    micro_batches: Optional[int]
    micro_source: str
    sources: list[str]


def pipeline_ops(strategy: ParallelStrategy) -> list[PipeOp]:
    """Send/Receive operators of each stage, with the stage each one talks to.

    `dest_rank` / `src_rank` hold a global rank in some MindSpore versions and a stage number in others: read as a
    rank first (a rank of another stage), else as a stage number."""
    stage_of = {r: i for i, rs in enumerate(strategy.stage_devices) for r in rs}
    n_stages = max(len(strategy.stage_devices), len(strategy.stages))
    out = []
    for st in strategy.stages:
        for op in st.ops:
            kind = {"send": "Send", "receive": "Receive"}.get(op_class(op.op_type))
            if kind is None:
                continue
            peer = op.attrs.get("dest_rank" if kind == "Send" else "src_rank", "")
            v = _int(peer)
            peer_stage = None
            if v is not None:
                if v in stage_of and stage_of[v] != st.stage:
                    peer_stage = stage_of[v]
                elif 0 <= v < n_stages and v != st.stage:
                    peer_stage = v
            out.append(PipeOp(stage=st.stage, name=op.name, kind=kind, tag=op.attrs.get("sr_tag", ""),
                              peer=peer, peer_stage=peer_stage, micro=op.attrs.get("micro", "")))
    return out


def pipeline_pairs(ops: list[PipeOp]) -> list[PipelinePair]:
    sends: Counter = Counter()
    recvs: Counter = Counter()
    for o in ops:
        if o.kind == "Send":
            sends[(o.stage, o.peer_stage)] += 1
        elif o.peer_stage is not None:
            recvs[(o.peer_stage, o.stage)] += 1
    keys = sorted(set(sends) | set(recvs), key=lambda k: (k[0], -1 if k[1] is None else k[1]))
    return [PipelinePair(src_stage=a, dst_stage=b, sends=sends.get((a, b), 0), receives=recvs.get((a, b), 0))
            for a, b in keys]


def micro_batches(strategy: ParallelStrategy, ops: list[PipeOp]) -> tuple[Optional[int], str]:
    micros = {o.micro for o in ops if o.micro != ""}
    if micros:
        return len(micros), N_("distinct 'micro' attributes of the Send/Receive operators")
    seen = set()
    for st in strategy.stages:
        for op in st.ops:
            for m in MICRO_SCOPE_RE.finditer(op.scope):
                seen.add(m.group(1) or m.group(2))
    if seen:
        return len(seen), "micro-batch scopes (micro_inputs / _MicroBatch) in the graph"
    return None, ""


def analyze_strategy(strategy: Optional[ParallelStrategy]) -> Optional[StrategyView]:
    if strategy is None:
        return None
    pops = pipeline_ops(strategy)
    mb, src = micro_batches(strategy, pops)
    return StrategyView(parallel_type=strategy.parallel_type, stages=list(strategy.stages), pipeline_ops=pops,
                        pairs=pipeline_pairs(pops), micro_batches=mb, micro_source=src, sources=strategy.sources)
