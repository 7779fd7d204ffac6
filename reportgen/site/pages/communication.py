"""Plan the cluster communication page (plain data only); the rank pages' section is in `pages.rank.communication`."""

from __future__ import annotations

from reportgen.i18n import N_, _, text

from dataclasses import field
from typing import Optional

import pandas as pd

from reportgen import urls
from reportgen.analysis import Analysis
from reportgen.analysis.links import SLOW_LINK_MIN_SIZE_MB
from reportgen.charts import Chart
from reportgen.charts import comm as comm_charts
from reportgen.charts import steps as step_charts
from reportgen.charts.column_codec import to_columns
from reportgen.charts.steps import MAX_BARS
from reportgen.rules import highlights
from reportgen.site.views.waits import waits_context
from reportgen.site.views import steps as step_views
from reportgen.site.views.communication import (
    MAX_BOX_LINKS,
    MAX_DRILL_BOX_LINKS,
    MAX_DRILL_RANKS,
    MAX_OP_ROWS,
    drill_cells,
    graph_layout,
    group_label,
    group_rows,
    matrix_views,
    shown_label,
)
from reportgen.rules.highlights import Highlights
from reportgen.site.plan.page import (Page, PageContext, PageKind, PlanInput, multi_rank,
                                  view)
from reportgen.site.views.values import PICKED_TITLE, num, num_column, rank_bar_label, representative_ranks
from reportgen.numbers import to_int as _int

MAX_LINK_ROWS = 1000  # rows in the HTML table (the slowest; the CSV has all): 3,000 rows were most of a 1,024-rank page's DOM
MAX_MATRIX_GROUPS = 12
PRODUCER_LABELS = {
    "hccl_raw": N_("MindInsight hccl_raw_{rank}.csv"),
    "hccl_trace": N_("raw HCCL task traces (hccl_info/*.trace), computed with MindInsight's rules"),
    "msprof_hccl": N_("msprof timeline/hccl_*.json, computed with MindSpore's rules"),
    "communication.json": N_("CANN communication.json + communication_matrix.json"),
}
TIME_LABELS = {"communication.json": N_("Elapse"), "hccl_raw": N_("Communication"), "hccl_trace": N_("Communication"),
               "msprof_hccl": N_("Communication")}



def source_labels(a: Analysis) -> list[str]:
    """What the communication data was read from, per producer (a database's own label where it has one: the DB
    holds communication.json's twin tables, and "communication.json" would name a file that is not there)."""
    labels: dict[str, set[str]] = {p: set() for p in a.comm.producers}
    for r in a.run.rank_ids:
        c = a.run.ranks[r].communication
        if c is not None and c.producer in labels:
            labels[c.producer].add(c.label or PRODUCER_LABELS.get(c.producer, c.producer))
    return [lab for p in a.comm.producers for lab in sorted(labels[p] or {PRODUCER_LABELS.get(p, p)})]


RANK_COLUMNS = [
    {"key": "rank", "label": N_("Rank"), "fmt": "rank"}, {"key": "host", "label": N_("Host"), "fmt": "text"},
    {"key": "communication_ms", "label": N_("Communication (ms)"), "fmt": "ms"},
    {"key": "transit_ms", "label": N_("Transit (ms)"), "fmt": "ms"}, {"key": "wait_ms", "label": N_("Wait (ms)"), "fmt": "ms"},
    {"key": "sync_ms", "label": N_("Synchronisation (ms)"), "fmt": "ms"}, {"key": "idle_ms", "label": N_("Idle (ms)"), "fmt": "ms"},
    {"key": "wait_ratio", "label": N_("Wait ratio"), "fmt": "ratio"}, {"key": "n_ops", "label": N_("Ops per step"), "fmt": "num"},
]
LINK_COLUMNS = [
    {"key": "src", "label": N_("Source"), "fmt": "int"}, {"key": "dst", "label": N_("Destination"), "fmt": "int"},
    {"key": "transport", "label": N_("Transport"), "fmt": "text"}, {"key": "group", "label": N_("Group"), "fmt": "text"},
    {"key": "time_ms", "label": N_("Time (ms)"), "fmt": "ms"}, {"key": "size_mb", "label": N_("Size (MB)"), "fmt": "ms"},
    {"key": "bandwidth_gbps", "label": N_("Bandwidth (GB/s)"), "fmt": "ms"},
    {"key": "vs_median", "label": N_("vs transport median"), "fmt": "ratio"},
    {"key": "n_ops", "label": N_("Operators"), "fmt": "int"}, {"key": "reported_by", "label": N_("Reported by"), "fmt": "text"},
]


