"""The execution view (Marey): the step windows of a trace and the device (or CPU) operators of chosen steps,
with the host launches of each step, read in passes of their own.
"""

from __future__ import annotations

import math
from array import array
from itertools import compress
from pathlib import Path

import numpy as np

from reportgen.i18n import lazy
from reportgen.loaders.dispatch import POOL_MIN_BYTES
from reportgen.loaders.files import data_bytes, run_root
from reportgen.loaders.issuelog import IssueLog
from reportgen.pools import gc_paused
from reportgen.loaders.traces import TRACE_ERRORS, shared_reads, trace_batches
from reportgen.loaders.kineto.events import (DEVICE_CATS, HOST_COMM_RE, HOST_OP_CATS, STEP_RE, _corr, collective_kind,
                                             is_comm_kernel, is_runtime_cat, kernel_type)
from reportgen.loaders.kineto.launches import _containing_op, launch_index
from reportgen.loaders.kineto.scan import lower_col, nums
from reportgen.loaders.kineto.steps import device_windows, step_of_launch



def step_windows(path: Path) -> dict[int, tuple]:
    """Step windows (µs), the (pid, tid) of the thread recording ProfilerStep and the host ProfilerStep window
    (first streamed pass): (start, end, thread, host start, host end); start and end on the device when kernels
    map to steps through their launches (`device_windows`, as the loader measures them), else the host window.
    Only the host's ProfilerStep ranges are steps (the GPU lane's are annotations)."""
    out: dict = {}
    rc, rt, kc, ks, ke = array("q"), array("d"), array("q"), array("d"), array("d")
    try:
        for b in trace_batches(path, typed=True):
            xcol = b.xcol  # (the complete events' columns, read once: `read_step_ops` reads the same batch next)
            names, cats, tss, durs = xcol("name"), lower_col(xcol("cat")), nums(xcol("ts")), nums(xcol("dur"))
            kinds = _kinds(cats)  # 1: device activity, 2: a launch, 0: other
            marks = [i for i, n in enumerate(names) if isinstance(n, str) and n.startswith("ProfilerStep#")]
            for i in marks:
                ts, dur, cat = tss[i], durs[i], cats[i]
                kinds[i] = 0  # (a step's mark is never device activity or a launch)
                if ts != ts or dur != dur:  # (NaN)
                    continue
                m = STEP_RE.match(names[i])
                if m and not (cat.endswith("user_annotation") and cat != "user_annotation"):
                    e = b.events[b.where("X")[i]]
                    out[int(m.group(1))] = (ts, ts + dur, (e.get("pid"), e.get("tid")), ts, ts + dur)
            argsx = xcol("args")
            for i in compress(range(len(kinds)), kinds):
                ts, dur, args = tss[i], durs[i], argsx[i]
                if ts != ts or dur != dur:  # (NaN)
                    continue
                c = _corr(args.get("correlation")) if isinstance(args, dict) else -1
                if kinds[i] == 1:
                    kc.append(c)
                    ks.append(ts)
                    ke.append(ts + dur)
                elif c >= 0:
                    rc.append(c)
                    rt.append(ts)
    except TRACE_ERRORS:
        pass  # the loader reported the broken file; the windows read are used
    if not len(ks) or not out:
        return out
    host = sorted((k, v[0], v[1]) for k, v in out.items())
    li = launch_index(rc, kc)
    rts = np.asarray(rt, dtype="float64")
    launch = np.where(li >= 0, rts[np.clip(li, 0, max(len(rts) - 1, 0))] if len(rts) else np.nan, np.nan)
    wins, _partial, mapped = device_windows(host, step_of_launch(host, launch), ks, ke)
    if mapped:  # the host window stays beside the device one (the launches happen in it)
        out = {step: (a, b, out[step][2], out[step][3], out[step][4]) for step, a, b in wins}
    return out


