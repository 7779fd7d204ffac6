"""The severity policy: one rule for every finding's severity (docs/severity.md; the rules page shows it).

A finding's severity follows what fixing it saves per step (`Finding.impact`, `reportgen.analysis.impact`):

* critical from `critical_share` of the step, warning from `warning_share`, information below;
* a rule that cannot estimate a saving cannot warn: a finding without `impact.step_ms` is information;
* a **fault floor**: a component far below its peers (a link under `link_fault` of its transport's median
  bandwidth, a rank's phase `phase_fault` times its peers', a stage `stage_fault` above the balanced stage time)
  is at least a warning even when today's saving is small, because it becomes the bottleneck once the current one
  is fixed. Such a finding states both numbers: today's saving (`impact.step_ms`) and what it costs once the rest is
  fixed (`impact.fault.once_rest_fixed_ms`);
* the rule's own severity is a ceiling: "information" for what is shown, not judged (readings of a reference
  tool, one recorded step, one-off stalls), "warning" where the saving is an upper bound (the whole phase gone) or
  the rule's own measure stops there; "critical" leaves it to the saving;
* findings about the data rather than the time (`CONSEQUENCE` categories: data quality, memory pressure) are judged
  by their consequence by their rule (a missing or damaged file that changes a rank's numbers, a device about to run
  out of memory) and carry no saving.

The thresholds are data (`Policy`, `--set severity.NAME=VALUE`), shown on the rules page.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

from reportgen.fmt import ms as fmt_ms
from reportgen.i18n import N_, lazy
from reportgen.rules.thresholds import th

POLICY_ID = "severity"  # the id of the policy's thresholds in overrides, summary.json and the rules page
CONSEQUENCE = ("data_quality", "memory_pressure")  # judged by consequence, not by a saving per step
SEVERITIES = ("critical", "warning", "info")  # the scale a finding's severity takes, most severe first
ORDER = {s: i for i, s in enumerate(SEVERITIES)}


@dataclass(frozen=True)
class Policy:
    warning_share: float = th(0.02, N_('estimated saving per step, as a fraction of the step, from which a finding is '
                                       'a warning (below it: information)'))
    critical_share: float = th(0.2, N_('estimated saving per step from which a finding is critical'))
    link_fault: float = th(0.5, N_("fault floor: a link under this fraction of its transport's median bandwidth is at "
                                   'least a warning, whatever it saves today'))
    phase_fault: float = th(3.0, N_("fault floor: a rank whose phase (computation, free time, step interval) is at "
                                    "least this many times its peers' median in most steps is at least a warning"))
    stage_fault: float = th(0.2, N_('fault floor: a pipeline stage computing this fraction or more above the balanced '
                                    'stage time (the mean of stages) is at least a warning'))
    fault_min_ms: float = th(1.0, N_('a fault floor needs at least this many ms per step of excess (microsecond '
                                     'phases several times their peers are noise)'))


POLICY = Policy()

TITLE = N_("Severity policy")
DESCRIPTION = N_("""\
Every rule's finding gets its severity from one policy. **Saving**: what fixing the finding saves per step
(`impact.step_ms`, the culprit's excess replaced by the typical value and propagated through the step's
synchronisation), as a share of the step: critical from `critical_share`, warning from `warning_share`,
information below. A finding without an estimated saving is information. **Fault floor**: a component far below
its peers is at least a warning even when today's saving is small, because it becomes the bottleneck once the
current one is fixed: a link under `link_fault` of its transport's median bandwidth, a rank whose phase is
`phase_fault` times its peers' (and at least `fault_min_ms` more), a pipeline stage `stage_fault` above the
balanced stage time. Such a finding states today's saving and what it costs once the rest is fixed. A rule may
keep a finding at information (a reference tool's reading, a single recorded step, a one-off stall). Data quality
and memory pressure are judged by their consequence (a missing or damaged file that changes a rank's numbers, a
device close to its memory capacity) and carry no saving.""")


def fault(kind: str, ratio: float, limit: float, once_rest_fixed_ms: float) -> dict:
    """A finding's fault-floor record (`Finding.fault`): what is far below its peers (kind: link | phase | stage),
    by how much (ratio against the peers), the limit it crossed, and what it costs per step once the rest is fixed
    (its whole excess: the time it adds to the step when it is the last to arrive)."""
    return {"kind": kind, "ratio": float(ratio), "limit": float(limit),
            "once_rest_fixed_ms": float(once_rest_fixed_ms)}


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def by_saving(share: Optional[float], p: Policy = POLICY) -> str:
    """The severity of an estimated saving (share of the step); information when there is none."""
    if not _finite(share):
        return "info"
    return "critical" if share >= p.critical_share else "warning" if share >= p.warning_share else "info"


def decide(f, p: Policy = POLICY) -> str:
    """The severity of finding `f` under the policy (see the module docstring)."""
    if f.category in CONSEQUENCE or f.severity == "info":
        return f.severity
    imp = f.impact or {}
    if not _finite(imp.get("step_ms")):
        return "info"  # cannot estimate a saving: cannot warn
    sev = by_saving(imp.get("step_share"), p)
    if getattr(f, "fault", None) and ORDER[sev] > ORDER["warning"]:
        sev = "warning"
    # the rule's proposal is a ceiling: a rule whose saving is an upper bound (the whole phase gone) or whose own
    # measure says so proposes a warning at most; "critical" leaves it to the saving
    return max(sev, f.severity, key=ORDER.__getitem__)


def apply(f, p: Policy = POLICY) -> None:
    """Set `f.severity` by the policy and record the fault floor in `f.impact` (`impact.fault`) and in `f.why`."""
    f.severity = decide(f, p)
    flt = getattr(f, "fault", None)
    if flt and f.impact and _finite(f.impact.get("step_ms")):
        f.impact = {**f.impact, "fault": dict(flt)}
        # the sentence where the floor decides (today's saving alone would make it information)
        if f.category not in CONSEQUENCE and f.severity != "info" and by_saving(f.impact.get("step_share"), p) == "info":
            f.why = lazy(N_("{why} Fixing it saves {today} per step today; once the rest is fixed it costs {once} per "
                            "step: a component this far below its peers becomes the bottleneck."),
                         why=f.why or "", today=fmt_ms(float(f.impact["step_ms"])),
                         once=fmt_ms(float(flt["once_rest_fixed_ms"])))


def judged(f, p: Policy = POLICY):
    """`f` with its severity set by the policy (a rule's `check` returns what the report will show); the fault
    floor's sentence is added by `apply` when the rules run."""
    f.severity = decide(f, p)
    return f
