"""Each stage's computational graph, collapsed into scope nodes and laid out left to right, for the strategy page.

The graph is a networkx DiGraph of operators (edges from each operator's inputs); scopes are collapsed into
aggregate nodes, splitting the largest scope first while the picture stays readable (`MAX_NODES`), so a 50 000-operator
model reads as a few dozen blocks, each with its counts of operators that carry a sharding strategy, redistribution
operators and gradient-aggregation operators. Blocks are placed in layers left to right in execution order (longest
path over the edges that go forward in execution order; edges back, such as a scope entered again by the next
micro-batch, become arcs). `strategy_graph.stage_svg` draws the result. (View shaping, moved out of `analysis/`:
issue 15.)
"""

from __future__ import annotations

from reportgen.i18n import _

import heapq
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from reportgen.collectives import op_class
from reportgen.model import StageStrategy, StrategyOp

if TYPE_CHECKING:
    import networkx as nx

MAX_NODES = 36  # aggregate nodes drawn per stage
MAX_TABLE_OPS = 1500  # operator rows per stage on the page (the CSV export has them all)
MAX_NODE_OPS = 60  # operators listed in a block's detail panel
NO_SCOPE = "(no scope)"


@dataclass
class Block:
    """An aggregate node: the operators under one scope prefix."""

    key: str  # the scope prefix ("a/b/c")
    label: str
    n_ops: int = 0
    sharded: int = 0  # operators with a sharding strategy
    split: int = 0  # of those, operators whose strategy splits some dimension (> 1)
    redistribution: int = 0
    gradient_aggregation: int = 0
    send: int = 0
    receive: int = 0
    types: list[tuple[str, int]] = field(default_factory=list)  # most common operator types
    first: int = 0  # execution order of its first operator
    layer: int = 0
    pos: int = 0
    op_ids: list[str] = field(default_factory=list)  # the first MAX_NODE_OPS operators, in execution order
    more_ops: int = 0
    direct: bool = False  # holds operators directly in this scope (no deeper scope)


@dataclass
class OpRow:
    id: str
    name: str
    op_type: str
    scope: str
    block: str
    instance: str
    strategy: list[list[int]]
    groups: list[str]
    group_ranks: str
    inputs: list[str]
    outputs: list[str]
    output_type: str
    attrs: dict[str, str]

    def csv_row(self) -> dict:
        return {"operator": self.name, "type": self.op_type, "scope": self.scope, "instance": self.instance,
                "strategy": ";".join("x".join(str(d) for d in part) for part in self.strategy),
                "groups": " ".join(self.groups), "group_ranks": self.group_ranks,
                "inputs": " ".join(self.inputs), "outputs": " ".join(self.outputs)}


@dataclass
class StageGraph:
    stage: int
    ranks: list[int]
    expected_ranks: list[int]
    source: str
    n_ops: int
    n_sharded: int
    n_split: int
    n_redistribution: int
    n_gradient_aggregation: int
    n_edges: int
    blocks: list[Block]
    edges: list[tuple[str, str, int]]  # block key -> block key, operator edges
    table: list[OpRow]  # operators worth a row: strategy, special instance, communication
    all_rows: list[OpRow]
    table_more: int
    n_layers: int
    collapsed_depth: str


def stage_graph(stage: StageStrategy) -> nx.DiGraph:
    """Operators as nodes (by id, with the StrategyOp as `op`), an edge from every input that is an operator."""
    import networkx as nx  # (here: a run with a strategy graph is rare, and networkx costs ~0.1 s to import)
    g = nx.DiGraph()
    for op in stage.ops:
        g.add_node(op.id, op=op)
    for op in stage.ops:
        for i in op.inputs:
            if i in g and i != op.id:
                g.add_edge(i, op.id)
    return g


def _path(op: StrategyOp) -> tuple[str, ...]:
    parts = tuple(p for p in op.scope.split("/") if p)
    return parts or (NO_SCOPE,)


def collapse(ops: list[StrategyOp], max_nodes: int = MAX_NODES) -> dict[str, str]:
    """Map each operator id to its block key: the largest block is split into its sub-scopes first, as long as
    the number of blocks stays within `max_nodes`."""
    paths = {op.id: _path(op) for op in ops}
    groups: dict[tuple, list[str]] = {}
    for oid, p in paths.items():
        groups.setdefault(p[:1], []).append(oid)
    heap = [(-len(v), k) for k, v in groups.items()]
    heapq.heapify(heap)
    while heap:
        _, key = heapq.heappop(heap)
        members = groups[key]
        depth = len(key)
        children: dict[tuple, list[str]] = {}
        for oid in members:
            p = paths[oid]
            children.setdefault(p[:depth + 1] if len(p) > depth else key, []).append(oid)
        if len(children) <= 1 and key in children:
            continue  # nothing deeper
        if len(groups) - 1 + len(children) > max_nodes:
            continue  # too many blocks; a smaller block may still be split
        del groups[key]
        for ck, cm in children.items():
            groups[ck] = cm
            if ck != key:
                heapq.heappush(heap, (-len(cm), ck))
    out = {}
    for k, members in groups.items():
        name = "/".join(k)
        for oid in members:
            out[oid] = name
    return out


