"""`summary.json`: the machine-readable half of the report (contract: docs/summary-json.md)."""

from __future__ import annotations

import math
from collections import Counter
from datetime import datetime, timezone
from typing import Any, Optional

import numpy as np
import pandas as pd

from reportgen import __version__, collectives
from reportgen.analysis import Analysis
from reportgen.analysis.collective_sums import collective_sums
from reportgen.analysis.efficiency import summary_dict as efficiency_summary
from reportgen.analysis.operator_totals import operator_totals
from reportgen.groupsum import series_mean
from reportgen.rules.highlights import Highlights
from reportgen.numbers import rounded

SCHEMA = "msreport.summary/1"

# step-trace phase -> summary key (the contract's names for the legacy phases, `<phase>_ms` otherwise)
STEP_KEYS = {
    "iteration_interval": "iteration_interval_ms",
    "fp_and_bp": "fp_and_bp_ms",
    "tail": "tail_ms",
    "total": "total_ms",
}


def _clean(v: Any) -> Any:
    return rounded(v, 6) if isinstance(v, float) else v


def _cleaned(col) -> list:
    """`_clean(float(v))` of every value of a numeric column at once (Python's own rounding of each finite value,
    None for NaN and inf: the same numbers, without a function call per cell)."""
    return [round(x, 6) if math.isfinite(x) else None
            for x in np.asarray(col, dtype=np.float64).tolist()]