def _launch_or_comm_op(names: list, cats: list) -> list:
    """True for each event `read_step_ops` keeps whatever its time: a launch, or a collective's host op (by its
    name: once per distinct name where the names are text)."""
    launch = {c: is_runtime_cat(c) for c in set(cats)}
    if set(map(type, names)) <= {str}:
        comm = {n: bool(HOST_COMM_RE.match(n)) for n in set(names)}
        is_comm = map(comm.__getitem__, names)
    else:
        is_comm = (bool(HOST_COMM_RE.match(str(n or ""))) if c in HOST_OP_CATS or c == "user_annotation" else False
                   for n, c in zip(names, cats))
    return [launch[c] or (comm_ and (c in HOST_OP_CATS or c == "user_annotation")) for c, comm_ in zip(cats, is_comm)]


def _kinds(cats: list) -> list:
    """Per category (in lower case): 1 device activity, 2 a host launch (`is_runtime_cat`), 0 anything else."""
    code = {c: 1 if c in DEVICE_CATS else 2 if is_runtime_cat(c) else 0 for c in set(cats)}
    return list(map(code.__getitem__, cats))


def _exec_class(name: str) -> str:
    kind = collective_kind(name)
    if kind in ("send", "recv"):
        return "send" if kind == "send" else "receive"
    return "collective"


def _device_kind(name: str) -> tuple[str, str]:
    """A device event's (type, class) in the execution view: a collective's kind and class by its name, else the
    kernel's type and "compute"."""
    if is_comm_kernel(name):
        return collective_kind(name), _exec_class(name)
    return kernel_type(name), "compute"


