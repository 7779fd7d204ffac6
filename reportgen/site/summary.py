"""`summary.json`: the machine-readable half of the report (contract: shared/docs/summary-json.md)."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from reportgen import __version__
from reportgen.analysis import Analysis
from reportgen.site.highlights import Highlights

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


def build_summary(a: Analysis, findings: list, thresholds: dict) -> dict:
    """`findings`: the typed findings of `rules.run_rules`, serialised here (the contract's shape)."""
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
            "stage_ranks": {str(s.index): s.ranks for s in a.overlap.stages} if len(a.overlap.stages) > 1 else {},
            "parallel_sizes": run.info.parallel_sizes,
            "parallel_index": {str(k): v for k, v in sorted(run.info.parallel_index.items())},
        },
        "metrics": {
            "step_trace": {"per_rank": per_rank, "ranks_without_data": st.ranks_without_data},
            "overlap": _overlap(a),
            "communication": _communication(a, Highlights.from_findings(findings)),
            "memory": _memory(a),
            "flops": _flops(a),
        },
        "findings": [f.to_dict() for f in findings],
        "data_quality": [i.to_dict() for i in a.issues],
        # what could be judged: per area read / partial / absent / unsupported, and the checks that could not run
        "coverage": a.coverage.to_dict() if a.coverage else None,
    }


# `metrics.overlap.per_rank` keys -> the column of each view (modern data maps onto MindInsight's names).
OVERLAP_KEYS = {
    "legacy": {"computation_ms": "computation", "communication_alone_ms": "communication_alone", "stage_ms": "stage",
               "receive_alone_ms": "receive_alone", "collective_alone_ms": "collective_alone", "free_ms": "free",
               "step_interval_ms": "iteration_interval"},
    "modern": {"computation_ms": "computing", "communication_alone_ms": "communication_not_overlapped",
               "stage_ms": "stage", "receive_alone_ms": "bubble",
               "collective_alone_ms": "communication_not_overlapped_exclude_receive", "free_ms": "free",
               "overlapped_ms": "overlapped", "communication_ms": "communication", "bubble_ms": "bubble",
               "preparing_ms": "preparing", "step_ms": "total"},
}


def _overlap_per_rank(o) -> dict[str, dict]:
    keys = OVERLAP_KEYS["modern" if o.view == "modern" else "legacy"]
    out = {}
    for r, row in o.per_rank.iterrows():
        rec = {k: _clean(float(row.get(c, math.nan))) for k, c in keys.items()}
        rec["communication_share"] = _clean(float(row.get("comm_share", math.nan)))
        rec["pp_stage"] = None if pd.isna(row.get("pp_stage")) else int(row["pp_stage"])
        out[str(int(r))] = rec
    return out


def _overlap(a: Analysis) -> dict:
    o = a.overlap
    if not o.has_data:
        return {"per_rank": {}, "view": "none", "ranks_without_data": o.ranks_without_data}
    stages = []
    for s in o.stage_summary:
        stages.append({"stage": s["stage"], "ranks": s["ranks"], "compute_ms": _clean(s["compute_ms"]),
                       "wait_ms": _clean(s["wait_ms"]), "collective_ms": _clean(s["collective_ms"]),
                       "compute_vs_mean": _clean(s["compute_vs_mean"]), "spread": _clean(s["spread"])})
    rates = {k: (_clean(v) if isinstance(v, float) else
                 {str(kk): _clean(vv) for kk, vv in v.items()} if isinstance(v, dict) else v)
             for k, v in o.rates.items() if k != "definition"}
    return {"view": o.view, "per_rank": _overlap_per_rank(o), "stages": stages, "rates": rates,
            "slowest_stage": o.slowest_stage, "waiting_stage": o.waiting_stage,
            "ranks_without_data": o.ranks_without_data, "sources": o.sources,
            "timeline_checks": [{"rank": c["rank"], "steps": c["steps"], "max_diff": _clean(c["max_diff"]),
                                 "ok": c["ok"]} for c in o.checks]}


def _communication(a: Analysis, hl: Highlights) -> dict:
    """Slow links and the ranks that wait least are the ones the findings name (the thresholds in force)."""
    c = a.comm
    if not c.has_data:
        return {"per_rank": {}, "links": [], "ranks_without_data": c.ranks_without_data}
    per_rank = {}
    for r, rec in c.per_rank.iterrows():
        per_rank[str(int(r))] = {
            "communication_ms": _clean(float(rec["communication_ms"])), "wait_ms": _clean(float(rec["wait_ms"])),
            "transit_ms": _clean(float(rec["transit_ms"])), "sync_ms": _clean(float(rec["sync_ms"])),
            "idle_ms": _clean(float(rec["idle_ms"])), "wait_ratio": _clean(float(rec["wait_ratio"])),
            "steps": int(rec["n_steps"]), "waits_least": int(r) in hl.waits_least,
        }
    links = []
    lt = c.links
    if len(lt):
        for rec in lt[lt["mapped"]].to_dict("records"):
            g = c.groups.get(str(rec["group"]))
            links.append({
                "src": int(rec["src"]), "dst": int(rec["dst"]), "transport": rec["transport"],
                "group": (g.name or g.id) if g and (g.name or (g.id and not g.id.startswith("mi:"))) else None,
                "group_id": rec["group"] or None,
                "time_ms": _clean(float(rec["time_ms"])), "size_mb": _clean(float(rec["size_mb"])),
                "bandwidth_gbps": _clean(float(rec["bandwidth_gbps"])), "slow": (int(rec["src"]), int(rec["dst"])) in hl.slow_links,
            })
    return {"per_rank": per_rank, "links": links, "ranks_without_data": c.ranks_without_data,
            "unmapped_links": c.unmapped_links, "slow_links": sorted(f"{s}-{d}" for s, d in hl.slow_links),
            "sources": c.producers}


def _memory(a: Analysis) -> dict:
    m = a.resources.memory
    per_rank = {str(int(r["rank"])): {"peak_mb": _clean(float(r["peak_mb"])),
                                      "capacity_mb": _clean(float(r["capacity_mb"])),
                                      "peak_ratio": _clean(float(r["ratio"])),
                                      "allocated_peak_mb": _clean(float(r["allocated_peak_mb"]))}
                for r in m.to_dict("records")}
    return {"per_rank": per_rank, "unit": "MB = 2^20 bytes",
            "ranks_without_data": [r for r in a.run.rank_ids if str(r) not in per_rank]}


def _flops(a: Analysis) -> dict:
    f = a.resources.flops
    per_rank = {str(int(r["rank"])): {"flops_m": _clean(float(r["flops_m"])),
                                      "flops_per_s_g": _clean(float(r["flops_per_s_g"])),
                                      "utilization_pct": _clean(float(r["util_pct"])),
                                      "flops_vs_max": _clean(float(r["flops_norm"]))}
                for r in f.to_dict("records")}
    return {"per_rank": per_rank, "stages": [{"stage": s["stage"], "ranks": s["ranks"], "flops_m": _clean(s["flops_m"]),
                                               "vs_mean": _clean(s["vs_mean"])} for s in a.resources.stage_flops],
            "ranks_without_data": [r for r in a.run.rank_ids if str(r) not in per_rank]}
