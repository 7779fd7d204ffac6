"""FLOPs loaders (MindInsight): `flops_summary_{r}.json`, `flops_{r}.txt`, `flops_scope_{r}.json`,
`flops_utilization_step_{r}.json`. MFLOPs = 1e6 operations, GFLOPS = 1e9 operations per second, utilisation in %.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Optional

import pandas as pd

from reportgen.loaders.files import read_text
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.jsonfile import check_json_numbers, read_json
from reportgen.numbers import to_float
from reportgen.model import Flops


def _num(d: dict, key: str) -> Optional[float]:
    v = to_float(d.get(key))
    return None if math.isnan(v) else v


def load_flops(summary: Optional[Path], per_op: Optional[Path], scope: Optional[Path],
               per_step: Optional[Path], log: IssueLog) -> Optional[Flops]:
    out: Optional[Flops] = None
    if summary is not None:
        data = read_json(summary, log)
        gen = ("FLOPs", "FLOPS", "FLOPS_Utilization") if not isinstance(data, dict) or "FLOPs" in data or \
            "FLOPS" in data or not any(k in data for k in ("cube_FLOPs", "vec_FLOPs")) else \
            ("cube_FLOPs", "vec_FLOPs", "cube_FLOPS", "vec_FLOPS")
        check_json_numbers(summary, log, data, ("FLOPs", "FLOPS", "FLOPS_Utilization", "cube_FLOPs", "vec_FLOPs",
                                                "cube_FLOPS", "vec_FLOPS"), required=gen)
        if isinstance(data, dict):
            out = Flops(source=log.rel(summary))
            if "FLOPs" in data or "FLOPS" in data:
                out.flops_m, out.flops_per_s_g = _num(data, "FLOPs"), _num(data, "FLOPS")
                out.utilization_pct = _num(data, "FLOPS_Utilization")
            elif any(k in data for k in ("cube_FLOPs", "vec_FLOPs")):
                out.cube_m, out.vector_m = _num(data, "cube_FLOPs"), _num(data, "vec_FLOPs")
                out.flops_m = (out.cube_m or 0.0) + (out.vector_m or 0.0)
                cube_g, vec_g = _num(data, "cube_FLOPS"), _num(data, "vec_FLOPS")
                out.flops_per_s_g = None if cube_g is None and vec_g is None else (cube_g or 0.0) + (vec_g or 0.0)
                out.utilization_pct = _num(data, "FLOPS_Utilization")
            else:
                log.add(summary, "no FLOPs / cube_FLOPs keys; FLOPs summary not read")
                out = None
        elif data is not None:
            log.add(summary, "expected a JSON object; FLOPs summary not read")
    ops = load_flops_per_op(per_op, log) if per_op is not None else None
    if ops is not None:
        if out is None:
            out = Flops(source=log.rel(per_op))  # type: ignore[arg-type]
            out.flops_m = float(ops["mflops"].sum())
            out.flops_per_s_g = float(ops["gflops"].mean()) if ops["gflops"].notna().any() else None
        out.per_op = ops
    if out is None:
        return None
    if scope is not None:
        data = read_json(scope, log)
        links = data.get("data", {}).get("links") if isinstance(data, dict) else None
        nodes = data.get("data", {}).get("nodes") if isinstance(data, dict) else None
        if isinstance(links, list) and isinstance(nodes, list):
            names = [n.get("name", str(i)) if isinstance(n, dict) else str(n) for i, n in enumerate(nodes)]
            for link in links:
                if not isinstance(link, dict):
                    continue
                s, t, v = link.get("source"), link.get("target"), to_float(link.get("value"))
                s = names[s] if isinstance(s, int) and 0 <= s < len(names) else str(s)
                t = names[t] if isinstance(t, int) and 0 <= t < len(names) else str(t)
                if not math.isnan(v):
                    out.scopes.append({"source": s, "target": t, "value": v})
        elif data is not None:
            log.add(scope, "no data.nodes / data.links; FLOPs scopes not read")
    if per_step is not None:
        out.per_step = _per_step(per_step, log)
    return out


def load_flops_per_op(path: Path, log: IssueLog) -> Optional[pd.DataFrame]:
    """`flops_{r}.txt`: legacy `op_full_name, MFLOPs(10^6), GFLOPS(10^9), FLOPS utilization(%)` (", "
    separated; also `full_kernel_name, FLOPs, FLOPS, FLOPS utilization`) or the cube/vector variants."""
    text = read_text(path, log)
    if text is None:
        return None
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        log.add(path, "file is empty", "error")
        return None
    header = [h.strip().lower() for h in lines[0].split(",")]

    def find(*words: str, exclude: str = "") -> Optional[int]:
        for i, h in enumerate(header[1:], 1):
            if all(w in h for w in words) and not (exclude and exclude in h):
                return i
        return None

    cols = {
        "cube_mflops": find("flops(", "cube") or find("mflops", "cube"),
        "cube_gflops": find("gflops", "cube"),
        "vector_mflops": find("mflops", "vec"),
        "vector_gflops": find("gflops", "vec"),
    }
    if cols["cube_mflops"] is None and cols["vector_mflops"] is None:
        cols = {"mflops": 1, "gflops": 2 if len(header) > 2 else None,
                "util_pct": 3 if len(header) > 3 else None}
    else:
        cols["cube_util_pct"] = find("utilization", "cube")
        cols["vector_util_pct"] = find("utilization", "vec")
    recs, bad = [], 0
    for line in lines[1:]:
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < len(header):
            bad += 1
            continue
        rec = {"name": parts[0]}
        for k, i in cols.items():
            rec[k] = to_float(parts[i]) if i is not None else math.nan
        recs.append(rec)
    if bad:
        log.add(path, f"{bad} line(s) with too few fields skipped")
    if not recs:
        return None
    df = pd.DataFrame(recs)
    if "cube_mflops" in df:
        df["mflops"] = df[["cube_mflops", "vector_mflops"]].sum(axis=1, min_count=1)
        df["gflops"] = df[["cube_gflops", "vector_gflops"]].sum(axis=1, min_count=1)
    return df


def _per_step(path: Path, log: IssueLog) -> Optional[pd.DataFrame]:
    """`flops_utilization_step_{r}.json`: despite the name, text `steps, FLOPS_Utilization %` then `i,value`."""
    text = read_text(path, log)
    if text is None:
        return None
    rows = []
    for line in text.splitlines():
        m = re.match(r"^\s*(\d+)\s*,\s*([-+0-9.eE]+)\s*$", line)
        if m:
            rows.append({"step": int(m.group(1)), "util_pct": float(m.group(2))})
    if not rows:
        log.add(path, "no `step, utilisation` lines found")
        return None
    return pd.DataFrame(rows)
