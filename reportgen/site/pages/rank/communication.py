"""The communication section of rank pages: the rank's time, wait and transit, its steps, its longest operators
(every one in a CSV beside the page) and the links it reported."""

from __future__ import annotations

from functools import partial
from typing import Any, Optional

import numpy as np
import pandas as pd

from reportgen import fmt
from reportgen.analysis import Analysis
from reportgen.i18n import N_, _
from reportgen.rules.highlights import Highlights
from reportgen.site.pages.communication import link_rows, marked_links
from reportgen.site.pages.rank.sections import CommSection, Part, shown_rows
from reportgen.site.plan.page import column_rows
from reportgen.site.render.csv_text import CodedColumn, SourcedRows, values_key
from reportgen.site.views.communication import group_label
from reportgen.site.views.values import num, num_column, records
from reportgen.urls import rank_csv


def links_by_reporter(a: Analysis) -> dict[int, list[int]]:
    """Row positions of the link table per reporting rank (computed once for all rank pages)."""
    out: dict[int, list[int]] = {}
    lt = a.comm.links
    if not len(lt):
        return out
    for i, rep in enumerate(lt["reporters"].astype(str)):
        for x in rep.split(","):
            if x.strip().lstrip("-").isdigit():
                out.setdefault(int(x), []).append(i)
    return out


RANK_TOP_COMM_OPS = 15  # communication operators on a rank page (the longest); every one is in its CSV
MAX_FLAGGED_OPS = 200  # on the page of a rank the findings name
MAX_RANK_LINKS = 300  # links a rank page lists (a large run's: `shown_rows`); every link is in the cluster's link CSV


def _time(v) -> float:
    """A link's time as a sort key (missing: below every number)."""
    return float(v) if isinstance(v, (int, float)) and v == v else float("-inf")
RANK_COMM_OP_COLUMNS = [
    {"key": "op", "label": N_("Operator")}, {"key": "group", "label": N_("Group")}, {"key": "kind", "label": N_("Kind")},
    {"key": "count", "label": N_("Calls per step")}, {"key": "communication_ms", "label": N_("Time (ms)")},
    {"key": "transit_ms", "label": N_("Transit (ms)")}, {"key": "wait_ms", "label": N_("Wait (ms)")},
    {"key": "wait_ratio", "label": N_("Wait ratio")}, {"key": "per_call_ms", "label": N_("Per call (ms)")}]


def rank_comm_ops_csv(rank: int, n_ranks: int = 1) -> str:
    """Every communication operator of a rank, beside its page (`ranks/rank-N.html`; gzip on a large run)."""
    return rank_csv(rank, "comm-ops", n_ranks)


def calls_text(count: Optional[float], n_steps: int) -> str:
    """The calls-per-step cell: the number per step, or for an operator that ran in fewer steps than were profiled
    (one named per call) how often in how many steps ("1 in 12 steps")."""
    if count is None:
        return ""
    if n_steps > 1 and count < 1:
        k = int(round(count * n_steps))
        if k >= 1 and abs(k - count * n_steps) < 1e-6 * n_steps:
            return _("{k} in {n} steps").format(k=k, n=n_steps)
    return fmt.number(count)


_OP_NUMS = ("communication_ms", "transit_ms", "wait_ms", "wait_ratio", "count")


