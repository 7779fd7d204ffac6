"""Expert-parallel balance (issue 32, item 3): per expert-parallel group, each rank's expert computation and
all-to-all per step, the imbalance and what balancing would save.

* **Groups.** A communication group that runs all-to-all collectives (Kineto `Collective name` all_to_all /
  expert-parallel libraries' dispatch and combine kernels; Ascend `hcom_alltoall*` / AlltoAll(V) operators) is an
  expert-parallel group; its members are the group's ranks as the profile lists them (Kineto pg_config, Ascend
  parallel_group_info), else the ranks seen running its all-to-all. A group kept has expert computation on its
  ranks or an expert-parallel name (expert / moe / ep): an all-to-all alone (DLRM's embeddings) is not one.
* **Expert computation.** The device time of the grouped-GEMM kernels (tokens routed to the rank's experts):
  `EXPERT_KERNEL_RE` on the operator names and types (torch_npu GroupedMatmul, PyTorch `_grouped_mm`, CUTLASS /
  Transformer Engine / Megablocks grouped GEMMs, DeepGEMM m-grouped GEMMs, Triton fused-MoE kernels), per step (the
  operators' totals over the steps read / their number).
* **Imbalance.** Per group: mean and maximum of its ranks' expert time per step, peak-to-mean (max / mean), the hot
  ranks (at least `hot_margin` above the mean) and the saving of a perfect balance: the group waits for its slowest
  member at the next all-to-all, so balancing saves max - mean per step.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import pandas as pd

from reportgen import collectives
from reportgen.analysis.codes import column_array, distinct
from reportgen.model import Run

EXPERT_KERNEL_RE = re.compile(r"grouped_?gemm|grouped_?mat_?mul|grouped_?mm\b|_grouped_mm|GroupGemm|fused_moe|"
                              r"moe_?ffn|m_grouped", re.I)
ALLTOALL_RE = collectives.ALLTOALL_RE  # (one home for collective naming: reportgen.collectives)
EP_NAME_RE = re.compile(r"expert|moe|(?:^|[^a-z])ep(?:[^a-z]|$)", re.I)
HOT_MARGIN = 0.1  # a hot rank computes at least this much more than its group's mean


@dataclass
class EpGroup:
    group: str
    name: str
    ranks: list[int]
    expert_ms: dict[int, float]  # rank -> expert computation per step (ms)
    alltoall_ms: dict[int, float]  # rank -> all-to-all time per step (ms)
    alltoall_mb: dict[int, float] = field(default_factory=dict)  # rank -> all-to-all MB per step, where recorded
    mean_ms: Optional[float] = None
    max_ms: Optional[float] = None
    peak_to_mean: Optional[float] = None
    hot_ranks: list[int] = field(default_factory=list)
    saving_ms: Optional[float] = None  # max - mean per step

    def to_dict(self) -> dict:
        def num(v):
            return None if v is None or not math.isfinite(v) else round(float(v), 4)
        return {"group": self.group, "name": self.name, "ranks": self.ranks,
                "expert_ms": {str(r): num(v) for r, v in sorted(self.expert_ms.items())},
                "alltoall_ms": {str(r): num(v) for r, v in sorted(self.alltoall_ms.items())},
                "alltoall_mb": {str(r): num(v) for r, v in sorted(self.alltoall_mb.items())},
                "mean_ms": num(self.mean_ms), "max_ms": num(self.max_ms), "peak_to_mean": num(self.peak_to_mean),
                "hot_ranks": self.hot_ranks, "saving_ms": num(self.saving_ms)}


@dataclass
class ExpertBalance:
    groups: list[EpGroup]
    kernels: list[str]  # the expert-computation operator names recognised (a few)

    def to_dict(self) -> dict:
        return {"groups": [g.to_dict() for g in self.groups], "expert_kernels": self.kernels[:12]}


def _steps(data) -> int:
    st = data.step_trace
    return len(st.steps) if st is not None and st.steps is not None and len(st.steps) else 1


def expert_ms(data, names: list) -> Optional[float]:
    """The rank's expert computation per step (ms; None without a grouped-GEMM operator); the first names of those
    operators appended to `names`."""
    ops = data.operators
    if ops is None or ops.detail is None or not len(ops.detail):
        return None
    d = ops.detail
    hit = text_hits(d["name"], EXPERT_KERNEL_RE) | text_hits(d["op_type"], EXPERT_KERNEL_RE)
    if not hit.any():  # (most ranks: no grouped GEMM, and no need to read the sides)
        return None
    hit &= ~d["side"].isin(("communication", "hostcpu")).to_numpy(dtype=bool)
    if not hit.any():
        return None
    d = d[hit]
    names.extend(d["name"].astype(str).head(6))
    return float(d["total_ms"].sum()) / _steps(data)


_HITS: dict[re.Pattern, dict[str, bool]] = {}  # per process and pattern: text -> the pattern finds something
_HITS_MAX = 100_000  # texts remembered per pattern (then forgotten at once): ~10 MB at most


def text_hits(col: pd.Series, regex: re.Pattern) -> np.ndarray:
    """Per row: `regex` finds a match in the value as text (a missing value: no match), each distinct text searched
    once per process (`_HITS`: a worker's ranks repeat the same operator names; one scan of a rank's 1,600 names
    costs ~2 ms)."""
    return code_hits(*pd.factorize(col.to_numpy(dtype=object)), regex)


def code_hits(c: np.ndarray, u, regex: re.Pattern) -> np.ndarray:
    """`text_hits` of a column given as codes `c` into its distinct values `u` (-1: missing), as a factorisation of
    the column as objects gives them in any order (`analysis.comm_rank.op_codes`: made once a rank)."""
    if not len(u):
        return np.zeros(len(c), dtype=bool)
    seen = _HITS.setdefault(regex, {})
    # (texts: `str` and its subclasses as they are, which match and look up as the str they are; pandas' inference
    # over the array in C: a quarter of a type check of each value in Python)
    texts = u.tolist() if isinstance(u, np.ndarray) and u.dtype == object and \
        pd.api.types.infer_dtype(u, skipna=False) == "string" else [str(v) for v in u]
    known = np.array(list(map(seen.get, texts)), dtype=np.float64)  # (at C speed: most are known; None: NaN)
    miss = np.flatnonzero(np.isnan(known))
    if len(miss):
        found = search_all([texts[i] for i in miss.tolist()], regex)
        if len(seen) + len(miss) > _HITS_MAX:
            seen.clear()
        for i, f in zip(miss.tolist(), found.tolist()):
            seen[texts[i]] = f
        known[miss] = found
    hit = known == 1.0
    return np.where(c >= 0, hit[np.maximum(c, 0)], False)


def search_all(texts: list[str], regex: re.Pattern) -> np.ndarray:
    """Per text: `regex.search(text)` finds something. One scan of the texts joined by newlines (a search call per
    text costs ~1 µs: a second over a million names), every hit confirmed on its own text; a pattern that could
    read the text's edges differently when joined (anchors, look-arounds, negated classes, classes that hold a
    newline) or a match across a newline falls back to a search per text. A case-insensitive pattern of plain
    words scans ASCII texts lowered, with the pattern lowered and case-sensitive (`_lowered`: ~5x quicker; it
    finds every text the pattern finds, and each is confirmed by the pattern itself)."""
    hit = np.zeros(len(texts), dtype=bool)
    if not texts:
        return hit
    if len(texts) <= 32:  # (a few texts: a search each costs less than the scan's setting up)
        return np.array([bool(regex.search(t)) for t in texts], dtype=bool)
    p = regex.pattern
    joined = "\n".join(texts)
    if any(t in p for t in ("^", "$", "\\A", "\\Z", "\\n", "\\s", "\\S", "\\W", "\\D", "(?m", "(?s", "(?<", "(?=",
                            "(?!")) \
            or regex.flags & (re.M | re.S) or joined.count("\n") != len(texts) - 1:  # (a newline in a text)
        return np.array([bool(regex.search(t)) for t in texts], dtype=bool)
    scan = _lowered(regex) if joined.isascii() else None
    if scan is not None:
        joined = joined.lower()  # (ASCII: the same length, the same places)
    else:
        scan = regex
    starts = None  # (each text's place in the joined text: made at the first match)
    for m in scan.finditer(joined):
        if "\n" in m.group(0):
            return np.array([bool(regex.search(t)) for t in texts], dtype=bool)
        if starts is None:
            starts = np.cumsum([0] + [len(t) + 1 for t in texts[:-1]])
        hit[int(np.searchsorted(starts, m.start(), side="right")) - 1] = True
    for i in np.flatnonzero(hit):  # each hit confirmed on its own text
        hit[i] = bool(regex.search(texts[i]))
    return hit


_LOWERED: dict[re.Pattern, Optional[re.Pattern]] = {}
_PLAIN_WORDS = re.compile(r"(?:[A-Za-z0-9_|()?*+.{},: -]|\\b)*")


def _lowered(regex: re.Pattern) -> Optional[re.Pattern]:
    """For a case-insensitive `regex` of plain words (letters, digits, `_`, `-`, `.`, groups, alternations,
    quantifiers and `\\b`; no class, no other escape): the pattern lowered, case-sensitive. On ASCII text lowered
    it matches wherever `regex` matches the text (a letter of the pattern matches either case of that ASCII letter
    and nothing else; word boundaries do not depend on case). None for any other pattern."""
    if regex not in _LOWERED:
        low = None
        if regex.flags & re.I and not regex.flags & ~(re.I | re.U) and _PLAIN_WORDS.fullmatch(regex.pattern):
            try:
                low = re.compile(regex.pattern.lower())
            except re.error:
                low = None
        _LOWERED[regex] = low
    return _LOWERED[regex]


def rank_alltoall(data, k: Optional[dict] = None) -> dict[str, tuple[float, float]]:
    """Per communication group (as text): the rank's all-to-all time and size per step (MB NaN where no size is
    recorded), over the steps that recorded an all-to-all (rows with a step whose operator name or kind
    `ALLTOALL_RE` finds). `k`: `comm_rank.op_codes` of the rank's operators where made already."""
    c = data.communication
    if c is None or c.ops is None or not len(c.ops):
        return {}
    ops = c.ops
    step = ~k["step_na"] if k is not None else ops["step"].notna().to_numpy(dtype=bool)
    hit = step & (_hits(ops, "op", k) | _hits(ops, "kind", k))
    if not hit.any():
        return {}
    got = _alltoall_of_codes(ops, np.flatnonzero(hit), k) if k is not None else None
    if got is not None:
        return got
    ops = ops[hit]
    n = max(ops["step"].nunique(), 1)
    mb = ops[["sdma_mb", "rdma_mb"]].sum(axis=1, min_count=1) if {"sdma_mb", "rdma_mb"} <= set(ops) else None
    out: dict[str, tuple[float, float]] = {}
    for g, part in ops.groupby(ops["group"].astype(str)):
        mbv = float(mb.loc[part.index].sum()) / n if mb is not None and mb.loc[part.index].notna().any() \
            else math.nan
        out[g] = (float(part["communication_ms"].sum()) / n, mbv)
    return out


