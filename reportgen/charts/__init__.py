"""Charts: one pure function per chart, returning a Vega-Lite spec dict (data inline, never by URL).

`CHARTS` is the explicit registry; `Chart` is what pages carry (an id, a spec, a caption).
"""

from __future__ import annotations

from dataclasses import dataclass

from reportgen.charts import comm, execution, overlap, resources, steps

CHARTS = {
    "step_total_by_rank": steps.step_total_by_rank,
    "step_total_histogram": steps.step_total_histogram,
    "breakdown_by_rank": steps.breakdown_by_rank,
    "rank_step_heatmap": steps.rank_step_heatmap,
    "rank_step_lines": steps.rank_step_lines,
    "comm_by_rank": comm.comm_by_rank,
    "comm_per_step": comm.comm_per_step,
    "link_bandwidth": comm.link_bandwidth,
    "comm_graph": comm.comm_graph,
    "comm_matrix": comm.comm_matrix,
    "link_op_boxplot": comm.link_op_boxplot,
    "stage_summary": overlap.stage_summary,
    "comm_share_by_rank": overlap.comm_share_by_rank,
    "comm_share_histogram": overlap.comm_share_histogram,
    "stage_steps": overlap.stage_steps,
    "device_heatmap": resources.device_heatmap,
    "op_type_share": resources.op_type_share,
    "op_type_spread": resources.op_type_spread,
    "memory_curve": resources.memory_curve,
    "queue_sizes": resources.queue_sizes,
    "cpu_usage": resources.cpu_usage,
    "marey": execution.marey,
    "time_overview": execution.time_overview,
}


@dataclass
class Chart:
    id: str
    spec: dict
    caption: str = ""
    renderer: str = "svg"