def rank_rows(a: Analysis, hl: Highlights) -> list[dict]:
    c = a.comm
    low = hl.waits_least
    pr = c.per_rank.to_dict("index")
    rows = []
    for r in a.run.rank_ids:
        info = a.run.ranks[r].info
        rec = pr.get(r)
        row = {"rank": r, "host": info.host or "", "href": urls.rank_page(r), "low_wait": r in low,
               "has_data": rec is not None, "pp_stage": a.run.info.stage_of_rank.get(r, "")}
        for k in ("communication_ms", "transit_ms", "wait_ms", "sync_ms", "idle_ms", "wait_ratio", "n_ops"):
            row[k] = num(rec.get(k)) if rec else None
        rows.append(row)
    return rows


def link_rows(a: Analysis, frame: Optional[pd.DataFrame] = None) -> list[dict]:
    """A dict per link (the page's table, its CSV, the rank pages' links), built column by column (as
    `records` would give each row's values; a 1,024-rank run has tens of thousands of links)."""
    lt = a.comm.links if frame is None else frame
    n = len(lt)
    if not n:
        return []

    def raw(col: str, default=None) -> list:
        return lt[col].to_numpy(dtype=object).tolist() if col in lt.columns else [default] * n

    def nums(col: str) -> list:
        return num_column(lt[col]) if col in lt.columns else [None] * n
    labels: dict = {}
    group = raw("group")
    for g in group:
        if g not in labels:
            labels[g] = group_label(a, g)
    cols = zip([int(v) for v in raw("src")], [int(v) for v in raw("dst")], raw("transport"), group,
               [bool(v) for v in raw("mapped")], nums("time_ms"), nums("size_mb"), nums("bandwidth_gbps"),
               nums("stored_bandwidth_gbps"), nums("vs_median"), [int(v or 0) for v in raw("n_ops")],
               raw("reporters", ""), [bool(v) for v in raw("slow")], [bool(v) for v in raw("self")])
    return [{"src": src, "dst": dst, "transport": tr, "group": labels[g], "group_id": g, "mapped": mapped,
             "time_ms": t, "size_mb": size, "bandwidth_gbps": bw, "stored_bandwidth_gbps": stored,
             "vs_median": vs, "n_ops": n_ops, "reported_by": rep, "slow": slow, "self": own}
            for src, dst, tr, g, mapped, t, size, bw, stored, vs, n_ops, rep, slow, own in cols]


def op_rows(a: Analysis, limit: int = MAX_OP_ROWS) -> list[dict]:
    ops = a.comm.ops
    if not len(ops):
        return []
    out = []
    for rec in ops.head(limit).to_dict("records"):
        out.append({"op": rec["op"], "group": group_label(a, rec["group"]), "kind": rec["kind"],
                    "ranks": int(rec["ranks"]), "mean_ms": num(rec["mean_ms"]), "min_ms": num(rec["min_ms"]),
                    "max_ms": num(rec["max_ms"]), "spread_ms": num(rec["spread_ms"]),
                    "transit_ms": num(rec["transit_ms"]), "wait_ms": num(rec["wait_ms"]),
                    "sync_ms": num(rec["sync_ms"]), "idle_ms": num(rec["idle_ms"]),
                    "min_rank": _int(rec["min_rank"]), "max_rank": _int(rec["max_rank"]),
                    "least_wait_rank": _int(rec["least_wait_rank"])})
    return out