def read_step_ops(path: Path, rank: int, windows: dict, steps: list[int], log: IssueLog) -> dict:
    """Operators starting inside the chosen steps' windows (second streamed pass), ms from the window start:
    GPU kernels when the trace has device activity, else the top-level operators of the training thread and
    the backend's collective slices (gloo:*)."""
    from reportgen.model import StepOps

    wins = sorted((windows[s][0], windows[s][1], s) for s in steps if s in windows)
    if not wins:
        return {}
    main = {windows[s][2] for s in windows}
    starts = np.array([w[0] for w in wins])
    dev: dict = {s: [] for _, _, s in wins}
    cpu: dict = {s: [] for _, _, s in wins}
    procs: dict = {}  # pid -> its label ("GPU 0") or name; (pid, tid) -> thread name ("stream 7")
    # the launches (cudaLaunchKernel, ...) of a step happen in its host ProfilerStep window
    hwins = sorted((windows[s][3], windows[s][4], s) for _, _, s in wins if len(windows[s]) > 4)
    hstarts = np.array([w[0] for w in hwins])
    launches: dict = {s: [] for _, _, s in wins}
    maybe: list = []  # correlation ids of kernels without a collective's name
    # every launch and every collective host op, to find the kernels a collective launched (custom all-to-all)
    rt = (array("q"), array("d"), array("l"))
    hc = (array("d"), array("d"), array("l"), [])
    threads: dict = {}
    ends = [w[1] for w in wins]
    hends = [w[1] for w in hwins]
    kinds: dict = {}  # a device event's name -> `_device_kind`
    try:
        for b in trace_batches(path, typed=True):
            for k in b.where("M"):
                _name_meta(b.events[k], procs)
            xcol = b.xcol  # (read once: `step_windows` read the same batch's before, `shared_reads`)
            tsl, durl, names, cats = nums(xcol("ts")), nums(xcol("dur")), xcol("name"), _cats(xcol("cat"))
            tsa = np.array(tsl, dtype="float64")  # (the step each event may start in: one search a batch)
            win = np.searchsorted(starts, tsa, side="right") - 1
            hwin = (np.searchsorted(hstarts, tsa, side="right") - 1).tolist() if hwins else [-1] * len(tsl)
            # the events the loop below does something with: launches, collective host ops, events in a window
            keep = (win >= 0) & (tsa < np.asarray(ends)[np.clip(win, 0, None)])
            keep |= np.asarray(_launch_or_comm_op(names, cats), dtype=bool)
            win = win.tolist()
            argsx, pids, tids = xcol("args"), xcol("pid"), xcol("tid")
            kept = [k for k in np.flatnonzero(keep).tolist() if tsl[k] == tsl[k] and durl[k] == durl[k]]  # (NaN)
            is_rt = {c: is_runtime_cat(c) for c in set(cats)}
            launch = [k for k in kept if is_rt[cats[k]]]  # (a launch is nothing else below)
            other = [k for k in kept if not is_rt[cats[k]]] if launch else kept
            coll_ops = [k for k in other if (cats[k] in HOST_OP_CATS or cats[k] == "user_annotation")
                        and HOST_COMM_RE.match(str(names[k] or ""))]
            for k in sorted(launch + coll_ops) if launch and coll_ops else launch or coll_ops:
                threads.setdefault((pids[k], tids[k]), len(threads))  # (numbered in the batch's order)
            corr = [_corr(a.get("correlation")) if isinstance(a, dict) else -1 for a in map(argsx.__getitem__, launch)]
            ok = [(k, c) for k, c in zip(launch, corr) if c >= 0]
            rt[0].extend([c for _, c in ok])
            rt[1].extend([tsl[k] for k, _ in ok])
            rt[2].extend([threads[(pids[k], tids[k])] for k, _ in ok])
            for k in coll_ops:
                args = argsx[k]
                coll = args.get("Collective name") if isinstance(args, dict) else None
                hc[0].append(tsl[k])
                hc[1].append(tsl[k] + durl[k])
                hc[2].append(threads[(pids[k], tids[k])])
                hc[3].append(coll if isinstance(coll, str) and coll else str(names[k]))
            if hwins:
                for k, c in zip(launch, corr):
                    j = hwin[k]
                    if j >= 0 and tsl[k] < hends[j] and isinstance(names[k], str):
                        launches[hwins[j][2]].append((tsl[k], durl[k], names[k], (pids[k], tids[k]), c))
            for k in other:
                name, cat, ts, dur, args, pid, tid, i = (names[k], cats[k], tsl[k], durl[k], argsx[k], pids[k],
                                                         tids[k], win[k])
                if i < 0 or ts >= ends[i]:
                    continue
                s = wins[i][2]
                name = name or ""
                if cat in DEVICE_CATS:
                    kind = kinds.get(name) if isinstance(name, str) else None
                    if kind is None:  # (by name, once per name: a step runs the same kernels thousands of times)
                        kind = _device_kind(name)
                        if isinstance(name, str):
                            kinds[name] = kind
                    comm = kind[1] != "compute"
                    c = _corr(args.get("correlation")) if isinstance(args, dict) else -1
                    dev[s].append((ts, dur, kind[0], kind[1], (pid, tid), c))
                    if not comm and cat == "kernel" and c >= 0:
                        maybe.append(c)
                elif cat == "user_annotation" and name.startswith("gloo:"):
                    cpu[s].append((ts, dur, name, _exec_class(name), True, (pid, tid)))
                elif cat in HOST_OP_CATS and (pid, tid) in main and not HOST_COMM_RE.match(name):
                    cpu[s].append((ts, dur, name, "compute", False, (pid, tid)))
    except TRACE_ERRORS:
        pass
    by_op = _kernels_of_collectives(rt, hc, maybe)
    if by_op:  # kernels launched inside a collective's host op are communication, as the loader counts them
        for s_, rows_ in dev.items():
            dev[s_] = [(r[0], r[1], collective_kind(by_op[r[5]]), _exec_class(by_op[r[5]]), r[4], r[5])
                       if r[3] == "compute" and r[5] in by_op else r for r in rows_]
    out = {}
    use_dev = any(dev.values())
    for a, b, s in wins:
        if use_dev:
            rows = sorted(dev[s], key=lambda r: r[:4])
        else:  # top-level operators only (a nested operator is inside its parent's span)
            rows, end = [], -math.inf
            for ts, dur, name, cls, coll, where in sorted(cpu[s], key=lambda x: (x[0], -x[1])):
                if coll:
                    rows.append((ts, dur, name, cls, where))
                elif ts >= end:
                    rows.append((ts, dur, name, cls, where))
                    end = ts + dur
            rows.sort(key=lambda r: r[:4])
        if not rows:
            continue
        o = StepOps(rank=rank, step=s, source=log.rel(path), step_ms=(b - a) / 1e3,
                    names=[r[2] for r in rows], classes=[r[3] for r in rows],
                    start=np.array([(r[0] - a) / 1e3 for r in rows]),
                    dur=np.array([r[1] / 1e3 for r in rows]),
                    window=f"ProfilerStep#{s} ({'device kernels' if use_dev else 'CPU operators'})",
                    # CPU-only traces: the operators are the "device" (lanes by class as before)
                    lanes=[_lane_name(procs, r[4], True) for r in rows] if use_dev else [])
        if use_dev and launches[s]:  # the host dispatch: each launch with the kernel of its correlation id
            ev = sorted(launches[s], key=lambda x: -x[1])[:MAX_LAUNCHES]
            ev.sort(key=lambda x: x[0])
            by_corr = {r[5]: i for i, r in enumerate(rows) if r[5] >= 0}
            o.host_names = [x[2] for x in ev]
            o.host_lanes = [_lane_name(procs, x[3], False) for x in ev]
            o.host_start = [(x[0] - a) / 1e3 for x in ev]
            o.host_dur = [x[1] / 1e3 for x in ev]
            o.host_launch = [by_corr.get(x[4], -1) if x[4] >= 0 else -1 for x in ev]
        out[s] = o
    return out


