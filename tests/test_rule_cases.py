"""Per-rule case tables (the sqlfluff pattern): each case is a tiny hand-made analysis (tests/rule_kit.py), the
threshold overrides in `run_rules` format, and the findings expected from the rule's own `check` — ids,
severities, subject and the numbers the verdict depends on (hand-computed in a comment). `[]` means no finding.

To change a rule, read its table here: no synthetic run is involved. A case with overrides must change the
outcome against the same analysis with the defaults (checked below). A case that shows a bug in a rule is
marked `xfail(strict=True)` with the reason, so fixing the rule turns it into a failure to un-mark.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from reportgen.model import DataIssue
from reportgen.rules import RULES, resolved_thresholds, run_rules
from tests import rule_kit as kit


@dataclass
class Case:
    name: str
    data: dict  # keyword arguments of kit.analysis
    expect: list[dict]  # fire(...) per finding, in the rule's order; [] = no finding
    overrides: dict = field(default_factory=dict)  # {"rule-id": {"threshold": value}}, as run_rules takes them
    xfail: str = ""  # a bug in the rule this case shows


def fire(id: str, severity: str, evidence: dict | None = None, **subject) -> dict:
    """An expected finding: id, severity, evidence values (approximate) and subject fields (ranks, links, stages,
    files, phase, category, transport) compared exactly."""
    return {"id": id, "severity": severity, "evidence": evidence or {}, "subject": subject}


NONE: list[dict] = []
I = "info"
W = "warning"
C = "critical"


def modern(computing, comm, free=0.0, **more) -> dict:
    """Ascend step trace: Computing, Communication (not overlapped), Free (per rank, or rows of steps)."""
    return {"computing": computing, "communication_not_overlapped": _per(comm, computing),
            "free": _per(free, computing), **{k: _per(v, computing) for k, v in more.items()}}


def legacy(interval, fp_bp, tail) -> dict:
    """MindInsight step trace: step interval, forward + backward, tail."""
    return {"iteration_interval": interval, "fp_and_bp": _per(fp_bp, interval), "tail": _per(tail, interval)}


def _per(v, like):
    """A scalar stands for the same value on every rank (in every step when `like` is rows of steps)."""
    if not isinstance(v, (int, float)):
        return v
    return [[v] * len(row) for row in like] if like and isinstance(like[0], list) else [v] * len(like)


# --- data quality ------------------------------------------------------------------------------------------------

DATA_QUALITY = [
    Case("a file read only partly is a warning naming the file",
         dict(issues=[DataIssue("rank_1/step_trace_time.csv", "truncated after line 7", "error")]),
         [fire("data-quality.file", W, files=["rank_1/step_trace_time.csv"])]),
    Case("a run-wide warning is information without a file",
         dict(issues=[DataIssue("", "2 ranks have no communication data", "warning")]),
         [fire("data-quality.run", I, files=[])]),
    Case("notes (severity info) stay in the table",
         dict(issues=[DataIssue("rank_0/x.csv", "unit converted from us", "info")]), NONE),
    Case("beyond max_findings the other files are grouped",
         dict(issues=[DataIssue(f, "column missing", "warning") for f in ("a.csv", "b.csv", "c.csv")]),
         [fire("data-quality.file", I, files=["a.csv"]), fire("data-quality.file", I, files=["b.csv"]),
          fire("data-quality.more", I, {"files": 1}, files=["c.csv"])],
         overrides={"data-quality": {"max_findings": 2}}),
    Case("the group is a warning when a grouped file could not be read",
         dict(issues=[DataIssue("a.csv", "unreadable", "error"), DataIssue("b.csv", "unreadable", "error")]),
         [fire("data-quality.file", W, files=["a.csv"]), fire("data-quality.more", W, {"files": 1}, files=["b.csv"])],
         overrides={"data-quality": {"max_findings": 1}}),
    # by consequence: a damaged row the loader skipped changes the rank's numbers (the loader's words, no attribute)
    Case("a skipped damaged row is a warning",
         dict(issues=[DataIssue("rank_3/step_trace_time.csv", "1 row(s) with an unusable number skipped: line 3",
                                "warning")]),
         [fire("data-quality.file", W, {"consequence": "numbers"}, files=["rank_3/step_trace_time.csv"])]),
    # the loader says what the problem does (DataIssue.consequence): that decides, whatever the words
    Case("a loader's 'numbers' consequence is a warning",
         dict(issues=[DataIssue("rank_1/x.csv", "values out of range replaced", "warning", consequence="numbers")]),
         [fire("data-quality.file", W, {"consequence": "numbers"}, files=["rank_1/x.csv"])]),
    Case("a loader's 'cosmetic' consequence is information",
         dict(issues=[DataIssue("rank_1/x.csv", "3 rows skipped: duplicate header lines", "warning",
                                consequence="cosmetic")]),
         [fire("data-quality.file", I, {"consequence": "cosmetic"}, files=["rank_1/x.csv"])]),
]

# --- step interval (MindInsight step trace only) -----------------------------------------------------------------

STEP_INTERVAL = [
    # step 10 + 70 + 20 = 100 ms; 10 / 100 = 0.10 >= warning_share 0.05, < critical_share 0.25
    Case("10 ms of a 100 ms step waiting for data on every rank",
         dict(steps=legacy([10, 10, 10, 10], 70, 20)),
         [fire("step-interval.long", W, {"median_ms": 10, "share_of_step": 0.10}, ranks=[0, 1, 2, 3])]),
    # 30 / (30 + 50 + 20) = 0.30 >= 0.25
    Case("30 % of the step waiting is critical", dict(steps=legacy([30, 30, 30, 30], 50, 20)),
         [fire("step-interval.long", C, {"share_of_step": 0.30})]),
    # 2 / 100 = 0.02 < 0.05: above MindInsight's 0.5 ms, small against the step
    Case("2 ms in a 100 ms step is information", dict(steps=legacy([2, 2, 2, 2], 78, 20)),
         [fire("step-interval.long", I, {"share_of_step": 0.02})]),
    Case("0.3 ms is below MindInsight's 0.5 ms", dict(steps=legacy([0.3, 0.3, 0.3, 0.3], 80, 19.7)), NONE),
    Case("info_ms raised above the 10 ms interval", dict(steps=legacy([10, 10, 10, 10], 70, 20)), NONE,
         overrides={"step-interval": {"info_ms": 15}}),
    Case("the Ascend step trace has no step interval", dict(steps=modern([100] * 4, 10, 5)), NONE),
]

# --- data pipeline -----------------------------------------------------------------------------------------------

FED = dict(host_empty=0, host_total=10)
DATA_PIPELINE = [
    # 6 of 10 steps empty: 6 > 0.3 x 10; no step trace: the time lost cannot be estimated -> information (policy)
    Case("host queue empty in 6 of 10 steps, no step trace: information",
         dict(queues={0: dict(host_empty=6, host_total=10), 1: FED}),
         [fire("data-pipeline.data-process", I, {"host_empty_rate": 0.6, "rank": 0}, ranks=[0])]),
    # with a step trace: rank 0 waits 20 ms for data, ranks 1-3 1 ms (steps 1 + 80 + 19 = 100, rank 0 119); the
    # saving replaces rank 0's interval by the others' median (1): 19 ms of a 100 ms median step >= 2 % -> warning
    Case("host queue empty and the rank waits 20 ms for data: a warning with its saving",
         dict(steps=legacy([20, 1, 1, 1], 80, 19), queues={0: dict(host_empty=6, host_total=10), 1: FED, 2: FED,
                                                            3: FED}),
         [fire("data-pipeline.data-process", W, {"step_interval_ms": 20, "rank": 0}, ranks=[0])]),
    Case("host queue fed, chip queue dry in 3 of 20 batches: transmission",
         dict(queues={0: dict(host_empty=0, host_total=10, device_empty=3, device_total=20), 1: FED}),
         [fire("data-pipeline.data-transmission", I, {"chip_queue_empty": 3}, ranks=[0])]),
    # 3 > 0.3 x 10 is false; the chip queue never ran dry
    Case("host queue empty in 3 of 10 steps is normal",
         dict(queues={0: dict(host_empty=3, host_total=10, device_empty=0, device_total=20), 1: FED}), NONE),
    # step interval 0.2 ms < min_interval_ms 0.5: the queue runs dry but the step barely waits
    Case("dry queue with a tiny step interval is information",
         dict(steps=legacy([0.2, 0.2], 90, 9.8), queues={0: dict(host_empty=6, host_total=10), 1: FED}),
         [fire("data-pipeline.data-process", I, {"step_interval_ms": 0.2}, ranks=[0])]),
    Case("host_empty_rate lowered to 0.2: 3 of 10 is data processing",
         dict(steps=legacy([20, 1, 1, 1], 80, 19), queues={0: dict(host_empty=3, host_total=10), 1: FED, 2: FED,
                                                            3: FED}),
         [fire("data-pipeline.data-process", W, ranks=[0])],
         overrides={"data-pipeline": {"host_empty_rate": 0.2}}),
]

# --- host CPU ----------------------------------------------------------------------------------------------------

HOST_CPU = [
    Case("host 92 % busy", dict(cpu={0: 92.0, 1: 45.0}),
         [fire("host-cpu.busy", I, {"busy_pct": 92.0, "rank": 0}, ranks=[0])]),
    Case("80 % is not above 80 %", dict(cpu={0: 80.0, 1: 45.0}), NONE),
    Case("busy_pct lowered to 60: 70 % is reported", dict(cpu={0: 70.0, 1: 45.0}),
         [fire("host-cpu.busy", I, {"busy_pct": 70.0}, ranks=[0])], overrides={"host-cpu": {"busy_pct": 60}}),
]

# --- tail on a single device -------------------------------------------------------------------------------------

TAIL_SINGLE = [
    # 29 / (1 + 70 + 29) = 0.29 >= warning_share 0.20
    Case("tail 29 % of the step", dict(steps=legacy([1], 70, 29)),
         [fire("tail-single-device.tail", W, {"tail_ms": 29, "share": 0.29}, ranks=[0], phase="tail")]),
    Case("tail 15 % is information", dict(steps=legacy([1], 84, 15)),
         [fire("tail-single-device.tail", I, {"share": 0.15})]),
    Case("tail 5 % is normal", dict(steps=legacy([1], 94, 5)), NONE),
    Case("two ranks: the tail holds the all-reduce", dict(steps=legacy([1, 1], 70, 29)), NONE),
    Case("with communication data the rank is part of a cluster",
         dict(steps=legacy([1], 70, 29), comm={"communication_ms": [20]}), NONE),
    Case("info_share lowered to 3 %: a 5 % tail is reported", dict(steps=legacy([1], 94, 5)),
         [fire("tail-single-device.tail", I, {"share": 0.05})],
         overrides={"tail-single-device": {"info_share": 0.03}}),
]

# --- slow rank ---------------------------------------------------------------------------------------------------

# Steps of 150 ms on every rank (computing + communication not overlapped + free 5).
SLOW_RANK = [
    # per step: median(100, 101, 99, 130) = 100.5, MAD = median(.5, .5, 1.5, 29.5) = 1 -> floors 3.5 x 1.4826 =
    # 5.19, 5 % x 100.5 = 5.03, 1 ms, 5 % x 150 = 7.5; 29.5 > 7.5 in 4 of 4 steps; 29.5 / 150 = 0.197 < 0.2
    Case("rank 3 computes 29.5 ms longer in every step",
         dict(steps=modern([100, 101, 99, 130], [45, 44, 46, 15], 5)),
         [fire("slow-rank.compute", W, {"excess_ms": 29.5, "cluster_median_ms": 100.5, "steps_slow": 4},
               ranks=[3], phase="compute")]),
    # 140 - 100.5 = 39.5; 39.5 / 150 = 0.263 >= critical_share 0.2
    Case("39.5 ms of a 150 ms step is critical", dict(steps=modern([100, 101, 99, 140], [45, 44, 46, 5], 5)),
         [fire("slow-rank.compute", C, {"excess_share_of_step": 39.5 / 150}, ranks=[3])]),
    # 104 - 100.5 = 3.5 < every floor
    Case("3.5 ms above the median is noise", dict(steps=modern([100, 101, 99, 104], [45, 44, 46, 41], 5)), NONE),
    # 107 - 100.5 = 6.5: above 5.19, 5.03 and 1 but below 5 % of the step (7.5); with min_share 0.04 the floor is 6
    Case("min_share lowered to 4 %: 6.5 ms (4.3 % of the step) is slow",
         dict(steps=modern([100, 101, 99, 107], [45, 44, 46, 38], 5)),
         [fire("slow-rank.compute", W, {"excess_ms": 6.5}, ranks=[3])],
         overrides={"slow-rank": {"min_share": 0.04}}),
    Case("slow in 1 of 4 steps does not persist",
         dict(steps=modern([[100, 101, 99, 130]] + [[100, 101, 99, 100]] * 3,
                           [[45, 44, 46, 15]] + [[45, 44, 46, 45]] * 3, 5)), NONE),
    Case("one recorded step: information, persistence unknown",
         dict(steps=modern([100, 101, 99, 130], [45, 44, 46, 15], 5), n_steps=1),
         [fire("slow-rank.compute", I, {"steps": 1}, ranks=[3])]),
    # free: median(5, 5, 5, 30) = 5, MAD 0; 25 > 7.5; 25 / 150 = 0.167
    Case("rank 3 idles 25 ms more (free)", dict(steps=modern([100] * 4, [45, 45, 45, 20], [5, 5, 5, 30])),
         [fire("slow-rank.free", W, {"excess_ms": 25}, ranks=[3], phase="free")]),
    # rank 3 waits 39.5 ms more in communication but computes 39.5 ms less than its peers' median (99.5):
    # 39.5 >= half its extra communication -> a victim of a slower peer, not slow itself
    Case("a rank that computes less and waits more is a victim",
         dict(steps=modern([100, 101, 99, 60], [45, 44, 46, 85], 5)), NONE),
    # Two ranks, the same story: rank 0 computes 39 ms longer (100 vs 61) and rank 1 waits 40 ms more for it.
    # Rank 1 is the victim: `_not_victims` compares its computation with `peer_median`, the other rank's value in
    # a group of two: 100 - 61 = 39 >= 0.5 x 40, so its long communication is waiting, not named slow.
    Case("two ranks: the rank that waits for the slow one is a victim",
         dict(steps=modern([100, 61], [45, 85])),
         [fire("slow-rank.compute", C, {"excess_ms": 39}, ranks=[0])]),
    # policy, fault floor: free median(1, 1, 1, 5) = 1; rank 3's 5 ms is 5x its peers' (>= phase_fault 3) and 4 ms
    # more (>= fault_min_ms), in every step; 4 ms of a 300 ms step (1.3 %) is under min_share and warning_share, but
    # a phase this far above its peers is at least a warning
    Case("free time 5x its peers' is a fault: a warning",
         dict(steps=modern([250] * 4, [49, 49, 49, 45], [1, 1, 1, 5])),
         [fire("slow-rank.free", W, {"excess_ms": 4, "cluster_median_ms": 1}, ranks=[3], phase="free")]),
    # 2x its peers' (2 ms more of 300): neither the share nor the fault floor
    Case("free time 2x its peers' with a small share is not reported",
         dict(steps=modern([250] * 4, [49, 49, 49, 47], [2, 2, 2, 4])), NONE),
    # MindInsight: median(1, 1, 1, 20) = 1; 19 > 5 % of the 100 ms step median; 19 / 100 = 0.19
    Case("rank 3 waits 19 ms longer for data (step interval)", dict(steps=legacy([1, 1, 1, 20], 80, 19)),
         [fire("slow-rank.step-interval", W, {"excess_ms": 19}, ranks=[3], phase="step_interval")]),
]

# --- late arrival ------------------------------------------------------------------------------------------------

STEP_150 = modern([100] * 4, 45, 5)
LATE_ARRIVAL = [
    # wait per step: median(30, 31, 29, 2) = 29.5; 29.5 - 2 = 27.5 > 50 % x 29.5 = 14.75, > 7.5 (5 % of 150);
    # its whole communication is 39.5 - 12 = 27.5 shorter >= 0.5 x 27.5: it arrives late
    Case("rank 3 waits 2 ms while its peers wait 30",
         dict(steps=STEP_150, comm={"wait_ms": [30, 31, 29, 2], "communication_ms": [40, 41, 39, 12]}),
         [fire("late-arrival.culprit", W, {"difference_ms": 27.5, "peers_median_wait_ms": 29.5}, ranks=[3],
               phase="communication")]),
    # same short wait, but its communication takes as long as its peers': the wait went into transfer
    Case("short wait but a long transfer is a slow link, not a late rank",
         dict(steps=STEP_150, comm={"wait_ms": [30, 31, 29, 2], "communication_ms": [40, 41, 39, 40]}), NONE),
    Case("everyone waits alike", dict(steps=STEP_150, comm={"wait_ms": [30, 31, 29, 28],
                                                            "communication_ms": [40, 41, 39, 38]}), NONE),
    # Two ranks: rank 1 waits 2 ms, rank 0 30 ms (28 less, > 50 % of 30); rank 1's communication is 25 ms shorter
    # (89 % of the wait difference). The elapse check compares it with `peer_median`, the other rank's 40 in a
    # group of two: 40 - 15 = 25 >= 0.5 x 28 = 14, so the late rank is named.
    Case("two ranks: the one that waits 28 ms less arrives late",
         dict(steps=modern([100, 100], 45, 5), comm={"wait_ms": [30, 2], "communication_ms": [40, 15]}),
         [fire("late-arrival.culprit", W, {"difference_ms": 28}, ranks=[1])]),
    # min_rel 0.95: floor 0.95 x 29.5 = 28.0 > 27.5
    Case("min_rel raised to 95 %",
         dict(steps=STEP_150, comm={"wait_ms": [30, 31, 29, 2], "communication_ms": [40, 41, 39, 12]}), NONE,
         overrides={"late-arrival": {"min_rel": 0.95}}),
]

# --- slow link ---------------------------------------------------------------------------------------------------

RING = ["0-1", "1-2", "2-3", "3-4", "4-0"]


def ring(slow_ms: float, size_mb: float = 100.0, ms: float = 5.0, slow: str = "3-4", transport: str = "HCCS"):
    """Five links of 100 MB in 5 ms (20 GB/s), one of them (3-4) taking `slow_ms`."""
    return [(name, transport, size_mb, slow_ms if name == slow else ms) for name in RING]


STEP_150_5 = modern([100] * 5, 45, 5)
SLOW_LINK = [
    # median 20 GB/s, MAD 0; 3-4 at 100 / 20 = 5 GB/s: 15 below > 30 % x 20; lost 20 - 100 / 20 = 15 ms = 10 % of 150
    Case("link 3-4 at a quarter of the HCCS median", dict(steps=STEP_150_5, links=ring(20)),
         [fire("slow-link.bandwidth", W, {"bandwidth_gbps": 5, "transport_median_gbps": 20, "lost_ms": 15,
                                          "lost_share_of_step": 0.1}, links=["3-4"], ranks=[3, 4], transport="HCCS")]),
    # lost 40 - 5 = 35 ms = 23 % of the step >= critical_share 0.2
    Case("35 ms lost per step is critical", dict(steps=STEP_150_5, links=ring(40)),
         [fire("slow-link.bandwidth", C, {"lost_ms": 35}, links=["3-4"])]),
    # 2 MB links: 0.4 - 0.1 = 0.3 ms lost: under fault_min_ms (no fault floor) and 0.2 % of the step (information)
    Case("slow but small: information", dict(steps=STEP_150_5, links=ring(0.4, size_mb=2, ms=0.1)),
         [fire("slow-link.bandwidth", I, {"lost_ms": 0.3}, links=["3-4"])]),
    Case("links within 10 % of each other",
         dict(links=[(n, "HCCS", 100.0, t) for n, t in zip(RING, [5, 5.2, 4.8, 5.5, 5])]), NONE),
    Case("a slow link that moved 0.5 MB is latency, not compared",
         dict(links=ring(20)[:3] + [("3-4", "HCCS", 0.5, 2.0), ("4-0", "HCCS", 100.0, 5.0)]), NONE),
    Case("slow links of different transports are not compared",
         dict(links=ring(5)[:3] + [("3-4", "RDMA", 100.0, 20.0), ("4-0", "HCCS", 100.0, 5.0)]), NONE),
    # min_drop 0.8: floor 0.8 x 20 = 16 > 15
    Case("min_drop raised to 80 %", dict(steps=STEP_150_5, links=ring(20)), NONE,
         overrides={"slow-link": {"min_drop": 0.8}}),
    # policy, fault floor: 3-4 at 100 / 12.5 = 8 GB/s, 40 % of the median (< link_fault 50 %); it loses 12.5 - 5 =
    # 7.5 ms of a 1,050 ms step (0.7 % < warning_share 2 %), but a link this slow is at least a warning
    Case("40 % of the median is a fault: a warning whatever it saves today",
         dict(steps=modern([1000] * 5, 45, 5), links=ring(12.5)),
         [fire("slow-link.bandwidth", W, {"lost_ms": 7.5, "lost_share_of_step": 7.5 / 1050}, links=["3-4"])]),
    # 60 % of the median (100 / 8.5 = 11.8 GB/s, 41 % below): slow, not a fault; 3.5 ms of 1,050 = 0.3 %: information
    Case("60 % of the median losing 0.3 % of the step is information",
         dict(steps=modern([1000] * 5, 45, 5), links=ring(8.5)),
         [fire("slow-link.bandwidth", I, {"lost_ms": 3.5}, links=["3-4"])]),
]

# --- stalls ------------------------------------------------------------------------------------------------------

def _stall_rows(cells: dict, n_ranks: int = 6, n_steps: int = 6, base: float = 100.0, extra: float = 30.0):
    """Computing rows (step x rank) of `base` ms with `extra` ms added on the (step, rank) cells given."""
    return [[base + (extra if (s, r) in cells else 0.0) for r in range(n_ranks)] for s in range(n_steps)]


STALLS = [
    # rank 2 is 30 ms late in step 3 only (30 > 5 % of the ~135 ms step): one-off, information
    Case("one rank late in one step", dict(steps=modern(_stall_rows({(3, 2)}), 5, 0), n_steps=6),
         [fire("stall.one-off", I, {"pattern": "one-off", "steps_standing_out": [4], "worst_rank": 2,
                                    "worst_excess_ms": 30}, ranks=[2])]),
    # a different rank in each step: rotating, information
    Case("a different rank each step", dict(steps=modern(_stall_rows({(s, s) for s in range(6)}), 5, 0),
                                            n_steps=6),
         [fire("stall.rotating", I, {"pattern": "rotating", "ranks_standing_out": 6})]),
    # rank 4 in steps 1 and 2 of 6 (2 < 0.5 x 6): intermittent, a warning
    Case("the same rank in two steps of six", dict(steps=modern(_stall_rows({(0, 4), (1, 4)}), 5, 0), n_steps=6),
         [fire("stall.intermittent", W, {"pattern": "intermittent", "steps_standing_out": [1, 2]}, ranks=[4])]),
    # rank 1 in 4 of 6 steps: chronic, the slow-rank rule's
    Case("chronic is the slow-rank rule's", dict(steps=modern(_stall_rows({(s, 1) for s in range(4)}), 5, 0),
                                                 n_steps=6), NONE),
    Case("no stall", dict(steps=modern(_stall_rows(set()), 5, 0), n_steps=6), NONE),
    # min_abs_ms 40 > 30
    Case("min_abs_ms above the stall", dict(steps=modern(_stall_rows({(3, 2)}), 5, 0), n_steps=6), NONE,
         overrides={"stall": {"min_abs_ms": 40}}),
]

# --- communication health --------------------------------------------------------------------------------------

STEP_100_20 = modern([100] * 4, 20)  # communication not hidden: 20 / 120 = 16.7 % of the step
COMM_HEALTH = [
    # 30 of 100 RDMA transfers under 1 MB = 30 % > 20 %. Their own cost: large RDMA transfers move 8.192 MB / ms
    # (8.192 GB/s), so 0.512 MB takes 0.0625 ms, not 1 ms: 30 x 0.9375 = 28.1 ms on rank 0 per step, capped at the
    # 20 ms of communication not hidden; 20 / 120 = 16.7 % >= 2 % -> warning. Sizes are multiples of 512 B.
    Case("30 % small RDMA transfers costing 20 ms per step", dict(steps=STEP_100_20, transfers=[
        ("0-1", "RDMA", 0.512, 1.0, 30), ("1-2", "RDMA", 8.192, 1.0, 70)]),
         [fire("comm-health.small-packets", W, {"small_share": 0.3, "small_transfers": 30, "saving_ms": 20.0,
                                                "large_transfer_gbps": {"RDMA": 8.192}})]),
    # The false alarm of issue 29: 84 % of the transfers are small, communication not hidden is 16.7 % of the step,
    # but the small ones move their bytes as fast as the large ones (8 MB in 0.45 ms = 17.8 GB/s, large 32 MB in
    # 1.8 ms = 17.8 GB/s): they cost nothing -> information
    Case("many small transfers at the large ones' bandwidth are information", dict(steps=STEP_100_20, transfers=[
        ("0-1", "HCCS", 8.0, 0.45, 84), ("1-2", "HCCS", 32.0, 1.8, 16)]),
         [fire("comm-health.small-packets", I, {"small_share": 0.84, "saving_ms": 0.0})]),
    # 10 MB is small on HCCS (< 16 MB) but not on RDMA; no large HCCS transfer: the HCCS reference 18 GB/s, so
    # 10 MB takes 0.556 ms, not 0.6: 5 x 0.044 = 0.22 ms of a 105 ms step (information); 10,000,000 B is not a
    # multiple of 512
    Case("small HCCS transfers, misaligned", dict(steps=modern([100] * 4, 5), transfers=[
        ("0-1", "HCCS", 10.0, 0.6, 5), ("1-2", "RDMA", 10.0, 1.0, 5)]),
         [fire("comm-health.small-packets", I, {"small_share": 0.5, "small_share_by_transport": {
             "HCCS": 1.0, "RDMA": 0.0}}),
          fire("comm-health.alignment", I, {"misaligned_share": 1.0, "misaligned_transfers": 5})]),
    Case("large aligned transfers", dict(steps=STEP_100_20, transfers=[("0-1", "HCCS", 16.777216, 1.0, 10),
                                                                       ("1-2", "RDMA", 8.192, 1.0, 10)]), NONE),
    # small_share raised to 0.4 > 0.3
    Case("small_share raised", dict(steps=STEP_100_20, transfers=[("0-1", "RDMA", 0.512, 1.0, 30),
                                                                  ("1-2", "RDMA", 8.192, 1.0, 70)]), NONE,
         overrides={"comm-health": {"small_share": 0.4}}),
]

# --- communication bound -----------------------------------------------------------------------------------------

COMMUNICATION_BOUND = [
    # Σ 50 / Σ 150 = 1/3 over all ranks; every rank's own share is 1/3 too -> warning (0.2 <= 1/3 < 0.4)
    Case("exposed communication a third of the step on every rank", dict(steps=modern([100] * 4, 50)),
         [fire("communication-bound.rate", W, {"rate": 1 / 3, "judged_rate": 1 / 3})]),
    # MindInsight overlap (model parallel): Σ pure communication / Σ (computation + pure communication) = 50 / 150
    Case("MindInsight: pure communication a third of the step",
         dict(layout="mindinsight", overlap={"computation": [100] * 4, "communication_alone": [50] * 4}),
         [fire("communication-bound.rate", W, {"rate": 1 / 3})]),
    # 120 / 220 = 0.545 >= 0.4
    Case("more than half the step is critical", dict(steps=modern([100] * 4, 120)),
         [fire("communication-bound.rate", C, {"rate": 120 / 220})]),
    # rate (3 x 50 + 10) / 600 = 0.267, but the rank that waits least (the 0-quantile of the shares 1/3, 1/3, 1/3,
    # 1/15) shows 1/15 = 0.067 < 0.1: the others wait for rank 3 -> information only
    Case("waiting for one slow rank is not communication",
         dict(steps=modern([100, 100, 100, 140], [50, 50, 50, 10])),
         [fire("communication-bound.rate", I, {"rate": 160 / 600, "judged_rate": 1 / 15})]),
    # 10 / 110 = 0.091 < 0.1
    Case("9 % exposed communication is normal", dict(steps=modern([100] * 4, 10)), NONE),
    Case("info_rate lowered to 5 %: 9 % is reported", dict(steps=modern([100] * 4, 10)),
         [fire("communication-bound.rate", I, {"rate": 10 / 110})],
         overrides={"communication-bound": {"info_rate": 0.05}}),
    # MindInsight without overlap files: median tail 29 / step 100 = 0.29, spread (29 - 29) / 29 = 0 <= 0.25
    Case("every rank's tail long and alike (data parallel)", dict(steps=legacy([1] * 4, 70, 29)),
         [fire("communication-bound.tail", W, {"tail_share": 0.29, "tail_spread": 0})]),
    # spread (29 - 15) / 29 = 0.48 > 0.25: one rank differs, a slow-rank question
    Case("tails not alike", dict(steps=legacy([1] * 4, 70, [29, 29, 15, 29])), NONE),
    # stage 1 (150 ms) is the longest: (40 + 40) / (150 + 150) = 0.267 -> warning; stage 0's (10 + 10) / (130 + 130)
    # = 0.077 is shown, not judged
    Case("collectives exposed inside the longest pipeline stage",
         dict(stages=[[0, 1], [2, 3]],
              steps=modern([100, 100, 110, 110], [30, 30, 40, 40],
                           communication_not_overlapped_exclude_receive=[10, 10, 40, 40], bubble=[20, 20, 0, 0])),
         [fire("communication-bound.within-stage", W, {"rate": 80 / 300, "stage": 1}, stages=[1])]),
]

# --- stage imbalance ---------------------------------------------------------------------------------------------

TWO_STAGES = [[0, 1], [2, 3]]
STAGE_IMBALANCE = [
    # stage compute 100 and 130, mean 115: 15 / 115 = 0.13 >= 0.1; 15 / 150 (step) = 0.1 >= 0.05, < 0.25
    Case("stage 1 computes 13 % more than the mean of stages",
         dict(stages=TWO_STAGES, steps=modern([100, 100, 130, 130], [50, 50, 20, 20])),
         [fire("stage-imbalance.compute", W, {"excess_ms": 15, "compute_vs_mean": 15 / 115,
                                              "excess_share_of_step": 0.1}, stages=[1])]),
    # MindInsight pipeline overlap: computation 100 and 130, step = computation + pure communication = 150
    Case("MindInsight pipeline: stage 1 computes 13 % more",
         dict(stages=TWO_STAGES, overlap={"computation": [100, 100, 130, 130], "communication_alone": [50, 50, 20, 20],
                                          "receive_alone": [40, 40, 0, 0], "collective_alone": [10, 10, 20, 20]}),
         [fire("stage-imbalance.compute", W, {"excess_ms": 15, "excess_share_of_step": 0.1}, stages=[1])]),
    # 60 and 160, mean 110: 50 / 160 = 0.31 >= 0.25
    Case("a third of the step is critical",
         dict(stages=TWO_STAGES, steps=modern([60, 60, 160, 160], [100, 100, 0, 0])),
         [fire("stage-imbalance.compute", C, {"excess_ms": 50}, stages=[1])]),
    # 100 and 105, mean 102.5: 2.5 / 102.5 = 0.024
    Case("stages within 3 %", dict(stages=TWO_STAGES, steps=modern([100, 100, 105, 105], [50, 50, 45, 45])), NONE),
    Case("min_rel raised to 20 %", dict(stages=TWO_STAGES, steps=modern([100, 100, 130, 130], [50, 50, 20, 20])),
         NONE, overrides={"stage-imbalance": {"min_rel": 0.2}}),
    # policy, fault floor: 10 and 15 ms, balanced 12.5: stage 1 is 20 % above it (>= stage_fault 0.2) and 2.5 ms
    # (>= fault_min_ms); 2.5 ms of a 200 ms step (1.25 %) saves little today, but it is at least a warning
    Case("a stage 20 % above the balanced time is a fault: a warning",
         dict(stages=TWO_STAGES, steps=modern([10, 10, 15, 15], [190, 190, 185, 185])),
         [fire("stage-imbalance.compute", W, {"excess_ms": 2.5, "compute_vs_mean": 0.2}, stages=[1])]),
    # 10 and 13, balanced 11.5: 13 % above (< 20 %), 1.5 ms of 200 (0.75 %): information
    Case("a stage 13 % above saving 0.75 % of the step is information",
         dict(stages=TWO_STAGES, steps=modern([10, 10, 13, 13], [190, 190, 187, 187])),
         [fire("stage-imbalance.compute", I, {"excess_ms": 1.5}, stages=[1])]),
    # FLOPs 100 and 160, mean 130: 160 / 130 - 1 = 0.23 > 0.2 while time is balanced
    Case("stage FLOPs 23 % above the mean, time balanced",
         dict(stages=TWO_STAGES, steps=modern([100] * 4, 50), stage_flops=[100, 160]),
         [fire("stage-imbalance.flops", I, {"percent": 100 * (160 / 130 - 1)}, stages=[1])]),
]

# --- pipeline bubble ---------------------------------------------------------------------------------------------

PIPELINE_BUBBLE = [
    # Σ bubble / Σ step = (75 + 75) / 600 = 0.25; stage 0 waits 75 / 150 = 50 % of its step, stage 1 not at all:
    # the bubble is waiting for stage 1 (the stage-imbalance finding's saving); what more micro-batches save, the
    # bubble every stage has, is 0 -> information
    Case("stage 0 waits half its step for stage 1: information",
         dict(stages=TWO_STAGES, steps=modern([75, 75, 140, 140], [75, 75, 10, 10], bubble=[75, 75, 0, 0])),
         [fire("pipeline-bubble.between-stage", I, {"rate": 0.25, "per_stage_share": {"0": 0.5, "1": 0.0},
                                                    "common_bubble_ms": 0.0}, stages=[0])]),
    # every stage waits 30 ms of a 130 ms step (fill and drain): rate 0.23 >= warning_rate; saving 30 / 130 = 23 %
    # of the step >= the policy's critical_share 0.2, but the rule's ceiling (rate < critical_rate 0.4) keeps it a
    # warning
    Case("fill and drain on every stage: 23 % of the step",
         dict(stages=TWO_STAGES, steps=modern([100] * 4, 30, bubble=[30] * 4)),
         [fire("pipeline-bubble.between-stage", W, {"rate": 30 / 130, "common_bubble_ms": 30.0}, stages=[0, 1])]),
    # MindInsight: Σ pure receive / Σ (computation + pure communication) = (75 + 75) / (4 x 150) = 0.25
    Case("MindInsight pipeline: stage 0 receives half its step",
         dict(stages=TWO_STAGES, overlap={"computation": [75, 75, 140, 140], "communication_alone": [75, 75, 10, 10],
                                          "receive_alone": [75, 75, 0, 0], "collective_alone": [0, 0, 10, 10]}),
         [fire("pipeline-bubble.between-stage", I, {"rate": 0.25}, stages=[0])]),
    # (15 + 15) / 600 = 0.05 < 0.1
    Case("5 % bubble is fill and drain",
         dict(stages=TWO_STAGES, steps=modern([135, 135, 140, 140], [15, 15, 10, 10], bubble=[15, 15, 0, 0])),
         NONE),
    Case("warning_rate raised to 30 %: 23 % is information",
         dict(stages=TWO_STAGES, steps=modern([100] * 4, 30, bubble=[30] * 4)),
         [fire("pipeline-bubble.between-stage", I, {"rate": 30 / 130})],
         overrides={"pipeline-bubble": {"warning_rate": 0.3}}),
    Case("no pipeline stages, no bubble verdict",
         dict(steps=modern([75, 75, 140, 140], [75, 75, 10, 10], bubble=[75, 75, 0, 0])), NONE),
]

# --- host bound --------------------------------------------------------------------------------------------------

HOST_BOUND = [
    # free 40 / step 150 = 0.267 on every rank -> warning (0.2 <= 0.267 < 0.4)
    Case("the device idles 27 % of the step on every rank", dict(steps=modern([80] * 4, 30, 40)),
         [fire("host-bound.free", W, {"median_free_share": 40 / 150}, ranks=[0, 1, 2, 3])]),
    # 20 / 150 = 0.133
    Case("13 % free is information", dict(steps=modern([100] * 4, 30, 20)),
         [fire("host-bound.free", I, {"median_free_share": 20 / 150})]),
    Case("5 ms free is normal", dict(steps=modern([100] * 4, 45, 5)), NONE),
    # shares 5/150 x 3 and 50/195: the median is 0.033 -> a slow-rank (free) question, not host-bound
    Case("one idle rank is not the whole cluster", dict(steps=modern([100] * 4, 45, [5, 5, 5, 50])), NONE),
    Case("warning_rate raised to 30 %", dict(steps=modern([80] * 4, 30, 40)),
         [fire("host-bound.free", I)], overrides={"host-bound": {"warning_rate": 0.3}}),
    # timeline only: free 30 / span 100 = 0.3, information without a step trace
    Case("timeline-only run: free / span", dict(timeline={0: (100, 30), 1: (100, 30)}),
         [fire("host-bound.free", I, {"median_free_share": 0.3}, ranks=[0, 1])]),
]

# --- memory pressure ---------------------------------------------------------------------------------------------

MEMORY_PRESSURE = [
    # 29000 / 32000 = 0.906 >= 0.90
    Case("rank 0 peaks at 90.6 % of device memory", dict(memory={0: (29000, 32000), 1: (20000, 32000)}),
         [fire("memory-pressure.peak", W, {"peak_ratio": 29000 / 32000}, ranks=[0])]),
    Case("98 % is critical", dict(memory={0: (31500, 32000), 1: (20000, 32000)}),
         [fire("memory-pressure.peak", C, {"peak_ratio": 31500 / 32000}, ranks=[0])]),
    Case("62 % is fine", dict(memory={0: (20000, 32000)}), NONE),
    Case("without a capacity nothing is judged", dict(memory={0: (31500, None)}), NONE),
    Case("warning_ratio raised to 95 %", dict(memory={0: (29000, 32000), 1: (20000, 32000)}), NONE,
         overrides={"memory-pressure": {"warning_ratio": 0.95}}),
]

# --- operator slow on one rank -----------------------------------------------------------------------------------

OPERATOR_RANK = [
    # MatMul median 50; 90 >= 1.5 x 50; gap 40 / typical rank total 60 = 0.67 >= warning_share 0.05. Saving: rank 3
    # computes 110 against 100 (step 150): 10 ms (at most the 40 ms gap) = 6.7 % of the step -> warning
    Case("rank 3 spends 1.8x the median in MatMul",
         dict(steps=modern([100, 100, 100, 110], [45, 45, 45, 35], 5),
              operators={"aicore": {"MatMul": [50, 50, 50, 90], "Add": [10, 10, 10, 10]}}),
         [fire("operator-rank.slow-on-rank", W, {"op_type": "MatMul", "ratio": 1.8,
                                                 "gap_share_of_operator_time": 40 / 60}, ranks=[3])]),
    # typical total 1050: gap 40 / 1050 = 0.038, between min_share 0.01 and warning_share 0.05
    Case("small against the rank's operator time: information",
         dict(operators={"aicore": {"MatMul": [50, 50, 50, 90], "Add": [1000] * 4}}),
         [fire("operator-rank.slow-on-rank", I, {"gap_share_of_operator_time": 40 / 1050}, ranks=[3])]),
    # the policy: without a step trace (nor a timeline) no saving can be estimated -> information
    Case("no step trace: information",
         dict(operators={"aicore": {"MatMul": [50, 50, 50, 90], "Add": [10, 10, 10, 10]}}),
         [fire("operator-rank.slow-on-rank", I, {"ratio": 1.8}, ranks=[3])]),
    # no step trace, device timelines of 1,000 ms: the 40 ms gap over the profiled window is 4 % of it -> warning
    Case("no step trace, a timeline: the profiled window stands for the step",
         dict(operators={"aicore": {"MatMul": [50, 50, 50, 90], "Add": [10, 10, 10, 10]}},
              timeline={r: (1000.0, 100.0) for r in range(4)}),
         [fire("operator-rank.slow-on-rank", W, {"ratio": 1.8}, ranks=[3])]),
    Case("70 < 1.5 x 50", dict(operators={"aicore": {"MatMul": [50, 50, 50, 70], "Add": [10] * 4}}), NONE),
    Case("communication operators are waiting, not work",
         dict(operators={"aicore": {"MatMul": [50] * 4}, "communication": {"hcom_allReduce_": [10, 10, 10, 50]}}),
         NONE),
    Case("two ranks cannot tell which one differs",
         dict(operators={"aicore": {"MatMul": [50, 90], "Add": [10, 10]}}), NONE),
    # min_ratio 1.2: 70 >= 60; gap 20 / 60 = 0.33
    Case("min_ratio lowered to 1.2", dict(steps=modern([100, 100, 100, 110], [45, 45, 45, 35], 5),
                                          operators={"aicore": {"MatMul": [50, 50, 50, 70], "Add": [10] * 4}}),
         [fire("operator-rank.slow-on-rank", W, {"ratio": 1.4}, ranks=[3])],
         overrides={"operator-rank": {"min_ratio": 1.2}}),
]

# --- operators long on one device / every device (Marey view) ----------------------------------------------------

OPERATOR_SPREAD = [
    # MatMul median 40, rank 3 52: 52 / 40 - 1 = 0.3 >= 0.15, excess 12 >= 3 % x 100 and 1 ms; 12 / 100 >= 0.05
    # saving: rank 3 computes 112 against 100 (step 150): 12 ms (at most the 12 ms excess) = 8 % -> warning
    Case("rank 3 runs MatMul 30 % longer than its stage",
         dict(steps=modern([100, 100, 100, 112], [45, 45, 45, 33], 5),
              execution={"step_ms": 100, "types": {"MatMul": [40, 40, 40, 52], "AllReduce": [10] * 4}}),
         [fire("operator-spread.slow-device", W, {"excess_ms": 12}, ranks=[3], phase="compute")]),
    # 24 / 20 - 1 = 0.2, excess 4 = 4 % of the step < warning_share 5 %
    Case("a 4 ms excess is information",
         dict(execution={"step_ms": 100, "types": {"MatMul": [20, 20, 20, 24], "AllReduce": [10] * 4}}),
         [fire("operator-spread.slow-device", I, {"excess_ms": 4}, ranks=[3])]),
    # AllReduce median 30 = 30 % of the step >= everywhere_share 0.25, max / median 31 / 30 <= 1.2
    Case("AllReduce takes 30 % of the step on every device",
         dict(execution={"step_ms": 100, "types": {"MatMul": [35, 35, 35, 35], "AllReduce": [30, 30, 31, 30]}}),
         [fire("operator-spread.long-everywhere", I, {"op_type": "AllReduce", "share": 0.3},
               category="communication_bound", stages=[0])]),
    # MatMul median 45 = 45 % >= everywhere_compute_share 0.4
    Case("MatMul takes 45 % of the step on every device",
         dict(execution={"step_ms": 100, "types": {"MatMul": [45, 45, 46, 45], "AllReduce": [10] * 4}}),
         [fire("operator-spread.long-everywhere", I, {"op_type": "MatMul", "share": 0.45},
               category="operator_hotspot")]),
    Case("even devices, nothing dominant",
         dict(execution={"step_ms": 100, "types": {"MatMul": [35, 35, 36, 35], "AllReduce": [10] * 4}}), NONE),
    Case("receives are waiting for other stages",
         dict(execution={"step_ms": 100, "types": {"Receive": [50, 50, 50, 50], "MatMul": [30] * 4}}), NONE),
    Case("two devices are too few for a median",
         dict(execution={"step_ms": 100, "types": {"MatMul": [40, 52], "AllReduce": [30, 30]}}), NONE),
    Case("everywhere_share raised to 35 %",
         dict(execution={"step_ms": 100, "types": {"MatMul": [35, 35, 35, 35], "AllReduce": [30, 30, 31, 30]}}),
         NONE, overrides={"operator-spread": {"everywhere_share": 0.35}}),
]

# --- conversion operators ----------------------------------------------------------------------------------------

OPERATOR_CONVERSION = [
    # (8 + 4) / 100 = 0.12 of AI Core time on every rank >= warning_share 0.10; saving 12 % of the 100 ms
    # computation = 12 ms of a 150 ms step (8 %) -> warning
    Case("Cast and TransData take 12 % of AI Core time",
         dict(steps=modern([100] * 4, 45, 5), operators={"aicore": {"MatMul": [88] * 4, "Cast": [8] * 4, "TransData": [4] * 4}}),
         [fire("operator-conversion.share", W, {"median_share": 0.12}, ranks=[0, 1, 2, 3])]),
    Case("12 % without a step trace: no saving, information",
         dict(operators={"aicore": {"MatMul": [88] * 4, "Cast": [8] * 4, "TransData": [4] * 4}}),
         [fire("operator-conversion.share", I, {"median_share": 0.12})]),
    Case("6 % is information", dict(operators={"aicore": {"MatMul": [94] * 4, "Cast": [6] * 4}}),
         [fire("operator-conversion.share", I, {"median_share": 0.06})]),
    Case("2 % is normal", dict(operators={"aicore": {"MatMul": [98] * 4, "Cast": [2] * 4}}), NONE),
    Case("Cast on the AI CPU is not AI Core time",
         dict(operators={"aicore": {"MatMul": [98] * 4, "Cast": [2] * 4}, "aicpu": {"Cast": [20] * 4}}), NONE),
    Case("info_share lowered to 1 %", dict(operators={"aicore": {"MatMul": [98] * 4, "Cast": [2] * 4}}),
         [fire("operator-conversion.share", I, {"median_share": 0.02})],
         overrides={"operator-conversion": {"info_share": 0.01}}),
]

# --- AI CPU ------------------------------------------------------------------------------------------------------

AICPU = [
    # 4 / (96 + 4) = 0.04: between info_share 0.03 and warning_share 0.05; one call of 4 ms = 4000 µs >= 20 µs
    Case("NonZero on the AI CPU: 4 % of device operator time",
         dict(operators={"aicore": {"MatMul": [96] * 4}, "aicpu": {"NonZero": [4] * 4}}),
         [fire("aicpu.share", I, {"median_share": 0.04, "longest_op_us": 4000}, ranks=[0, 1, 2, 3])]),
    # saving 8 % of the 100 ms computation: 8 ms of a 150 ms step (5.3 %) -> warning
    Case("8 % is a warning", dict(steps=modern([100] * 4, 45, 5),
                                  operators={"aicore": {"MatMul": [92] * 4}, "aicpu": {"NonZero": [8] * 4}}),
         [fire("aicpu.share", W, {"median_share": 0.08})]),
    Case("GetNext is data fetching in sink mode",
         dict(operators={"aicore": {"MatMul": [90] * 4}, "aicpu": {"GetNext": [10] * 4}}), NONE),
    # 8 ms in 1000 calls: 8 µs each < min_max_us 20
    Case("many short AI CPU operators",
         dict(operators={"aicore": {"MatMul": [92] * 4}, "aicpu": {"NonZero": [(8, 1000)] * 4}}), NONE),
    Case("min_max_us lowered to 5 µs",
         dict(steps=modern([100] * 4, 45, 5),
              operators={"aicore": {"MatMul": [92] * 4}, "aicpu": {"NonZero": [(8, 1000)] * 4}}),
         [fire("aicpu.share", W, {"longest_op_us": 8})], overrides={"aicpu": {"min_max_us": 5}}),
]

# --- one operator type dominates ---------------------------------------------------------------------------------

OPERATOR_DOMINANT = [
    # 4 x 60 / 4 x 100 = 0.6 >= 0.5; over several ranks no rank is named
    Case("MatMul 60 % of AI Core time", dict(operators={"aicore": {"MatMul": [60] * 4, "Add": [40] * 4}}),
         [fire("operator-dominant.type", I, {"op_type": "MatMul", "share": 0.6}, ranks=[])]),
    Case("a single device is named", dict(operators={"aicore": {"MatMul": [60], "Add": [40]}}),
         [fire("operator-dominant.type", I, {"share": 0.6}, ranks=[0])]),
    Case("no type above half", dict(operators={"aicore": {"MatMul": [40] * 4, "Add": [35] * 4, "Mul": [25] * 4}}),
         NONE),
    Case("share lowered to 35 %",
         dict(operators={"aicore": {"MatMul": [40] * 4, "Add": [35] * 4, "Mul": [25] * 4}}),
         [fire("operator-dominant.type", I, {"share": 0.4})], overrides={"operator-dominant": {"share": 0.35}}),
]

# --- MindInsight's ParallelProposer (reference) ------------------------------------------------------------------

MI = dict(layout="mindinsight")
MINDINSIGHT = [
    # mean interval (1 + 1 + 1 + 2) / 4 = 1.25; 2 / 1.25 - 1 = 60 % > 20 %
    Case("rank 3's step interval 60 % above the mean", dict(MI, steps=legacy([1, 1, 1, 2], 80, 19)),
         [fire("mindinsight.step-interval", I, {"percent": 60.0, "value_ms": 2}, ranks=[3], phase="step_interval")]),
    # mean 92.5 GFLOPS; (92.5 - 70) / 92.5 = 24.32 % > 20 %
    Case("rank 3 at 70 GFLOPS, 24 % below the mean", dict(MI, flops=[100, 100, 100, 70]),
         [fire("mindinsight.flops-per-second", I, {"percent": 24.32}, ranks=[3], phase="compute")]),
    # HCCS mean (4 x 20 + 5) / 5 = 17 GB/s; (17 - 5) / 17 = 70.59 % below (the evidence keeps MindInsight's sign)
    Case("link 3-4 70.6 % below the mean of HCCS links", dict(MI, links=ring(20)),
         [fire("mindinsight.cluster-link", I, {"percent": -70.59, "bandwidth_kb_s": 5e6}, links=["3-4"],
               transport="HCCS")]),
    # 1.2 / 1.05 - 1 = 14.3 %
    Case("14 % above the mean is within MindInsight's 20 %", dict(MI, steps=legacy([1, 1, 1, 1.2], 80, 19)), NONE),
    Case("not a MindInsight run", dict(steps=legacy([1, 1, 1, 2], 80, 19), layout="ascend"), NONE),
    Case("step_interval raised to 70 %", dict(MI, steps=legacy([1, 1, 1, 2], 80, 19)), NONE,
         overrides={"mindinsight": {"step_interval": 0.7}}),
]

# --- msprof-analyze's advisor slow rank (reference) --------------------------------------------------------------

MSPROF_ADVISOR = [
    # every (step, rank) sums to 150; Computing max 130 - min 99 = 31 -> 31 / 150 = 20.7 % > 5 %; Communication
    # 46 - 15 = 31 too (rank 2 the highest); Free 0
    Case("31 ms spread in Computing and in Communication",
         dict(steps=modern([100, 101, 99, 130], [45, 44, 46, 15], 5)),
         [fire("msprof-analyze.slow-rank.compute", I, {"max_difference_ms": 31, "ratio": 31 / 150}, ranks=[3]),
          fire("msprof-analyze.slow-rank.communication", I, {"max_difference_ms": 31}, ranks=[2])]),
    # spreads 3 / 150 = 2 %
    Case("3 ms spread", dict(steps=modern([100, 101, 99, 102], [45, 44, 46, 43], 5)), NONE),
    Case("MindInsight step traces are not judged", dict(steps=legacy([1, 1, 1, 20], 80, 19)), NONE),
    Case("spread raised to 25 %", dict(steps=modern([100, 101, 99, 130], [45, 44, 46, 15], 5)), NONE,
         overrides={"msprof-analyze": {"spread": 0.25}}),
]

# --- expert-parallel imbalance ---------------------------------------------------------------------------------

# Steps of 150 ms (modern: computing 100 + communication 45 + free 5) on 4 ranks of one expert-parallel group.
EXPERT_IMBALANCE = [
    # expert time 10, 10, 20, 10 ms: mean 12.5, max 20, peak-to-mean 1.6, saving 7.5 ms = 5 % of 150 ms
    Case("rank 2's experts take twice the tokens",
         dict(steps=modern([100] * 4, [45] * 4, 5), expert={"group": "ep", "expert_ms": [10, 10, 20, 10]}),
         [fire("expert-imbalance.group", W, {"peak_to_mean": 1.6, "saving_ms": 7.5, "mean_ms": 12.5},
               ranks=[2])]),
    # 10, 10, 11, 10: peak-to-mean 1.073 < 1.15
    Case("within 15 % of the mean is balanced",
         dict(steps=modern([100] * 4, [45] * 4, 5), expert={"group": "ep", "expert_ms": [10, 10, 11, 10]}), NONE),
    # 1, 1, 2, 1: peak-to-mean 1.6 but saving 0.75 ms = 0.5 % of the step < min_share 1 %
    Case("a small imbalance that costs little",
         dict(steps=modern([100] * 4, [45] * 4, 5), expert={"group": "ep", "expert_ms": [1, 1, 2, 1]}), NONE),
    Case("min_share lowered to 0.4 %: the small imbalance is reported",
         dict(steps=modern([100] * 4, [45] * 4, 5), expert={"group": "ep", "expert_ms": [1, 1, 2, 1]}),
         [fire("expert-imbalance.group", W, {"saving_ms": 0.75}, ranks=[2])],
         overrides={"expert-imbalance": {"min_share": 0.004}}),
]

TABLES = {
    "data-quality": DATA_QUALITY,
    "step-interval": STEP_INTERVAL,
    "data-pipeline": DATA_PIPELINE,
    "host-cpu": HOST_CPU,
    "tail-single-device": TAIL_SINGLE,
    "slow-rank": SLOW_RANK,
    "late-arrival": LATE_ARRIVAL,
    "slow-link": SLOW_LINK,
    "communication-bound": COMMUNICATION_BOUND,
    "comm-health": COMM_HEALTH,
    "stall": STALLS,
    "stage-imbalance": STAGE_IMBALANCE,
    "expert-imbalance": EXPERT_IMBALANCE,
    "pipeline-bubble": PIPELINE_BUBBLE,
    "host-bound": HOST_BOUND,
    "memory-pressure": MEMORY_PRESSURE,
    "operator-rank": OPERATOR_RANK,
    "operator-spread": OPERATOR_SPREAD,
    "operator-conversion": OPERATOR_CONVERSION,
    "aicpu": AICPU,
    "operator-dominant": OPERATOR_DOMINANT,
    "mindinsight": MINDINSIGHT,
    "msprof-analyze": MSPROF_ADVISOR,
}

# Outcomes no end-to-end test asserts to fire: each needs a firing case here.
MUST_FIRE = ("host-bound.free", "host-cpu.busy", "aicpu.share", "operator-conversion.share",
             "operator-spread.long-everywhere", "communication-bound.rate", "data-quality.more")

RULE_BY_ID = {r.id: r for r in RULES}


def _check(rule, case: Case, overrides: dict | None = None):
    for rule_id, table in (case.overrides if overrides is None else overrides).items():
        assert rule_id == rule.id and set(table) <= set(rule.thresholds), f"bad overrides {case.overrides}"
    values = resolved_thresholds(case.overrides if overrides is None else overrides)[rule.id]
    return rule.check(rule.context(kit.analysis(**case.data), values))


def _same(got, want) -> bool:
    """Numbers approximately, dicts and lists item by item, anything else exactly (pytest 9: no approx of text)."""
    if isinstance(want, dict):
        return isinstance(got, dict) and set(got) == set(want) and all(_same(got[k], v) for k, v in want.items())
    if isinstance(want, (list, tuple)):
        return isinstance(got, (list, tuple)) and len(got) == len(want) and all(map(_same, got, want))
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        return isinstance(got, (int, float)) and got == pytest.approx(want, rel=1e-9, abs=1e-12)
    return got == want


def _params():
    for rule_id, cases in TABLES.items():
        for c in cases:
            marks = [pytest.mark.xfail(strict=True, reason=c.xfail)] if c.xfail else []
            yield pytest.param(rule_id, c, id=f"{rule_id}: {c.name}", marks=marks)


@pytest.mark.parametrize("rule_id,case", list(_params()))
def test_rule_case(rule_id: str, case: Case):
    rule = RULE_BY_ID[rule_id]
    found = _check(rule, case)
    assert [(f.id, f.severity) for f in found] == [(e["id"], e["severity"]) for e in case.expect], \
        [(f.id, f.severity, f.title) for f in found]
    for f, e in zip(found, case.expect):
        for key, want in e["subject"].items():
            assert getattr(f, key) == want, (f.id, key)
        for key, want in e["evidence"].items():
            assert _same(f.evidence[key], want), (f.id, key, f.evidence[key], want)
    if case.overrides:  # the override is what changes the outcome
        default = _check(rule, case, overrides={})
        assert [(f.id, f.severity) for f in default] != [(f.id, f.severity) for f in found]


def test_every_rule_has_a_table_that_fires_stays_silent_and_follows_an_override():
    assert set(TABLES) == set(RULE_BY_ID), set(TABLES) ^ set(RULE_BY_ID)
    for rule_id, cases in TABLES.items():
        assert any(c.expect and not c.overrides for c in cases), f"{rule_id}: no firing case"
        assert any(not c.expect and not c.overrides for c in cases), f"{rule_id}: no silent case"
        assert any(c.overrides for c in cases), f"{rule_id}: no override case"


def test_outcomes_once_never_asserted_now_fire_in_a_case():
    fired = {e["id"] for cases in TABLES.values() for c in cases if not c.xfail for e in c.expect}
    assert set(MUST_FIRE) <= fired, set(MUST_FIRE) - fired


# --- through run_rules: readings of the same cause folded into one finding ---------------------------------------


def test_timeline_slow_device_is_folded_into_the_operator_finding_on_that_rank():
    a = kit.analysis(operators={"aicore": {"MatMul": [50, 50, 50, 90], "Add": [10] * 4}},
                     execution={"step_ms": 100, "types": {"MatMul": [40, 40, 40, 52], "AllReduce": [10] * 4}})
    findings, _ = run_rules(a)
    ids = [f.id for f in findings]
    assert "operator-spread.slow-device" not in ids
    host = next(f for f in findings if f.id == "operator-rank.slow-on-rank")
    assert host.ranks == [3] and [r.id for r in host.related] == ["operator-spread.slow-device"]
    assert host.related[0].ranks == [3]
    assert host.aliases == ["operator-hotspot.slow-on-rank"]


def test_mindinsight_verdict_is_folded_into_our_slow_rank_finding_or_kept_alone():
    # rank 3 waits 20 ms for data where its peers wait 1: slow-rank.step-interval names it, and MindInsight's
    # helper (20 / 5.75 - 1 = 248 % above the mean) is shown with it, not as a finding of its own
    a = kit.analysis(steps=legacy([1, 1, 1, 20], 80, 19), layout="mindinsight", flops=[100, 100, 100, 70])
    findings, values = run_rules(a, {"slow-rank": {"min_steps": 2}})
    by_id = {f.id: f for f in findings}
    assert "mindinsight.step-interval" not in by_id
    host = by_id["slow-rank.step-interval"]
    assert [r.id for r in host.related] == ["mindinsight.step-interval"]
    assert host.related[0].evidence["percent"] == pytest.approx(100 * (20 / 5.75 - 1), abs=0.01)
    # the FLOPS reading has no finding of ours about rank 3's computation: it stays, as information
    assert by_id["mindinsight.flops-per-second"].severity == "info"
    assert values["slow-rank"]["min_steps"] == 2