def _hits(ops: pd.DataFrame, name: str, k: Optional[dict]) -> np.ndarray:
    """`text_hits` of column `name` by `ALLTOALL_RE`: from the rank's codes `k` where the column holds objects (the
    texts those codes were made from), else from the column."""
    v = column_array(ops, name) if k is not None else None
    if isinstance(v, np.ndarray) and v.dtype == object:
        return code_hits(*k[name], ALLTOALL_RE)
    return text_hits(ops[name], ALLTOALL_RE)


def _alltoall_of_codes(ops: pd.DataFrame, rows: np.ndarray, k: dict) -> Optional[dict[str, tuple[float, float]]]:
    """`rank_alltoall`'s figures of the all-to-all rows `rows` from the codes `k`, as its groupby gives them (the
    groups' text in order, the same rows summed in the same order by the same NumPy sums); None where the rows'
    groups are not all text or the numbers not plain float64 columns (pandas then)."""
    gc, gu = k["group"][0][rows], k["group"][1]
    if (gc < 0).any() or not ops.index.is_unique:
        return None
    used = distinct(gc)
    names = gu[used].tolist()
    if any(type(g) is not str for g in names):
        return None
    have = set(ops.columns)
    cols = ["communication_ms"] + (["sdma_mb", "rdma_mb"] if {"sdma_mb", "rdma_mb"} <= have else [])
    vals = [column_array(ops, x) for x in cols]
    if any(not isinstance(v, np.ndarray) or v.dtype != np.float64 for v in vals):
        return None
    vals = [v[rows] for v in vals]
    mb = None
    if len(vals) == 3:  # (per row: Σ of the two sizes, NaN counted 0; NaN where neither has one)
        s, r = vals[1], vals[2]
        mb = np.where(np.isnan(s), 0.0, s) + np.where(np.isnan(r), 0.0, r)
        mb[np.isnan(s) & np.isnan(r)] = np.nan
    n = max(len(distinct(k["step"][0][rows])), 1)
    out: dict[str, tuple[float, float]] = {}
    for i in sorted(range(len(names)), key=names.__getitem__):  # (groupby's sorted keys)
        part = gc == used[i]
        mbv = _nansum(mb[part]) / n if mb is not None and not np.isnan(mb[part]).all() else math.nan
        out[names[i]] = (_nansum(vals[0][part]) / n, mbv)
    return out