def _cats(col: list) -> list:
    """The category of each event as `read_step_ops` compares it: text in lower case, "" for anything else."""
    if set(map(type, col)) <= {str}:
        low = {c: c.lower() for c in set(col)}
        return list(map(low.__getitem__, col))
    return [(c or "").lower() if isinstance(c, str) else "" for c in col]


def _kernels_of_collectives(rt: tuple, hc: tuple, corrs: list) -> dict:
    """Correlation id -> the collective's name, for the kernels (`corrs`) launched inside a collective's host op on
    the same thread; `rt` = (correlation, ts, thread) arrays of the launches, `hc` = (start, end, thread, name) of
    the host ops."""
    if not corrs or not len(hc[0]) or not len(rt[0]):
        return {}
    return _containing_op(rt[0], rt[1], rt[2], hc, np.asarray(corrs, dtype="int64"), list(corrs))


MAX_LAUNCHES = 4000  # host launch slices kept per step (the longest), before the timeline's own cap


MAX_LANE_CHARS = 80


def _name_meta(e: dict, names: dict) -> None:
    """Kineto's metadata events: `process_name` / `process_labels` ("GPU 0") of a pid, `thread_name` ("stream 7")
    of a (pid, tid). A label wins over the process name (a GPU's process is named after the Python process)."""
    args = e.get("args")
    if not isinstance(args, dict):
        return
    kind = e.get("name")
    if kind == "process_labels" and isinstance(args.get("labels"), str):
        names[("label", e.get("pid"))] = args["labels"].strip()
    elif kind == "process_name" and isinstance(args.get("name"), str):
        names[("name", e.get("pid"))] = args["name"].strip()
    elif kind == "thread_name" and isinstance(args.get("name"), str):
        names[(e.get("pid"), e.get("tid"))] = args["name"].strip()


def _lane_name(names: dict, where: tuple, device: bool) -> str:
    """"GPU 0 · stream 7" from the trace's metadata; without it the stream (or thread) number."""
    pid, tid = where
    proc = names.get(("label", pid)) or names.get(("name", pid)) or ""
    thread = names.get((pid, tid)) or (f"stream {tid}" if device else f"thread {tid}")
    return f"{proc} · {thread}"[:MAX_LANE_CHARS] if proc else thread[:MAX_LANE_CHARS]