def _layers(blocks: dict[str, Block], edges: Counter) -> int:
    """Layer (x) and position (y) of each block. Blocks are taken in execution order (their first operator);
    an edge from an earlier block to a later one pushes the later one a layer right (longest path), an edge back
    (a scope entered again, e.g. by the next micro-batch) does not and is drawn as an arc."""
    order = sorted(blocks.values(), key=lambda b: b.first)
    preds: dict[str, list[str]] = {}
    for (u, v) in edges:
        if u != v and blocks[u].first < blocks[v].first:
            preds.setdefault(v, []).append(u)
    by_layer: dict[int, list[Block]] = {}
    for b in order:
        b.layer = max((blocks[p].layer + 1 for p in preds.get(b.key, [])), default=0)
        by_layer.setdefault(b.layer, []).append(b)
    for items in by_layer.values():
        for pos, b in enumerate(items):
            b.pos = pos
    return len(by_layer)


def _is_comm(op: StrategyOp) -> bool:
    return op_class(op.op_type) != "compute" or op.op_type.startswith("MirrorOperator")


def build_stage(stage: StageStrategy, max_nodes: int = MAX_NODES) -> StageGraph:
    g = stage_graph(stage)
    block_of = collapse(stage.ops, max_nodes)
    names = {op.id: op.name for op in stage.ops}
    param_names = set(stage.parameters)
    blocks: dict[str, Block] = {}
    types: dict[str, Counter] = {}
    for op in stage.ops:
        key = block_of[op.id]
        b = blocks.get(key)
        if b is None:
            b = blocks[key] = Block(key=key, label="/".join(key.split("/")[-2:]), first=op.order)
            types[key] = Counter()
        b.n_ops += 1
        b.direct = b.direct or _path(op) == tuple(p for p in key.split("/") if p)
        if op.strategy:
            b.sharded += 1
            b.split += any(d > 1 for part in op.strategy for d in part)
        b.redistribution += op.instance == "Redistribution"
        b.gradient_aggregation += op.instance == "GradientAggregation"
        cls = op_class(op.op_type)
        b.send += cls == "send"
        b.receive += cls == "receive"
        types[key][op.op_type] += 1
        if len(b.op_ids) < MAX_NODE_OPS:
            b.op_ids.append(op.id)
        else:
            b.more_ops += 1
    for k, b in blocks.items():
        b.types = types[k].most_common(4)
    edges: Counter = Counter()
    for u, v in g.edges:
        bu, bv = block_of[u], block_of[v]
        if bu != bv:
            edges[(bu, bv)] += 1
    n_layers = _layers(blocks, edges) if blocks else 0
    rows, table = [], []
    for op in stage.ops:
        row = OpRow(id=op.id, name=op.name, op_type=op.op_type, scope=op.scope, block=block_of[op.id],
                    instance=op.instance, strategy=op.strategy, groups=op.groups, group_ranks=op.group_ranks,
                    inputs=[names.get(i, i) for i in op.inputs if i in names or i in param_names],
                    outputs=[names[s] for s in g.successors(op.id)], output_type=op.output, attrs=op.attrs)
        rows.append(row)
        if op.strategy or op.instance or _is_comm(op):
            table.append(row)
    depth = max((len(k.split("/")) for k in blocks), default=0)
    ordered = sorted(blocks.values(), key=lambda b: (b.layer, b.pos))
    return StageGraph(
        stage=stage.stage, ranks=sorted(stage.ranks), expected_ranks=stage.expected_ranks, source=stage.source,
        n_ops=len(stage.ops), n_sharded=sum(b.sharded for b in ordered), n_split=sum(b.split for b in ordered),
        n_redistribution=sum(b.redistribution for b in ordered),
        n_gradient_aggregation=sum(b.gradient_aggregation for b in ordered), n_edges=g.number_of_edges(),
        blocks=ordered, edges=[(u, v, c) for (u, v), c in sorted(edges.items())], table=table[:MAX_TABLE_OPS],
        all_rows=rows, table_more=max(0, len(table) - MAX_TABLE_OPS), n_layers=n_layers,
        collapsed_depth=_("scopes collapsed to at most {depth} level(s)").format(depth=depth) if depth else "")
