"""Analysis: pure functions from the loaded `Run` to the numbers the rules, charts and pages show."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Optional

from reportgen.analysis.communication import CommAnalysis, analyze_communication
from reportgen.analysis.consistency import check_consistency
from reportgen.analysis.coverage import Coverage, coverage
from reportgen.analysis.efficiency import Efficiency, analyze_efficiency
from reportgen.analysis.execution import ExecutionView, analyze_execution
from reportgen.analysis.expert import ExpertBalance, analyze_expert_balance
from reportgen.analysis.overlap import OverlapAnalysis, analyze_overlap
from reportgen.analysis.resources import Resources, analyze_resources
from reportgen.analysis.steps import StepAnalysis, analyze_steps
from reportgen.analysis.strategy import StrategyView, analyze_strategy
from reportgen.analysis.waits import Waits, analyze_waits
from reportgen.dataquality import dq
from reportgen.model import DataIssue, Run
from reportgen.pools import Beside, can_fork, release_freed_memory

log = logging.getLogger("msreport")


@dataclass
class Analysis:
    """The one object rules, charts and pages read."""

    run: Run
    steps: StepAnalysis
    comm: CommAnalysis
    overlap: OverlapAnalysis
    resources: Resources
    issues: list[DataIssue] = field(default_factory=list)
    strategy: Optional[StrategyView] = None
    execution: Optional[ExecutionView] = None
    coverage: Optional[Coverage] = None  # what could be judged (set by `analyze`)
    efficiency: Optional[Efficiency] = None  # device peaks, MFU, GEMM headroom
    expert: Optional[ExpertBalance] = None  # expert-parallel groups: expert time, all-to-all, imbalance
    waits: Optional[Waits] = None  # who waits for whom at the collectives (analysis.waits)
    waits_reason: str = ""  # why there is no wait-for matrix (the input gives no arrival times, one rank)
    # a digest of everything the analysis was made from (the build's analysis cache key, `report.analysis_inputs`),
    # "" where there is none (no cache): the site's CSV store finds tables made of the analysis alone by it
    source: str = ""


WAITS_BESIDE_RANKS = 64  # from this many ranks `analyze(beside=True)` makes the waits in a forked process (~2 s of
# CPU at 1,024 ranks of the communication-heavy shape, issue 33, a third of the analysis: the other core was idle)


def analyze(run: Run, device_memory_mb: Optional[float] = None, peak_tflops: Optional[float] = None,
            model_flops: Optional[float] = None, release_inputs: bool = False, beside: bool = False) -> Analysis:
    """`peak_tflops` / `model_flops`: --peak-tflops (every rank's peak) and --model-flops (the job's FLOPs per step).
    `release_inputs` (the build, which reads the run's operator and link frames nowhere else): they are dropped from
    the run once the communication analysis has read them (`analyze_communication`); a later `analyze` of the same
    run would not find them. `beside` (the build, given more than one process): on a run of WAITS_BESIDE_RANKS ranks
    or more, who waits for whom is worked out in a forked copy of this process (`pools.Beside`) while this one
    makes the rest; the same numbers (`tests/test_waits.py`)."""
    steps = analyze_steps(run)
    job = None
    if beside and len(run.ranks) >= WAITS_BESIDE_RANKS and can_fork():
        try:
            job = Beside(_beside, run, steps, release_inputs, device_memory_mb)
        except OSError as e:  # (no process could be made: worked out here)
            log.debug("waits made in this process: %s", e)
    try:
        return _analyze(run, steps, job, device_memory_mb, peak_tflops, model_flops, release_inputs)
    finally:  # (Ctrl-C or a failure here: the forked process is stopped at once, not waited for)
        if job is not None:
            job.close()


def _beside(run: Run, steps: StepAnalysis, release: bool, device_memory_mb: Optional[float]) -> tuple:
    """`Beside`'s forked copy of the build's process: `analyze_waits` (of each rank's sealed frames, the instances
    alone are opened there: the operators and links are the communication analysis', in the build's process),
    then `analyze_resources` with summary.json's operator totals (the ranks' operator tables opened there, never
    in the build's process: 2.7 s of it at 4,096 ranks, and ~2.5 s more for the totals while the pages were
    written, while the forked one was done ~4 s before the communication analysis needed its waits). Each as
    (value, None) or (None, the exception it raised): the resources' exception is raised in the build's process,
    as it was there."""
    for d in run.ranks.values():
        if d.communication is not None:
            d.communication.open_alone("instances")
    out = []
    for make in (lambda: analyze_waits(run, release=release), lambda: analyze_resources(run, device_memory_mb, steps)):
        try:
            out.append((make(), None))
        except Exception as e:  # noqa: BLE001  # (handed back: the build's process decides, as without a fork)
            out.append((None, e))
    return tuple(out)


def _analyze(run: Run, steps: StepAnalysis, job: Optional[Beside], device_memory_mb: Optional[float],
             peak_tflops: Optional[float], model_flops: Optional[float], release_inputs: bool) -> Analysis:
    """`analyze`, its steps made, its waits being made by `job` (None: made here)."""
    # who waits for whom first (a pure function of the ranks' data, its result set below where it always was): the
    # ranks' collective instances are read by nothing after it, and dropped before the other analyses run
    waits_error: Optional[Exception] = None
    if job is None:
        try:
            waits = analyze_waits(run, release=release_inputs)
        except Exception as e:  # noqa: BLE001
            waits, waits_error = (None, ""), e
    if job is not None or waits_error is None:  # (forked: its copy of the instances is the one it reads)
        drop_instances(run)
        # the instances' and the waits' temporaries handed back before the communication analysis (issue 33: else
        # glibc keeps their pages and that analysis's own come on top: ~75 MB off the peak at 1,024 ranks)
        release_freed_memory()
    # the expert balance before the communication analysis, which may release the ranks' operator frames it reads
    # (`release_inputs`); its result and failure set below where they always were
    expert, expert_error = None, None
    try:
        expert = analyze_expert_balance(run)
    except Exception as e:  # noqa: BLE001
        expert_error = e
    comm = analyze_communication(run, release_inputs=release_inputs)
    overlap = analyze_overlap(run, steps, comm)
    resources = analyze_resources(run, device_memory_mb, steps) if job is None else None  # (else made by `job`)
    issues = run.all_issues() + steps.issues + comm.issues + overlap.issues
    strategy = execution = None
    try:  # optional views: a bug or an input we do not foresee must not cost the rest of the report
        strategy = analyze_strategy(run.strategy)
    except Exception as e:  # noqa: BLE001
        issues.append(DataIssue("", dq("analysis.strategy-view-failed", name=type(e).__name__, value=e), "warning"))
    try:
        execution = analyze_execution(run, steps.per_step, comm.per_rank_step)
    except Exception as e:  # noqa: BLE001
        issues.append(DataIssue("", dq("analysis.execution-view-failed", name=type(e).__name__, value=e), "warning"))
    a = Analysis(run=run, steps=steps, comm=comm, overlap=overlap, resources=resources, issues=issues,
                 strategy=strategy, execution=execution)
    try:
        a.efficiency = analyze_efficiency(run, peak_tflops, model_flops)
    except Exception as e:  # noqa: BLE001
        a.issues.append(DataIssue("", dq("analysis.efficiency-view-failed", name=type(e).__name__, value=e), "warning"))
    a.expert = expert
    if job is not None:
        try:
            (waits, waits_error), (a.resources, resources_error) = job.result()
        except Exception as e:  # noqa: BLE001  # (its process's death: BrokenProcessPool)
            waits, waits_error, resources_error = (None, ""), e, None
            a.resources = analyze_resources(run, device_memory_mb, steps)
        if waits_error is not None:
            waits = (None, "")
        if resources_error is not None:
            raise resources_error
    if expert_error is not None:
        e = expert_error
        a.issues.append(DataIssue("", dq("analysis.expert-balance-failed", name=type(e).__name__, value=e),
                                  "warning"))
    a.waits, a.waits_reason = waits
    if waits_error is not None:
        e = waits_error
        a.issues.append(DataIssue("", dq("analysis.waits-failed", name=type(e).__name__, value=e), "warning"))
        a.waits_reason = a.issues[-1].problem
    # [issue 16, h-numbers] values that cannot be true (communication or wait longer than the step, parts of a
    # step over the step, shares over 100 %) become data-quality entries naming the file and the rank
    try:
        a.issues.extend(check_consistency(a))
    except Exception as e:  # noqa: BLE001
        a.issues.append(DataIssue("", dq("analysis.consistency-check-failed", name=type(e).__name__, value=e), "info"))
    a.coverage = coverage(a)
    release_freed_memory()
    return a


def drop_instances(run: Run) -> None:
    """Forget every rank's collective instances (`Communication.instances`, one row per rank and collective: ~100
    MB at 1,024 ranks): once the arrivals are made (`analysis.waits`), nothing reads them (the rank pages read
    `ops`; the rank cache entries were written when the ranks were loaded), and the page writers forked after the
    analysis would each count them again. Kept where the arrivals failed: the late-arrival rule then tries again."""
    for d in run.ranks.values():
        if d.communication is not None:  # (set, not read: a rank whose frames are still sealed keeps them so, and
            d.communication.instances = None  # they are opened without the instances, `model.Communication`)
        if getattr(d.figures, "arrival", None) is not None:  # (their coded form, `per_rank.RankFigures.arrival`)
            d.figures.arrival = None