def _rank_chart(a: Analysis, rows: list[dict], hl: Highlights) -> Optional[Chart]:
    data = [r for r in rows if r["has_data"]]
    if not data:
        return None
    if len(data) <= MAX_BARS:
        groups = [(r["rank"], str(r["rank"])) for r in data]
        x_title = _("Rank")
    else:  # the culprits and each stage's extremes, each its own bar: never averaged away
        total = pd.Series({r["rank"]: r["communication_ms"] for r in data}, dtype=float)
        picked = representative_ranks(total, a.run.info.stage_of_rank, hl.slow_ranks | hl.waits_least, MAX_BARS)
        groups = [(r, rank_bar_label(r, role)) for r, role in picked.items()]
        x_title = _(PICKED_TITLE)
    with_other = a.comm.producers == ["communication.json"]

    def bars(by_rank: dict) -> list[dict]:
        out = []
        for gi, (r, label) in enumerate(groups):
            g = by_rank.get(r)
            if g is None:
                continue
            transit, wait = num(g.get("transit_ms")) or 0, num(g.get("wait_ms")) or 0
            other = max(0.0, (num(g.get("communication_ms")) or 0) - transit - wait) if with_other else 0.0
            for pi, (part, v) in enumerate(((N_("Transit"), transit), (N_("Wait"), wait), (N_("Idle / other"), other))):
                if v > 0 or part != "Idle / other":
                    out.append({"label": label, "order": gi, "part": _(part), "part_order": pi, "value": round(v, 6)})
        return out

    chart = Chart("comm-by-rank", comm_charts.comm_by_rank(bars({r["rank"]: r for r in data}), x_title),
                  N_("Communication time per step of each rank: transit (data on the wire), wait (for peers) and "
                     "the rest of the operators' elapse. A rank that waits much less than its peers is usually the "
                     "one they wait for."))
    ps = a.comm.per_rank_step
    if len(ps):
        ps = ps.dropna(subset=["step"])
        by_step = {int(s): g.groupby("rank").mean(numeric_only=True).to_dict("index") for s, g in ps.groupby("step")}
        step_views.attach(chart, sorted(by_step), lambda s: {"rows": bars(by_step[s])},
                          axis_title=(_("Time per step (ms)"), _("Step {n}: time (ms)")))
    return chart


def _wait_strip(a: Analysis, rows: list[dict], hl: Highlights) -> Optional[Chart]:
    """Above a bar per rank: every rank's wait per step as a tick on its pipeline stage's line, the ranks the
    findings name drawn red with their number (the distribution, compared within the stage, and the culprit)."""
    data = [r for r in rows if r["has_data"] and r["wait_ms"] is not None]
    if len(data) <= MAX_BARS:
        return None
    flagged = hl.slow_ranks | hl.waits_least
    multi = a.run.info.stages > 1

    def strip_rows(wait: dict) -> list[dict]:
        return [{"rank": r["rank"], "value": round(float(wait[r["rank"]]), 4), "href": r["href"],
                 "status": "slow" if r["rank"] in flagged else "normal",
                 "stage": _("stage {n}").format(n=r["pp_stage"]) if multi and r["pp_stage"] != "" else _("all ranks")}
                for r in data if num(wait.get(r["rank"])) is not None]

    strip = strip_rows({r["rank"]: r["wait_ms"] for r in data})
    chart = Chart("comm-wait", step_charts.rank_strip(strip, _("Wait per step (ms)")),
                  _("Wait per step of each of the {n} ranks, one tick per rank{stages}; black: the median; red and "
                    "numbered: ranks a finding names (the rank the others wait for waits least). Click a mark to "
                    "open the rank's page.").format(n=len(strip), stages=_(", a line per pipeline stage") if multi else ""),
                  renderer="canvas" if len(strip) > 3000 else "svg")
    ps = a.comm.per_rank_step
    if len(ps) and "wait_ms" in ps:
        ps = ps.dropna(subset=["step"])
        by_step = {int(s): g.groupby("rank")["wait_ms"].mean().to_dict() for s, g in ps.groupby("step")}
        step_views.attach(chart, sorted(by_step), lambda s: {"ranks": strip_rows(by_step[s])}, join="rank",
                          axis_title=(_("Wait per step (ms)"), _("Wait in step {n} (ms)")))
    return chart