def generated_at() -> str:
    """summary.json's `generated_at`: now, UTC, to the second (a summary taken from the cache gets it anew)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def build_summary(a: Analysis, findings: list, thresholds: dict, metrics: Optional[dict] = None) -> dict:
    """`findings`: the typed findings of `rules.run_rules`, serialised here (the contract's shape). `metrics`:
    `summary_metrics(a, findings)` when the caller has it already (the cache of a rebuild)."""
    run, st = a.run, a.steps
    return {
        "schema": SCHEMA,
        "tool": {"name": "msreport", "version": __version__},
        "generated_at": generated_at(),
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
            **_run_facts(a),
        },
        "metrics": metrics if metrics is not None else summary_metrics(a, findings),
        "findings": [f.to_dict() for f in findings],
        "data_quality": [i.to_dict() for i in a.issues],
        # what could be judged: per area read / partial / absent / unsupported, and the checks that could not run
        "coverage": a.coverage.to_dict() if a.coverage else None,
    }


def summary_metrics(a: Analysis, findings: list) -> dict:
    """summary.json's `metrics`: numbers and names only, the same in every language (the cache of a rebuild keeps
    them between languages: `report._summary`)."""
    st = a.steps
    per_rank: dict[str, dict] = {}
    if st.kind:  # column by column (a cell lookup per rank and phase costs a second at 1,024 ranks)
        av = st.average
        cols = [(STEP_KEYS.get(p, f"{p}_ms"), av[p].to_numpy()) for p in st.phases]
        n_steps, rule = av["n_steps"].to_numpy(), av["rule"].to_numpy()
        for i, r in enumerate(av.index):
            row = {k: _clean(float(v[i])) for k, v in cols}
            row["steps"] = int(n_steps[i])
            row["average_rule"] = str(rule[i])
            per_rank[str(int(r))] = row
    return {
        "step_trace": {"per_rank": per_rank, "ranks_without_data": st.ranks_without_data,
                       "spread": _step_spread(a)},
        "overlap": _overlap(a),
        "communication": _communication(a, Highlights.from_findings(findings)),
        "memory": _memory(a),
        "flops": _flops(a),
        "operators": _operators(a),
        "idle": _idle(a),
        # [issue 32] devices and peaks, MFU per rank / stage / step, GEMM headroom (docs/summary-json.md)
        "efficiency": efficiency_summary(a.efficiency) if a.efficiency is not None else None,
        # [issue 32] expert-parallel groups: expert time and all-to-all per rank, imbalance, saving
        "expert_balance": a.expert.to_dict() if getattr(a, "expert", None) is not None else None,
        # [issue 32] who waits for whom: per communication group the top culprits, ms per step (not the matrix)
        "waits": _waits(a),
    }


def _waits(a: Analysis) -> dict:
    """Who waits for whom (`analysis.waits`): per group its top culprits; without arrival times, why."""
    from reportgen.numbers import json_clean

    w = getattr(a, "waits", None)
    if w is None:
        return {"available": False, "reason": getattr(a, "waits_reason", "") or None, "groups": []}
    d = w.to_dict()
    for g in d["groups"]:  # the group's name where the run names it (dp, tp, default_pg, ...)
        g["name"] = _group_label(a.comm, g["group"])[0] if str(g["group"]) in a.comm.groups else None
    return json_clean({"available": True, "reason": None, **d})


def _idle(a: Analysis) -> dict:
    """Idle time by cause per rank (`reportgen.idle`): mean ms per step of each cause and the launch statistics."""
    from reportgen.idle import run_idle
    from reportgen.numbers import json_clean

    return {"per_rank": {str(int(r)): json_clean(b.to_dict()) for r, b in sorted(run_idle(a.run).items())}}


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
    pr = o.per_rank
    n = len(pr)

    def column(c: str) -> np.ndarray:  # column by column, not a Series per rank
        return pr[c].to_numpy() if c in pr.columns else np.full(n, math.nan)
    cols = [(k, column(c)) for k, c in keys.items()]
    share, stage = column("comm_share"), column("pp_stage") if "pp_stage" in pr.columns else None
    out = {}
    for i, r in enumerate(pr.index):
        rec = {k: _clean(float(v[i])) for k, v in cols}
        rec["communication_share"] = _clean(float(share[i]))
        rec["pp_stage"] = None if stage is None or pd.isna(stage[i]) else int(stage[i])
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
    pr = c.per_rank
    keys = ("communication_ms", "wait_ms", "transit_ms", "sync_ms", "idle_ms", "wait_ratio")
    cols = [(k, _cleaned(pr[k])) for k in keys]  # column by column, not a Series per rank
    n_steps = pr["n_steps"].to_numpy()
    for i, r in enumerate(pr.index):
        rec = {k: v[i] for k, v in cols}
        rec["steps"] = int(n_steps[i])
        rec["waits_least"] = int(r) in hl.waits_least
        per_rank[str(int(r))] = rec
    links = []
    lt = c.links
    if len(lt):
        m = lt[lt["mapped"]]
        nums = [_cleaned(m[k]) for k in ("time_ms", "size_mb", "bandwidth_gbps")]
        for src, dst, transport, gid, t, size, bw in zip(m["src"].tolist(), m["dst"].tolist(), m["transport"].tolist(),
                                                         m["group"].tolist(), *nums):
            g = c.groups.get(str(gid))
            links.append({
                "src": int(src), "dst": int(dst), "transport": transport,
                "group": (g.name or g.id) if g and (g.name or (g.id and not g.id.startswith("mi:"))) else None,
                "group_id": gid or None, "time_ms": t, "size_mb": size, "bandwidth_gbps": bw,
                "slow": (int(src), int(dst)) in hl.slow_links,
            })
    return {"per_rank": per_rank, "links": links, "ranks_without_data": c.ranks_without_data,
            "unmapped_links": c.unmapped_links, "slow_links": sorted(f"{s}-{d}" for s, d in hl.slow_links),
            "sources": c.producers, **_comm_groups(c)}


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


# --- keys added for `msreport compare` / `trend` (documented in docs/compare-json.md) ----------------------------


def _run_facts(a: Analysis) -> dict:
    """The profiler's framework, versions and level (the most common value over ranks)."""
    infos = [rd.info for rd in a.run.ranks.values()]

    def common(values: list) -> Any:
        values = [v for v in values if v]
        return Counter(values).most_common(1)[0][0] if values else None

    versions: dict[str, str] = {}
    for i in infos:
        for k, v in (i.versions or {}).items():
            versions.setdefault(str(k), str(v))
    return {"framework": common([i.framework for i in infos]), "versions": versions,
            "profiler_level": common([i.profiler_level for i in infos]),
            # the accelerator as the profiler describes it (Kineto deviceProperties); MB = 2^20 bytes
            "device_model": common([getattr(i, "device_model", None) for i in infos]),
            "device_memory_mb": common([getattr(i, "device_memory_mb", None) for i in infos])}


def _std(values) -> Optional[float]:
    v = pd.Series(values, dtype="float64").dropna()
    return _clean(float(v.std(ddof=1))) if len(v) >= 2 else None


def _step_spread(a: Analysis) -> dict:
    """Step-to-step spread: the standard deviation over steps of the cluster-mean step (per phase), and of each
    rank's own steps. What `msreport compare` calls noise."""
    st = a.steps
    ps = st.per_step
    if not st.kind or ps is None or not len(ps):
        return {"cluster": {}, "per_rank": {}, "steps": 0}
    phases = [p for p in st.phases if p in ps.columns]
    by_step = ps.groupby("step")[phases].mean()
    cluster = {STEP_KEYS.get(p, f"{p}_ms"): _std(by_step[p]) for p in phases}
    sd = ps.groupby("rank")[phases].std(ddof=1)
    names = [STEP_KEYS.get(p, f"{p}_ms") for p in phases]
    per_rank = {str(int(r)): {k: _clean(float(v)) if v == v else None for k, v in zip(names, row)}
                for r, row in zip(sd.index, sd.to_numpy(dtype="float64"))}
    return {"statistic": "standard deviation over steps (ms)", "steps": int(len(by_step)), "cluster": cluster,
            "per_rank": per_rank}


