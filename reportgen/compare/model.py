"""The comparison of two `summary.json` documents as plain dataclasses (`compare.json`: docs/compare-json.md).

(~790 lines, one module on purpose: every section (steps, operators, communication, findings) is a `Delta` under
the same noise rule, and the gate at the end reads them all; `trend` reuses its private readers. A split would
cut along the sections and pass the noise model around.)

Everything here reads summaries only, so a CI job that kept nothing but the last good `summary.json` can compare.
Noise: a delta no larger than the step-to-step spread of either run (`metrics.step_trace.spread`) is "within
noise" and never counts as a regression; items without a spread of their own (operators, communication, memory)
use the step time's relative spread scaled to their size.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

from reportgen.fmt import compact_ranks
from reportgen.i18n import N_, Joined, Msg, Percent, lazy
from reportgen.model import PHASE_LABELS as MODEL_PHASE_LABELS
from reportgen.site.views.values import num
from reportgen.numbers import rounded

SCHEMA = "msreport.compare/1"
PHASE_GATE_SHARE = 0.05  # a phase's own percentage counts only when the phase is at least 5 % of the BASE step
MIN_NOISE_STEPS = 3  # fewer profiled steps in either run: no step-to-step noise estimate
EXIT_INCOMPARABLE = 4  # `--fail-on-regression` on runs that cannot be compared (see `comparability`)
DEFAULT_LINK_PCT = 20.0  # links whose bandwidth changed by more than this are listed
TOP_ITEMS = 40  # operators listed (by size of the change)

# English labels (compare.json); the pages translate them through the catalog (`|t`). The phases are named as the
# report names them (`model.PHASE_LABELS`, the one home); the step total is the compared "Step time".
PHASE_LABELS = {"total_ms": N_("Step time"),
                **{f"{k}_ms": label for k, label in MODEL_PHASE_LABELS.items() if k != "total"}}
# the statuses of a compared quantity, for the pages (`|t`)
# kinds and sides of the compared operators and communication items, for the pages (`|t`)
ITEM_WORDS = (N_("type"), N_("operator"), N_("collective"), N_("aicore"), N_("aicpu"))
STATUS_WORDS = (N_("slower"), N_("faster"), N_("within noise"), N_("unchanged"), N_("new"), N_("vanished"), N_("n/a"))
SEVERITY_RANK = {"info": 0, "warning": 1, "critical": 2}
# phases that do not cost step time by themselves: more overlapped communication is hidden (good), the
# communication total includes the hidden part, a stage is the step of a pipeline rank; never a gate reason
NOT_COSTING = ("overlapped_ms", "communication_ms", "stage_ms")
HIGHER_IS_BETTER = ("overlapped_ms",)
# the phases that cost step time, each once (the not-overlapped communication without the receive when a run
# has it, else with it): the gate's phases
GATE_PHASES = ("iteration_interval_ms", "fp_and_bp_ms", "tail_ms", "computing_ms",
               "communication_not_overlapped_exclude_receive_ms", "communication_not_overlapped_ms", "bubble_ms",
               "free_ms", "preparing_ms")
CHANGE_WORDS = (N_("changed"),)
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


_num = num  # a finite float or None (site.views.values.num)


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
    change: str  # "new" | "resolved" | "unchanged" | "changed" (both runs have it, at another severity)
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
    """The verdict. `causes`: one entry per cause, the cause first, then what it did (`effects`); `reasons` the
    same as one sentence per cause; `items` every quantity that tripped, with the index of its cause."""

    threshold_pct: Optional[float]
    failed: bool = False
    reasons: list[Msg] = field(default_factory=list)
    items: list[dict] = field(default_factory=list)  # {"kind": "step"|"phase"|"finding", "key", "reason", "cause"}
    causes: list[dict] = field(default_factory=list)  # {"kind", "key", "cause": Msg, "effects": [Msg], "ranks"}
    comparable: bool = True
    noise_known: bool = True

    def to_dict(self) -> dict:
        return {"threshold_pct": self.threshold_pct, "failed": self.failed, "reasons": english(self.reasons),
                "items": english(self.items), "causes": english(self.causes), "comparable": self.comparable,
                "noise_known": self.noise_known}


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
    comparability: list[dict] = field(default_factory=list)  # see `comparability`
    noise_note: Optional[Msg] = None  # why there is no noise estimate (fewer than 3 steps in a run)

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
            "findings": {c: [f.to_dict() for f in self.findings_by(c)]
                         for c in ("new", "changed", "resolved", "unchanged")},
            "gate": self.gate.to_dict(),
            "comparability": {"comparable": self.gate.comparable, "checks": english(self.comparability)},
            "noise": {"known": self.gate.noise_known, "note": english(self.noise_note)},
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
    for k in sorted(keys):  # (sorted: compare.json and trend.json must not depend on the hash seed)
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
        base_share = (bm.get(k) or 0) / bm["total_ms"] if bm.get("total_ms") else 0.0
        phases.append(delta(k, phase_label(k), bm.get(k), nm.get(k), _max_noise(bsp.get(k), nsp.get(k)),
                            higher_is_better=k in HIGHER_IS_BETTER, share=round(share, 4),
                            base_share=round(base_share, 4)))
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
        for k in sorted(set(b) | set(n), key=str):  # (a set's order changes with the hash seed)
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
    """Rank ranges as compare.json keys spell them: "0-3,5"."""
    return compact_ranks(sorted(int(r) for r in ranks), None, dash="-", sep=",", empty="")


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
    for k in sorted(set(bl) & set(nl), key=str):
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
        if bf and nf:
            change = "unchanged" if bf.get("severity") == nf.get("severity") else "changed"
        else:
            change = "new" if nf else "resolved"
        bi, ni = _impact(bf), _impact(nf)
        out.append(FindingChange(change=change, id=f.get("id", ""), category=f.get("category", ""),
                                 severity=f.get("severity", "info"), base_severity=(bf or {}).get("severity"),
                                 title=f.get("title", ""), title_en=f.get("title_en") or f.get("title", ""),
                                 subject=_subject(f), ranks=list(f.get("ranks") or []),
                                 links=list(f.get("links") or []), stages=list(f.get("stages") or []),
                                 impact_delta=(ni or 0) - (bi or 0) if (bi is not None or ni is not None) else None))
    order = {"new": 0, "changed": 1, "unchanged": 2, "resolved": 3}
    out.sort(key=lambda f: (order[f.change], -SEVERITY_RANK.get(f.severity, 0)))
    return out


def _steps(f: RunFacts) -> Optional[int]:
    return f.steps if isinstance(f.steps, int) else None


def _capacity_mb(s: dict) -> Optional[float]:
    """The most common device memory capacity over the ranks (MB), where the profiler recorded one."""
    caps = [_num((row or {}).get("capacity_mb")) for row in ((_metrics(s).get("memory") or {}).get("per_rank") or {})
            .values()]
    caps = [round(c) for c in caps if c]
    return max(set(caps), key=caps.count) if caps else None


def comparability(base: dict, new: dict, b: RunFacts, n: RunFacts) -> list[dict]:
    """The checks that decide whether two runs can be compared at all: {"key", "label", "base", "new", "same",
    "blocking"}. Blocking when both sides are known and differ: the device (its model where the summary records
    one, else its memory capacity), the world size, the parallel layout, the profiler level. The step count is
    listed but never blocks (per-step means compare; fewer than 3 steps only lose the noise estimate)."""
    def layout(f: RunFacts) -> Msg:  # a message: compare.json holds its English, the page its translation
        sizes = " ".join(f"{k}={v}" for k, v in sorted(f.parallel_sizes.items()))
        return lazy("{mode}, {stages} stage(s) {sizes}", mode=lazy(str(f.parallel_mode)), stages=f.stages,
                    sizes=sizes)

    def device(s: dict) -> Optional[str]:
        model = (s.get("run") or {}).get("device_model")
        if model:
            return str(model)
        cap = _capacity_mb(s)
        return f"{cap / 1024:.0f} GB" if cap else None

    out = []
    for key, label, bv, nv, blocking in (
            ("device", N_("Device (model or memory capacity)"), device(base), device(new), True),
            ("world_size", N_("World size (ranks)"), b.ranks or None, n.ranks or None, True),
            ("parallel_layout", N_("Parallel layout"), layout(b), layout(n), True),
            ("profiler_level", N_("Profiler level"), b.profiler_level, n.profiler_level, True),
            ("steps", N_("Profiled steps"), _steps(b), _steps(n), False)):
        known = bv is not None and nv is not None
        same = english(bv) == english(nv) if known else None
        out.append({"key": key, "label": label, "base": bv, "new": nv, "same": same,
                    "blocking": bool(blocking and known and not same)})
    return out


def _noise_free(s: dict, share: float) -> dict:
    """`s` with its step-to-step spread replaced by `share` of each step time (cluster and per rank): the noise
    assumed when a run has too few steps to measure one."""
    st = dict(_metrics(s).get("step_trace") or {})
    rows = _step_rows(s)
    means = _cluster_means(s)
    st["spread"] = {"cluster": {k: share * (means.get("total_ms") or 0) for k in means},
                    "per_rank": {r: {k: share * (_num(row.get("total_ms")) or 0) for k in row if k.endswith("_ms")}
                                 for r, row in rows.items()}}
    return dict(s, metrics=dict(_metrics(s), step_trace=st))


NO_NOISE_SHARE = 0.02  # the step-to-step noise assumed (share of the step) when a run has fewer than 3 steps


def _gate_phases(phases: list[Delta]) -> list[Delta]:
    """The phases that cost step time, each once (`GATE_PHASES`; the not-overlapped communication without the
    receive when either run has it)."""
    keys = {p.key for p in phases if p.base is not None or p.new is not None}
    skip = {"communication_not_overlapped_ms"} if "communication_not_overlapped_exclude_receive_ms" in keys else set()
    return [p for p in phases if p.key in GATE_PHASES and p.key not in skip and p.key not in NOT_COSTING]


def _ms(v: float) -> str:
    return f"{v:+,.1f} ms" if abs(v) >= 1 else f"{v:+,.3f} ms"


def _rank_causes(ranks: list[Delta], step_base: float, floor_share: float) -> list[dict]:
    """Ranks whose own phase moved away from the others' (its change minus the median change of every rank), by
    more than the rank's noise and `floor_share` of the step: {"ranks", "phase", "delta", "own"} grouped by phase,
    largest first. A slow rank's peers wait for it (their not-overlapped communication grows): the median keeps
    them out, the slow rank stands out in its computing."""
    import statistics

    rows = [r for r in ranks if r.delta is not None]
    if len(rows) < 2 or not step_base:
        return []
    keys = sorted({k for r in rows for k in r.extra["phases"] if k in GATE_PHASES})
    if "communication_not_overlapped_exclude_receive_ms" in keys:
        keys.remove("communication_not_overlapped_ms")
    found: dict[str, list[tuple[int, float, float]]] = {}
    for k in keys:
        deltas = {r.extra["rank"]: r.extra["phases"][k].get("delta") for r in rows if k in r.extra["phases"]}
        deltas = {rk: v for rk, v in deltas.items() if v is not None}
        if len(deltas) < 2:
            continue
        med = statistics.median(deltas.values())
        for r in rows:
            v = deltas.get(r.extra["rank"])
            if v is None:
                continue
            own = v - med
            noise = r.extra["phases"][k].get("noise") or 0.0
            if own > max(noise, floor_share * step_base) and v > 0:
                found.setdefault(k, []).append((r.extra["rank"], v, own))
    out = []
    for k, hits in found.items():
        out.append({"phase": k, "ranks": sorted(h[0] for h in hits), "delta": max(h[1] for h in hits),
                    "own": max(h[2] for h in hits)})
    out.sort(key=lambda c: -c["own"])
    # a rank is the cause once, by the phase that moved most
    seen: set[int] = set()
    kept = []
    for c in out:
        c["ranks"] = [r for r in c["ranks"] if r not in seen]
        if c["ranks"]:
            seen.update(c["ranks"])
            kept.append(c)
    return kept


def _rank_cause(who: Msg, key: str, grew: float) -> Msg:
    """"rank 6 computes +47.0 ms per step" (the phase as a verb where there is one)."""
    d = _ms(grew)
    if key in ("computing_ms", "fp_and_bp_ms"):
        return lazy("{who} computes {delta} per step", who=who, delta=d)
    if key.startswith("communication_not_overlapped"):
        return lazy("{who} spends {delta} per step in communication that is not overlapped", who=who, delta=d)
    if key == "bubble_ms":
        return lazy("{who} waits {delta} per step in the pipeline bubble", who=who, delta=d)
    if key == "free_ms":
        return lazy("{who} is idle {delta} per step", who=who, delta=d)
    return lazy("{who}: {phase} {delta} per step", who=who, phase=lazy(phase_label(key)), delta=d)


def evaluate_gate(step: Delta, phases: list[Delta], findings: list[FindingChange],
                  threshold_pct: Optional[float], ranks: Optional[list[Delta]] = None, *, comparable: bool = True,
                  noise_known: bool = True) -> Gate:
    """Regression, only in the direction that costs time and only beyond the noise:
    - the mean step time slower by more than the threshold (percent of the step);
    - a phase that costs time (`GATE_PHASES`: not the overlapped communication, which hides time) slower in ms
      beyond its noise and by more than the threshold: its own percentage when it is at least 5 % of the base
      step, else its change in ms as a share of the base step (a near-zero base makes any percentage huge);
    - a new warning / critical finding, or one whose severity rose.
    One reason per cause: ranks whose own phase moved (a slow rank) are the cause and carry the step time,
    the phases (their peers' waiting) and the findings on those ranks; without such a rank, the phase that grew
    most is the cause of the step time; other findings are causes of their own, one per subject.
    Not `comparable` (see `comparability`): nothing is judged (no reasons), `failed` stays false."""
    gate = Gate(threshold_pct, comparable=comparable, noise_known=noise_known)
    if not comparable:
        return gate  # nothing is judged between runs that cannot be compared
    pct = 0.0 if threshold_pct is None else threshold_pct
    step_base = step.base or 0.0
    tripped: list[dict] = []  # {"kind", "key", "reason", "ranks", "grew_ms"}

    if step.status == "slower" and step.delta_pct is not None and step.delta_pct > pct:
        tripped.append({"kind": "step", "key": "total_ms", "grew_ms": step.delta or 0.0,
                        "reason": lazy("step time {pct} ({base} -> {new} ms)", pct=Percent(step.delta_pct, signed=True),
                                       base=f"{step.base:,.3f}", new=f"{step.new:,.3f}")})
    for p in _gate_phases(phases):
        if p.status != "slower" or p.delta is None or p.base is None or not step_base:
            continue
        if p.base / step_base >= PHASE_GATE_SHARE and p.delta_pct is not None and p.delta_pct > pct:
            reason = lazy("{phase} {pct} ({base} -> {new} ms per step)", phase=lazy(p.label),
                          pct=Percent(p.delta_pct, signed=True), base=f"{p.base:,.3f}", new=f"{p.new:,.3f}")
        elif p.base / step_base < PHASE_GATE_SHARE and p.delta / step_base * 100 > pct:
            reason = lazy("{phase} {delta} per step ({share} of the base step; {base} -> {new} ms)",
                          phase=lazy(p.label), delta=_ms(p.delta), share=Percent(p.delta / step_base * 100),
                          base=f"{p.base:,.3f}", new=f"{p.new:,.3f}")
        else:
            continue
        tripped.append({"kind": "phase", "key": p.key, "reason": reason, "grew_ms": p.delta})
    for f in findings:
        sev = SEVERITY_RANK.get(f.severity, 0)
        if sev < 1:
            continue
        if f.change == "new":
            reason = lazy("new {severity} {id} [{subject}]", severity=lazy(f.severity), id=f.id, subject=f.subject)
        elif f.change == "changed" and sev > SEVERITY_RANK.get(f.base_severity or "info", 0):
            reason = lazy("{id} [{subject}] escalated from {base} to {new}", id=f.id, subject=f.subject,
                          base=lazy(f.base_severity or "info"), new=lazy(f.severity))
        else:
            continue
        tripped.append({"kind": "finding", "key": f.id, "reason": reason, "finding": f})

    # --- one reason per cause ---
    causes: list[dict] = []
    measured = [t for t in tripped if t["kind"] in ("step", "phase")]
    rank_causes = _rank_causes(ranks or [], step_base, NO_NOISE_SHARE) if tripped else []
    for rc in rank_causes:
        who = (lazy("rank {rank}", rank=rc["ranks"][0]) if len(rc["ranks"]) == 1
               else lazy("ranks {ranks}", ranks=_compact(rc["ranks"])))
        causes.append({"kind": "rank", "key": f"rank:{_compact(rc['ranks'])}:{rc['phase']}", "ranks": rc["ranks"],
                       "cause": _rank_cause(who, rc["phase"], rc["delta"]), "items": []})
    if measured:
        if causes:
            main_cause = causes[0]  # the step and the phases follow from the rank that moved most
        else:
            phase_items = sorted((t for t in measured if t["kind"] == "phase"), key=lambda t: -t["grew_ms"])
            lead = phase_items[0] if phase_items else measured[0]
            main_cause = {"kind": lead["kind"], "key": lead["key"], "ranks": [], "cause": lead["reason"], "items": []}
            causes.append(main_cause)
            measured = [t for t in measured if t is not lead]
            main_cause["items"].append(lead)
        main_cause["items"].extend(measured)
    by_subject: dict[str, dict] = {}
    for t in (t for t in tripped if t["kind"] == "finding"):
        f = t["finding"]
        home = None
        if f.ranks and not f.links:
            home = next((c for c in causes if c["kind"] == "rank" and set(f.ranks) & set(c["ranks"])), None)
        elif not f.ranks and not f.links and not f.stages and causes and causes[0]["kind"] in ("step", "phase"):
            home = causes[0]  # a cluster-wide finding on the same step
        if home is None:
            subject = english(f.subject)
            home = by_subject.get(subject)
            if home is None:
                home = by_subject[subject] = {"kind": "finding", "key": f.id, "ranks": list(f.ranks),
                                              "cause": t["reason"], "items": []}
                causes.append(home)
                home["items"].append(t)
                continue
        home["items"].append(t)
    causes = [c for c in causes if c["items"]]  # a rank that moved but tripped nothing is no reason
    for i, c in enumerate(causes):
        effects = [t["reason"] for t in c["items"] if t["reason"] is not c["cause"]]
        text = c["cause"]
        for e in effects:
            text = lazy("{a}; {b}", a=text, b=e) if text is not c["cause"] else lazy("{cause}: {effect}",
                                                                                       cause=c["cause"], effect=e)
        gate.reasons.append(text)
        gate.causes.append({"kind": c["kind"], "key": c["key"], "ranks": c["ranks"], "cause": c["cause"],
                            "effects": effects})
        for t in c["items"]:
            gate.items.append({"kind": t["kind"], "key": t["key"], "reason": t["reason"], "cause": i})
    gate.failed = bool(gate.reasons) and threshold_pct is not None and comparable
    return gate


def compare(base: dict, new: dict, *, base_source: str = "base", new_source: str = "new",
            base_kind: str = "summary", new_kind: str = "summary", threshold_pct: Optional[float] = None,
            link_pct: float = DEFAULT_LINK_PCT) -> Comparison:
    """Compare two summaries. `threshold_pct` None: no gate (the reasons are still listed, `failed` stays false)."""
    bf, nf = RunFacts.of(base, base_source, base_kind), RunFacts.of(new, new_source, new_kind)
    checks = comparability(base, new, bf, nf)
    comparable = not any(c["blocking"] for c in checks)
    few = [(side, f.steps) for side, f in (("base", bf), ("new", nf))
           if _steps(f) is not None and _steps(f) < MIN_NOISE_STEPS]
    noise_note = None
    if few:
        sides = []
        for side, st in few:
            sides.append(lazy("the base run has {steps} step(s)", steps=st) if side == "base"
                         else lazy("the new run has {steps} step(s)", steps=st))
        noise_note = lazy("No noise estimate: {runs} (at least {n} are needed to measure the step-to-step spread). "
                          "A change under {share} of the step is taken as noise.", runs=Joined(sides, "; "),
                          n=MIN_NOISE_STEPS, share=Percent(NO_NOISE_SHARE * 100, 0))
        base, new = _noise_free(base, NO_NOISE_SHARE), _noise_free(new, NO_NOISE_SHARE)
    step, phases, stages, ranks = _compare_steps(base, new)
    rel = _rel_noise(base, new)
    comm, links = _compare_comm(base, new, rel, link_pct)
    findings = _compare_findings(base, new)
    return Comparison(
        base=bf, new=nf, warnings=run_warnings(bf, nf), step=step, phases=phases, stages=stages, ranks=ranks,
        operators=_compare_operators(base, new, rel), communication=comm, links=links,
        memory=_compare_per_rank(base, new, "memory", "peak_mb", "MB", rel),
        flops=_compare_per_rank(base, new, "flops", "flops_m", "MFLOPs", rel),
        findings=findings, gate=evaluate_gate(step, phases, findings, threshold_pct, ranks, comparable=comparable,
                                              noise_known=not few),
        link_threshold_pct=link_pct, comparability=checks, noise_note=noise_note)