def _coded(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(codes, distinct values): `distinct[codes]` is `values`, each cell the very object it was (a missing value
    stays None, NaN or pd.NA, as `group_label` reads them differently)."""
    cells = values.tolist()
    if set(map(type, cells)) <= {str}:  # the common case: labels
        codes, uniques = pd.factorize(values)
    else:  # missing or mixed values: pandas would merge None with NaN (and 2 with 2.0): each kept as it is
        seen: dict = {}
        codes = np.fromiter((seen.setdefault((type(v), v), len(seen)) for v in cells), dtype=np.int64,
                            count=len(cells))
        uniques = [v for _, v in seen]
    out = np.empty(len(uniques), dtype=object)
    out[:] = list(uniques)
    return codes, out


def by_rank_longest_first(rank: np.ndarray, comm: np.ndarray) -> np.ndarray:
    """`np.lexsort((-comm, rank))`: the rows by rank, then longest first (stable: ties keep their order). rank_ops
    holds each rank's rows together (it is built rank by rank): then each rank's rows are sorted alone and the
    blocks put in rank order (1.6 million rows at 1,024 ranks: ~0.1 s instead of ~0.4 s, before the writers
    start); a rank whose rows are apart takes the lexsort."""
    if len(rank) < 2:
        return np.lexsort((-comm, rank))
    starts = np.flatnonzero(np.r_[True, rank[1:] != rank[:-1]])
    heads = rank[starts]
    if len(np.unique(heads)) != len(heads):
        return np.lexsort((-comm, rank))
    ends = np.r_[starts[1:], len(rank)]
    neg = -comm
    parts = [b + np.argsort(neg[b:e], kind="stable") for b, e in zip(starts.tolist(), ends.tolist())]
    return np.concatenate([parts[i] for i in np.argsort(heads, kind="stable").tolist()])


def _column(col: pd.Series, number: bool):
    """A `rank_ops` column as the rank pages read it, in the frame's row order: a number column as float64 (the
    frame's own array where it is one; `num_column` reads any column as float64: the same values), a label column
    as `_coded`'s (codes, distinct values) (a categorical's own codes, its missing value NaN, as its objects read)."""
    if number:
        if col.dtype == np.float64:
            return col.to_numpy()  # (a view: its NaN are the missing values)
        return pd.to_numeric(col, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    if isinstance(col.dtype, pd.CategoricalDtype):
        values = np.empty(len(col.cat.categories) + 1, dtype=object)
        values[:-1] = col.cat.categories.to_numpy(dtype=object)
        values[-1] = np.nan  # (code -1, a missing value, reads the last)
        return col.cat.codes.to_numpy(), values
    return _coded(col.to_numpy(dtype=object))


class RankComm:
    """Builds the communication section of every rank page; the marked link table, the per-rank step and operator
    frames and the cluster median are prepared once (a run has thousands of rank pages)."""

    def __init__(self, a: Analysis, hl: Highlights) -> None:
        self.a, self.hl = a, hl
        c = a.comm
        self.ok = c.has_data
        if not self.ok:
            return
        self.by_reporter = links_by_reporter(a)
        self.links = link_rows(a, marked_links(a, hl))  # row i = link table row i
        self.median_wait = num(c.per_rank["wait_ms"].median())
        self.summary = c.per_rank.to_dict("index")
        self.steps: dict[int, list[dict]] = {}
        for rec in records(c.per_rank_step):
            self.steps.setdefault(int(rec["rank"]), []).append(rec)
        # every operator of a rank, longest first: the rows' order made once, a rank's records made when its page
        # is planned (in the site's parallel writers; 170,000 dicts up front cost seconds at 1,024 ranks)
        # read column by column through that order from `rank_ops`' own arrays: the numbers as float64, the labels
        # as codes into their distinct values (one object per cell of 1.6 million rows was ~700 MB and seconds at
        # 1,024 ranks; a sorted copy of the columns ~100 MB: issue 33)
        ro = c.rank_ops
        self._op_data: dict[str, Any] = {}
        self._op_at: dict[int, tuple[int, int]] = {}
        self._op_order = np.zeros(0, dtype=np.int64)
        if len(ro):
            rank = ro["rank"].to_numpy(dtype="int64")
            order = by_rank_longest_first(rank, ro["communication_ms"].to_numpy(dtype="float64"))  # by rank,
            #                                       then longest first (stable: ties keep their order)
            for name in ("op", "group", "kind", *_OP_NUMS):
                if name in ro.columns:
                    self._op_data[name] = _column(ro[name], name in _OP_NUMS)
            ranks = rank[order]
            starts = np.flatnonzero(np.r_[True, ranks[1:] != ranks[:-1]])
            ends = np.r_[starts[1:], len(ranks)]
            self._op_at = {int(ranks[b]): (int(b), int(e)) for b, e in zip(starts, ends)}
            del ranks
            self._op_order = order.astype(np.int32) if len(order) < 2 ** 31 else order
        self.flagged = hl.flagged
        self.group_labels: dict[Any, str] = {}
        self._group_by_code: Optional[np.ndarray] = None
        self._values_keys: dict[str, tuple[np.ndarray, Optional[bytes]]] = {}

    def _op_columns(self, r: int, limit: Optional[int] = None, arrays: bool = False) -> dict[str, Any]:
        """Rank `r`'s communication operators, longest first (the first `limit`), column by column: the rank
        page's table and (every operator, built only when the CSV is written) its CSV. `arrays` (the CSV): the
        numbers as float64 arrays, NaN where the lists hold None (`csv_text` writes an array as the list
        `num_column` makes of it, without a Python value per cell)."""
        nums = _OP_NUMS
        if r not in self._op_at:
            return {k: [] for k in ("op", "group", "kind", *nums, "per_call_ms")}
        b, e = self._op_at[r]
        if limit is not None:
            e = min(e, b + limit)
        at = self._op_order[b:e]
        if arrays:  # the labels as codes into their distinct values (`CodedColumn`: the CSV store's fingerprint
            # reads the codes); the numbers as float64 arrays (`num_column`'s values: a non-finite number is missing)
            col = {c: self._op_data[c][at] for c in nums}
            out = {c: CodedColumn(self._op_data[c][0][at], *self._coded_values(c)) for c in ("op", "group", "kind")}
            for k in nums:
                a = np.array(col[k], dtype=np.float64)
                a[~np.isfinite(a)] = np.nan
                out[k] = a
            t, c = out["communication_ms"], out["count"]
            ok = ~np.isnan(t) & ~np.isnan(c) & (c != 0)
            per_call = np.full(len(t), np.nan)
            with np.errstate(over="ignore"):
                per_call[ok] = t[ok] / c[ok]
            out["per_call_ms"] = per_call
            return out
        col = {c: v[at] if isinstance(v, np.ndarray) else v[1][v[0][at]] for c, v in self._op_data.items()
               if c != "group"}
        out = {"op": col["op"].tolist(), "group": self._group_labels()[self._op_data["group"][0][at]].tolist(),
               "kind": col["kind"].tolist()}
        out.update({k: num_column(col[k]) for k in nums})
        # the time of one call: the per-step time over the calls per step (an operator named per call, as torch_npu
        # names them, ran once in the profiled steps: its per-step time is its duration spread over the steps)
        out["per_call_ms"] = [t / c if t is not None and c else None for t, c in zip(out["communication_ms"], out["count"])]
        return out

    def _coded_values(self, name: str) -> tuple[np.ndarray, Optional[bytes]]:
        """A label column's distinct values at their codes (a group's label, `_group_labels`) and their digest
        (`csv_text.values_key`), made once."""
        got = self._values_keys.get(name)
        if got is None:
            values = self._group_labels() if name == "group" else self._op_data[name][1]
            got = self._values_keys[name] = (values, values_key(values))
        return got

    def n_ops(self, r: int) -> int:
        b, e = self._op_at.get(r, (0, 0))
        return e - b

    def _group_labels(self) -> np.ndarray:
        """The label (`_group`) of each distinct group of the operators, at its code (`_column`), made when a page
        first needs them (a run has a few hundred groups; a rank's CSV, 1,600 operators, takes its labels by code)."""
        if self._group_by_code is None:
            values = self._op_data["group"][1]
            labels = np.empty(len(values), dtype=object)
            labels[:] = [self._group(g) for g in values.tolist()]
            self._group_by_code = labels
        return self._group_by_code

    def _group(self, gid: Any) -> str:
        if gid not in self.group_labels:
            self.group_labels[gid] = group_label(self.a, gid)
        return self.group_labels[gid]

    def section(self, r: int) -> Part:
        a = self.a
        sec: dict[str, Any] = {"has_data": self.ok and r in self.summary}
        if not sec["has_data"]:
            return Part(CommSection(**sec))
        rec = self.summary[r]
        sec["summary"] = {k: num(rec[k]) for k in ("communication_ms", "transit_ms", "wait_ms", "sync_ms", "idle_ms",
                                                     "wait_ratio")}
        sec["low_wait"] = r in self.hl.waits_least
        sec["cluster_median_wait"] = self.median_wait
        sec["steps"] = [{"step": None if pd.isna(p["step"]) else int(p["step"]),
                         "communication_ms": num(p["communication_ms"]), "wait_ms": num(p["wait_ms"]),
                         "transit_ms": num(p["transit_ms"])} for p in self.steps.get(r, [])]
        # the page shows the longest operators (a flagged rank's page: up to MAX_FLAGGED_OPS); all are in the CSV
        lean = shown_rows(RANK_TOP_COMM_OPS, len(a.run.ranks))
        shown = MAX_FLAGGED_OPS if r in self.flagged else lean
        cols = self._op_columns(r, shown)
        downloads = []
        n_steps = len(sec["steps"])
        cols["calls"] = [calls_text(c, n_steps) for c in cols["count"]]
        sec["ops"] = column_rows(cols)
        sec["n_ops"] = self.n_ops(r)
        if sec["n_ops"] > lean:  # every rank with more than the usual few: a flagged rank's page too
            sec["csv"] = rank_comm_ops_csv(r, len(a.run.ranks))
            # every operator: its cells are the analysis' operators of the rank and their groups' labels (as this
            # build writes them): found in the CSV store by those (a rebuild), the table neither made nor hashed
            labels = self._coded_values("group")[1] if a.source else None
            source = b"rank comm ops\0%s\0%d\0%s" % (a.source.encode(), r, labels) if labels else None
            downloads = [(sec["csv"], RANK_COMM_OP_COLUMNS, SourcedRows(partial(self._op_columns, r, None, True),
                                                                        source))]
        reported = self.by_reporter.get(r, [])
        links = [self.links[i] for i in reported[:MAX_RANK_LINKS]]
        keep = MAX_RANK_LINKS if r in self.flagged else shown_rows(MAX_RANK_LINKS, len(a.run.ranks))
        if len(links) > keep:  # a large run: the slow links, then the longest (every one is in the link CSV)
            pick = sorted(range(len(links)), key=lambda i: (not links[i]["slow"], -_time(links[i]["time_ms"])))
            links = [links[i] for i in sorted(pick[:keep])]  # (in the table's order)
        sec["links"], sec["n_links"] = links, len(reported)
        sec["source"] = a.run.ranks[r].communication.source if a.run.ranks[r].communication else ""
        return Part(CommSection(**sec), downloads)
