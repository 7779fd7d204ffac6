"""Slow rank: one rank (or a few) noticeably slower than its peers in one phase of the step, in most steps.

Tuning guide, cluster part, steps 1-3 of data / model / pipeline parallel; seed 003's delimitation for the Ascend
layout (Computing -> compute, Free -> host dispatch, Communication (not overlapped) -> communication).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from reportgen import urls
from reportgen.analysis import Analysis
from reportgen.analysis.divergence import divergence
from reportgen.analysis.impact import replace_excess, saved_by_ms
from reportgen.i18n import N_, Joined, lazy
from reportgen.rules import policy
from reportgen.rules.base import (
    Context, Finding, Rule, fmt_ms, fmt_pct, md_literal, ranks_msg, step_pattern, gpu_run,
)
from reportgen.rules.thresholds import th
from reportgen.analysis.stats import Standout, peer_median, standout_cells, standouts, step_reference

@dataclass(frozen=True)
class Thresholds:
    z: float = th(3.5, N_('robust z-score a rank must exceed in a step: (value − median) / (1.4826 × MAD)'))
    min_rel: float = th(0.05, N_("and at least this fraction above the median of its group (msprof-analyze's 5 %)"))
    min_abs_ms: float = th(1.0, N_('and at least this many ms above it (microsecond noise never fires)'))
    min_share: float = th(0.05, N_('and by at least this fraction of the median step time: the time the whole cluster '
                                'loses waiting for it (msprof-analyze divides by the step too)'))
    persistence: float = th(0.5, N_('fraction of its steps in which the rank must stand out'))
    min_steps: float = th(2.0, N_('steps a rank needs for a warning; with fewer, persistence is unknown and the '
                               'finding is information'))
    critical_share: float = th(0.2, N_('excess per step (as a fraction of the step) from which the finding may be '
                                       'critical (the severity policy decides from the saving)'))


WHY = N_("Collectives are synchronous: every step, the whole cluster waits for the slowest rank, so its extra time "
         "is lost on every device (the bucket effect of the tuning guide).")

# phase -> (finding phase, label, verb phrase, advice)
ADVICE = {
    "step_interval": N_("""\
The step interval is the time a rank waits for its training data before the step starts.
- Open the rank's page, **Data preparation**: if the host queue is mostly empty, data processing is the bottleneck
  (see the pipeline operator flagged there); otherwise sending the data to the device is.
- Compare the rank's host with the others (CPU load, disk, other processes): one slow host delays every rank."""),
    "compute": N_("""\
This rank takes longer to compute the same work as its peers.
- Open the rank's page, **Operators**: compare its top operator types with another rank's (the Resources page
  shows every type across ranks, with the slow rank in red).
- A device that is slower on every operator is usually a hardware or frequency problem (throttling, a degraded
  card): check the device's health and AI Core frequency; a single slow operator type points at its inputs
  (shapes, data types) on that rank."""),
    "free": N_("""\
Free time is time the device has nothing to run: the host does not dispatch work fast enough on this rank.
- Look for host-side work on this rank only (logging, checkpoint saving, Python code in the step, CPU contention on
  its host) and for synchronisation calls (`.item()`, `.cpu()`, stream synchronise) in the training loop."""),
    "communication": N_("""\
This rank spends longer than its peers in communication that is not hidden by computation.
- When its peers compute longer, it is the victim that waits for them: fix the slow ranks first.
- Otherwise check its links on the Communication page (a slow link raises the time of every collective it takes part
  in) and its own communication operators (wait vs transit)."""),
    "tail": N_("""\
A long tail on a few ranks usually means they finished forward and backward early and wait in the gradient
all-reduce for a slower rank: the slow rank is elsewhere. Fix the slow ranks named in the other findings; if none is
found, look at this rank's collectives and links on the Communication page."""),
}

