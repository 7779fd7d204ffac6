"""Cluster communication: per-rank time and wait, operators across ranks, global links, matrices, graph.

Pure functions of the loaded `Run`. Every figure is an average per step: the producer's stored average
(MindInsight's `-` row, HcclParser generation) when it is trustworthy, otherwise the mean over the steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import numpy as np
import pandas as pd

from reportgen import framepack
from reportgen.analysis.codes import (Groups, codes, codes_of_chunks, codes_of_parts, distinct, frame_layout, labels,
                                      text_column)
from reportgen.analysis.comm_inputs import RankOps, rank_inputs, stack_links
from reportgen.analysis.comm_rank import GROUP_COLUMNS, CommFigures, wait_ratio
from reportgen.analysis.links import link_ops_table, link_table, pair_table, transport_medians
from reportgen.dataquality import dq
from reportgen.i18n import N_
from reportgen.loaders.groups import double_hash
from reportgen.model import COMM_TIME_COLUMNS, Communication, DataIssue, Run
from reportgen.pools import release_freed_memory

# Highlight thresholds (the performance helper has its own, configurable ones).



@dataclass
class GroupInfo:
    id: str  # the producer's group id ("" for MindInsight data)
    name: Optional[str]  # tp / pp / dp / ... when parallel_group_info names it
    ranks: list[int]  # global ranks that reported data for it
    local_to_global: dict[int, int] = field(default_factory=dict)
    mapping: str = ""  # how local ranks were mapped

    @property
    def label(self) -> str:
        short = self.id if len(self.id) <= 8 else "…" + self.id[-6:]
        rs = ", ".join(str(r) for r in self.ranks[:8]) + ("…" if len(self.ranks) > 8 else "")
        if self.id.startswith("mi:"):
            short = "(inferred)"
        base = self.name or (f"group {short}" if self.id else "group")
        return f"{base} ({rs})"


@dataclass
class CommAnalysis:
    has_data: bool
    producers: list[str]
    unit_notes: list[str]
    per_rank: pd.DataFrame  # index rank; COMM_TIME_COLUMNS + wait_ratio, n_steps, n_ops
    per_rank_step: pd.DataFrame  # rank, step, COMM_TIME_COLUMNS
    per_group_rank: pd.DataFrame  # rank, group, COMM_TIME_COLUMNS + sdma/rdma size and time (average per step)
    ops: pd.DataFrame  # per (op, group) across ranks
    rank_ops: pd.DataFrame  # per (rank, op, group, kind): average per step of communication, transit and wait
    #                         (ms), wait_ratio and count; op / group / kind as categoricals
    links: pd.DataFrame  # group, src, dst, transport, time_ms, size_mb, bandwidth_gbps, ... (global ranks)
    pairs: pd.DataFrame  # mapped links between two devices over all groups: src, dst, transport, Σtime, Σsize, bw
    link_ops: pd.DataFrame  # per-operator records on global links (box plots)
    groups: dict[str, GroupInfo]
    ranks_without_data: list[int]
    transport_medians: dict[str, float]
    unmapped_links: int = 0
    averaging: str = ""
    issues: list[DataIssue] = field(default_factory=list)


def _empty(run: Run, issues: list[DataIssue]) -> CommAnalysis:
    return CommAnalysis(False, [], [], pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(),
                        pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), {}, list(run.rank_ids), [],
                        [], {}, issues=issues)


def analyze_communication(run: Run, release_inputs: bool = False) -> CommAnalysis:
    """`release_inputs` (`analyze`, their last reader): the ranks' link and operator frames and their figures
    (`Communication.links` / `.ops`, `RankFigures.comm`) are dropped from the run as soon as they are read here
    (issue 33: ~220 MB at 1,024 ranks, else held to the end of the build and counted again by every forked page
    writer)."""
    issues: list[DataIssue] = []
    with_data = {r: d.communication for r, d in run.ranks.items() if d.communication is not None}
    if not with_data:
        return _empty(run, issues)
    producers = sorted({c.producer for c in with_data.values()})
    notes = sorted({c.unit_note for c in with_data.values() if c.unit_note})
    inferred = _infer_legacy_groups(with_data)
    # each rank's side (`analysis.comm_rank`: computed where the rank was loaded), combined here
    figs, ops_of, links_of = rank_inputs(run, with_data, inferred)
    links = _stack(list(links_of.values()), with_data, inferred, concat=stack_links)
    del links_of
    if links is None:
        links = pd.DataFrame()
    if release_inputs:
        _release(with_data, "links")

    any_stored = any(f.stored for f in figs.values())
    averaging = N_("MindInsight's stored average row ('-') where the producer wrote a true average; otherwise the "
                   "mean over the recorded steps") if any_stored else N_("mean over the recorded steps")

    steps = _stack([c.steps for c in with_data.values()], with_data, {}, ids=False)
    if steps is None:
        steps = pd.DataFrame(columns=["rank", "step", *COMM_TIME_COLUMNS, "stored"])
        n_ops = np.zeros(0, dtype=np.int64)
    else:
        n_ops = np.concatenate([figs[r].n_ops for r, c in with_data.items() if len(c.steps)])
    stored_steps = steps["stored"].astype(bool) & steps["step"].isna()
    per_rank_step = _with_op_counts(steps[~stored_steps].drop(columns=["stored"]),
                                    n_ops[~stored_steps.to_numpy(dtype=bool)])
    per_rank = _per_rank(per_rank_step, steps[stored_steps])
    members = pd.DataFrame({"group": pd.Series([g for f in figs.values() for g in f.groups], dtype=object),
                            "rank": np.repeat(np.array(list(figs), dtype=np.int64),
                                              [len(f.groups) for f in figs.values()])})
    groups, link_issues = _groups(run, with_data, inferred, members, links)
    issues.extend(link_issues)
    links_g, unmapped = _global_links(links, groups)
    if unmapped:
        issues.append(DataIssue("", dq("analysis.unmapped-link-ranks", unmapped=unmapped), "info"))
    table = link_table(links_g)
    pairs = pair_table(table)
    medians = transport_medians(pairs)
    if len(table):
        table["slow"] = False  # set by the pages from the slow-link finding (`site.comm_pages.marked_links`)
        table["vs_median"] = [
            (bw / medians[t]) if t in medians and medians[t] > 0 and not math.isnan(bw) and not own else math.nan
            for bw, t, own in zip(table["bandwidth_gbps"], table["transport"], table["self"])]
    # the links' frames freed before the operators' (the two largest temporaries are not held at once)
    link_ops = link_ops_table(links_g)
    del links, links_g
    release_freed_memory()  # their pages handed back: the operators' tables come next, not on top of them
    rank_ops, text = _rank_ops(figs, ops_of)
    if release_inputs:
        ops_of.clear()
        release_comm_inputs(run)  # (`figs` holds the figures until the groups' figures below)
        release_freed_memory()
    op_table = _ops_across(rank_ops, text)
    # kept for the rank pages and summary.json, which read its time, transit, wait, ratio and count: the
    # synchronisation and idle columns (only `ops` shows them, already made) dropped (26 MB at 1,024 ranks)
    rank_ops = rank_ops.drop(columns=[c for c in ("sync_ms", "idle_ms") if c in rank_ops.columns])
    per_group = _per_group_rank(figs, any_stored)
    missing = [r for r in run.rank_ids if r not in with_data]
    if missing and len(with_data):
        issues.append(DataIssue("", dq("analysis.ranks-without-communication", missing=len(missing),
                                       r=", ".join((str(r) for r in missing[:20])),
                                       missing2=" …" if len(missing) > 20 else ""), "warning"))
    return CommAnalysis(
        has_data=True, producers=producers, unit_notes=notes, per_rank=per_rank, per_rank_step=per_rank_step,
        per_group_rank=per_group, ops=op_table, rank_ops=rank_ops, links=table, pairs=pairs,
        link_ops=link_ops, groups=groups, ranks_without_data=missing,
        transport_medians=medians, unmapped_links=unmapped, averaging=averaging, issues=issues)


def _release(with_data: dict[int, Communication], name: str) -> None:
    """Each rank's `name` frame replaced by an empty one with its columns and their dtypes, one shared by the ranks
    of one `frame_layout` (a copy a rank costs ~0.1 ms: 0.2 s at 1,024 ranks; nothing reads or writes them after)."""
    made: dict = {}
    for c in with_data.values():
        f = vars(c).get(name)  # (a frame still sealed is not opened: `Communication.release_sealed` empties it)
        if f is not None and len(f):
            key = frame_layout(f)
            got = made.get(key) if key is not None else None
            if got is None:
                got = (f.columns, f.iloc[:0].copy())  # (the Index kept: its id stays its own)
                if key is not None:
                    made[key] = got
            setattr(c, name, got[1])


def release_comm_inputs(run: Run) -> None:
    """Drop what only the communication analysis reads from the ranks: their link and operator frames and their
    figures (an analysis read from the cache, `report.analyse_phase`; `analyze_communication`'s
    `release_inputs`): those still sealed (`Communication.release_sealed`) and those opened (`_release`)."""
    comms = {r: d.communication for r, d in run.ranks.items() if d.communication is not None}
    for c in comms.values():
        c.release_sealed(instances=False)
    _release(comms, "links")
    _release(comms, "ops")
    for d in run.ranks.values():
        if getattr(d.figures, "comm", None) is not None:
            d.figures.comm = None


def _stack(frames: list, with_data: dict, inferred: dict, ids: bool = True, concat=None) -> Optional[pd.DataFrame]:
    """The ranks' frames one under the other, with `rank`, `stored`, `global_ids` (and the inferred `group`) added
    once to the whole (adding columns to a thousand small frames costs seconds), or None when all are empty.
    `concat`: what stacks them (`pd.concat`'s: the links' `comm_inputs.stack_links`)."""
    ranks = list(with_data)
    keep = [(r, f) for r, f in zip(ranks, frames) if len(f)]
    if not keep:
        return None
    out = concat([f for _, f in keep]) if concat is not None else pd.concat([f for _, f in keep], ignore_index=True)
    n = np.array([len(f) for _, f in keep])
    rs = [r for r, _ in keep]
    out["rank"] = np.repeat(np.array(rs, dtype=np.int64), n)
    out["stored"] = np.repeat(np.array([with_data[r].stored_average for r in rs], dtype=bool), n)
    if ids:
        out["global_ids"] = np.repeat(np.array([not with_data[r].local_links for r in rs], dtype=bool), n)
    if any(r in inferred for r in rs):
        groups = np.repeat(np.array([inferred[r][0] if r in inferred else None for r in rs], dtype=object), n)
        has = np.repeat(np.array([r in inferred for r in rs]), n)
        if "group" in out:
            out["group"] = np.where(has, groups, out["group"].to_numpy(dtype=object))
        else:
            out["group"] = groups
    return out


# --- per rank ------------------------------------------------------------------------------------


def _with_op_counts(per_step: pd.DataFrame, n_ops: np.ndarray) -> pd.DataFrame:
    """The ranks' per-step totals with each row's operator count (`CommFigures.n_ops`), by rank and step."""
    out = per_step.copy()
    out["n_ops"] = n_ops if len(out) else 0
    for c in COMM_TIME_COLUMNS:
        out[c] = out[c].astype(float)
    return out.sort_values(["rank", "step"], kind="stable").reset_index(drop=True)


def _per_rank(per_step: pd.DataFrame, stored: pd.DataFrame) -> pd.DataFrame:
    cols = list(COMM_TIME_COLUMNS)
    if len(per_step):
        g = per_step.groupby("rank")
        avg = g[cols].mean()
        avg["n_steps"] = g.size()
        avg["n_ops"] = g["n_ops"].mean()
    else:
        avg = pd.DataFrame(columns=[*cols, "n_steps", "n_ops"])
    if len(stored):
        st = stored.groupby("rank")[cols].sum(min_count=1)
        for r in st.index:
            avg.loc[r, cols] = st.loc[r, cols].values
    avg["wait_ratio"] = wait_ratio(avg["wait_ms"], avg["transit_ms"])
    avg.index = avg.index.astype(int)
    return avg.sort_index()


def _per_group_rank(figs: dict[int, CommFigures], any_stored: bool) -> pd.DataFrame:
    """Per (rank, group): the ranks' group figures (from the stored-average rows of the ranks that have them when
    any rank has; else from every rank's step rows), by rank and group."""
    use = [(r, f) for r, f in figs.items() if len(f.group_names) and (f.stored or not any_stored)]
    if not use:
        return pd.DataFrame()
    out = pd.DataFrame({"rank": np.repeat(np.array([r for r, _ in use], dtype=np.int64),
                                          [len(f.group_names) for _, f in use]),
                        "group": pd.Series([g for _, f in use for g in f.group_names], dtype=object).to_numpy()})
    nums = np.concatenate([f.group_nums for _, f in use])
    for j, c in enumerate(GROUP_COLUMNS):
        out[c] = nums[:, j]
    gc, _ = codes(out["group"])
    order = np.lexsort((gc, out["rank"].to_numpy()))  # (each rank's groups come in order: a check)
    if not np.array_equal(order, np.arange(len(order))):
        out = out.iloc[order].reset_index(drop=True)
    out["wait_ratio"] = wait_ratio(out["wait_ms"], out["transit_ms"]).round(4)
    for t in ("sdma", "rdma"):
        out[f"{t}_gbps"] = out[f"{t}_mb"] / out[f"{t}_ms"].where(out[f"{t}_ms"] > 0)
    return out


