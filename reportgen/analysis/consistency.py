"""Numbers that cannot be true: values of one rank's files that contradict each other or the step they belong to.

A pure function of the analysis results (`check_consistency`), returning data-quality entries (`DataIssue`) that
name the file and the rank, so that a page never shows such a value without a note beside it:

* communication of one step longer than the step (the communication file against the step trace): the
  communication a step holds is its operators' time (CANN's elapse includes the wait; MindInsight's
  communication cost does not, so its wait is added);
* wait of one step longer than the step;
* the parts of a step (the step trace's phases, the overlap bars) adding up to more than the step, or a part
  that is negative;
* a share of the step above 100 %: communication / step where there is no overlap data, and the time one link
  takes per step (all its groups) against the step of the rank that sends on it.

Tolerance: a value is impossible only when it exceeds the step by more than `REL_TOLERANCE` of it and
`ABS_TOLERANCE_MS` (clock rounding, steps cut at slightly different points by two tools). Each check gives one
entry per rank (its worst step, and how many steps are affected), at most `MAX_RANKS_LISTED` ranks per check, and
one entry for the rest.
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, Optional

import numpy as np
import pandas as pd

from reportgen.dataquality import CATALOG, Coded, dq
from reportgen.model import DataIssue

if TYPE_CHECKING:
    from reportgen.analysis import Analysis

REL_TOLERANCE = 0.05
ABS_TOLERANCE_MS = 0.5
MAX_RANKS_LISTED = 8
SEVERITY = "warning"  # the numbers built from these values (shares, waits, bars) cannot be trusted
WAIT_INCLUDED = ("communication.json", "kineto")  # producers whose communication time includes the wait


@dataclass(frozen=True)
class Violation:
    """One impossible value (worst step of a rank)."""

    check: str  # comm_over_step | wait_over_step | parts_over_step | negative_part | share_over_100 | link_over_step
    rank: int
    file: str
    step: Optional[int]  # None: the rank's average step
    value_ms: float
    step_ms: float
    n_steps: int  # steps of the rank with the problem
    what: str  # what the value is, for the sentence


def _over(value, total) -> np.ndarray:
    v = np.asarray(value, dtype=float)
    t = np.asarray(total, dtype=float)
    with np.errstate(invalid="ignore"):
        return (v > t * (1 + REL_TOLERANCE) + ABS_TOLERANCE_MS) & (t > 0)


def _step_label(step: Optional[int]) -> str:
    return "its average step" if step is None else f"step {step}"


def _worst(frame: pd.DataFrame, value: str, total: str, check: str, file_of: dict[int, str], what: str
           ) -> list[Violation]:
    """Per rank, the step where `value` exceeds `total` the most (rows with `rank`, `step`, value, total)."""
    if frame is None or not len(frame) or value not in frame or total not in frame:
        return []
    bad = frame[_over(frame[value], frame[total])]
    out = []
    for r, g in bad.groupby("rank"):
        excess = (g[value] - g[total]).to_numpy(dtype=float)
        w = g.iloc[int(np.nanargmax(excess))]
        step = None if pd.isna(w["step"]) else int(w["step"])
        out.append(Violation(check, int(r), file_of.get(int(r), ""), step, float(w[value]), float(w[total]),
                             len(g), what))
    return out


def _step_totals(a: "Analysis") -> pd.DataFrame:
    ps = a.steps.per_step
    if ps is None or not len(ps) or "total" not in ps:
        return pd.DataFrame(columns=["rank", "step", "total"])
    t = ps.dropna(subset=["step"])[["rank", "step", "total"]]
    return t.groupby(["rank", "step"], as_index=False)["total"].mean()


def _comm_checks(a: "Analysis", totals: pd.DataFrame, trace_of: dict[int, str]) -> list[Violation]:
    c = a.comm
    if not c.has_data or c.per_rank_step is None or not len(c.per_rank_step):
        return []
    run = a.run
    comm_file = {r: d.communication.source for r, d in run.ranks.items() if d.communication is not None}
    included = {r for r, d in run.ranks.items() if d.communication is not None
                and d.communication.producer in WAIT_INCLUDED}
    ps = c.per_rank_step.copy()
    ps["time_in_step"] = [cm if r in included else cm + (0.0 if math.isnan(w) else w)
                          for r, cm, w in zip(ps["rank"], ps["communication_ms"].astype(float),
                                              ps["wait_ms"].astype(float))]
    files = {r: f"{comm_file.get(r, '')}" for r in comm_file}
    per_step = ps.dropna(subset=["step"]).merge(totals, on=["rank", "step"], how="inner")
    out = _worst(per_step, "time_in_step", "total", "comm_over_step", files,
                 "communication operators (transfer and wait)")
    out += _worst(per_step, "wait_ms", "total", "wait_over_step", files, "wait in communication operators")
    # ranks whose communication steps do not line up with the step trace: compare the averages
    matched = set(per_step["rank"].unique())
    avg = a.steps.average
    if avg is not None and len(avg) and "total" in avg:
        pr = c.per_rank.copy()
        pr["time_in_step"] = [pr.at[r, "communication_ms"] if r in included
                              else pr.at[r, "communication_ms"] + (0.0 if math.isnan(pr.at[r, "wait_ms"])
                                                                   else pr.at[r, "wait_ms"]) for r in pr.index]
        j = pr[["time_in_step", "wait_ms"]].join(avg[["total"]], how="inner")
        j = j[~j.index.isin(matched)].reset_index().rename(columns={"index": "rank"})
        j["step"] = pd.NA
        out += _worst(j, "time_in_step", "total", "comm_over_step", files,
                      "communication operators (transfer and wait)")
        out += _worst(j, "wait_ms", "total", "wait_over_step", files, "wait in communication operators")
    return out


def _part_checks(a: "Analysis", trace_of: dict[int, str]) -> list[Violation]:
    out: list[Violation] = []
    ps = a.steps.per_step
    kind = a.steps.kind
    if ps is not None and len(ps) and kind in ("modern", "legacy") and "total" in ps:
        f = ps.copy()
        if kind == "modern":
            parts = ("computing", "communication_not_overlapped", "free")
            what = "computing + communication not overlapped + free"
        else:
            parts = ("iteration_interval", "fp_and_bp", "tail")
            what = "step interval + forward/backward + tail"
        if all(p in f for p in parts):
            f["_sum"] = f[list(parts)].sum(axis=1, min_count=len(parts))
            out += _worst(f, "_sum", "total", "parts_over_step", trace_of, what)
        for p in a.steps.phases:
            if p == "total" or p not in f:
                continue
            out += _worst(f, p, "total", "parts_over_step", trace_of, p.replace("_", " "))
    o = a.overlap
    if o.has_data and o.per_step is not None and len(o.per_step):
        stack = [c for c in o.stack if c in o.per_step or c == "computing_only"]
        f = o.per_step.copy()
        if "computing_only" in stack and "computing_only" not in f and {"computing", "overlapped"} <= set(f):
            f["computing_only"] = f["computing"] - f["overlapped"]
        stack = [c for c in stack if c in f]
        if stack:
            over_file = {r: d.overlap.source for r, d in a.run.ranks.items() if d.overlap is not None}
            files = {r: over_file.get(r, trace_of.get(r, "")) for r in set(over_file) | set(trace_of)}
            f["_bars"] = f[stack].fillna(0.0).sum(axis=1)
            if "total" not in f:
                f = f.merge(_step_totals(a), on=["rank", "step"], how="inner")
            out += _worst(f, "_bars", "total", "parts_over_step", files,
                          "the overlap bars (" + " + ".join(c.replace("_", " ") for c in stack) + ")")
            for c in stack:
                neg = f[f[c] < -ABS_TOLERANCE_MS]
                for r, g in neg.groupby("rank"):
                    w = g.iloc[int(np.argmin(g[c].to_numpy(dtype=float)))]
                    out.append(Violation("negative_part", int(r), files.get(int(r), ""),
                                         None if pd.isna(w["step"]) else int(w["step"]), float(w[c]),
                                         float(w["total"]) if "total" in w else math.nan, len(g),
                                         c.replace("_", " ")))
    return out


def _share_checks(a: "Analysis", trace_of: dict[int, str]) -> list[Violation]:
    out: list[Violation] = []
    o = a.overlap
    cs = getattr(o, "comm_share", None)
    run = a.run
    comm_file = {r: d.communication.source for r, d in run.ranks.items() if d.communication is not None}
    if cs is not None and len(cs) and "share" in cs:
        j = cs.reset_index().rename(columns={"index": "rank"})
        if "rank" not in j:
            j = j.rename(columns={j.columns[0]: "rank"})
        j["step"] = pd.NA
        out += _worst(j, "communication_ms", "total", "share_over_100", comm_file,
                      "communication time (the communication share of the step)")
    pairs = a.comm.pairs if a.comm.has_data else None
    avg = a.steps.average
    if pairs is not None and len(pairs) and avg is not None and len(avg) and "total" in avg:
        p = pairs[pairs["transport"] != "LOCAL"].copy()
        p["total"] = p["src"].map(avg["total"])
        p = p.dropna(subset=["total"])
        bad = p[_over(p["time_ms"], p["total"])]
        for src, g in bad.groupby("src"):
            w = g.loc[g["time_ms"].idxmax()]
            out.append(Violation("link_over_step", int(src), comm_file.get(int(src), ""), None, float(w["time_ms"]),
                                 float(w["total"]), len(g),
                                 f"the link {int(w['src'])}-{int(w['dst'])} ({w['transport']}, all groups)"))
    return out


# the sentence of each check (`reportgen.dataquality.CATALOG`: "rank {rank}: {what} ..."), and where a rank's worst
# step is named and more than one step has the problem, the same with "({n_steps} steps affected; ...)"
_CODES = {"comm_over_step": ("analysis.comm-over-step", "analysis.comm-over-step-steps"),
          "wait_over_step": ("analysis.wait-over-step", "analysis.wait-over-step-steps"),
          "parts_over_step": ("analysis.parts-over-step", "analysis.parts-over-step-steps"),
          "negative_part": ("analysis.negative-part", "analysis.negative-part-steps"),
          "share_over_100": ("analysis.share-over-100", "analysis.share-over-100"),  # (per step on average)
          "link_over_step": ("analysis.link-over-step", "analysis.link-over-step")}


def _sentence(v: Violation, trace_of: dict[int, str]) -> Coded:
    pct = f"{v.value_ms / v.step_ms:.0%}" if v.step_ms and not math.isnan(v.step_ms) else "?"
    params = dict(rank=v.rank, what=v.what[:1].upper() + v.what[1:], value=f"{v.value_ms:,.3f}",
                  step=_step_label(v.step), total=f"{v.step_ms:,.3f}",
                  trace=trace_of.get(v.rank) or "the step trace", pct=pct)
    code = _CODES[v.check][v.n_steps > 1 and v.step is not None]
    params["n_steps"] = v.n_steps
    used = {f for _, f, _, _ in string.Formatter().parse(CATALOG[code]) if f}
    return dq(code, **{k: x for k, x in params.items() if k in used})


def _issues(violations: Iterable[Violation], trace_of: dict[int, str]) -> list[DataIssue]:
    by: dict[str, list[Violation]] = {}
    for v in violations:
        by.setdefault(v.check, []).append(v)
    out = []
    for check, vs in by.items():
        vs = sorted(vs, key=lambda v: (-(v.value_ms - v.step_ms) if not math.isnan(v.step_ms) else 0, v.rank))
        seen: set[int] = set()
        listed = []
        for v in vs:
            if v.rank in seen:
                continue
            seen.add(v.rank)
            listed.append(v)
        for v in listed[:MAX_RANKS_LISTED]:
            out.append(DataIssue(v.file, _sentence(v, trace_of), SEVERITY))
        rest = sorted(v.rank for v in listed[MAX_RANKS_LISTED:])
        if rest:
            rs = ", ".join(str(r) for r in rest[:40]) + (" …" if len(rest) > 40 else "")
            out.append(DataIssue("", dq("analysis.more-impossible-ranks", rest=len(rest),
                                        check=check.replace("_", " "), rs=rs), SEVERITY))
    return out


def check_consistency(a: "Analysis") -> list[DataIssue]:
    """Data-quality entries for values that cannot be true (see the module doc); [] when all is plausible."""
    trace_of = {r: d.step_trace.source for r, d in a.run.ranks.items() if d.step_trace is not None}
    violations: list[Violation] = []
    totals = _step_totals(a)
    for part in (lambda: _comm_checks(a, totals, trace_of), lambda: _part_checks(a, trace_of),
                 lambda: _share_checks(a, trace_of)):
        violations += part()
    return _issues(violations, trace_of)
