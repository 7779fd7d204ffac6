"""Stalls: a rank that arrives late at the step's collectives in some steps only.

The slow-rank rule reports ranks that stand out in most steps (chronic). This rule looks at the steps it leaves
out: a rank's own work before the step's last collective (its arrival: computation + free time, or step interval +
forward/backward) compared with its stage's ranks in each step, and tells the pattern apart:

* one-off: one step only (a garbage-collection pause, a checkpoint, a log flush);
* rotating: a different rank from step to step (points at the job or the framework, not at a device);
* intermittent: the same rank in several steps, but not in most of them.

One-off and rotating stalls are information with their cost (a device is not to blame); an intermittent rank is a
warning when its cost is (the impact decides).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from reportgen import urls
from reportgen.analysis.impact import ARRIVAL, replace_excess
from reportgen.i18n import N_, lazy
from reportgen.rules.base import Context, Finding, Rule, fmt_ms, ranks_msg, step_pattern
from reportgen.rules.thresholds import th
from reportgen.analysis.stats import standout_cells, step_reference


@dataclass(frozen=True)
class Thresholds:
    z: float = th(3.5, N_("robust z-score of a rank's arrival (own work before the step's last collective) above its "
                       "stage's median in a step"))
    min_rel: float = th(0.05, N_('and at least this fraction above that median'))
    min_abs_ms: float = th(1.0, N_('and at least this many ms above it'))
    min_share: float = th(0.05, N_('and by at least this fraction of the median step time'))
    persistence: float = th(0.5, N_("a rank standing out in at least this fraction of its steps is chronic: the "
                                 "slow-rank rule's (keep equal to slow-rank.persistence)"))
    min_steps: float = th(3.0, N_('steps needed to tell a pattern'))


TITLES = {
    "one-off": N_("One-off stall in step {steps}: {subject} arrived {excess} late at the step's collectives"),
    "rotating": N_("Rotating stall: a different rank arrives late in {n_steps} of {total} steps ({subject}), up to "
                   "{excess} late"),
    "intermittent": N_("Intermittent stall: {subject} arrives up to {excess} late at the step's collectives in "
                       "{n_steps} of {total} steps"),
}

ADVICE = {
    "one-off": N_("""\
A single step in which a rank (or a few) did extra host or device work: a garbage-collection pause, a checkpoint
save, a log flush or evaluation. Every other rank waited for it in that step only.
- If it recurs at a fixed interval in longer runs (checkpoints), make it asynchronous or less frequent.
- Python garbage collection: `gc.freeze()` after start-up, or collect at a chosen step on every rank at once."""),
    "rotating": N_("""\
A different rank is late in each step: the cause is the job, not one device (a periodic host task that lands on
whichever rank is unlucky, uneven input batches, a shared file system or dataloader hiccup).
- Look for host-side work that runs at random moments (data loading workers, logging, monitoring agents).
- Uneven work per batch (variable sequence lengths) shows as a rotating late rank too: pad or bucket the inputs."""),
    "intermittent": N_("""\
The same rank is late in some steps but not in most. Look at what it does that the others do not, at the steps
marked on the strip: host-side work (saving, logging, evaluation on rank 0), a noisy neighbour on its host, or
thermal throttling that comes and goes."""),
}

IMPACT_BASIS = N_("the late arrivals marked on the strip set to their stage's median in those steps; the "
                  "others' waits shrink by as much")


def arrival_frame(a) -> "tuple[pd.DataFrame, tuple[str, ...]] | None":
    """rank, step, arrival (the sum of the step trace's arrival phases)."""
    st = a.steps
    if st.kind not in ARRIVAL or st.per_step is None or st.per_step.empty:
        return None
    cols = tuple(c for c in ARRIVAL[st.kind] if c in st.per_step.columns)
    if not cols:
        return None
    f = st.per_step[["rank", "step", *cols]].copy()
    f["arrival"] = f[list(cols)].sum(axis=1, min_count=1)
    return f, cols


def check(ctx: Context) -> list[Finding]:
    a = ctx.a
    got = arrival_frame(a)
    if got is None or len(a.run.rank_ids) < 3:
        return []
    frame, cols = got
    stage_of = a.run.info.stage_of_rank if a.run.info.stages > 1 else None
    cells = standout_cells(frame, "arrival", groups=stage_of, step_ms=step_reference(a.steps.per_step),
                           z=ctx.t.z, min_rel=ctx.t.min_rel, min_abs_ms=ctx.t.min_abs_ms, min_share=ctx.t.min_share)
    if cells.empty or cells["step"].nunique() < ctx.t.min_steps:
        return []
    per_rank = cells.groupby("rank")["out"].agg(["sum", "size"])
    chronic = set(per_rank.index[per_rank["sum"] >= ctx.t.persistence * per_rank["size"]])
    flagged = cells[cells["out"] & ~cells["rank"].isin(chronic)]
    if flagged.empty:
        return []
    subjects = (flagged.groupby("rank")["dev"].max().sort_values(ascending=False).index.astype(int).tolist())
    pattern, strip = step_pattern(cells[~cells["rank"].isin(chronic)], subjects)
    if pattern == "chronic":
        pattern = "intermittent"  # every step, but never the same rank in most of them
    steps_hit = sorted(int(s) for s in flagged["step"].unique())
    total = int(cells["step"].nunique())
    mask = flagged.assign(v=True).pivot_table(index="rank", columns="step", values="v", aggfunc="max")
    mask = mask.astype("boolean").fillna(False).astype(bool)
    imp = replace_excess(a.steps, cols, subjects, basis=lazy(IMPACT_BASIS), cells=mask)
    title = lazy(TITLES[pattern], steps=", ".join(str(s) for s in steps_hit[:6]), n_steps=len(steps_hit),
                 total=total, subject=ranks_msg(subjects), excess=fmt_ms(float(flagged["dev"].max())))
    worst = flagged.sort_values("dev", ascending=False).iloc[0]
    return [Finding(
        id=f"stall.{pattern}", category="slow_rank", severity="warning" if pattern == "intermittent" else "info",
        title=title, advice=lazy(ADVICE[pattern]),
        why=lazy(N_("Collectives are synchronous: in the steps where a rank arrives late, every rank waits for it.")),
        page=urls.step_trace_row(int(worst["rank"])), ranks=subjects, phase=None,
        evidence={"pattern": pattern, "steps_standing_out": steps_hit, "steps": total,
                  "ranks_standing_out": len(subjects), "worst_rank": int(worst["rank"]),
                  "worst_step": int(worst["step"]), "worst_excess_ms": float(worst["dev"]),
                  "arrival_phases": list(cols), "chronic_ranks_left_to_slow_rank": sorted(int(r) for r in chronic)},
        strip=strip, impact=imp.to_dict() if imp else None)]


RULE = Rule(
    id="stall", category="slow_rank", title=N_("Stalls: one-off, rotating or intermittent late ranks"),
    description=N_("""\
Each rank's own work before the step's last collective (computation + free time; MindInsight: step interval +
forward/backward) is compared with its stage's ranks **in every step**, with the slow-rank rule's test (`z`,
`min_rel`, `min_abs_ms`, `min_share`). Ranks standing out in at least `persistence` of their steps are chronic and
left to the slow-rank rule. What remains is classified: **one-off** (one step), **rotating** (a different rank from
step to step) or **intermittent** (the same rank in some steps). One-off and rotating stalls are information with
their cost; an intermittent rank is a warning, which the estimated saving can lower."""),
    params=Thresholds, check=check,
    source=N_("issue 20 (chronic / intermittent / one-off); tuning guide, cluster part (bucket effect)"))