def _rank_ops(figs: dict[int, CommFigures], ops_of: dict[int, RankOps]) -> tuple[pd.DataFrame, dict]:
    """Per (rank, op, group, kind): the average per step (the ranks' figures: ranks averaged over their steps
    first, then those with stored averages), op / group / kind as categoricals; and each row's codes of them
    (`_ops_across`). Memory (issue 33: a row a rank and operator, 1.6 million at 1,024 ranks): each number column
    filled rank by rank into its own array (no rows x columns stack and a copy of each column)."""
    cols = list(COMM_TIME_COLUMNS)
    names = ["rank", "op", "group", "kind"]
    order = [r for r, f in figs.items() if not f.stored] + [r for r, f in figs.items() if f.stored]
    order = [r for r in order if len(figs[r].ops_at)]
    if not order:
        return pd.DataFrame(columns=[*names, *cols, "count"]), {}
    lens = [len(figs[r].ops_at) for r in order]
    rank = np.repeat(np.array(order, dtype=np.int64), lens)
    part = np.repeat(np.array([figs[r].stored for r in order], dtype=np.int64), lens)
    nums = [np.empty(len(rank)) for _ in range(len(cols) + 1)]
    lo = 0
    for r, n in zip(order, lens):
        x = ops_of[r].nums
        for j, col in enumerate(nums):
            col[lo:lo + n] = x[:, j]
        lo += n
    text = {n: _label_codes(figs, order, n) for n in ("group", "kind")}
    for n in ("op", "group", "kind"):
        if text.get(n) is None and n == "op":  # (the operators' names: hardly any repeat within a rank)
            text[n] = codes_of_chunks([ops_of[r].op for r in order], dtype=np.int32)
        if text.get(n) is None:  # the text of every row
            text[n] = codes_of_parts([ops_of[r].texts(n) for r in order], dtype=np.int32)
        text[n] = (text[n][0].astype(np.int32, copy=False), text[n][1])  # (4 bytes a row: the codes live until `_ops_across`)
    # rows by part, rank and the keys' order (each rank's rows come so: a check, and a sort if not)
    spans = [(rank, int(rank.max()) + 1), *((text[x][0], max(1, len(text[x][1]))) for x in ("op", "group", "kind"))]
    ordered = False
    if 2 * math.prod(n for _, n in spans) < 2 ** 62:  # one int64 key per row
        key = part  # (in place: `part` is read nowhere else)
        for c, n in spans:
            key *= n
            key += c
        ordered = bool((key[1:] >= key[:-1]).all())
        del key
    del part
    if not ordered:
        by = np.lexsort((text["kind"][0], text["group"][0], text["op"][0], rank,
                         np.repeat(np.array([figs[r].stored for r in order], dtype=np.int64), lens)))
        rank, nums = rank[by], [c[by] for c in nums]
        text = {n: (c[by], v) for n, (c, v) in text.items()}
    out = {"rank": rank}
    for n in ("op", "group", "kind"):  # labels as categoricals: a code a row (a row a rank and operator)
        out[n] = labels(text[n][1], text[n][0])
    for j, c in enumerate([*cols, "count"]):
        out[c] = nums[j]
    out = pd.DataFrame(out, copy=False)
    out["wait_ratio"] = wait_ratio(out["wait_ms"], out["transit_ms"])
    return out, {n: (v, c) for n, (c, v) in text.items()}


