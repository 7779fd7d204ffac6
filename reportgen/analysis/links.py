"""The link table of the communication analysis: per link (group, source, destination, transport) its averages
over the steps, the table of rank pairs, the transports' median bandwidths and the operators behind each link,
grouped over integer codes (`analysis.codes`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from reportgen.analysis.codes import Groups, codes, distinct, take_rows, text_column

SLOW_LINK_MIN_SIZE_MB = 1.0  # bandwidth of tiny transfers is latency, not bandwidth: not compared
SLOW_LINK_MIN_PEERS = 3  # need at least this many comparable links of the transport


def _link_codes(lk: pd.DataFrame, keys: list[str]) -> list[tuple[np.ndarray, int]]:
    """`keys` of `lk` as codes, a missing value its own code after every other (a groupby with dropna=False
    puts it last)."""
    out = []
    for k in keys:
        c, v = codes(lk[k])
        out.append((np.where(c < 0, len(v), c), len(v) + 1))
    return out


def _average_rows(lk: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per rank: stored-average rows if it has them, else per-step sums averaged over the rank's steps."""
    nums = ["time_ms", "size_mb", "stored_bandwidth_gbps"]
    stored = (lk["stored"] & lk["step"].isna()).to_numpy(dtype=bool)
    rank = lk["rank"].to_numpy()
    kc = _link_codes(lk, ["rank", *keys])
    parts = []

    def rows_out(at: np.ndarray, sums: pd.DataFrame) -> pd.DataFrame:
        out = pd.DataFrame({"rank": rank[at]})
        for k in keys:
            out[k] = lk[k].to_numpy()[at] if lk[k].dtype.kind in "iufb" else text_column(lk[k].to_numpy(dtype=object), at)
        for c in nums:
            out[c] = sums[c].to_numpy()
        return out
    if stored.any():
        rows = np.flatnonzero(stored)
        g = Groups([(c[rows], n) for c, n in kc], len(rows))
        parts.append(rows_out(rows[g.first], g.agg(take_rows(lk[nums], rows), nums, "sum", min_count=1)))
    rest = np.flatnonzero(~stored & ~np.isin(rank, rank[stored]))
    if len(rest):
        sc, sv = codes(lk["step"].iloc[rest].fillna(-1))
        g1 = Groups([(kc[0][0][rest], kc[0][1]), (sc, len(sv)), *[(c[rest], n) for c, n in kc[1:]]], len(rest))
        per = g1.agg(lk[nums].iloc[rest], nums, "sum", min_count=1)  # Σ per (rank, step, link)
        first = rest[g1.first]
        g2 = Groups([(c[first], n) for c, n in kc], len(first))
        avg = per.groupby(g2.gid, sort=True).sum(min_count=1)  # Σ over the steps per (rank, link)
        # the rank's steps: distinct steps among its (rank, step, link) sums
        rs = kc[0][0][rest][g1.first] * max(1, len(sv)) + sc[g1.first]
        pairs = distinct(rs)
        nsteps = np.bincount(pairs // max(1, len(sv)), minlength=kc[0][1])
        at = first[g2.first]
        out = rows_out(at, avg)
        div = nsteps[kc[0][0][at]].astype(float)
        for c in nums:
            out[c] = out[c] / div
        parts.append(out)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def link_table(links_g: pd.DataFrame) -> pd.DataFrame:
    if not len(links_g):
        return pd.DataFrame()
    # per rank, the most aggregated records it has: "total", else "step", else "op" (vectorised: one pass)
    scope = links_g["scope"].to_numpy(dtype=object)
    rank = links_g["rank"].to_numpy()
    level = np.select([scope == "total", scope == "step", scope == "op"], [0, 1, 2], 3)
    best = pd.Series(level).groupby(rank).transform("min").to_numpy()
    order = np.argsort(rank, kind="stable")  # as the per-rank groups came out: ranks in order, rows in order
    sel = order[(level[order] == best[order]) & (level[order] < 3)]
    base = links_g.iloc[sel].reset_index(drop=True)
    keys = ["group", "src", "dst", "transport", "mapped"]
    avg = _average_rows(base, keys)
    if not len(avg):
        return avg
    g = Groups(_link_codes(avg, keys), len(avg))
    out = g.agg(avg, ["time_ms", "size_mb", "stored_bandwidth_gbps"], "sum", min_count=1)
    # the ranks that reported each link, ascending, as text
    rc, rv = codes(avg["rank"])
    pairs = distinct(g.gid * max(1, len(rv)) + rc[g.rows])
    pg, pr = pairs // max(1, len(rv)), pairs % max(1, len(rv))
    names = np.array([str(x) for x in rv], dtype=object)[pr]
    cuts = np.searchsorted(pg, np.arange(g.n + 1))
    out["reporters"] = [",".join(names[cuts[i]:cuts[i + 1]]) for i in range(g.n)]
    head = avg.iloc[g.first].reset_index(drop=True)
    out = pd.concat([head[keys], out], axis=1)
    out["bandwidth_gbps"] = out["size_mb"] / out["time_ms"].where(out["time_ms"] > 0)
    # operator counts per link: per-operator records where the producer wrote them
    lk4 = ["group", "src", "dst", "transport"]
    # (only the columns read: the per-operator records are most of the rows, issue 33)
    per_op = links_g.loc[links_g["scope"].isin(["op", "sample"]).to_numpy(dtype=bool), [*lk4, "op"]]
    if len(per_op):
        both = pd.concat([out[lk4], per_op[lk4]], ignore_index=True)
        bc = _link_codes(both, lk4)
        kg = Groups(bc, len(both))  # one numbering of the links of both tables
        del both, bc
        link_of = np.full(len(out) + len(per_op), -1, dtype=np.int64)
        link_of[kg.rows] = kg.gid
        oc, ov = codes(per_op["op"])
        del per_op
        mine = link_of[len(out):]
        ok = oc >= 0  # nunique leaves missing names out
        uniq = distinct(mine[ok] * max(1, len(ov)) + oc[ok])
        cnt = np.bincount(uniq // max(1, len(ov)), minlength=kg.n)
        out["n_ops"] = cnt[link_of[:len(out)]]
    else:
        out["n_ops"] = 0
    out["self"] = out["src"] == out["dst"]
    return out.sort_values(["mapped", "bandwidth_gbps"], ascending=[False, True], kind="stable").reset_index(drop=True)


def pair_table(link_table: pd.DataFrame) -> pd.DataFrame:
    """Global (src, dst, transport) over all groups: Σtime, Σsize, bandwidth = Σsize/Σtime."""
    if not len(link_table):
        return pd.DataFrame(columns=["src", "dst", "transport", "time_ms", "size_mb", "bandwidth_gbps"])
    lt = link_table[link_table["mapped"] & ~link_table["self"]]
    if not len(lt):
        return pd.DataFrame(columns=["src", "dst", "transport", "time_ms", "size_mb", "bandwidth_gbps"])
    g = lt.groupby(["src", "dst", "transport"])[["time_ms", "size_mb"]].sum().reset_index()
    g["bandwidth_gbps"] = g["size_mb"] / g["time_ms"].where(g["time_ms"] > 0)
    return g


def transport_medians(pairs: pd.DataFrame) -> dict[str, float]:
    """Median bandwidth per transport over links that carry enough data to measure it (the reference a link is
    compared with: the `vs_median` column, and the slow-link rule's own comparison)."""
    if not len(pairs):
        return {}
    pairs = pairs[(pairs["transport"] != "LOCAL") & (pairs["size_mb"] >= SLOW_LINK_MIN_SIZE_MB)
                  & pairs["bandwidth_gbps"].notna()]
    return {str(t): float(f["bandwidth_gbps"].median()) for t, f in pairs.groupby("transport")
            if len(f) >= SLOW_LINK_MIN_PEERS}


def link_ops_table(links_g: pd.DataFrame) -> pd.DataFrame:
    if not len(links_g):
        return pd.DataFrame()
    f = links_g[links_g["scope"].isin(["op", "sample"]) & links_g["mapped"] & (links_g["src"] != links_g["dst"])]
    f = f[~(f["stored"] & f["step"].isna())]
    return f[["rank", "step", "op", "group", "src", "dst", "transport", "time_ms", "size_mb",
              "bandwidth_gbps"]].reset_index(drop=True)


# --- views: matrices and the node-link graph ------------------------------------------------------------