def _step_chart(a: Analysis) -> Optional[Chart]:
    ps = a.comm.per_rank_step
    if not len(ps) or ps["step"].dropna().nunique() < 2:
        return None
    g = ps.dropna(subset=["step"]).groupby("step")[["communication_ms", "wait_ms"]].mean()
    rows = []
    for s, rec in g.iterrows():
        rows.append({"step": int(s), "series": _("Communication"), "value": num(rec["communication_ms"])})
        rows.append({"step": int(s), "series": _("Wait"), "value": num(rec["wait_ms"])})
    rows = [r for r in rows if r["value"] is not None]
    return Chart("comm-per-step", comm_charts.comm_per_step(rows),
                 N_("Per step, the mean over ranks of communication and wait time (MindInsight's time view)."))


def _matrix_chart(a: Analysis, lt: pd.DataFrame) -> Optional[Chart]:
    c = a.comm
    if not len(c.links) or not c.links["mapped"].any():
        return None
    mapped = c.links[c.links["mapped"]]
    by_size = mapped.groupby("group")["size_mb"].sum().sort_values(ascending=False)
    gids = list(by_size.index)[:MAX_MATRIX_GROUPS]
    views = matrix_views(lt, a.run.rank_ids, gids)  # all groups (None) and each group's, in one pass
    all_cells = views[None]
    if not all_cells["cells"]:
        return None
    cells = [{**x, "group": "All groups"} for x in all_cells["cells"]]
    labels = ["All groups"]
    for gid in gids:
        m = views[gid]
        if m["cells"] and m["bin"] == all_cells["bin"]:
            lab = group_label(a, gid)
            labels.append(lab)
            cells.extend({**x, "group": lab} for x in m["cells"])
    return Chart("comm-matrix", comm_charts.comm_matrix(cells, all_cells["bin"], labels),
                 _("Rank-by-rank matrix of the averaged step (global ranks; rows send, columns receive; on-chip self "
                   "copies left out). Pick the metric and the communication group above the chart; red outlines are "
                   "slow links.")
                 + (_(" Ranks are binned in blocks of {n}: bandwidth is the block's total size over total time, and "
                      "the tooltip gives its slowest link.").format(n=all_cells["bin"]) if all_cells["bin"] > 1 else ""),
                 renderer="canvas" if len(cells) > 4000 else "svg")


def host_pairs(a: Analysis, hl: Highlights, g: Optional[dict] = None) -> list[dict]:
    """The drill-down of the host-level graph: every pair of hosts that exchange data, slow ones first (`g`: the
    graph's `graph_layout`, when it is at hand)."""
    g = g if g is not None else graph_layout(a.comm, a.run, slow=set(hl.slow_links))
    if g["by"] != "host":
        return []
    rows = [{"src": e["src"], "dst": e["dst"], "transport": e["transport"], "links": e["links"],
             "time_ms": e["time_ms"], "size_mb": e["size_mb"], "bandwidth_gbps": e["bandwidth_gbps"],
             "slow": e["slow"], "slow_links": e["slow_links"]} for e in g["edges"] + g.get("within", [])]
    return sorted(rows, key=lambda r: (not r["slow"], r["bandwidth_gbps"] if r["bandwidth_gbps"] is not None
                                       else float("inf")))


def _graph_chart(a: Analysis, hl: Highlights, g: Optional[dict] = None) -> Optional[Chart]:
    g = g if g is not None else graph_layout(a.comm, a.run, slow=set(hl.slow_links))
    if not g["nodes"]:
        return None
    nodes = g["nodes"]
    cap = N_("Devices as nodes (size: communication time per step; colour: comm/(comm+wait), darker means less "
             "waiting, often the slow one), links as edges coloured by bandwidth; thick edges are slow links.")
    if g["by"] == "host":
        cap = N_("Hosts as nodes (size: communication time per step; colour: comm/(comm+wait)), the links between two "
               "hosts summed into one edge coloured by bandwidth; a host and an edge carrying a slow link are "
               "marked. The table below lists every host pair; the link table above has every link.")
    return Chart("comm-graph", comm_charts.comm_graph(nodes, g["edges"], g["by"]), cap,
                 renderer="canvas" if len(g["edges"]) > 3000 else "svg")