def _label_codes(figs: dict[int, CommFigures], order: list[int], name: str) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """`codes` of the `name` column of the ranks' `ops_at` rows, from each rank's few distinct values and its codes
    into them (`CommFigures.labels`): the same codes, sorted values, without the text of every row. None where a
    rank has no such codes or a value is not text (`codes` may then order the values as first seen)."""
    parts = [figs[r].labels.get(name) for r in order]
    if any(p is None for p in parts):
        return None
    values = [v for p in parts for v in p[1]]
    if not all(type(v) is str for v in values):
        return None
    vc, vals = codes(np.array(values, dtype=object))
    n_vals = np.array([len(v) for _, v in parts], dtype=np.int64)
    n_rows = np.array([len(c) for c, _ in parts], dtype=np.int64)
    if not len(parts) or ((n_vals == 0) & (n_rows > 0)).any():  # (rows without values: code 0, one rank at a time)
        out, at = [], 0
        for c, v in parts:
            out.append(vc[at:at + len(v)][c] if len(v) else np.zeros(len(c), dtype=np.int64))
            at += len(v)
        return (np.concatenate(out) if out else np.zeros(0, dtype=np.int64)), vals
    # each rank's codes shifted to its values' place among all (one take, not one a rank)
    return vc[np.concatenate([c for c, _ in parts]) + np.repeat(np.cumsum(n_vals) - n_vals, n_rows)], vals