def collective_type(op: str) -> str:
    """The collective of a communication operator (`hcom_allReduce__1_4_1`, `Default/AllReduce-op3`) -> `AllReduce`
    (one home: reportgen.collectives)."""
    return collectives.collective_type(op)


def _operators(a: Analysis) -> dict:
    """Operator types and top operators (`analysis.operator_totals`): as the resources view made them, or made
    here for an analysis made without them."""
    made = getattr(a.resources, "operator_totals", None)
    return made if made is not None else operator_totals(a.run, a.steps)


def _group_label(c, gid: str) -> tuple[str, list[int]]:
    g = c.groups.get(str(gid))
    ranks = sorted(int(x) for x in (g.ranks if g else []))
    name = (g.name if g and g.name else None) or ("group" if not gid or str(gid).startswith("mi:") else str(gid))
    return name, ranks


def _label_codes(col: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Codes (first-seen order, -1 for a missing value) and distinct values of a label column: a categorical's own
    codes where it is one (`CommAnalysis.rank_ops`), else a factorisation."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        c = col.cat.codes.to_numpy().astype(np.int64)
        cats = col.cat.categories.to_numpy(dtype=object)
        out = np.full(len(c), -1, dtype=np.int64)
        fc, used = pd.factorize(c[c >= 0])  # renumbered as first seen (a groupby with sort=False lists them so)
        out[c >= 0] = fc
        return out, cats[np.asarray(used, dtype=np.int64)]
    c, u = pd.factorize(col)
    return c.astype(np.int64), np.asarray(u, dtype=object)


def _slices(gid: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows ordered by group (stable) and each group's bounds in that order."""
    order = np.argsort(gid, kind="stable")
    return order, np.searchsorted(gid[order], np.arange(n + 1))


def _comm_groups(c) -> dict:
    """Communication per group and per collective type: time, wait and bandwidth per averaged step, averaged over
    the group's ranks. (One pass over integer codes; the means are `Series.mean`'s, group by group.)"""
    groups, collectives = [], []
    pg = c.per_group_rank
    if pg is not None and len(pg):
        gc, gv = _label_codes(pg["group"])
        ok = gc >= 0
        order, cuts = _slices(np.where(ok, gc, len(gv)), len(gv))
        num = {k: (pg[k].to_numpy(dtype="float64") if k in pg else np.full(len(pg), np.nan))[order]
               for k in ("communication_ms", "wait_ms", "transit_ms", "sdma_mb", "rdma_mb", "sdma_ms", "rdma_ms")}
        rank = pg["rank"].to_numpy()[order]
        for k, gid in enumerate(gv):
            a, b = cuts[k], cuts[k + 1]
            name, ranks = _group_label(c, gid)

            def total(*cols: str) -> float:
                return float(sum(np.where(np.isnan(num[x][a:b]), 0.0, num[x][a:b]).sum() for x in cols))
            size = total("sdma_mb", "rdma_mb")
            xfer = total("sdma_ms", "rdma_ms")
            groups.append({"group": name, "group_id": str(gid) or None,
                           "ranks": ranks or sorted(int(x) for x in rank[a:b]),
                           "time_ms": _clean(series_mean(num["communication_ms"][a:b])),
                           "wait_ms": _clean(series_mean(num["wait_ms"][a:b])),
                           "transit_ms": _clean(series_mean(num["transit_ms"][a:b])),
                           "size_mb": _clean(size / (b - a)),
                           "bandwidth_gbps": _clean(size / xfer) if xfer > 0 else None})  # MB/ms, as the links
    ro = c.rank_ops
    if ro is not None and len(ro):
        # Σ per (group, collective, rank), as first seen; then per (group, collective), as first seen
        pairs, cuts, vals = collective_sums(ro, ["communication_ms", "wait_ms", "transit_ms", "count"])
        for k, (gid, coll) in enumerate(pairs):
            a, b = cuts[k], cuts[k + 1]
            name, ranks = _group_label(c, gid)
            collectives.append({"group": name, "group_id": str(gid) or None, "ranks": ranks,
                                "collective": coll,
                                "time_ms": _clean(series_mean(vals["communication_ms"][a:b])),
                                "wait_ms": _clean(series_mean(vals["wait_ms"][a:b])),
                                "transit_ms": _clean(series_mean(vals["transit_ms"][a:b])),
                                "count": _clean(series_mean(vals["count"][a:b]))})
    return {"groups": groups, "collectives": collectives}
