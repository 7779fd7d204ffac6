"""Run-wide facts (parallel mode, stages, stage of each rank) from the ranks' metadata and file names."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from reportgen.model import RankData, RunInfo

if TYPE_CHECKING:
    from reportgen.discover import RunLayout

LEGACY_MODES = {
    "data_parallel": "data-parallel",
    "semi_auto_parallel": "model-parallel",
    "auto_parallel": "model-parallel",
    "hybrid_parallel": "model-parallel",
    "stand_alone": "stand-alone",
}


def _int(v) -> Optional[int]:
    try:
        return int(v)
    except (TypeError, ValueError):
        return None


def build_run_info(layout: "RunLayout", ranks: dict[int, RankData]) -> RunInfo:
    from reportgen.discover import LAYOUT_LABELS

    info = RunInfo(path=str(layout.root), layout=layout.layout, layout_label=LAYOUT_LABELS[layout.layout])
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
    rank_size = next((i.rank_size for i in infos if i.rank_size), None)

    if hint:
        info.parallel_mode = hint["mode"]
        info.stages = max(1, hint["stages"])
        info.rank_size = hint["size"]
        info.parallel_mode_source = f"file name {hint['source']}"
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
        info.parallel_mode_source = "assumed from the rank count (no parallel settings in the files)"

    pp_groups = [g["global_ranks"] for g in groups.values()
                 if g.get("group_name") == "pp" and len(g.get("global_ranks", [])) > 1]
    if pp_groups:
        for members in pp_groups:
            for idx, r in enumerate(sorted(members)):
                info.stage_of_rank[r] = idx
        info.stages = max(info.stages, max(len(m) for m in pp_groups))
    if info.stages > 1:
        # Ranks not covered by a pp group: Megatron / MindSpore order, stage = rank // (size / stages).
        size = info.rank_size or (max(ranks) + 1 if ranks else n)
        per_stage = max(1, size // info.stages)
        for r in ranks:
            info.stage_of_rank.setdefault(r, min(info.stages - 1, r // per_stage))
    return info