def _ops_across(rank_ops: pd.DataFrame, text: Optional[dict] = None) -> pd.DataFrame:
    """The same operator on every rank: mean, min, max and the spread of its time. `text`: per key column its
    distinct values and each row's code (`_rank_ops`), else made here."""
    if not len(rank_ops):
        return pd.DataFrame()
    names = ["op", "group", "kind"]
    if not text:
        text = {n: codes(rank_ops[n])[::-1] for n in names}
    g = Groups([(text[n][1], len(text[n][0])) for n in names], len(rank_ops))
    ro = rank_ops.reset_index(drop=True)
    # a column at a time (a block of several columns is copied for the reduction: 40 bytes a row more)
    mean = pd.DataFrame({c: g.agg(ro, [c], "mean")[c] for c in ("communication_ms", "transit_ms", "wait_ms", "sync_ms",
                                                                 "idle_ms")})
    lo = pd.DataFrame({c: g.agg(ro, [c], "min")[c] for c in ("communication_ms", "wait_ms")})
    hi = g.agg(ro, ["communication_ms"], "max")
    out = pd.DataFrame({
        "ranks": g.size, "mean_ms": mean["communication_ms"], "min_ms": lo["communication_ms"],
        "max_ms": hi["communication_ms"], "transit_ms": mean["transit_ms"], "wait_ms": mean["wait_ms"],
        "sync_ms": mean["sync_ms"], "idle_ms": mean["idle_ms"], "min_wait_ms": lo["wait_ms"],
    })
    out["spread_ms"] = out["max_ms"] - out["min_ms"]
    del mean, lo, hi
    g._by.clear()  # (the reductions' groupby and its row-long arrays freed before the picks)

    def kept(a: np.ndarray) -> np.ndarray:  # the kept rows' values (no copy when every row is kept)
        return a if len(g.rows) == len(a) else a[g.rows]
    rank = kept(ro["rank"].to_numpy())

    def pick(values: np.ndarray, largest: bool) -> pd.Series:
        """Per group the rank of the first row with the largest / smallest value (NaN skipped; none where all
        are NaN)."""
        at = g.pick(values, largest)
        ok = at >= 0
        return pd.Series(rank[at[ok]], index=np.flatnonzero(ok)).reindex(range(g.n))
    t = kept(ro["communication_ms"].to_numpy(dtype="float64"))
    out["max_rank"] = pick(t, True)
    out["min_rank"] = pick(t, False)
    del t
    w = kept(ro["wait_ms"].to_numpy(dtype="float64"))
    out["least_wait_rank"] = pick(np.where(np.isnan(w), np.inf, w), False)
    del w
    at_first = g.first
    for k, n in enumerate(names):  # (the text column the frame would infer, made at once: `framepack.texts`)
        vals, cs = text[n]
        col = text_column(vals, cs[at_first]).to_numpy()
        got = framepack.texts(col)
        out.insert(k, n, col if got is None else got)
    out = out.sort_values(["spread_ms", "mean_ms"], ascending=False, kind="stable")
    return out.reset_index(drop=True)