# GPU runs (PyTorch profiler): the same advice with the GPU's levers, where the Ascend one names Ascend's
ADVICE_GPU = {
    "compute": N_("""\
This rank takes longer to compute the same work as its peers.
- Open the rank's page, **Operators**: compare its top kernels with another rank's (the Resources page shows every
  type across ranks, with the slow rank in red).
- A GPU that is slower on every kernel is usually a hardware or clock problem (thermal or power throttling, a
  degraded card, a narrower PCIe / NVLink link): check `nvidia-smi -q -d CLOCK,PERFORMANCE,TEMPERATURE` (or
  `rocm-smi`) and the kernel log for Xid / ECC errors; a single slow kernel type points at its inputs (shapes, dtypes)
  on that rank."""),
    "free": N_("""\
Free time is time the GPU has nothing to run: the host does not launch work fast enough on this rank.
- Look for host-side work on this rank only (logging, checkpoint saving, Python code in the step, data loading, CPU
  contention or NUMA binding on its host) and for synchronisation calls (`.item()`, `.cpu()`,
  `torch.cuda.synchronize()`) in the training loop."""),
}

TITLES = {
    "step_interval": N_("wait{s} longer for data than {peers}"),
    "compute": N_("compute{s} longer than {peers}"),
    "free": N_("{has} more idle device time (free) than {peers}"),
    "communication": N_("spend{s} more time in exposed communication than {peers}"),
    "tail": N_("{has} a longer tail than {peers}"),
}


def _series(a: Analysis) -> list[tuple[str, str, object, str, bool, str]]:
    """(phase, column, per_step frame, evidence target of a rank, compare within stages)."""
    st, ov = a.steps, a.overlap
    out = []
    if st.kind == "legacy":
        out.append(("step_interval", "iteration_interval", st.per_step, urls.step_trace_row, False))
        if ov.view in ("model", "pipeline") and "computation" in ov.per_step.columns:
            out.append(("compute", "computation", _net_computation(ov.per_step, st.per_step),
                        urls.overlap_row, True))
        else:
            out.append(("compute", "fp_and_bp", st.per_step, urls.step_trace_row, True))
        out.append(("tail", "tail", st.per_step, urls.step_trace_row, True))
    elif st.kind == "modern":
        out.append(("compute", "computing", st.per_step, urls.step_trace_row, True))
        out.append(("free", "free", st.per_step, urls.step_trace_row, True))
        out.append(("communication", "communication_not_overlapped", st.per_step,
                    urls.step_trace_row, True))
    return out


def _not_victims(a: Analysis, found: list[Standout], stage_of) -> list[Standout]:
    """Drop ranks whose extra communication is waiting: they compute less than their peers by at least half of it
    (in a synchronous collective the fast rank waits for the slow one)."""
    comp = a.steps.average["computing"].dropna() if "computing" in a.steps.average else None
    if comp is None or comp.empty:
        return found
    med = peer_median(comp, stage_of)
    return [s for s in found if s.rank not in comp.index or med[s.rank] - comp[s.rank] < 0.5 * s.excess_ms]


def _net_computation(ov_steps: pd.DataFrame, st_steps: pd.DataFrame) -> pd.DataFrame:
    """Overlap computation without the step interval when the file counts it in (some producers measure the step
    from the previous step's end: computation + pure communication then adds up to the whole step, and a rank that
    waits for data would look like a rank that computes slowly)."""
    if "iteration_interval" not in ov_steps.columns or "total" not in st_steps.columns:
        return ov_steps
    j = ov_steps.merge(st_steps[["rank", "step", "total"]], on=["rank", "step"], how="left")
    ii = j["iteration_interval"]
    gap = (j["computation"] + j["communication_alone"] - (j["total"] - ii)).dropna()
    if gap.empty or not ii.notna().any() or float(gap.median()) <= 0.5 * float(ii.median()):
        return ov_steps
    out = ov_steps.copy()
    out["computation"] = out["computation"] - out["iteration_interval"].fillna(0.0)
    return out


TABLE_TERMS = (N_("Excess"), N_("Excess / step"), N_("Steps standing out"), N_("Waits less by"),
               N_("Waits less by / step"), N_("Wait"))


