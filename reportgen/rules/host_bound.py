"""Host bound: the device sits idle (Free) for a large share of the step on every rank.

Seed 003's delimitation (Free -> scheduling / host dispatch); msprof-analyze Overall Summary (free / E2E above
10 %); the tuning guide's timeline check ("a period in which no operator of any kind runs").

Where the launches of the device's work are known (Kineto's runtime calls, torch_npu's host dispatch), free time is
split by cause (`reportgen.idle`, HTA's idle-time breakdown): only *host wait* (the next kernel launched after the
device went idle) is the host's; time idle with work already queued (*stream wait*: behind another stream, a
collective waiting for its peers, a synchronisation) is reported as such, never as host bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import math

import pandas as pd

from reportgen import urls
from reportgen.idle import run_idle
from reportgen.analysis.impact import _wide, saved_by_ms
from reportgen.i18n import N_, lazy
from reportgen.rules.base import Context, Finding, Rule, fmt_ms, fmt_pct, gpu_run
from reportgen.rules.thresholds import th

@dataclass(frozen=True)
class Thresholds:
    info_rate: float = th(0.1, N_("median free / step over ranks from which it is reported (msprof-analyze's 10 %)"))
    warning_rate: float = th(0.2, N_('from which it is a warning'))
    critical_rate: float = th(0.4, N_('from which it is critical'))
    explained: float = th(0.5, N_("free time is judged by its causes (host wait, stream wait) when they explain at "
                                  "least this fraction of it (median over ranks); else free time as a whole"))


ADVICE = N_("""\
The device waits for the host to give it work (operator dispatch, Python in the step, synchronisation).
- Look at a rank's timeline (download it from the rank page, open in Perfetto) for gaps with no device task and what
  the host does meanwhile: CPU-side operators, `.item()` / `.cpu()` synchronisations, data loading, logging.
- Graph mode / compiled graphs (MindSpore `GRAPH_MODE`, `torch.compile` / torchair), task queue and fused
  operators reduce dispatch overhead; check CPU affinity and contention on the host.""")


ADVICE_GPU = N_("""\
The GPU waits for the host to launch its next kernel (Python in the step, operator dispatch, data loading,
synchronisation).
- Open a rank's trace in Perfetto or TensorBoard and look at what the CPU thread does in the gaps with no kernel:
  `.item()` / `.cpu()` / `torch.cuda.synchronize()` calls, data loading (`DataLoader` `num_workers`,
  `pin_memory`), logging, Python-heavy code between operators.
- Fewer and larger kernels cut the launch cost: `torch.compile`, CUDA Graphs (`torch.cuda.graphs`, `mode=
  "reduce-overhead"`), fused optimizers (`fused=True`), larger batches; check CPU affinity and contention.""")

ADVICE_STREAM = N_("""\
The device has its next work already queued but does not run it: the kernels wait for another stream (an event
of a communication stream: the collective waits for its peers), a synchronisation or a dependency; the host is not
the cause, so making dispatch faster will not help.
- When collectives were pending in the gaps, the time is spent waiting for the other ranks: look at the late
  arrival and slow-rank findings, at the other ranks' traces (a single rank's trace cannot show which peer is
  late) and, with pipeline parallelism, at the pipeline bubble (micro-batches, schedule).
