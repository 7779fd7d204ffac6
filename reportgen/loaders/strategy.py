"""`parallel_strategy_{rank}.json` (MindSpore, `ProfilingParallel` proto as JSON): the parallel configuration and
the computational graph each rank ran.

`config`: `rankId`, `stageId`, `parallelType` and `stageDevices` (one `{dim: [{size}]}` per stage, the sizes
being rank ids). `graph`: anf-ir `GraphProto` (`node[]` with `name` (id), `opType`, `scope`, `fullName`,
`instanceName`, `attribute[]`, `input[]`, `outputType`; `parameters[]`; `constVals[]`).

Read as MindInsight's `ParallelStrategyAnalyser` does: a node's strategy is its `in_strategy` attribute
(`gen_strategy`, the same value written by older versions, when `in_strategy` is absent); its communication
group is `group`, its ranks `group_ranks`; `instanceName` containing `grad_mirror` marks a gradient-aggregation
operator and `redistribution` a redistribution operator. The graphs of one stage are merged: operators from the
first rank's file, groups unioned over the stage's ranks. Only the first graph of each stage is kept in memory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.jsonfile import read_json
from reportgen.model import ParallelStrategy, StageStrategy, StrategyOp

MAX_ATTR_CHARS = 160  # small attributes are kept for the operator's details; larger ones dropped
KEPT_ATTRS = 12


def _value(v: Any) -> Any:
    """anf-ir ValueProto -> python value."""
    if not isinstance(v, dict):
        return v
    dt = str(v.get("dtype", ""))
    if dt in ("DT_TUPLE", "DT_LIST"):
        return [_value(x) for x in v.get("values") or []]
    if dt.startswith(("DT_INT", "DT_UINT")):
        raw = v.get("intVal", v.get("uintVal"))
        try:
            return int(raw)
        except (TypeError, ValueError):
            return raw
    if dt.startswith("DT_FLOAT"):
        raw = v.get("floatVal", v.get("doubleVal"))
        try:
            return float(raw)
        except (TypeError, ValueError):
            return raw
    if dt == "DT_BOOL":
        return str(v.get("boolVal", "")).lower() in ("1", "true")
    if dt == "DT_TYPE":
        return (v.get("typeVal") or {}).get("dataType", "")
    return v.get("strVal", "")


def _strategy(value: Any) -> list[list[int]]:
    if not isinstance(value, list):
        return []
    out = []
    for part in value:
        if isinstance(part, list) and all(isinstance(x, int) for x in part):
            out.append([int(x) for x in part])
        elif isinstance(part, int):
            out.append([int(part)])
        else:
            return []
    return out


def _type_text(t: Any) -> str:
    if not isinstance(t, dict):
        return ""
    dt = str(t.get("dataType", ""))
    if dt == "DT_TENSOR":
        tt = t.get("tensorType") or {}
        dims = [str(d.get("size", "?")) for d in (tt.get("shape") or {}).get("dim", []) if isinstance(d, dict)]
        elem = str(tt.get("elemType", "")).replace("DT_", "").lower()
        return f"{elem}[{','.join(dims)}]" if dims else elem
    if dt == "DT_TUPLE":
        parts = [_type_text(e) for e in (t.get("sequenceType") or {}).get("elemTypes", [])]
        return "(" + ", ".join(p for p in parts if p) + ")"
    return dt.replace("DT_", "").lower()


def _ranks(stage_devices: Any) -> list[list[int]]:
    out = []
    for st in stage_devices or []:
        dims = st.get("dim", []) if isinstance(st, dict) else []
        ranks = []
        for d in dims:
            try:
                ranks.append(int(d.get("size")))
            except (TypeError, ValueError, AttributeError):
                continue
        out.append(ranks)
    return out


def _ops(graph: dict) -> list[StrategyOp]:
    ops = []
    for order, node in enumerate(graph.get("node") or []):
        if not isinstance(node, dict) or not node.get("name"):
            continue
        op_type = str(node.get("opType", ""))
        scope = str(node.get("scope", ""))
        name = str(node.get("fullName") or f"{scope}/{op_type}-op{node['name']}")
        attrs: dict[str, Any] = {}
        for a in node.get("attribute") or []:
            if isinstance(a, dict) and "name" in a:
                attrs[str(a["name"])] = _value(a.get("value"))
        strategy = _strategy(attrs.get("in_strategy", attrs.get("gen_strategy")))
        instance = str(node.get("instanceName", ""))
        kind = ("GradientAggregation" if "grad_mirror" in instance else
                "Redistribution" if "redistribution" in instance else "")
        group = attrs.get("group")
        small = {}
        for k, v in attrs.items():
            if k in ("in_strategy", "gen_strategy", "group", "group_ranks") or len(small) >= KEPT_ATTRS:
                continue
            text = str(v)
            if len(text) <= MAX_ATTR_CHARS:
                small[k] = text
        ops.append(StrategyOp(
            id=str(node["name"]), name=name, op_type=op_type, scope=scope, order=order, instance=kind,
            strategy=strategy, groups=[str(group)] if group is not None and group != "" else [],
            group_ranks=str(attrs.get("group_ranks", "")),
            inputs=[str(i.get("name")) for i in node.get("input") or [] if isinstance(i, dict) and i.get("name")],
            attrs=small, output=_type_text(node.get("outputType"))))
    return ops


def load_parallel_strategy(files: dict[int, Path], log: IssueLog, rank_size: Optional[int] = None
                           ) -> Optional[ParallelStrategy]:
    """Merge the per-rank files into one graph per stage (see the module doc)."""
    if not files:
        return None
    stages: dict[int, StageStrategy] = {}
    by_id: dict[int, dict[str, StrategyOp]] = {}
    parallel_type, stage_devices, sources = "", [], []
    for rank in sorted(files):
        path = files[rank]
        data = read_json(path, log)
        if data is None:
            continue
        if not isinstance(data, dict) or not isinstance(data.get("config"), dict):
            log.add(path, "no 'config' object; not a parallel strategy file", "error")
            continue
        cfg, graph = data["config"], data.get("graph")
        sources.append(log.rel(path))
        ptype = str(cfg.get("parallelType", ""))
        if parallel_type and ptype and ptype != parallel_type:
            log.add(path, f"parallel type {ptype!r} differs from {parallel_type!r} in the other files")
        parallel_type = parallel_type or ptype
        devs = _ranks(cfg.get("stageDevices"))
        stage_devices = stage_devices or devs
        file_rank = cfg.get("rankId", rank)
        try:
            file_rank = int(file_rank)
        except (TypeError, ValueError):
            file_rank = rank
        if file_rank != rank:
            log.add(path, f"the file name says rank {rank}, its config says rank {file_rank}; the file name is "
                    "used", "info")
        stage = cfg.get("stageId")
        try:
            stage = int(stage)
        except (TypeError, ValueError):
            stage = next((i for i, rs in enumerate(stage_devices) if rank in rs), 0)
        if not isinstance(graph, dict):
            log.add(path, "no 'graph' object; the configuration is used, no operators", "warning")
            graph = {}
        if stage not in stages:
            ops = _ops(graph)
            params = [str(p.get("name")) for p in graph.get("parameters") or []
                      if isinstance(p, dict) and p.get("name")]
            expected = stage_devices[stage] if stage < len(stage_devices) else []
            stages[stage] = StageStrategy(stage=stage, ranks=[rank], ops=ops, parameters=params,
                                          expected_ranks=list(expected), source=log.rel(path))
            by_id[stage] = {o.id: o for o in ops}
            continue
        base = stages[stage]
        base.ranks.append(rank)
        known = by_id[stage]
        missing = 0
        for node in graph.get("node") or []:
            if not isinstance(node, dict):
                continue
            op = known.get(str(node.get("name")))
            if op is None:
                missing += 1
                continue
            for a in node.get("attribute") or []:
                if isinstance(a, dict) and a.get("name") == "group":
                    g = str(_value(a.get("value")))
                    if g not in op.groups:
                        op.groups.append(g)
        if missing:
            first = base.ranks[0]
            log.add(path, f"{missing} operator(s) are not in rank {first}'s graph of the same stage; the stage "
                    f"graph shows rank {first}'s operators")
    if not stages:
        return None
    for st in stages.values():
        for op in st.ops:
            op.groups.sort()
    if parallel_type == "data_parallel" and not stage_devices:
        stage_devices = [sorted(files)]
    n = len(files)
    expected = rank_size or sum(len(s) for s in stage_devices) or None
    if expected and n < expected:
        log.add(Path(files[min(files)]).parent, f"parallel strategy files for {n} of {expected} ranks; stages "
                "are merged from the files present", "warning")
    return ParallelStrategy(parallel_type=parallel_type, stages=[stages[k] for k in sorted(stages)],
                            stage_devices=stage_devices, sources=sources)
