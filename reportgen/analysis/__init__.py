"""Analysis: pure functions from the loaded `Run` to the numbers the rules, charts and pages show."""

from __future__ import annotations

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
from reportgen.pools import release_freed_memory


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


def analyze(run: Run, device_memory_mb: Optional[float] = None, peak_tflops: Optional[float] = None,
            model_flops: Optional[float] = None, release_inputs: bool = False) -> Analysis:
    """`peak_tflops` / `model_flops`: --peak-tflops (every rank's peak) and --model-flops (the job's FLOPs per step).
    `release_inputs` (the build, which reads the run's operator and link frames nowhere else): they are dropped from
    the run once the communication analysis has read them (`analyze_communication`); a later `analyze` of the same
    run would not find them."""
    steps = analyze_steps(run)
    # who waits for whom first (a pure function of the ranks' data, its result set below where it always was): the
    # ranks' collective instances are read by nothing after it, and dropped before the other analyses run
    waits_error: Optional[Exception] = None
    try:
        waits = analyze_waits(run, release=release_inputs)
    except Exception as e:  # noqa: BLE001
        waits, waits_error = (None, ""), e
    if waits_error is None:
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
    resources = analyze_resources(run, device_memory_mb)
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
        if d.communication is not None and getattr(d.communication, "instances", None) is not None:
            d.communication.instances = None
        if getattr(d.figures, "arrival", None) is not None:  # (their coded form, `per_rank.RankFigures.arrival`)
            d.figures.arrival = None
