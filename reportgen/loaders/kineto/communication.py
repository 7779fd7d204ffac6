"""One rank's communication: the collective instances of the complete steps (NCCL / RCCL / HCCL kernels,
kernels launched by a collective's host op, gloo:* slices), their kinds and per-step totals, and
what was counted as communication without a library's name.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import numpy as np
import pandas as pd

from reportgen import intervals as iv
from reportgen.dataquality import Coded, dq
from reportgen.loaders.issuelog import IssueLog
from reportgen.model import COMM_LINK_COLUMNS, COMM_OP_COLUMNS, COMM_TIME_COLUMNS, Communication, StepTrace
from reportgen.loaders.kineto.events import collective_kind
from reportgen.loaders.kineto.launches import _containing_op, launch_index
from reportgen.loaders.kineto.steps import _NONE, _step_at, _whole

if TYPE_CHECKING:
    from reportgen.loaders.kineto.scan import _Acc
    from reportgen.loaders.kineto.steps import DeviceEvents


MAX_NAMED = 5  # kernel names listed in one data-quality line


def _note_comm(acc: _Acc, ev: DeviceEvents, path: Path, log: IssueLog) -> None:
    """Name what was found as communication without a library's name, and what runs beside collectives on their
    streams yet is counted as computation."""
    named = np.frombuffer(acc.dev_named_comm, dtype="int8").astype(bool) if len(acc.dev_named_comm) \
        else np.zeros(0, bool)
    names = list(acc.dev_names)
    nid = np.asarray(acc.dev_nid, dtype="int64")
    by_op = ev.comm & ~named
    if by_op.any():
        got = sorted({names[i] for i in np.unique(nid[by_op])})
        log.add(path, _named("kineto.comm-by-host-op", "kineto.comm-by-host-op-more", got, by_op=int(by_op.sum())),
                "info")
    # the streams that are mostly communication (NCCL's own streams; not a compute stream that also runs
    # collectives, as on ROCm): what else runs there is likely communication under a name we do not know
    n_all = np.bincount(ev.stream, minlength=len(ev.streams))
    n_comm = np.bincount(ev.stream[ev.comm], minlength=len(ev.streams))
    comm_streams = np.flatnonzero((n_comm > 0) & (2 * n_comm >= n_all))
    beside = ~ev.comm & np.isin(ev.stream, comm_streams)
    if beside.any():
        got = sorted({names[i] for i in np.unique(nid[beside])})
        log.add(path, _named("kineto.unknown-beside-comm", "kineto.unknown-beside-comm-more", got,
                              beside=int(beside.sum()), got=len(got)), "info")


def _named(code: str, more: str, kernels: list, **params) -> Coded:
    """The problem `code` naming the first `MAX_NAMED` of `kernels` (`{n}`), or `more` (the same with how many more,
    `{max_named}`) when there are more."""
    n = ", ".join(name[:80] for name in kernels[:MAX_NAMED])
    if len(kernels) > MAX_NAMED:
        return dq(more, **params, n=n, max_named=len(kernels) - MAX_NAMED)
    return dq(code, **params, n=n)


def _default_group(dist: dict) -> str:
    for pg in dist.get("pg_config") or []:
        if isinstance(pg, dict) and pg.get("pg_desc") == "default_pg":
            return str(pg.get("pg_name"))
    return "0"


def _communication(acc: _Acc, ev: Optional[DeviceEvents], st: Optional[StepTrace], host: list, rel: str,
                   dist: dict, device: str) -> Optional[Communication]:
    """One instance per collective of the complete steps (device: its communication events, stepped by their
    launch; CPU, and GPU runs whose collectives ran on the CPU (gloo): gloo slices starting in a host step)."""
    if st is None or not len(st.steps):
        return None
    default = _default_group(dist)
    keep = set(st.steps["step"].dropna().astype(int)) if st.steps["step"].notna().any() else None
    cands = []  # (start, dur, step, kind, group, seq, name)
    # a GPU run whose collectives ran on the CPU (DDP over gloo: no communication kernel, the backend's gloo:*
    # slices on its own threads) takes those slices, as a CPU-only run does
    if ev is not None and (ev.comm.any() or not acc.colls):
        names = list(acc.dev_names)
        nid = np.asarray(acc.dev_nid, dtype="int64")
        kinds = _comm_kinds(acc, ev)
        wins = ev.windows
        mapped = bool((ev.step >= 0).any())
        for i in np.flatnonzero(ev.comm):
            if ev.step[i] >= 0:
                step = wins[ev.step[i]][0]
            elif mapped:
                continue  # launched outside the steps read
            else:
                step = _step_at(wins, ev.start[i])
                if step is _NONE:
                    continue
            name = names[nid[i]]
            _coll, group, seq = acc.dev_args.get(int(i), (None, None, None))
            kind = kinds[int(i)]
            cands.append((float(ev.start[i]), float(ev.end[i] - ev.start[i]), step, kind, group, seq, name))
    else:
        wins = host or _whole(acc, None)
        ready = _gloo_ready(acc, ev, wins) if ev is not None else {}
        seen: dict = {}
        for ts, dur, kind, group, seq, name in sorted(acc.colls, key=lambda c: c[0]):
            step = _step_at(wins, ts)
            if step is _NONE:
                continue
            k = seen[(step, kind)] = seen.get((step, kind), 0) + 1
            got = ready.get((step, kind, k))
            if got is not None and ts < got < ts + dur:  # the slice waited for this rank's own device
                ts, dur = got, ts + dur - got
            cands.append((ts, dur, step, kind, group, seq, name))
    inst = []
    order: dict = {}
    for ts, dur, step, kind, group, seq, name in sorted(cands, key=lambda c: c[0]):
        if keep is not None and step not in keep:
            continue  # partial steps and steps outside the windows
        g = str(group) if group not in (None, "") else default
        k = order[(step, g, kind)] = order.get((step, g, kind), 0) + 1
        key = f"seq:{seq}" if seq not in (None, "") else f"{step}:{kind}:{k}"
        inst.append({"step": step, "op": f"{kind}#{k}", "group": g, "kind": kind, "key": key,
                     "start_ms": ts / 1e3, "dur_ms": dur / 1e3, "name": name})
    if not inst:
        return None
    instances = pd.DataFrame(inst)
    instances["step"] = instances["step"].astype("Int64")
    comm = Communication(source=rel, producer="kineto", steps=pd.DataFrame(), ops=pd.DataFrame(),
                         links=pd.DataFrame(columns=list(COMM_LINK_COLUMNS)),
                         unit_note=("Kineto traces: a collective's communication time is its elapsed time on the "
                                    + ("device (its kernels)" if device == "gpu" else "CPU (the backend's work slice)")
                                    + ", wait included; wait = elapsed − the shortest elapsed of the same collective "
                                    "on any rank (the last rank to arrive waits least), transit = that shortest "
                                    "elapsed; per step, the union of the collectives' time (concurrent streams and "
                                    "threads counted once)"))
    comm.instances = instances
    _fill_ops(comm, np.full(len(instances), math.nan))
    return comm


def _gloo_ready(acc: _Acc, ev: DeviceEvents, wins: list) -> dict:
    """GPU tensors reduced over gloo: (step, kind, k) -> when the k-th collective of that kind in the step had this
    rank's data on the host (µs): the end of the device-to-host copies its host op (`c10d::allreduce_`, ...)
    launched. A rank whose device is still busy (a stall in its backward) hands gloo its data that late, while its
    gloo slice started at once: the copy's end, not the slice's start, is when it arrives."""
    if not len(acc.hc_s) or not len(ev.start):
        return {}
    names = list(acc.dev_names)
    nid = np.asarray(acc.dev_nid, dtype="int64")
    dtoh = np.array(["DtoH" in n and n.startswith("[") for n in names], dtype=bool)
    idx = np.flatnonzero(dtoh[nid]) if len(nid) else np.zeros(0, dtype="int64")
    if not len(idx):
        return {}
    hs, he = np.asarray(acc.hc_s, dtype="float64"), np.asarray(acc.hc_e, dtype="float64")
    ht = np.asarray(acc.hc_tid, dtype="int64")
    hn = list(acc.hc_name)
    ops = [i for i in range(len(hs)) if not str(hn[i]).startswith("gloo:")
           and collective_kind(str(hn[i])) != "collective"]
    if not ops:
        return {}
    li = launch_index(acc.rt_corr, ev.corr[idx])
    rt_ts, rt_tid = np.asarray(acc.rt_ts, dtype="float64"), np.asarray(acc.rt_tid, dtype="int64")
    end_of: dict = {}
    oi = np.array(ops, dtype="int64")
    for j, l in zip(idx.tolist(), li.tolist()):
        if l < 0:
            continue
        t, tid = rt_ts[l], rt_tid[l]
        hit = oi[(ht[oi] == tid) & (hs[oi] <= t) & (he[oi] >= t)]
        if len(hit):
            o = int(hit[np.argmax(hs[hit])])  # the innermost
            end_of[o] = max(end_of.get(o, -np.inf), float(ev.end[j]))
    out: dict = {}
    seen: dict = {}
    for o in sorted(ops, key=lambda i: hs[i]):
        step = _step_at(wins, hs[o])
        if step is _NONE:
            continue
        kind = collective_kind(str(hn[o]))
        k = seen[(step, kind)] = seen.get((step, kind), 0) + 1
        if o in end_of:
            out[(step, kind, k)] = end_of[o]
    return out


def _comm_kinds(acc: _Acc, ev: DeviceEvents) -> dict:
    """Device event index -> collective kind of every communication event: from its `Collective name` arg, else
    its name, else the collective host op that launched it (RCCL's `ncclDevKernel_Generic`, custom kernels)."""
    names = list(acc.dev_names)
    nid = np.asarray(acc.dev_nid, dtype="int64")
    hc = None
    out = {}
    for i in np.flatnonzero(ev.comm).tolist():
        coll = acc.dev_args.get(i, (None, None, None))[0]
        kind = collective_kind(str(coll)) if isinstance(coll, str) and coll else "collective"
        if kind == "collective":
            kind = collective_kind(names[nid[i]])
        if kind == "collective":
            hc = _host_op_kind(acc, ev) if hc is None else hc
            kind = collective_kind(hc[i]) if i in hc else kind
        out[i] = kind
    return out


def _host_op_kind(acc: _Acc, ev: DeviceEvents) -> dict:
    """Device event index -> the name (or `Collective name`) of the collective host op its launch lies in, for
    the communication events without a library's name."""
    named = np.frombuffer(acc.dev_named_comm, dtype="int8").astype(bool) if len(acc.dev_named_comm) \
        else np.zeros(0, bool)
    want = np.flatnonzero(ev.comm & ~named)
    if not len(want) or not len(acc.hc_s):
        return {}
    return _containing_op(acc.rt_corr, acc.rt_ts, acc.rt_tid, (acc.hc_s, acc.hc_e, acc.hc_tid, acc.hc_name),
                          ev.corr[want], want.tolist())


def _union_ms(starts: np.ndarray, lengths: np.ndarray) -> float:
    ok = ~np.isnan(lengths)
    if not ok.any():
        return math.nan
    return iv.total(iv.merge(starts[ok], starts[ok] + lengths[ok]))


def _fill_ops(comm: Communication, wait: np.ndarray) -> None:
    """Per (step, op, group) rows and per-step totals from the instances and their waits (NaN: unknown). A step's
    communication is the union of its collectives' spans (concurrent streams and gloo threads count once), its
    wait the union of their waiting parts (a collective waits from its start), transit the rest."""
    f = comm.instances.copy()
    f["communication_ms"] = f["dur_ms"]
    f["wait_ms"] = wait
    f["transit_ms"] = f["dur_ms"] - np.nan_to_num(wait)
    f["transit_ms"] = f["transit_ms"].where(~np.isnan(wait), math.nan)
    for c in ("sync_ms", "idle_ms", "sdma_mb", "sdma_ms", "rdma_mb", "rdma_ms"):
        f[c] = math.nan
    ops = f[list(COMM_OP_COLUMNS)].copy()
    ops["step"] = ops["step"].astype("Int64")
    comm.ops = ops.reset_index(drop=True)
    rows = []
    for step, g in f.groupby("step", sort=True, dropna=False):
        s = g["start_ms"].to_numpy(dtype="float64")
        tot = _union_ms(s, g["dur_ms"].to_numpy(dtype="float64"))
        w = _union_ms(s, g["wait_ms"].to_numpy(dtype="float64"))
        rows.append({"step": step, "communication_ms": tot, "transit_ms": tot - w if w == w else math.nan,
                     "wait_ms": w, "sync_ms": math.nan, "idle_ms": math.nan})
    steps = pd.DataFrame(rows, columns=["step", *COMM_TIME_COLUMNS])
    steps["step"] = pd.array([None if pd.isna(x) else int(x) for x in steps["step"]], dtype="Int64")
    for c in COMM_TIME_COLUMNS:
        steps[c] = steps[c].astype("float64")
    comm.steps = steps