def _drill_chart(lt: pd.DataFrame) -> Optional[Chart]:
    """Above MAX_RANK_NODES ranks: the rank-level matrix of the hosts picked in the host-level graph (drawn by the
    browser from a bounded columnar dataset; empty until hosts are picked)."""
    cols, n = drill_cells(lt)
    kept = len(cols["cells"]["rows"])
    if not kept:
        return None
    cap = _("Pick hosts in the graph above (drag a rectangle over them, or click one; double-click clears): the "
            "links among their devices, rank by rank, each cell with the link's time and size; click one for the "
            "sending rank. At most {m} devices at once: the hosts picked first.").format(m=MAX_DRILL_RANKS)
    if kept < n:
        cap += " " + _("The page carries {kept} of the run's {n} links: the slow links and the slowest others; a "
                       "link left out is an empty cell.").format(kept=kept, n=n)
    chart = Chart("comm-drill", comm_charts.drill_matrix(), cap)
    chart.columns = cols
    return chart


def _box_chart(a: Analysis, lt: pd.DataFrame, per_host: bool = False) -> Optional[Chart]:
    lo = a.comm.link_ops
    if not len(lo) or not len(lt):
        return None
    cand = lt[lt["mapped"] & ~lt["self"] & (lt["transport"] != "LOCAL")]
    if not len(cand):
        return None
    slow = cand[cand["slow"]]
    rest = cand[~cand["slow"] & (cand["size_mb"] >= SLOW_LINK_MIN_SIZE_MB)].sort_values("bandwidth_gbps")
    pick = pd.concat([slow, rest]).drop_duplicates(subset=["src", "dst", "transport"]).head(MAX_BOX_LINKS)
    if per_host:  # the host drill-down: each host's slowest link too, so picked hosts have boxes
        host = cand["src"].map(lambda r: a.run.ranks[int(r)].info.host if int(r) in a.run.ranks else "")
        per = cand.assign(h=host).sort_values("bandwidth_gbps").drop_duplicates(subset=["h"])
        pick = pd.concat([pick, per.drop(columns="h")]).drop_duplicates(
            subset=["src", "dst", "transport"]).head(MAX_BOX_LINKS + MAX_DRILL_BOX_LINKS)
    rows = []
    # the operators of the picked links' rank pairs first (numbers: cheap); the transport (text) compared on those
    # only (each link's three comparisons over every operator of the run were 1.4 s at 512 ranks)
    lo = lo[lo["src"].isin(pick["src"].unique()) & lo["dst"].isin(pick["dst"].unique())]
    lo = lo.dropna(subset=["bandwidth_gbps"])
    # each link's operators (positions in `lo`, in its order), found in one grouping (a filter of `lo` per link
    # was most of the page's chart time at 1,000 ranks)
    at = lo.groupby(["src", "dst", "transport"], sort=False).indices if len(lo) else {}
    ops = lo[["op", "time_ms", "size_mb", "bandwidth_gbps"]].to_dict("records")
    for order, rec in enumerate(pick.to_dict("records")):
        label = f"{rec['src']}-{rec['dst']} {rec['transport']}"
        for op in (ops[i] for i in at.get((rec["src"], rec["dst"], rec["transport"]), ())):
            rows.append({"link": label, "order": order, "src": str(int(rec["src"])), "dst": str(int(rec["dst"])),
                         "op": str(op["op"]), "time_ms": num(op["time_ms"]), "size_mb": num(op["size_mb"]),
                         "bandwidth_gbps": round(float(op["bandwidth_gbps"]), 4), "slow": bool(rec["slow"])})
    if not rows:
        return None
    return Chart("comm-link-ops", comm_charts.link_op_boxplot(rows),
                 N_("Per-operator bandwidth, time or size (pick above) on the slow links and the slowest other "
                    "links (box: quartiles, whiskers: min-max, a dot per operator). A link slow for every operator is "
                    "a bad link; one slow operator is an outlier."))