def slow_table(a: Analysis, found: list[Standout], label: str, by_stage: bool, diff: str = "Excess") -> dict:
    cols = ["Rank", "Host", *(["Stage"] if by_stage and a.run.info.stages > 1 else []), f"{label} (ms)",
            "Peers' median (ms)", f"{diff} (ms)", f"{diff} / step", "Steps standing out"]
    rows, links = [], []
    for s in found[:50]:
        info = a.run.ranks[s.rank].info if s.rank in a.run.ranks else None
        rows.append([s.rank, (info.host or "") if info else "",
                     *([s.group] if by_stage and a.run.info.stages > 1 else []),
                     round(s.value_ms, 4), round(s.median_ms, 4), round(s.excess_ms, 4),
                     fmt_pct(s.share), f"{s.steps_out} / {s.steps_total}"])
        links.append(urls.rank(s.rank))
    return {"columns": cols, "rows": rows, "links": links}


def _host_note(a: Analysis, ranks: list[int]):
    hosts: dict[str, list[int]] = {}
    for r in a.run.rank_ids:
        h = a.run.ranks[r].info.host
        if h:
            hosts.setdefault(h, []).append(r)
    whole = [h for h, rs in hosts.items() if len(rs) >= 2 and set(rs) <= set(ranks)]
    if whole:
        names = ", ".join(md_literal(h) for h in sorted(whole)[:6])
        return lazy(N_(" All ranks of hosts {names} stand out: suspect the host rather than single devices.")
                    if len(whole) > 1 else
                    N_(" All ranks of host {names} stand out: suspect the host rather than single devices."),
                    names=names)
    return ""


def split_hosts(a: Analysis, found: list[Standout]) -> list[tuple[list[Standout], list[str]]]:
    """The standing-out ranks in one part per cause: the ranks that make up whole hosts (every rank of a host with
    at least two ranks stands out: a throttled server, one finding naming the host and every rank) and the rest."""
    hosts: dict[str, list[int]] = {}
    for r in a.run.rank_ids:
        h = a.run.ranks[r].info.host if r in a.run.ranks else None
        if h:
            hosts.setdefault(h, []).append(r)
    out_ranks = {s.rank for s in found}
    whole = sorted(h for h, rs in hosts.items() if len(rs) >= 2 and set(rs) <= out_ranks)
    # a host is the subject only when it is not the whole cluster and other hosts do not stand out as well
    if not whole or len(whole) == len(hosts):
        return [(found, [])]
    in_host = {r for h in whole for r in hosts[h]}
    parts = [([s for s in found if s.rank in in_host], whole)]
    rest = [s for s in found if s.rank not in in_host]
    return parts + ([(rest, [])] if rest else [])


def host_msg(a: Analysis, hosts: list[str]):
    ranks = [r for r in a.run.rank_ids if r in a.run.ranks and a.run.ranks[r].info.host in set(hosts)]
    names = ", ".join(str(h)[:80] for h in hosts[:6]) + (" …" if len(hosts) > 6 else "")
    return lazy(N_("Host {hosts} (all its ranks: {ranks})") if len(hosts) == 1 else
                N_("Hosts {hosts} (all their ranks: {ranks})"), hosts=names,
                ranks=", ".join(str(r) for r in sorted(ranks)[:32]) + (" …" if len(ranks) > 32 else ""))


def falls_behind(a: Analysis, rank: int, stage_of) -> dict:
    """Evidence of where `rank` falls behind the fastest rank of its stage in the operator timelines
    (`analysis.divergence`), with the execution view's anchor; {} without timelines."""
    if a.execution is None:
        return {}
    peers = [r for r in a.run.rank_ids if not stage_of or stage_of.get(r) == stage_of.get(rank)]
    d = divergence(a.execution, rank, peers)
    if d is None:
        return {}
    return {"divergence_first_op": d.first_op, "divergence_first_type": d.first_type,
            "divergence_first_extra_ms": d.first_extra_ms, "divergence_vs_rank": d.fast_rank,
            "divergence_step": d.step, "divergence_gap_ms": d.gap_ms,
            "divergence_types": Joined([lazy("{type} ({ms}, {pct})", type=t["type"], ms=fmt_ms(t["extra_ms"]),
                                             pct=fmt_pct(t["share"], 0)) for t in d.types]),
            "divergence_page": str(urls.marey_rank(rank))}


