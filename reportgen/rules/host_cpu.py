"""Host CPU busy: the machine's CPUs are almost fully used while the run feeds its devices.

MindInsight MinddataProposer `minddata_cpu_utilization`: 100 − mean idle above 80 %; the single-device guide's CPU
reading (low user utilisation -> add threads; high sys utilisation -> fewer threads).
"""

from __future__ import annotations

from dataclasses import dataclass

from reportgen import urls
from reportgen.i18n import N_, lazy
from reportgen.rules.base import Context, Finding, Rule, ranks_msg
from reportgen.rules.thresholds import th

@dataclass(frozen=True)
class Thresholds:
    busy_pct: float = th(80.0, N_("machine CPU utilisation (100 − idle, %) above which it is reported (MindInsight's "
                               '80 %)'))


ADVICE = N_("""\
The host's CPUs are nearly saturated, so data processing and operator dispatch compete for them.
- Lower `num_parallel_workers` where system time is high (many context switches), raise them only where user time
  is low; bind processes to cores (`taskset`, NUMA affinity) so that ranks of a host do not steal each other's CPUs.
- Move heavy transforms off the host (device-side augmentation) or pre-process the dataset offline.""")


def check(ctx: Context) -> list[Finding]:
    cpu = ctx.a.resources.cpu
    hot = {r: c.busy for r, c in cpu.items() if c.busy is not None and c.busy > ctx.t.busy_pct}
    if not hot:
        return []
    ranks = sorted(hot)
    worst = max(hot, key=hot.get)
    return [Finding(
        id="host-cpu.busy", category="host_bound", severity="info",
        title=lazy("Host CPU {busy} % busy on average ({ranks}); above {limit} %", busy=f"{hot[worst]:.0f}",
                   ranks=ranks_msg(ranks), limit=f"{ctx.t.busy_pct:.0f}"),
        advice=lazy(ADVICE), why=lazy("A saturated host slows data processing and the dispatch of work to the device."),
        page=urls.rank(worst, "cpu"), ranks=ranks,
        evidence={"busy_pct": hot[worst], "rank": worst, "per_rank": hot, "threshold_pct": ctx.t.busy_pct})]


RULE = Rule(
    id="host-cpu", category="host_bound", title=N_("Host CPU busy"),
    description=N_("""\
Machine CPU utilisation from the MindData CPU file (100 − mean idle, first sample dropped, as MindInsight shows
it) above `busy_pct`. Information: it explains a data-pipeline or host-bound finding rather than being one."""),
    params=Thresholds, check=check, source=N_("MindInsight MinddataProposer minddata_cpu_utilization"))