def _nansum(v: np.ndarray) -> float:
    """`Series.sum()` of float64 values (NaN counted 0): the same NumPy sum of the same array."""
    return float(np.where(np.isnan(v), 0.0, v).sum())


def analyze_expert_balance(run: Run, hot_margin: float = HOT_MARGIN) -> Optional[ExpertBalance]:
    """None when no rank runs an all-to-all in a group (no expert parallelism seen)."""
    # each rank's all-to-all per group and expert computation: its figures (`analysis.per_rank`, computed where
    # the rank was loaded), else the same functions here
    a2a: dict[str, dict[int, tuple[float, float]]] = {}  # group -> rank -> (ms per step, MB per step)
    figs = {r: run.ranks[r].figures for r in run.rank_ids}
    for r, f in figs.items():
        for g, v in (f.alltoall if f is not None else rank_alltoall(run.ranks[r])).items():
            a2a.setdefault(g, {})[r] = v
    if not a2a:
        return None
    names: list[str] = []
    expert = {}
    for r, f in figs.items():
        if f is not None:
            expert[r] = f.expert_ms
            names.extend(f.expert_names)
        else:
            expert[r] = expert_ms(run.ranks[r], names)
    seen = set(names)
    groups = []
    for g, per in sorted(a2a.items()):
        info = next((run.ranks[r].info.parallel_groups.get(g) for r in per
                     if g in run.ranks[r].info.parallel_groups), None) or {}
        members = [int(x) for x in info.get("global_ranks") or [] if int(x) in run.ranks] or sorted(per)
        eg = EpGroup(g, str(info.get("group_name") or g), members,
                     {r: expert[r] for r in members if expert.get(r) is not None},
                     {r: per[r][0] for r in members if r in per},
                     {r: per[r][1] for r in members if r in per and math.isfinite(per[r][1])})
        if not eg.expert_ms and not EP_NAME_RE.search(eg.name):
            continue  # all-to-all without expert computation nor an expert-parallel name (DLRM embeddings...)
        vals = list(eg.expert_ms.values())
        if len(vals) >= 2:
            eg.mean_ms = sum(vals) / len(vals)
            eg.max_ms = max(vals)
            if eg.mean_ms > 0:
                eg.peak_to_mean = eg.max_ms / eg.mean_ms
                eg.hot_ranks = sorted(r for r, v in eg.expert_ms.items() if v >= eg.mean_ms * (1 + hot_margin))
            eg.saving_ms = eg.max_ms - eg.mean_ms
        groups.append(eg)
    return ExpertBalance(groups, sorted(seen)) if groups else None