# phase -> the step-trace column whose excess is replaced by the peers' median for the impact estimate
FAULT_PHASES = ("step_interval", "compute", "free")  # a rank's own work: the policy's fault floor applies
IMPACT_COLUMN = {"step_interval": "iteration_interval", "compute": ("computing", "fp_and_bp"), "free": "free"}
IMPACT_BASIS = N_("{subject}: {column} set to the median of {peers} in every step; the others' waits shrink by as "
                  "much")
STAGE_NOTE = N_("{basis} (the saving of its stage: the whole step's once this stage is the slowest)")


def impact(a: Analysis, phase: str, ranks: list[int], stage_of) -> dict | None:
    """What the step would save if these ranks were typical in this phase (`analysis.impact.replace_excess`)."""
    cols = IMPACT_COLUMN.get(phase)
    if cols is None:
        return None
    per_step = a.steps.per_step
    col = next((c for c in ((cols,) if isinstance(cols, str) else cols) if c in per_step.columns), None)
    if col is None:
        return None
    ref = None
    if stage_of:
        stages = {stage_of.get(r) for r in ranks}
        ref = [r for r in a.run.rank_ids if stage_of.get(r) in stages]
    # in the report's language, like the finding's title (summary.json: impact.basis)
    basis = lazy(IMPACT_BASIS, subject=ranks_msg(ranks, capital=True), column=lazy(col),
                 peers=lazy("its stage") if stage_of else lazy("the other ranks"))
    if stage_of:
        basis = lazy(STAGE_NOTE, basis=basis)
    imp = replace_excess(a.steps, col, ranks, ref, basis, scope=ref)
    return imp.to_dict() if imp else None