- Otherwise look in the trace for the synchronisation before each gap (stream or event waits, a copy to the host,
  `torch.cuda.synchronize()`) and for work serialised on one stream that could overlap.""")


def _by_cause(ctx: Context) -> "tuple[pd.DataFrame, dict] | None":
    """Per rank, the shares of the step by idle cause (`reportgen.idle`); None when no rank has them or the causes
    explain too little of the free time (launches unknown)."""
    idle = run_idle(ctx.a.run)
    rows, launch = {}, {}
    for r, b in idle.items():
        m = b.mean()
        step = m.get("step_ms", math.nan)
        if not step > 0:
            continue
        free = m["host_wait_ms"] + m["stream_wait_ms"] + m["other_ms"]
        # host wait while the host was blocked in a collective call (gloo) waits for the peers, as a queued
        # collective does: it goes with the stream wait on collectives, not with the host's dispatch
        hc = min(m.get("host_wait_comm_ms", 0.0) or 0.0, m["host_wait_ms"])
        rows[r] = {"host": (m["host_wait_ms"] - hc) / step, "stream": (m["stream_wait_ms"] + hc) / step,
                   "stream_comm": (m["stream_wait_comm_ms"] + hc) / step, "host_comm": hc / step,
                   "other": m["other_ms"] / step, "free": free / step, "basis": b.basis,
                   "host_ms": m["host_wait_ms"] - hc, "stream_ms": m["stream_wait_ms"] - m["stream_wait_comm_ms"]}
        launch[r] = b.launch
    if not rows:
        return None
    df = pd.DataFrame.from_dict(rows, orient="index")
    # torch_npu: the host dispatch the execution view kept (at most a few hundred operators per step) tells the
    # cause, the step trace the amount: the causes are scaled to step_trace_time.csv's Free of the rank
    st = ctx.a.steps
    if st.kind == "modern" and "free" in st.average and "total" in st.average:
        free_st = (st.average["free"] / st.average["total"]).reindex(df.index)
        scale = (free_st / df["free"].where(df["free"] > 0)).where(df["basis"] == "host dispatch", 1.0)
        scale = scale.fillna(1.0).clip(upper=1.0)
        for c in ("host", "stream", "stream_comm", "host_comm", "other", "free", "host_ms", "stream_ms"):
            df[c] = df[c] * scale
    known = (df["host"] + df["stream"]) / df["free"].where(df["free"] > 0)
    if float(df["free"].median()) >= ctx.t.info_rate and not float(known.fillna(1.0).median()) >= ctx.t.explained:
        return None
    return df, launch


def _severity(ctx: Context, share: float) -> str:
    return "critical" if share >= ctx.t.critical_rate else "warning" if share >= ctx.t.warning_rate else "info"


def _from_causes(ctx: Context, df: pd.DataFrame, launch: dict) -> list[Finding]:
    a = ctx.a
    out: list[Finding] = []
    n = len(df)
    host, stream, free = (float(df[c].median()) for c in ("host", "stream", "free"))
    basis = str(df["basis"].iloc[0])
    page = urls.rank(int(df.index.min()), "idle")
    delays = [v.get("p50_ms") for v in launch.values() if v.get("p50_ms") is not None]
    delay = float(pd.Series(delays).median()) if delays else math.nan
    ev = {"median_host_wait_share": host, "median_stream_wait_share": stream, "median_free_share": free,
          "median_stream_wait_comm_share": float(df["stream_comm"].median()),
          "median_host_wait_in_collectives_share": float(df["host_comm"].median()),
          "median_other_share": float(df["other"].median()), "launch_delay_p50_ms": delay,
          "source": f"idle time by cause ({basis})", "threshold_info": ctx.t.info_rate}
    if host >= ctx.t.info_rate:
        ranks = sorted(int(r) for r in df.index[df["host"] >= ctx.t.info_rate])
        # the saving (severity policy): the median rank's host wait per step, were the host to launch ahead of the
        # device (an upper bound: the host's own loop may still set the pace)
        imp = saved_by_ms(float(df["host_ms"].median()), a.steps, lazy(N_(
            "the median rank's host wait per step (the device idle before its next kernel was launched), were the "
            "host to launch ahead of the device: an upper bound")))
        out.append(Finding(
            id="host-bound.free", category="host_bound", severity=_severity(ctx, host),
            impact=imp.to_dict() if imp else None,
            title=lazy("The device waits for the host {share} of the step (median over {n} ranks): its next work is "
                       "launched only after it went idle", share=fmt_pct(host), n=n),
            advice=lazy(ADVICE_GPU if gpu_run(a) else ADVICE),
            why=lazy("While the host has not launched the next kernel the device has nothing to run; the step is "
                     "as long as the host's loop."),
            page=page, ranks=ranks, evidence=ev))
    if stream >= ctx.t.info_rate:
        comm = float(df["stream_comm"].median()) >= 0.5 * stream
        ranks = sorted(int(r) for r in df.index[df["stream"] >= ctx.t.info_rate])
        what = (lazy("collectives already launched and waiting for their peers") if comm
                else lazy("another stream or a synchronisation"))
        # waiting for a collective's peers is theirs to save (late arrival, slow rank, communication findings); a
        # wait for another stream or a synchronisation is this rank's: its median ms per step, an upper bound
        imp = None if comm else saved_by_ms(float(df["stream_ms"].median()), a.steps, lazy(N_(
            "the median rank's wait per step for another stream or a synchronisation with its next kernel already "
            "queued, were the dependency removed: an upper bound")))
        blocked = float(df["host_comm"].median()) >= 0.5 * stream
        if comm and blocked:  # the host itself sat in the collective calls (a CPU backend: gloo)
            title = lazy("The device is idle {share} of the step while the host is blocked in collective calls "
                         "waiting for its peers (a CPU backend such as gloo): it waits for the other ranks, not for "
                         "the host's dispatch (host wait outside collectives {host})",
                         share=fmt_pct(stream), host=fmt_pct(host))
        else:
            title = lazy("The device is idle {share} of the step with its next work already launched (median {delay} "
                         "from launch to start): it waits for {what}, not for the host (host wait {host})",
                         share=fmt_pct(stream), delay=fmt_ms(delay) if delay == delay else "?", what=what,
                         host=fmt_pct(host))
        out.append(Finding(
            id="host-bound.stream-wait", category="communication_bound" if comm else "host_bound",
            severity="warning" if stream >= ctx.t.warning_rate else "info", impact=imp.to_dict() if imp else None,
            title=title,
            advice=lazy(ADVICE_STREAM),
            why=lazy("Idle time with work queued is not the host's: the device waits on a dependency, most often the "
                     "communication of other ranks."),
            page=page, ranks=ranks, phase="communication" if comm else None, evidence=ev))
    return out


def check(ctx: Context) -> list[Finding]:
    a = ctx.a
    causes = _by_cause(ctx)
    if causes is not None:
        return _from_causes(ctx, *causes)
    st = a.steps
    if st.kind == "modern" and "free" in st.average and "total" in st.average:
        share = (st.average["free"] / st.average["total"]).dropna()
        source = "Free / step time of step_trace_time.csv"
        page = urls.page(urls.STEP_TRACE)
    else:
        vals = {r: d.timeline.free_ms / d.timeline.span_ms for r, d in a.run.ranks.items()
                if d.timeline is not None and d.timeline.free_ms is not None and d.timeline.span_ms}
        if not vals or st.kind is not None:
            return []  # the step trace is the better basis; timeline-only runs are judged as information
        share = pd.Series(vals)
        source = "free time / span of the device timeline"
        page = urls.rank(min(vals), "timeline")
    if share.empty:
        return []
    med = float(share.median())
    if math.isnan(med) or med < ctx.t.info_rate:
        return []
    sev = ("critical" if med >= ctx.t.critical_rate else "warning" if med >= ctx.t.warning_rate else "info")
    if st.kind is None:
        sev = "info"
    ranks = sorted(int(r) for r in share.index[share >= ctx.t.info_rate])
    # the severity policy: the saving is the median free time were the host to keep up (an upper bound)
    # (the median step's: one slow step, a warm-up or a checkpoint, is not what the host costs every step)
    imp = (saved_by_ms(float(_wide(st.per_step, "free").median(axis=0).median()), st, lazy(N_(
        "the free time of the median rank in the median step, were the host to keep the device busy: an upper "
        "bound"))) if st.kind == "modern" and "free" in st.per_step.columns else None)
    return [Finding(
        id="host-bound.free", category="host_bound", severity=sev, impact=imp.to_dict() if imp else None,
        title=lazy("The device is idle (free) for {share} of the step (median over {n} ranks)", share=fmt_pct(med),
                   n=len(share)),
        advice=lazy(ADVICE_GPU if gpu_run(a) else ADVICE), why=lazy("Free time is neither computation nor communication: the device has nothing to run."),
        page=page, ranks=ranks,
        evidence={"median_free_share": med, "max_free_share": float(share.max()), "source": source,
                  "threshold_info": ctx.t.info_rate})]


RULE = Rule(
    id="host-bound", category="host_bound", title=N_("Device idle (host bound)"),
    description=N_("""\
The median over ranks of Free / step time (Ascend `step_trace_time.csv`). Information from `info_rate`
(msprof-analyze's 10 %), warning from `warning_rate`, critical from `critical_rate`. Runs with only a device
timeline use its free time / span, as information. A single rank with more free time than its peers is a
slow-rank finding (phase free).
Where the launches of the device's work are known (Kineto traces; torch_npu's host dispatch in the execution view's
steps) and explain at least `explained` of the free time, only the host wait (the next work launched after the
device went idle) is judged, with the same thresholds; idle time with work already queued (stream wait) is reported
apart, as information or a warning, and as communication when collectives were pending."""),
    params=Thresholds, check=check, source=N_("seed 003; msprof-analyze Overall Summary; tuning guide timeline check"))