EXEC_POOL_BYTES = POOL_MIN_BYTES  # the ranks' traces read in the local pool (jobs > 1) from this many bytes together


def load_execution(layout, run, data, ranks: list[int], log: IssueLog, jobs: int = 1) -> bool:
    """Fill `data` (ExecutionData) from the ranks' Kineto traces; False when no trace has step windows. Each
    rank's passes are one pure call (`_windows_job`: its step windows, then the operators of the chosen steps it
    has, over one parse; `_ops_job`: the operators of the steps picked after every rank's windows are known), run
    in `jobs` local processes when the traces are large (`dispatch.map_ranks`); the data-quality entries are added
    to `log` in rank order, as one process adds them."""
    from reportgen.loaders.dispatch import map_ranks

    paths = {r: layout.ranks[r].first("kineto_trace") for r in ranks}
    todo = [(r, p, list(data.steps)) for r, p in paths.items() if p is not None]
    if jobs > 1 and data_bytes([p for _, p, _ in todo]) < EXEC_POOL_BYTES:
        jobs = 1

    def passes(fn, items):
        return map_ranks(fn, items, (log.root,), jobs=jobs, min_parallel=2, files=lambda job: [job[1]])

    wins, early = {}, {}
    for (r, p, _), (w, got, issues) in zip(todo, passes(_windows_job, todo)):
        log.issues.extend(issues)
        if w:
            wins[r] = (p, w)
            if got is not None:
                early[r] = got
    if not wins:
        return False
    wanted = [s for s in data.steps if any(s in w for _, w in wins.values())]
    if not wanted:
        common = sorted(set.intersection(*(set(w) for _, w in wins.values())))
        pool = common or sorted(next(iter(wins.values()))[1])
        pick = pool[len(pool) // 2]
        if data.steps:
            data.notes.append(lazy("steps {steps} are not in the traces; step {pick} is shown",
                                   steps=", ".join(map(str, data.steps)), pick=pick))
        wanted = [pick]
        data.reasons[pick] = "the middle step of the traces"
    data.steps = wanted
    late = [(r, p, w, wanted) for r, (p, w) in wins.items() if r not in early]
    for (r, *_), (got, issues) in zip(late, passes(_ops_job, late)):
        log.issues.extend(issues)
        early[r] = got
    for r in wins:
        got = early[r]
        for s, o in got.items():
            data.ops.setdefault(s, {})[r] = o
        missing = [s for s in wanted if s not in got]
        if missing:
            data.notes.append(lazy("rank {rank}: no operators in step(s) {steps} of its trace", rank=r,
                                   steps=", ".join(map(str, missing))))
    return True


def _windows_job(job: tuple, root: Path) -> tuple:
    """One rank's first pass: (its step windows, the operators of the steps asked for it has -- None when it has
    none of them --, the data-quality entries added), its trace parsed once for both (`shared_reads`)."""
    r, p, steps = job
    log = IssueLog(root)
    got = None
    with run_root(root), gc_paused(), shared_reads():  # (the collector paused until its events are gone, as in
        w = step_windows(p)  # `scan._scan`)
        if w and any(s in w for s in steps):
            # the steps asked for that this trace has: those of `wanted` it has (the same operators as read after
            # every rank's windows are known)
            got = read_step_ops(p, r, w, steps, log)
    return w, got, log.issues


def _ops_job(job: tuple, root: Path) -> tuple:
    """One rank's second pass: (the operators of the steps picked, the data-quality entries added)."""
    r, p, w, wanted = job
    log = IssueLog(root)
    with run_root(root), gc_paused():  # (as the first pass: ~0.3 of ~0.9 s CPU on a 27 MB trace is the collector)
        got = read_step_ops(p, r, w, wanted, log)
    return got, log.issues