def check(ctx: Context) -> list[Finding]:
    a = ctx.a
    findings = []
    ref = step_reference(a.steps.per_step) if a.steps.kind else None
    stage_of = a.run.info.stage_of_rank if a.run.info.stages > 1 else None
    culprits: list[int] = []
    for phase, col, frame, anchor, by_stage, in _series(a):
        if frame is None or col not in getattr(frame, "columns", ()):
            continue
        # (the per-step cells made once, for the standouts and the step pattern: ~15 ms each at 1,024 ranks)
        given = dict(groups=stage_of if by_stage else None, step_ms=ref, z=ctx.t.z, min_rel=ctx.t.min_rel,
                     min_abs_ms=ctx.t.min_abs_ms, min_share=ctx.t.min_share)
        cells = standout_cells(frame, col, **given)
        found = standouts(frame, col, persistence=ctx.t.persistence, cells=cells, **given)
        if phase == "communication" and found:
            found = _not_victims(a, found, stage_of)
        if phase in FAULT_PHASES:
            # the policy's fault floor: a rank whose phase is several times its peers' in most steps is named even
            # when its excess is a small share of the step today (it is the bottleneck once the rest is fixed)
            kw = dict(groups=stage_of if by_stage else None, step_ms=ref, z=ctx.t.z, min_rel=ctx.p.phase_fault - 1,
                      min_abs_ms=ctx.p.fault_min_ms, min_share=0.0)
            fault_cells = standout_cells(frame, col, **kw)
            faulty = [s for s in standouts(frame, col, persistence=ctx.t.persistence, cells=fault_cells, **kw)
                      if s.rank not in {f.rank for f in found}]
            if faulty:
                found = sorted(found + faulty, key=lambda s: -s.excess_ms)
                cells = cells.assign(out=cells["out"] | fault_cells["out"])
        found = _not_waiting(a, found) if found and phase == "free" else found
        if not found:
            continue
        if phase in ("step_interval", "compute"):
            culprits.extend(s.rank for s in found)
        for found, hosts in split_hosts(a, found):
            ranks = [s.rank for s in found]
            worst = found[0]
            n = len(found)
            same_stage = bool(by_stage and stage_of)
            if n > 1:
                peers = lazy(N_("their peers in the same stage") if same_stage else N_("their peers"))
            else:
                peers = lazy(N_("its peers in the same stage") if same_stage else N_("its peers"))
            verb = lazy(TITLES[phase], s="" if n > 1 else "s", has="have" if n > 1 else "has", peers=peers)
            pattern, strip = step_pattern(cells, ranks)
            rel = worst.excess_ms / worst.median_ms if worst.median_ms > 0 else None
            rel_text = ("" if rel is None else lazy(" ({pct})", pct=fmt_pct(rel, 0)) if rel < 2 else
                        lazy(" ({times}× the median)", times=f"{rel + 1:.0f}"))
            title = lazy("{subject} {verb}: +{excess} per step{rel}, in {out} of {total} steps",
                         subject=host_msg(a, hosts) if hosts else ranks_msg(ranks, capital=True), verb=verb, excess=fmt_ms(worst.excess_ms), rel=rel_text,
                         out=worst.steps_out, total=worst.steps_total)
            # a ceiling: the policy decides from the saving and the fault floor
            severity = "critical" if worst.share >= ctx.t.critical_share else "warning"
            times = [s.value_ms / s.median_ms for s in found if s.median_ms > 0]
            fault = (policy.fault("phase", max(times), ctx.p.phase_fault, max(s.excess_ms for s in found))
                     if phase in FAULT_PHASES and times and max(times) >= ctx.p.phase_fault
                     and max(s.excess_ms for s in found) >= ctx.p.fault_min_ms else None)
            if worst.steps_total < ctx.t.min_steps:
                severity = "info"  # one recorded step: persistence cannot be told
                title = lazy("{title} (one step recorded: cannot tell whether it persists)", title=title)
            why = lazy(WHY)
            advice = lazy(ADVICE_GPU[phase] if gpu_run(a) and phase in ADVICE_GPU else ADVICE[phase])
            if phase == "tail":
                severity = "info"
                others = sorted(set(culprits) - set(ranks))
                why = (lazy("A long tail is usually waiting, not work: {ranks} is slower in forward/backward or data and "
                            "makes the others wait.", ranks=ranks_msg(others)) if len(others) == 1 else
                       lazy("A long tail is usually waiting, not work: {ranks} are slower in forward/backward or data and "
                            "make the others wait.", ranks=ranks_msg(others)) if others else
                       lazy("A long tail is usually waiting, not work: no slower rank was found in the other phases."))
                if not others and worst.steps_total >= ctx.t.min_steps:
                    severity = "warning"
            label = {"step_interval": "Step interval", "compute": "Computation", "free": "Free",
                     "communication": "Communication (not overlapped)", "tail": "Tail"}[phase]
            findings.append(policy.judged(Finding(
                id=f"slow-rank.{phase.replace('_', '-')}{'-host' if hosts else ''}", category="slow_rank",
                severity=severity, title=title, advice=advice, fault=fault,
                why=lazy("{why}{note}", why=why, note="" if hosts else _host_note(a, ranks)),
                page=anchor(worst.rank), ranks=sorted(ranks) if hosts else ranks, phase=phase,
                evidence={**({"hosts": hosts} if hosts else {}), "value_ms": worst.value_ms,
                          "cluster_median_ms": worst.median_ms,
                          "excess_ms": worst.excess_ms, "excess_share_of_step": worst.share,
                          "median_step_ms": worst.step_ms, "steps_slow": worst.steps_out, "steps": worst.steps_total,
                          "compared_within": N_("pipeline stage") if by_stage and stage_of else N_("cluster"),
                          "column": col, "pattern": pattern,
                          **(falls_behind(a, worst.rank, stage_of if by_stage else None) if phase == "compute"
                             else {})},
                strip=strip,
                table=slow_table(a, found, label, by_stage),
                impact=_measured(a, phase, found, impact(a, phase, ranks, stage_of if by_stage else None))), ctx.p))
    return findings


def _waited(a: Analysis) -> dict[int, float]:
    """Rank -> ms per step it waited for other ranks at the collectives (the wait-for matrix's row, all groups)."""
    w = getattr(a, "waits", None)
    out: dict[int, float] = {}
    for g in (w.groups if w is not None else []):
        for i, r in enumerate(g.ranks):
            out[r] = out.get(r, 0.0) + float(g.ms[i].sum())
    return out