Download = tuple[str, list[dict], list[dict]]  # CSV path, columns, rows
LINK_CSV_COLUMNS = LINK_COLUMNS + [{"key": "stored_bandwidth_gbps", "label": N_("Producer's bandwidth (GB/s)")},
                                   {"key": "mapped", "label": N_("Global ranks")}, {"key": "slow", "label": N_("Slow")}]


def marked_links(a: Analysis, hl: Highlights) -> pd.DataFrame:
    """The link table with `slow` set where a slow-link finding names the link (the thresholds in force)."""
    lt = a.comm.links
    if not len(lt):
        return lt
    lt = lt.copy()
    lt["slow"] = [(int(s), int(d)) in hl.slow_links and bool(m) for s, d, m in zip(lt["src"], lt["dst"], lt["mapped"])]
    return lt


@view
class CommContext(PageContext):
    has_data: bool
    sources: list[str] = field(default_factory=list)
    time_label: str = ""
    unit_notes: list[str] = field(default_factory=list)
    averaging: str = ""
    rank_columns: list[dict] = field(default_factory=list)
    ranks: list[dict] = field(default_factory=list)
    low_wait: list[int] = field(default_factory=list)
    low_wait_rule: str = ""
    rules_link: str = ""
    without: list[int] = field(default_factory=list)
    groups: list[dict] = field(default_factory=list)
    per_group: list[dict] = field(default_factory=list)
    ops: list[dict] = field(default_factory=list)
    n_ops: int = 0
    link_columns: list[dict] = field(default_factory=list)
    links: list[dict] = field(default_factory=list)
    n_links: int = 0
    unmapped: list[dict] = field(default_factory=list)
    n_unmapped: int = 0
    transports: list[str] = field(default_factory=list)
    slow_links: list[dict] = field(default_factory=list)
    host_pairs: list[dict] = field(default_factory=list)
    medians: list[dict] = field(default_factory=list)
    slow_rule: str = ""
    slow_rule_link: str = ""
    has_stored_bw: bool = False
    drill_max: int = MAX_DRILL_RANKS  # devices the host drill-down draws at once
    waits: Optional[dict] = None  # who waits for whom (site/views/waits.py)


LINKS_COLUMNAR = 500  # the link scatter's points carried columnar above this many


