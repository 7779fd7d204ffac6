"""`summary.json`: the machine-readable half of the report (contract: shared/docs/summary-json.md)."""

from __future__ import annotations

import math
from typing import Any

from reportgen import __version__
from reportgen.analysis import Analysis

SCHEMA = "msreport.summary/1"

# step-trace phase -> summary key (the contract's names for the legacy phases, `<phase>_ms` otherwise)
STEP_KEYS = {
    "iteration_interval": "iteration_interval_ms",
    "fp_and_bp": "fp_and_bp_ms",
    "tail": "tail_ms",
    "total": "total_ms",
}


def _clean(v: Any) -> Any:
    if isinstance(v, float):
        return None if math.isnan(v) or math.isinf(v) else round(v, 6)
    return v


def build_summary(a: Analysis, findings: list[dict], thresholds: dict) -> dict:
    run, st = a.run, a.steps
    per_rank: dict[str, dict] = {}
    for r in st.average.index if st.kind else []:
        row = {}
        for p in st.phases:
            row[STEP_KEYS.get(p, f"{p}_ms")] = _clean(float(st.average.at[r, p]))
        row["steps"] = int(st.average.at[r, "n_steps"])
        row["average_rule"] = str(st.average.at[r, "rule"])
        per_rank[str(int(r))] = row
    return {
        "schema": SCHEMA,
        "tool": {"name": "msreport", "version": __version__},
        "run": {
            "path": run.info.path,
            "layout": run.info.layout,
            "ranks": run.rank_ids,
            "steps": len(st.steps),
            "parallel_mode": run.info.parallel_mode,
            "stages": run.info.stages,
            "thresholds": thresholds,
            "step_trace_kind": st.kind,
            "stage_of_rank": {str(k): v for k, v in sorted(run.info.stage_of_rank.items())},
        },
        "metrics": {
            "step_trace": {"per_rank": per_rank, "ranks_without_data": st.ranks_without_data},
        },
        "findings": findings,
        "data_quality": [i.to_dict() for i in a.issues],
    }