def _not_waiting(a: Analysis, found: list[Standout]) -> list[Standout]:
    """Drop ranks whose extra free time is waiting for another rank at the collectives: the wait-for matrix says it
    waited at least half its excess per step for others, nobody waits for it as long, and its exposed communication
    does not hold that wait (collectives run on the CPU, gloo: the device idles while the host is blocked in them)."""
    w = getattr(a, "waits", None)
    if w is None:
        return found
    waited = _waited(a)
    cost = {c.rank: c.per_waiter_ms for g in w.groups for c in g.culprits}
    avg = a.steps.average
    comm = avg["communication_not_overlapped"].fillna(0.0) if "communication_not_overlapped" in avg else None

    def victim(s: Standout) -> bool:
        got = waited.get(s.rank, 0.0)
        exposed = float(comm.get(s.rank, 0.0)) if comm is not None else 0.0
        return got >= 0.5 * s.excess_ms and cost.get(s.rank, 0.0) < 0.5 * got and exposed < 0.5 * got
    return [s for s in found if not victim(s)]


MEASURED_BASIS = N_("{ranks} arriving at the collectives it was last at with the next latest rank (measured at the "
                    "matched collectives: the wait-for matrix), at most its excess: the step shortens by as much")


def _measured(a: Analysis, phase: str, found: list[Standout], imp: dict | None) -> dict | None:
    """The saving of a rank's own phase (computation, free, step interval) measured at the collectives when the
    what-if says less: the what-if moves the rank's phase to its peers' median but leaves its peers' waits where the
    step trace put them (gloo's wait on the host sits in their free time, so the what-if step does not shrink); the
    collectives it was last at would start earlier by its arrival margin (`analysis.waits`), at most its excess."""
    w = getattr(a, "waits", None)
    if w is None or phase not in FAULT_PHASES:
        return imp
    got = [w.culprit(s.rank) for s in found]
    saving = sum(c.saving_ms for _g, c in (x for x in got if x is not None))
    measured = min(saving, sum(s.excess_ms for s in found))
    have = (imp or {}).get("step_ms") or 0.0
    if not measured > 1.2 * have + 1.0:
        return imp
    ranks = [s.rank for s in found]
    m = saved_by_ms(measured, a.steps, lazy(MEASURED_BASIS, ranks=ranks_msg(ranks, capital=True)))
    return m.to_dict() if m else imp


RULE = Rule(
    id="slow-rank", category="slow_rank", title=N_("Slow rank"),
    description=N_("""\
For each phase of the step (MindInsight: step interval, computation, tail; Ascend `step_trace_time.csv`: Computing,
Free, Communication (not overlapped)), every rank is compared in **every step** with the ranks of its pipeline
stage (the whole cluster for the step interval and for runs without stages). A rank stands out in a step when it is
above the median by more than `z` robust standard deviations, `min_rel` of the median, `min_abs_ms` and
`min_share` of the step time; it is reported when it stands out in at least `persistence` of its steps. A rank
whose step interval, computation or free time is `severity.phase_fault` times its peers' median (and at least
`severity.fault_min_ms` more) in as many steps is reported too, however small its share of the step. The saving
sets the rank's phase to its peers' median in every step (the others' waits shrink by as much). Severity follows
the severity policy (the saving; the fault floor for a phase several times its peers'); one recorded step is
information (persistence unknown). Exposed communication and a long **tail** have no saving of their own (they are
usually waiting for a slower rank named in another finding): information. Where the collectives' arrivals are
known (who waits for whom), a rank whose extra free time is its wait for another rank at the collectives (collectives
on the CPU, gloo: the device idles while the host is blocked in them) is a victim, not reported; and a rank's
saving is what its arrival costs the collectives it is last at, when the step-trace what-if says less."""),
    params=Thresholds, check=check,
    source=N_("tuning guide (cluster: data/model/pipeline parallel, steps 1–3); msprof-analyze advisor slow rank "
           "(spread / step ≥ 5 %); seed 003 delimitation"))
