"""The trace's timeline summary (span, computation, communication, free) and the hook that hands the device
events to `reportgen.idle` (idle time by cause).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reportgen import intervals as iv
from reportgen.dataquality import dq
from reportgen.loaders.issuelog import IssueLog
from reportgen.model import TimelineSummary

if TYPE_CHECKING:
    from reportgen.loaders.kineto.scan import _Acc
    from reportgen.loaders.kineto.rank import KinetoRank


def _timeline(acc: _Acc, comp: iv.Intervals, comm: iv.Intervals, path: Path, rel: str) -> TimelineSummary:
    s, e = (acc.dev_s, acc.dev_e) if len(acc.dev_s) else (acc.cpu_s, acc.cpu_e)
    span = (max(e) - min(s)) / 1e3 if len(s) else None
    union = iv.merge(np.concatenate([comp[0], comm[0]]), np.concatenate([comp[1], comm[1]]))
    try:
        size = path.stat().st_size
    except OSError:
        size = 0
    return TimelineSummary(
        source=rel, span_ms=span, n_ops=len(acc.dev_s) or len(acc.cpu_s),
        n_streams=len(acc.stream_ids) or len({t for t in acc.tids}), compute_ms=iv.total(comp) / 1e3,
        communication_ms=iv.total(comm) / 1e3, pure_communication_ms=iv.total(iv.subtract(comm, comp)) / 1e3,
        free_ms=(span - iv.total(union) / 1e3) if span is not None else None, trace_bytes=size)


# --- idle hook (reportgen.idle owns the method; this only hands it the device events the build already has) -------


def _idle_hook(acc: _Acc, out: KinetoRank, log: IssueLog, path: Path):
    """The device's idle time by cause per step window and the launch statistics (`reportgen.idle.breakdown`), from
    the build's device events (`out.events`: start, end, stream, launch, communication, windows; partial steps left
    out). A rank with device activity always has them (`rank._build`)."""
    ev = out.events
    if out.device != "gpu" or ev is None or not len(acc.dev_s):
        return None
    from reportgen import idle

    try:
        # the host's collective calls: a CPU backend (gloo) blocks the calling thread until every peer arrived
        hcomm = (np.frombuffer(acc.hc_s, dtype="float64"), np.frombuffer(acc.hc_e, dtype="float64")) \
            if len(acc.hc_s) else None
        wins = [w for w in ev.windows if w[0] not in ev.partial] or list(ev.windows)
        names = np.array([str(t[1]) if isinstance(t, tuple) and len(t) > 1 else str(t) for t in ev.streams]
                         or [""], dtype=object)
        stream = names[np.clip(np.asarray(ev.stream, dtype="int64"), 0, len(names) - 1)] if len(ev.streams) \
            else None
        return idle.breakdown(ev.start, ev.end, ev.comm, stream, ev.launch, wins, host_comm=hcomm)
    except (ValueError, TypeError, IndexError, AttributeError) as err:
        log.add(path, dq("kineto.idle-not-computed", err=type(err).__name__, err2=str(err)[:120]), "info")
        return None