def plan_comm_context(a: Analysis, hl: Highlights) -> tuple[dict, list[Chart], list[Download]]:
    """The communication page's context, charts and CSV downloads (all links, all ranks)."""
    c = a.comm
    waits, wchart = waits_context(a)  # who waits for whom (site/views/waits.py)
    if not c.has_data:
        return {"has_data": False, "waits": waits}, [wchart] if wchart else [], []
    rows = rank_rows(a, hl)
    lt = marked_links(a, hl)
    links = link_rows(a, lt)
    mapped = [l for l in links if l["mapped"]]
    unmapped = [l for l in links if not l["mapped"]]
    layout = graph_layout(a.comm, a.run, slow=set(hl.slow_links))  # (the graph and its host-pair table)
    graph = _graph_chart(a, hl, layout)
    by_host = graph is not None and any("members" in n for n in graph.spec["datasets"]["nodes"])
    charts = [ch for ch in (_rank_chart(a, rows, hl), _wait_strip(a, rows, hl), _step_chart(a), graph,
                            _matrix_chart(a, lt), _drill_chart(lt) if by_host else None,
                            _box_chart(a, lt, per_host=by_host), wchart) if ch is not None]
    if mapped:
        # only the fields the chart reads: at 1,000+ ranks the scatter has thousands of points
        points = [{"link": f"{l['src']}→{l['dst']}", "group": l["group"], "transport": l["transport"],
                   "bandwidth_gbps": l["bandwidth_gbps"], "size_mb": l["size_mb"], "time_ms": l["time_ms"],
                   "slow": l["slow"]} for l in mapped if not l["self"] and l["bandwidth_gbps"]]
        charts.insert(2, Chart("comm-links", comm_charts.link_bandwidth(points),
            N_("Every link between two devices: data per step against bandwidth, by transport. Large transfers "
               "should sit at the transport's line rate; a point well below its peers is a slow link (ringed and "
               "named)."), renderer="canvas" if len(points) > 1500 else "svg"))
        if len(points) > LINKS_COLUMNAR:  # 185 bytes a point as objects (the group's label on each): ~50 columnar
            to_columns(charts[2], "links", list(points[0]), dicts=("group", "transport"))
    transports = sorted({l["transport"] for l in links})
    groups = [{"label": shown_label(g), "name": g.name or "", "id": g.id, "ranks": len(g.ranks), "mapping": g.mapping}
              for g in sorted(c.groups.values(), key=lambda g: (g.name or "~", g.id))]
    per_group = group_rows(a, c.per_group_rank) if len(c.per_group_rank) else []
    per_group.sort(key=lambda g: -(g["communication_ms"] or 0))
    ctx = {
        "has_data": True,
        "waits": waits,
        "sources": source_labels(a),
        "time_label": " / ".join(sorted({TIME_LABELS.get(p, "Communication") for p in c.producers})),
        "unit_notes": [text(n) for n in c.unit_notes],
        "averaging": c.averaging,
        "rank_columns": RANK_COLUMNS,
        "ranks": rows,
        "low_wait": sorted(hl.waits_least),
        "low_wait_rule": N_("named by the late-arrival finding (it waits less than its stage's peers in most steps, "
                            "with the thresholds in force)"),
        "rules_link": str(urls.Target(urls.RULES, "rule-late-arrival")),
        "without": c.ranks_without_data,
        "groups": groups,
        "per_group": per_group[:200],
        "ops": op_rows(a),
        "n_ops": len(c.ops),
        "link_columns": LINK_COLUMNS,
        "links": mapped[:MAX_LINK_ROWS],
        "n_links": len(mapped),
        "unmapped": unmapped[:200],
        "n_unmapped": len(unmapped),
        "transports": transports,
        "slow_links": [{"src": l["src"], "dst": l["dst"], "transport": l["transport"]} for l in mapped if l["slow"]],
        "host_pairs": host_pairs(a, hl, layout)[:500],
        "medians": [{"transport": t, "median": m} for t, m in sorted(c.transport_medians.items())],
        "slow_rule": N_("links named by the slow-link finding (far below the median bandwidth of their transport and "
                        "costing time, with the thresholds in force)"),
        "slow_rule_link": str(urls.Target(urls.RULES, "rule-slow-link")),
        # the note explains MindInsight's summed per-operator bandwidth; CANN's stored figure is size/time
        "has_stored_bw": "hccl_raw" in c.producers and any(l["stored_bandwidth_gbps"] is not None and l["bandwidth_gbps"] is not None and
                             abs(l["stored_bandwidth_gbps"] - l["bandwidth_gbps"]) > 1e-3 * max(1.0, l["bandwidth_gbps"])
                             for l in mapped),
    }
    downloads = [(urls.COMM_LINKS_CSV, LINK_CSV_COLUMNS, links),
                 (urls.COMM_RANKS_CSV, RANK_COLUMNS + [{"key": "low_wait", "label": N_("Waits least")}], rows)]
    return ctx, charts, downloads


def _plan(inp: PlanInput) -> list[Page]:
    ctx, charts, csv = plan_comm_context(inp.analysis, highlights.of(inp))
    return [Page(urls.COMMUNICATION, N_("Cluster communication"), PAGE.partial, CommContext(**inp.common, **ctx),
                 charts=charts,
                 downloads=csv)]


PAGE = PageKind("communication", urls.COMMUNICATION, N_("Communication"), "_communication.html", _plan,
                applies=multi_rank)
