"""Run-wide facts (parallel mode, stages, stage of each rank) from the ranks' metadata and file names."""

from __future__ import annotations

from reportgen.i18n import N_, lazy

from typing import TYPE_CHECKING, Optional

from reportgen.model import RankData, RunInfo
from reportgen.numbers import to_int as _int

if TYPE_CHECKING:
    from reportgen.discover import RunLayout

LEGACY_MODES = {
    "data_parallel": "data-parallel",
    "semi_auto_parallel": "model-parallel",
    "auto_parallel": "model-parallel",
    "hybrid_parallel": "model-parallel",
    "stand_alone": "stand-alone",
}




def build_run_info(layout: "RunLayout", ranks: dict[int, RankData],
                   stage_sets: Optional[list[list[int]]] = None, label: str = "") -> RunInfo:
    """The run's facts; `label`: how the overview names its layout (`layouts.Layout.label`)."""
    info = RunInfo(path=str(layout.root), layout=layout.layout, layout_label=label)
    if layout.base != layout.root:
        info.notes.append(f"sub-run {layout.rel(layout.base)}")
    infos = [ranks[r].info for r in sorted(ranks)]
    n = len(infos)
    hint = layout.parallel_hint
    dargs = next((i.distributed_args for i in infos if i.distributed_args), {})
    groups: dict = {}
    for i in infos:  # each rank lists the groups it belongs to; the union covers the run
        groups.update(i.parallel_groups)
    raw_mode = next((i.parallel_mode for i in infos if i.parallel_mode), None)
    stage_num = next((i.stage_num for i in infos if i.stage_num), None)
    info.parallel_mode_raw = raw_mode or ""
    rank_size = next((i.rank_size for i in infos if i.rank_size), None)

    if hint:
        info.parallel_mode = hint["mode"]
        info.stages = max(1, hint["stages"])
        info.rank_size = hint["size"]
        info.parallel_mode_source = lazy("file name {name}", name=hint["source"])
    elif dargs:
        pp = _int(dargs.get("pipeline_model_parallel_size")) or 1
        tp = _int(dargs.get("tensor_model_parallel_size")) or 1
        other = max(_int(dargs.get(k)) or 1 for k in ("context_parallel_size", "expert_model_parallel_size"))
        ws = _int(dargs.get("world_size")) or n
        info.stages = pp
        info.rank_size = ws
        info.parallel_mode = ("pipeline-parallel" if pp > 1 else "model-parallel" if tp > 1 or other > 1
                              else "data-parallel" if ws > 1 else "stand-alone")
        info.parallel_mode_source = "profiler_metadata.json distributed_args"
    elif raw_mode:
        mode = LEGACY_MODES.get(raw_mode, "model-parallel")
        if (stage_num or 1) > 1:
            mode = "pipeline-parallel"
        info.parallel_mode = mode
        info.stages = stage_num or 1
        info.rank_size = rank_size
        info.parallel_mode_source = f"profiler_info parallel_mode={raw_mode}"
    else:
        ws = rank_size or n
        info.rank_size = rank_size
        info.parallel_mode = "data-parallel" if ws > 1 else "stand-alone"
        info.parallel_mode_source = N_("the rank count (assumed: no parallel settings in the files)")

    stages = stage_sets or detect_stages(groups)
    if stage_sets:
        for idx, members in enumerate(stage_sets):
            for r in members:
                info.stage_of_rank[r] = idx
        info.stages = len(stage_sets)
        if info.parallel_mode in ("data-parallel", "stand-alone", "model-parallel") and len(stage_sets) > 1:
            info.parallel_mode = "pipeline-parallel"
        info.stage_source = "the stage rows of msprof-analyze's cluster_step_trace_time.csv"
    elif stages:
        for idx, members in enumerate(stages):
            for r in members:
                info.stage_of_rank[r] = idx
        info.stages = max(info.stages, len(stages))
        info.stage_source = N_("parallel groups: pp groups united, then the collective groups inside a stage "
                               "united (msprof-analyze's stage detection)")
    if info.stages > 1:
        # Ranks not covered by a pp group: Megatron / MindSpore order, stage = rank // (size / stages).
        size = info.rank_size or (max(ranks) + 1 if ranks else n)
        per_stage = max(1, size // info.stages)
        missing = [r for r in ranks if r not in info.stage_of_rank]
        for r in missing:
            info.stage_of_rank[r] = min(info.stages - 1, r // per_stage)
        if missing and not info.stage_source:
            info.stage_source = (f"rank order: stage = rank // {per_stage} ({info.stages} stages of "
                                 f"{per_stage} ranks, as MindSpore assigns them)")
    if dargs:
        ws = _int(dargs.get("world_size"))
        if ws and max(ranks, default=0) >= ws:
            info.notes.append(f"profiler_metadata.json says world_size {ws}, but rank {max(ranks)} is present; "
                              "its parallel sizes are not used for rank indices")
        else:
            info.parallel_sizes, info.parallel_index = parallel_indices(dargs, sorted(ranks))
    return info


def _union(sets: list[set[int]]) -> list[set[int]]:
    """Unite overlapping sets (union-find by repeated merging; the sets are few)."""
    out: list[set[int]] = []
    for s in sets:
        s = set(s)
        keep = []
        for o in out:
            if o & s:
                s |= o
            else:
                keep.append(o)
        out = keep + [s]
    return out


def detect_stages(groups: dict) -> list[list[int]]:
    """Pipeline stages from `parallel_group_info`, as msprof-analyze's stage_group_analysis does it.

    1. pp (point-to-point) groups that overlap are united; 2. every other group with at most one rank in any
    of those united sets lies inside a stage; 3. overlapping intra-stage groups are united, each union is a
    stage. Stages are ordered by the position of their ranks in the pp groups (first stage first). Ranks of
    a pp group not covered by an intra-stage group are stages of their own.
    """
    pp = [g["global_ranks"] for g in groups.values()
          if str(g.get("group_name", "")).startswith("pp") and len(g.get("global_ranks") or []) > 1]
    if not pp:
        return []
    p2p = _union([set(m) for m in pp])
    intra = []
    for g in groups.values():
        members = set(g.get("global_ranks") or [])
        if not members or str(g.get("group_name", "")).startswith("pp"):
            continue
        if all(len(members & s) <= 1 for s in p2p):
            intra.append(members)
    stages = _union(intra)
    covered = set().union(*stages) if stages else set()
    for s in p2p:
        stages.extend({r} for r in sorted(s - covered))
    stages = [st for st in stages if st & set().union(*p2p)]
    position: dict[int, int] = {}
    for m in pp:
        for i, r in enumerate(m):
            position.setdefault(r, i)
    stages.sort(key=lambda st: (min(position.get(r, 1 << 30) for r in st), min(st)))
    return [sorted(st) for st in stages]


def parallel_indices(dargs: dict, ranks: list[int]) -> tuple[dict[str, int], dict[int, dict[str, int]]]:
    """DP / PP / TP (and CP) index of each rank in Megatron's rank order (tp fastest, then cp, dp, pp).

    Only when world_size equals tp x cp x dp x pp, as msprof-analyze requires; otherwise nothing.
    """
    tp = _int(dargs.get("tensor_model_parallel_size")) or 1
    pp = _int(dargs.get("pipeline_model_parallel_size")) or 1
    dp = _int(dargs.get("data_parallel_size")) or 0
    cp = _int(dargs.get("context_parallel_size")) or 1
    ws = _int(dargs.get("world_size")) or 0
    if not dp and ws:
        dp = ws // max(1, tp * pp * cp)
    if not ws or tp * pp * dp * cp != ws:
        return {}, {}
    sizes = {"tp": tp, "cp": cp, "dp": dp, "pp": pp}
    out = {}
    for r in ranks:
        idx = {"tp": r % tp, "dp": (r // (tp * cp)) % dp, "pp": r // (tp * cp * dp)}
        if cp > 1:
            idx["cp"] = (r // tp) % cp
        out[r] = idx
    return sizes, out