# --- groups and global links --------------------------------------------------------------------------


def _groups(run: Run, with_data: dict, inferred: dict[int, tuple[str, str]], ops: pd.DataFrame,
            links: pd.DataFrame) -> tuple[dict[str, GroupInfo], list[DataIssue]]:
    """`ops`: the (group, rank) pairs of the ranks' operators (`CommFigures.groups`); `links`: the stacked links."""
    issues: list[DataIssue] = []
    named: dict[str, tuple[str, list[int]]] = {}
    for d in run.ranks.values():
        for gid, g in d.info.parallel_groups.items():
            named.setdefault(str(double_hash(gid)), (g.get("group_name") or gid, list(g.get("global_ranks", []))))
            named.setdefault(str(gid), (g.get("group_name") or gid, list(g.get("global_ranks", []))))
    members: dict[str, set[int]] = {}
    for f in (ops, links):
        if len(f):  # the distinct (group, rank) pairs, groups in order (as a groupby on both lists them)
            gc, gv = codes(f["group"])
            rc, rv = codes(f["rank"])
            ok = (gc >= 0) & (rc >= 0)
            pairs = distinct(gc[ok] * max(1, len(rv)) + rc[ok])
            for g_, r_ in zip((pairs // max(1, len(rv))).tolist(), (pairs % max(1, len(rv))).tolist()):
                members.setdefault(str(gv[g_]), set()).add(int(rv[r_]))

    def self_local(r: int, gid: str) -> Optional[int]:
        c = with_data[r]
        if r in inferred and inferred[r][0] == gid:
            return c.self_local.get(inferred[r][1])
        return c.self_local.get(gid)

    groups: dict[str, GroupInfo] = {}
    for gid, rs in members.items():
        name, granks = named.get(gid, (None, []))
        gi = GroupInfo(id=gid, name=name, ranks=sorted(rs))
        l2g: dict[int, int] = {}
        how = []
        for r in sorted(rs):
            if not with_data[r].local_links:
                continue
            loc = self_local(r, gid)
            if loc is None:
                continue
            if loc in l2g and l2g[loc] != r:
                issues.append(DataIssue(with_data[r].source, dq("analysis.local-rank-claimed-twice", l2g=l2g[loc], r=r,
                                                                loc=loc, gi=gi.label, r2=r), "warning"))
                continue
            l2g[loc] = r
        if l2g:
            how.append(N_("inferred from shared operator names and self links") if gid.startswith("mi:")
                       else N_("self links"))
        if granks:
            for i, g in enumerate(granks):
                if i in l2g and l2g[i] != g:
                    issues.append(DataIssue("", dq("analysis.local-rank-conflict", gi=gi.label, i=i, l2g=l2g[i],
                                                   g=g), "info"))
                l2g.setdefault(i, g)
            how.append("parallel_group_info")
        if gid == "" and l2g:
            # MindInsight data that could not be split into groups: only an identity world group is certain
            if not all(k == v for k, v in l2g.items()):
                l2g = {}
                how = []
        gi.local_to_global = l2g
        gi.mapping = " + ".join(how)
        groups[gid] = gi
    return groups, issues


def _infer_legacy_groups(with_data: dict) -> dict[int, tuple[str, str]]:
    """MindInsight link keys are group-local ranks with no group id. Ranks that ran the same communication
    operators (same names) belong to the same group, and their self links give each one's local rank. When the
    local ranks in such a cluster are distinct and every link endpoint is one of them, the mapping is certain.
    Returns rank -> (inferred group id, the rank's original group id)."""
    legacy = {r: c for r, c in with_data.items() if c.local_links and "" in c.self_local and len(c.ops)}
    clusters: dict[frozenset, list[int]] = {}
    for r, c in legacy.items():
        clusters.setdefault(frozenset(c.ops["op"].unique()), []).append(r)
    out: dict[int, tuple[str, str]] = {}
    for rs in sorted(clusters.values(), key=min):
        locs = {legacy[r].self_local[""] for r in rs}
        ends: set[int] = set()
        for r in rs:
            lk = legacy[r].links
            ends |= set(lk["src"].tolist()) | set(lk["dst"].tolist())
        # distinct local ranks; endpoints of absent members stay unmapped (partial collection)
        if len(rs) > 1 and len(locs) == len(rs) and not (len(clusters) == 1 and locs == set(rs) and ends <= locs):
            gid = "mi:" + ",".join(str(r) for r in sorted(rs))
            out.update({r: (gid, "") for r in rs})
    return out


def _global_links(links: pd.DataFrame, groups: dict[str, GroupInfo]) -> tuple[pd.DataFrame, int]:
    """Map group-local src/dst to global ranks with one merge per end (runs have thousands of groups)."""
    if not len(links):
        return links, 0
    mapping = pd.DataFrame([(gid, int(loc), int(glob)) for gid, gi in groups.items()
                            for loc, glob in gi.local_to_global.items()], columns=["group", "local", "global"])
    out = links.reset_index(drop=True)
    keys = pd.MultiIndex.from_frame(mapping[["group", "local"]]) if len(mapping) else None
    ok = np.zeros(len(out), dtype=bool)
    if keys is not None:
        glob = mapping["global"].to_numpy()
        si = keys.get_indexer(pd.MultiIndex.from_arrays([out["group"].astype(object), out["src"]]))
        di = keys.get_indexer(pd.MultiIndex.from_arrays([out["group"].astype(object), out["dst"]]))
        ok = (si >= 0) & (di >= 0)
        src = np.where(ok, glob[np.maximum(si, 0)], out["src"].to_numpy())
        dst = np.where(ok, glob[np.maximum(di, 0)], out["dst"].to_numpy())
        out = out.assign(src=src.astype("int64"), dst=dst.astype("int64"))
    # producers that write global ranks (msprof hccl json): nothing to map
    ok = ok | out["global_ids"].astype(bool).to_numpy()
    out["mapped"] = ok
    return out, int((~ok).sum())
