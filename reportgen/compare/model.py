"""The comparison of two `summary.json` documents as plain dataclasses (`compare.json`: docs/compare-json.md).

Everything here reads summaries only, so a CI job that kept nothing but the last good `summary.json` can compare.
Noise: a delta no larger than the step-to-step spread of either run (`metrics.step_trace.spread`) is "within
noise" and never counts as a regression; items without a spread of their own (operators, communication, memory)
use the step time's relative spread scaled to their size.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from reportgen.i18n import N_, Msg, Percent, lazy
from reportgen.site.values import num
from reportgen.numbers import rounded

SCHEMA = "msreport.compare/1"
PHASE_GATE_SHARE = 0.05  # a phase takes part in the gate when it is at least 5 % of the step (in either run)
DEFAULT_LINK_PCT = 20.0  # links whose bandwidth changed by more than this are listed
TOP_ITEMS = 40  # operators listed (by size of the change)

# English labels (compare.json); the pages translate them through the catalog (`|t`)
PHASE_LABELS = {
    "total_ms": N_("Step time"), "iteration_interval_ms": N_("Iteration interval"), "fp_and_bp_ms": N_("FP + BP"),
    "tail_ms": N_("Tail"), "computing_ms": N_("Computing"),
    "communication_not_overlapped_ms": N_("Communication (not overlapped)"),
    "overlapped_ms": N_("Overlapped"), "communication_ms": N_("Communication"), "free_ms": N_("Free"),
    "stage_ms": N_("Stage"), "bubble_ms": N_("Bubble"), "communication_not_overlapped_exclude_receive_ms":
        N_("Communication (not overlapped, excl. receive)"), "preparing_ms": N_("Preparing"),
}
# the statuses of a compared quantity, for the pages (`|t`)
# kinds and sides of the compared operators and communication items, for the pages (`|t`)
ITEM_WORDS = (N_("type"), N_("operator"), N_("collective"), N_("aicore"), N_("aicpu"))
STATUS_WORDS = (N_("slower"), N_("faster"), N_("within noise"), N_("unchanged"), N_("new"), N_("vanished"), N_("n/a"))
SEVERITY_RANK = {"info": 0, "warning": 1, "critical": 2}
# phases that add up to the step (no aggregate of others): the per-rank chart and "phase that changed most"
LEAF_PHASES = ("iteration_interval_ms", "fp_and_bp_ms", "tail_ms", "computing_ms",
               "communication_not_overlapped_exclude_receive_ms", "bubble_ms", "free_ms")


def phase_label(key: str) -> str:
    return PHASE_LABELS.get(key, key.removesuffix("_ms").replace("_", " ").capitalize())


def english(value: Any) -> Any:
    """`value` with every message (`i18n.Msg`) rendered in English: compare.json and trend.json are
    language-neutral like summary.json; the pages render the same messages in the report's language."""
    if isinstance(value, Msg):
        return value.en
    if isinstance(value, dict):
        return {k: english(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [english(v) for v in value]
    return value


_num = num  # a finite float or None (site.values.num)


def _r(v: Optional[float], nd: int = 6) -> Optional[float]:
    return rounded(v, nd)


def _mean(values) -> Optional[float]:
    vals = [v for v in (_num(x) for x in values) if v is not None]
    return sum(vals) / len(vals) if vals else None


@dataclass
class Delta:
    """One compared quantity. `status`: slower | faster | within noise | unchanged | new | vanished | n/a
    (for quantities where more is better, e.g. bandwidth, "slower" still means "worse")."""

    key: str
    label: str
    base: Optional[float]
    new: Optional[float]
    delta: Optional[float] = None  # new - base
    delta_pct: Optional[float] = None
    noise: Optional[float] = None  # the spread the delta was judged against (same unit)
    status: str = "n/a"
    extra: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = {"key": self.key, "label": english(self.label), "base": _r(self.base), "new": _r(self.new),
             "delta": _r(self.delta), "delta_pct": _r(self.delta_pct, 3), "noise": _r(self.noise),
             "status": self.status}
        d.update(english(self.extra))
        return d


def delta(key: str, label: str, base: Any, new: Any, noise: Optional[float] = None, *,
          higher_is_better: bool = False, **extra) -> Delta:
    b, n = _num(base), _num(new)
    d = Delta(key, label, b, n, noise=_num(noise), extra=extra)
    if b is None and n is None:
        return d
    if b is None:
        d.status = "new"
        return d
    if n is None:
        d.status = "vanished"
        return d
    d.delta = n - b
    d.delta_pct = (d.delta / abs(b) * 100.0) if b else (0.0 if n == b else None)
    if d.delta == 0 or abs(d.delta) <= 1e-9 * max(abs(b), 1.0):
        d.status = "unchanged"
    elif d.noise is not None and abs(d.delta) <= d.noise:
        d.status = "within noise"
    else:
        worse = d.delta < 0 if higher_is_better else d.delta > 0
        d.status = "slower" if worse else "faster"
    return d


@dataclass
class RunFacts:
    source: str  # what the user gave (run folder, report folder or summary.json)
    kind: str  # "run" | "report" | "summary"
    path: Optional[str]
    generated_at: Optional[str]
    tool_version: Optional[str]
    layout: Optional[str]
    ranks: int
    steps: Optional[int]
    parallel_mode: Optional[str]
    stages: Optional[int]
    parallel_sizes: dict
    step_trace_kind: Optional[str]
    framework: Optional[str]
    versions: dict
    profiler_level: Optional[str]

    @classmethod
    def of(cls, summary: dict, source: str, kind: str) -> "RunFacts":
        run = summary.get("run", {})
        return cls(source=source, kind=kind, path=run.get("path"), generated_at=summary.get("generated_at"),
                   tool_version=(summary.get("tool") or {}).get("version"), layout=run.get("layout"),
                   ranks=len(run.get("ranks") or []), steps=run.get("steps"), parallel_mode=run.get("parallel_mode"),
                   stages=run.get("stages"), parallel_sizes=dict(run.get("parallel_sizes") or {}),
                   step_trace_kind=run.get("step_trace_kind"), framework=run.get("framework"),
                   versions=dict(run.get("versions") or {}), profiler_level=run.get("profiler_level"))


@dataclass
class FindingChange:
    change: str  # "new" | "resolved" | "unchanged"
    id: str
    category: str
    severity: str  # the new run's severity (the base run's for resolved findings)
    base_severity: Optional[str]
    title: str
    subject: Msg
    ranks: list[int]
    links: list[str]
    stages: list[int]
    impact_delta: Optional[float] = None  # when the findings carry an impact (ms per step)
    title_en: str = ""  # the English title (summary.json's `title_en`; `title` is in that report's language)

    def title_in(self, lang: str) -> str:
        """The title to show on a page in `lang`: English pages use the English title."""
        return self.title_en or self.title if lang == "en" else self.title

    def to_dict(self) -> dict:
        return english(asdict(self))


@dataclass
class Gate:
    threshold_pct: Optional[float]
    failed: bool = False
    reasons: list[Msg] = field(default_factory=list)
    items: list[dict] = field(default_factory=list)  # {"kind": "step"|"phase"|"finding", "key": ..., "reason": ...}

    def to_dict(self) -> dict:
        return {"threshold_pct": self.threshold_pct, "failed": self.failed, "reasons": english(self.reasons),
                "items": english(self.items)}


@dataclass
class Comparison:
    base: RunFacts
    new: RunFacts
    warnings: list[Msg]
    step: Delta
    phases: list[Delta]
    stages: list[Delta]
    ranks: list[Delta]
    operators: list[Delta]
    communication: list[Delta]
    links: list[Delta]
    memory: list[Delta]
    flops: list[Delta]
    findings: list[FindingChange]
    gate: Gate
    link_threshold_pct: float = DEFAULT_LINK_PCT

    def findings_by(self, change: str) -> list[FindingChange]:
        return [f for f in self.findings if f.change == change]

    def to_dict(self) -> dict:
        step = self.step.to_dict()
        return {
            "schema": SCHEMA,
            "base": asdict(self.base), "new": asdict(self.new), "warnings": english(self.warnings),
            "step_ms": {"base": step["base"], "new": step["new"], "delta_ms": step["delta"],
                        "delta_pct": step["delta_pct"], "noise_ms": step["noise"], "status": step["status"]},
            "phases": [p.to_dict() for p in self.phases],
            "stages": [s.to_dict() for s in self.stages],
            "ranks": [r.to_dict() for r in self.ranks],
            "operators": [o.to_dict() for o in self.operators],
            "communication": [c.to_dict() for c in self.communication],
            "links": {"threshold_pct": self.link_threshold_pct, "changed": [x.to_dict() for x in self.links]},
            "memory": [m.to_dict() for m in self.memory],
            "flops": [f.to_dict() for f in self.flops],
            "findings": {c: [f.to_dict() for f in self.findings_by(c)] for c in ("new", "resolved", "unchanged")},
            "gate": self.gate.to_dict(),
        }


# --- building -------------------------------------------------------------------------------------------------


def _metrics(s: dict) -> dict:
    return s.get("metrics") or {}


def _step_rows(s: dict) -> dict[str, dict]:
    return (_metrics(s).get("step_trace") or {}).get("per_rank") or {}


def _spread(s: dict) -> dict:
    return (_metrics(s).get("step_trace") or {}).get("spread") or {}


def _cluster_means(s: dict) -> dict[str, float]:
    rows = _step_rows(s)
    keys = {k for row in rows.values() for k, v in row.items() if k.endswith("_ms")}
    out = {}
    for k in keys:
        m = _mean(row.get(k) for row in rows.values())
        if m is not None:
            out[k] = m
    return out


def _max_noise(*values) -> Optional[float]:
    vals = [v for v in (_num(x) for x in values) if v is not None]
    return max(vals) if vals else None


def _rel_noise(base: dict, new: dict) -> float:
    """The step time's relative spread (the larger of both runs): the noise ratio for quantities without a spread."""
    out = 0.0
    for s in (base, new):
        total = _cluster_means(s).get("total_ms")
        sd = _num((_spread(s).get("cluster") or {}).get("total_ms"))
        if total and sd is not None:
            out = max(out, sd / total)
    return out


def _scaled(rel: float, *values) -> Optional[float]:
    vals = [abs(v) for v in (_num(x) for x in values) if v is not None]
    return rel * max(vals) if vals and rel > 0 else None


def run_warnings(b: RunFacts, n: RunFacts) -> list[Msg]:
    out = []
    if b.ranks != n.ranks:
        out.append(lazy("different rank count: {base} vs {new}; cluster means compare, ranks only where both have "
                        "them", base=b.ranks, new=n.ranks))
    if (b.parallel_mode, b.stages) != (n.parallel_mode, n.stages) or (
            b.parallel_sizes and n.parallel_sizes and b.parallel_sizes != n.parallel_sizes):
        def layout(f: RunFacts) -> Msg:
            return lazy("{mode}, {stages} stage(s) {sizes}", mode=lazy(str(f.parallel_mode)), stages=f.stages,
                        sizes=" ".join(f"{k}={v}" for k, v in f.parallel_sizes.items()))
        out.append(lazy("different parallel layout: {base} vs {new}", base=layout(b), new=layout(n)))
    if b.profiler_level != n.profiler_level:
        out.append(lazy("different profiler level: '{base}' vs '{new}'; the profiler's own overhead differs",
                        base=b.profiler_level or lazy("unknown"), new=n.profiler_level or lazy("unknown")))
    if b.step_trace_kind != n.step_trace_kind:
        out.append(lazy("different step-trace kinds ('{base}' vs '{new}'): only the step time and the phases both "
                        "runs have compare", base=b.step_trace_kind, new=n.step_trace_kind))
    if b.layout != n.layout:
        out.append(lazy("different profiler output layouts: '{base}' vs '{new}'", base=b.layout, new=n.layout))
    if b.framework and n.framework and b.framework != n.framework:
        out.append(lazy("different frameworks: '{base}' vs '{new}'", base=b.framework, new=n.framework))
    return out


def _stage_of(s: dict) -> dict[str, int]:
    return {str(k): int(v) for k, v in ((s.get("run") or {}).get("stage_of_rank") or {}).items()}


def _compare_steps(base: dict, new: dict) -> tuple[Delta, list[Delta], list[Delta], list[Delta]]:
    bm, nm = _cluster_means(base), _cluster_means(new)
    bsp, nsp = _spread(base).get("cluster") or {}, _spread(new).get("cluster") or {}
    step = delta("total_ms", "Step time", bm.get("total_ms"), nm.get("total_ms"),
                 _max_noise(bsp.get("total_ms"), nsp.get("total_ms")))
    order = [k for k in PHASE_LABELS if k != "total_ms"]
    keys = sorted((set(bm) | set(nm)) - {"total_ms"}, key=lambda k: (order.index(k) if k in order else 99, k))
    phases = []
    for k in keys:
        share = max((bm.get(k) or 0) / bm["total_ms"] if bm.get("total_ms") else 0,
                    (nm.get(k) or 0) / nm["total_ms"] if nm.get("total_ms") else 0)
        phases.append(delta(k, phase_label(k), bm.get(k), nm.get(k), _max_noise(bsp.get(k), nsp.get(k)),
                            share=round(share, 4)))
    # stages: the mean step time of the stage's ranks
    b_rows, n_rows = _step_rows(base), _step_rows(new)
    b_stage, n_stage = _stage_of(base), _stage_of(new)
    stages = []
    if len(set(b_stage.values())) > 1 or len(set(n_stage.values())) > 1:
        for st in sorted(set(b_stage.values()) | set(n_stage.values())):
            br = [r for r, s in b_stage.items() if s == st]
            nr = [r for r, s in n_stage.items() if s == st]
            ph = {k: delta(k, phase_label(k), _mean(b_rows.get(r, {}).get(k) for r in br),
                           _mean(n_rows.get(r, {}).get(k) for r in nr),
                           _max_noise(bsp.get(k), nsp.get(k))).to_dict() for k in keys}
            leaf = [v for k, v in ph.items() if k in LEAF_PHASES and v.get("delta") is not None]
            top = max(leaf, key=lambda v: abs(v["delta"]), default=None)
            stages.append(delta(f"stage-{st}", lazy("Stage {stage}", stage=st), _mean(b_rows.get(r, {}).get("total_ms") for r in br),
                                _mean(n_rows.get(r, {}).get("total_ms") for r in nr), step.noise, stage=st,
                                ranks=sorted(int(r) for r in set(br) | set(nr)), phases=ph,
                                top_phase={"key": top["key"], "label": top["label"], "delta": top["delta"]}
                                if top else None))
    # ranks: step total, judged against the rank's own step-to-step spread; most changed first
    bpr, npr = _spread(base).get("per_rank") or {}, _spread(new).get("per_rank") or {}
    ranks = []
    for r in sorted(set(b_rows) | set(n_rows), key=int):
        b, n = b_rows.get(r, {}), n_rows.get(r, {})
        ph = {}
        for k in keys:
            if k in b or k in n:
                ph[k] = delta(k, phase_label(k), b.get(k), n.get(k),
                              _max_noise((bpr.get(r) or {}).get(k), (npr.get(r) or {}).get(k))).to_dict()
        stage = n_stage.get(r, b_stage.get(r))
        ranks.append(delta(f"rank-{r}", lazy("Rank {rank}", rank=r), b.get("total_ms"), n.get("total_ms"),
                           _max_noise((bpr.get(r) or {}).get("total_ms"), (npr.get(r) or {}).get("total_ms")),
                           rank=int(r), stage=stage, phases=ph))
    # "most changed": how far a rank's change departs from the change every rank shares (in a synchronous cluster
    # one slow rank makes every rank's step slower by the same amount; the slow rank is the one whose phases moved
    # differently), then the size of its step-time change
    common = {k: _mean(r.extra["phases"].get(k, {}).get("delta") for r in ranks) for k in keys}
    for r in ranks:
        own = [abs(v["delta"] - common[k]) for k, v in r.extra["phases"].items()
               if v.get("delta") is not None and common.get(k) is not None]
        r.extra["distinct_ms"] = round(max(own), 6) if own else None
        leaf = [v for k, v in r.extra["phases"].items() if k in LEAF_PHASES and v.get("delta") is not None]
        top = max(leaf, key=lambda v: abs(v["delta"]), default=None)
        r.extra["top_phase"] = {"key": top["key"], "label": top["label"], "delta": top["delta"]} if top else None
    ranks.sort(key=lambda d: (-(d.extra["distinct_ms"] or 0) if d.delta is not None else math.inf,
                              -(abs(d.delta) if d.delta is not None else 0), d.extra["rank"]))
    return step, phases, stages, ranks


def _by_change(items: list[Delta]) -> list[Delta]:
    """Biggest regressions first, then the biggest improvements; new and vanished items by size."""
    def key(d: Delta):
        if d.delta is not None:
            return (0 if d.delta > 0 else 1, -abs(d.delta))
        return (2, -(d.new or d.base or 0))
    return sorted(items, key=key)


def _compare_operators(base: dict, new: dict, rel: float) -> list[Delta]:
    bo, no = _metrics(base).get("operators") or {}, _metrics(new).get("operators") or {}
    out: list[Delta] = []
    for kind, list_key, name_of in (("type", "types", lambda t: t["op_type"]), ("operator", "top", lambda t: t["name"])):
        b = {(t.get("side"), name_of(t)): t for t in bo.get(list_key) or []}
        n = {(t.get("side"), name_of(t)): t for t in no.get(list_key) or []}
        items = []
        for k in set(b) | set(n):
            bt, nt = b.get(k), n.get(k)
            t = nt or bt
            bv, nv = (bt or {}).get("time_ms"), (nt or {}).get("time_ms")
            if kind == "operator" and (bt is None or nt is None):
                # the top lists are cut at a size: an operator missing from one list is new / vanished only when
                # the other run has no operator of its type at all
                types_other = {(x.get("side"), x.get("op_type")) for x in (no if bt else bo).get("types") or []}
                if (t.get("side"), t.get("op_type")) in types_other:
                    continue
            items.append(delta(f"{kind}:{k[0]}:{k[1]}", k[1], bv, nv, _scaled(rel, bv, nv), kind=kind, side=k[0],
                               op_type=t.get("op_type")))
        items = [d for d in items if d.status != "unchanged" or kind == "type"]
        out.extend(_by_change(items)[: TOP_ITEMS if kind == "operator" else None])
    return out


def _group_key(g: dict) -> str:
    ranks = g.get("ranks") or []
    return f"{g.get('group') or 'group'} [{_compact(ranks)}]"


def _compact(ranks: list[int]) -> str:
    ranks = sorted(int(r) for r in ranks)
    parts, i = [], 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        parts.append(str(ranks[i]) if i == j else f"{ranks[i]}-{ranks[j]}")
        i = j + 1
    return ",".join(parts)


def _compare_comm(base: dict, new: dict, rel: float, link_pct: float) -> tuple[list[Delta], list[Delta]]:
    bc, nc = _metrics(base).get("communication") or {}, _metrics(new).get("communication") or {}
    out: list[Delta] = []
    for kind, list_key, key_of in (("group", "groups", _group_key),
                                   ("collective", "collectives", lambda c: f"{_group_key(c)} {c.get('collective')}")):
        b = {key_of(x): x for x in bc.get(list_key) or []}
        n = {key_of(x): x for x in nc.get(list_key) or []}
        for k in sorted(set(b) | set(n)):
            bx, nx = b.get(k) or {}, n.get(k) or {}
            extra = {"kind": kind, "wait": delta("wait_ms", "Wait", bx.get("wait_ms"), nx.get("wait_ms"),
                                                 _scaled(rel, bx.get("wait_ms"), nx.get("wait_ms"))).to_dict()}
            if kind == "group":
                extra["bandwidth"] = delta("bandwidth_gbps", "Bandwidth", bx.get("bandwidth_gbps"),
                                           nx.get("bandwidth_gbps"),
                                           _scaled(rel, bx.get("bandwidth_gbps"), nx.get("bandwidth_gbps")),
                                           higher_is_better=True).to_dict()
            else:
                extra["collective"] = (nx or bx).get("collective")
            out.append(delta(f"{kind}:{k}", k, bx.get("time_ms"), nx.get("time_ms"),
                             _scaled(rel, bx.get("time_ms"), nx.get("time_ms")), **extra))
    links = []
    bl = {(l.get("src"), l.get("dst"), l.get("transport"), l.get("group")): l for l in bc.get("links") or []}
    nl = {(l.get("src"), l.get("dst"), l.get("transport"), l.get("group")): l for l in nc.get("links") or []}
    for k in set(bl) & set(nl):
        d = delta(f"link:{k[0]}-{k[1]}:{k[2]}:{k[3]}", f"{k[0]}-{k[1]}", bl[k].get("bandwidth_gbps"),
                  nl[k].get("bandwidth_gbps"), None, higher_is_better=True, src=k[0], dst=k[1], transport=k[2],
                  group=k[3], base_slow=bool(bl[k].get("slow")), new_slow=bool(nl[k].get("slow")))
        if d.delta_pct is not None and abs(d.delta_pct) > link_pct:
            links.append(d)
    links.sort(key=lambda d: d.delta_pct or 0)
    return out, links


def _compare_per_rank(base: dict, new: dict, section: str, value: str, label: str, rel: float) -> list[Delta]:
    b = (_metrics(base).get(section) or {}).get("per_rank") or {}
    n = (_metrics(new).get(section) or {}).get("per_rank") or {}
    out = []
    for r in sorted(set(b) | set(n), key=int):
        bv, nv = (b.get(r) or {}).get(value), (n.get(r) or {}).get(value)
        out.append(delta(f"rank-{r}", lazy("Rank {rank}", rank=r), bv, nv, _scaled(rel, bv, nv), rank=int(r), unit=label))
    return out


def _subject(f: dict) -> Msg:
    """What a finding is about ("rank 5; links 2-3", "cluster"), in either language."""
    parts: list[Msg] = []
    if f.get("ranks"):
        parts.append(lazy("ranks {ranks}", ranks=_compact(f["ranks"])) if len(f["ranks"]) > 1
                     else lazy("rank {rank}", rank=f["ranks"][0]))
    if f.get("links"):
        parts.append(lazy("links {links}", links=", ".join(f["links"])))
    if f.get("stages"):
        parts.append(lazy("stages {stages}", stages=", ".join(str(s) for s in f["stages"])))
    if f.get("files") and not parts:
        parts.append(lazy("{files}", files=", ".join(f["files"][:3]) + (" …" if len(f["files"]) > 3 else "")))
    if not parts:
        return lazy("cluster")
    out = parts[0]
    for p in parts[1:]:
        out = lazy("{a}; {b}", a=out, b=p)
    return out


def _finding_key(f: dict) -> tuple:
    return (f.get("id"), tuple(sorted(f.get("ranks") or [])), tuple(sorted(f.get("links") or [])),
            tuple(sorted(f.get("stages") or [])), tuple(sorted(f.get("files") or [])))


def _impact(f: Optional[dict]) -> Optional[float]:
    if not f:
        return None
    imp = f.get("impact")
    if isinstance(imp, dict):
        imp = imp.get("ms_per_step", imp.get("ms"))
    return _num(imp)


def _compare_findings(base: dict, new: dict) -> list[FindingChange]:
    b = {_finding_key(f): f for f in base.get("findings") or []}
    n = {_finding_key(f): f for f in new.get("findings") or []}
    out = []
    for k in list(n) + [k for k in b if k not in n]:
        bf, nf = b.get(k), n.get(k)
        f = nf or bf
        change = "unchanged" if bf and nf else ("new" if nf else "resolved")
        bi, ni = _impact(bf), _impact(nf)
        out.append(FindingChange(change=change, id=f.get("id", ""), category=f.get("category", ""),
                                 severity=f.get("severity", "info"), base_severity=(bf or {}).get("severity"),
                                 title=f.get("title", ""), title_en=f.get("title_en") or f.get("title", ""),
                                 subject=_subject(f), ranks=list(f.get("ranks") or []),
                                 links=list(f.get("links") or []), stages=list(f.get("stages") or []),
                                 impact_delta=(ni or 0) - (bi or 0) if (bi is not None or ni is not None) else None))
    order = {"new": 0, "unchanged": 1, "resolved": 2}
    out.sort(key=lambda f: (order[f.change], -SEVERITY_RANK.get(f.severity, 0)))
    return out


def evaluate_gate(step: Delta, phases: list[Delta], findings: list[FindingChange],
                  threshold_pct: Optional[float]) -> Gate:
    """Regression: the mean step time, or a phase of at least 5 % of the step, slower by more than the threshold
    and outside the noise; or a new (or escalated) warning / critical finding."""
    gate = Gate(threshold_pct)
    pct = 0.0 if threshold_pct is None else threshold_pct

    def trip(kind: str, key: str, reason: Msg) -> None:
        gate.reasons.append(reason)
        gate.items.append({"kind": kind, "key": key, "reason": reason})

    if step.status == "slower" and step.delta_pct is not None and step.delta_pct > pct:
        trip("step", "total_ms", lazy("step time {pct} ({base} -> {new} ms)", pct=Percent(step.delta_pct, signed=True),
                                      base=f"{step.base:,.3f}", new=f"{step.new:,.3f}"))
    for p in phases:
        if (p.status == "slower" and p.delta_pct is not None and p.delta_pct > pct
                and PHASE_GATE_SHARE <= p.extra.get("share", 0) < 0.999):  # (a phase that is the step: the step)
            trip("phase", p.key, lazy("{phase} {pct} ({base} -> {new} ms per step)", phase=lazy(p.label),
                                      pct=Percent(p.delta_pct, signed=True), base=f"{p.base:,.3f}", new=f"{p.new:,.3f}"))
    for f in findings:
        sev = SEVERITY_RANK.get(f.severity, 0)
        if sev < 1:
            continue
        if f.change == "new":
            trip("finding", f.id, lazy("new {severity} {id} [{subject}]", severity=lazy(f.severity), id=f.id,
                                       subject=f.subject))
        elif f.change == "unchanged" and sev > SEVERITY_RANK.get(f.base_severity or "info", 0):
            trip("finding", f.id, lazy("{id} [{subject}] escalated from {base} to {new}", id=f.id, subject=f.subject,
                                       base=lazy(f.base_severity or "info"), new=lazy(f.severity)))
    gate.failed = bool(gate.reasons) and threshold_pct is not None
    return gate


def compare(base: dict, new: dict, *, base_source: str = "base", new_source: str = "new",
            base_kind: str = "summary", new_kind: str = "summary", threshold_pct: Optional[float] = None,
            link_pct: float = DEFAULT_LINK_PCT) -> Comparison:
    """Compare two summaries. `threshold_pct` None: no gate (the reasons are still listed, `failed` stays false)."""
    bf, nf = RunFacts.of(base, base_source, base_kind), RunFacts.of(new, new_source, new_kind)
    step, phases, stages, ranks = _compare_steps(base, new)
    rel = _rel_noise(base, new)
    comm, links = _compare_comm(base, new, rel, link_pct)
    findings = _compare_findings(base, new)
    return Comparison(
        base=bf, new=nf, warnings=run_warnings(bf, nf), step=step, phases=phases, stages=stages, ranks=ranks,
        operators=_compare_operators(base, new, rel), communication=comm, links=links,
        memory=_compare_per_rank(base, new, "memory", "peak_mb", "MB", rel),
        flops=_compare_per_rank(base, new, "flops", "flops_m", "MFLOPs", rel),
        findings=findings, gate=evaluate_gate(step, phases, findings, threshold_pct), link_threshold_pct=link_pct)
