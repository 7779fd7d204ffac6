"""Arrival at collectives: which rank reaches each collective last, and by how much, from the matched collective
instances of every rank (Kineto: the same instance across ranks, `loaders.kineto.run.match_collectives`' keys).

In a synchronous collective every member leaves together, when the last one has arrived; the time the others
spend in it before that is waiting for the late rank (the culprit), not transfer. The arrival of a rank is the
start of its communication kernel when the ranks' clocks agree (the ends of the matched instances line up), else
it is derived from the elapsed times alone (arrival = common end − elapsed: the rank with the shortest elapsed
arrived last, by the difference to the longest), which needs no common clock.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

import numpy as np
import pandas as pd

from reportgen.analysis.codes import column_array as _values
from reportgen.i18n import N_, Msg, lazy

if TYPE_CHECKING:
    from reportgen.model import RankData, Run

CLOCK_TOLERANCE_MS = 0.05  # ends of one instance this close (median over instances): the clocks agree


@dataclass
class Arrivals:
    """Per matched instance (group, key) with two ranks or more: every rank's lateness (ms after the first)."""

    late: pd.DataFrame  # rank, step, op, group, kind, late_ms, inst (an integer per (group, key)); `arrivals`
    #                     gives step, op, group and kind as categoricals (no text a row); `analysis.waits` reads it
    instances: pd.DataFrame  # step, op, group, key, kind, n, first_rank, last_rank, spread_ms,
    #                          last_behind_median_ms, last_margin_ms (the last arrival − the one before it)
    basis: str  # "start times" | "elapsed times"
    source: str = "collectives"  # "collectives" (matched instances) | "step trace" (legacy step-trace columns)


STREAM_PREFIX_RE = re.compile(r"^stream_\d+_")


COLUMNS = ["step", "op", "group", "key", "kind", "start_ms", "dur_ms"]


def _instances_of(run: "Run") -> list[tuple[int, pd.DataFrame]]:
    """Every rank's collective instances (step, op, group, key, kind, start_ms, dur_ms), with its rank: the
    loaders' matched instances (`Communication.instances`: Kineto traces, Ascend communication.json / analysis.db /
    COMMUNICATION_OP)."""
    frames = []
    for r, d in run.ranks.items():
        c = d.communication
        inst = getattr(c, "instances", None) if c is not None else None
        if inst is None or not len(inst) or not {"start_ms", "dur_ms", "group", "key", "kind"} <= set(inst.columns):
            continue
        frames.append((int(r), inst))
    return frames


def _step_trace_events(run: "Run") -> list[pd.DataFrame]:
    """Legacy step traces (MindInsight, MindSpore GPU `step_trace_raw`): each rank's collective columns with their
    start and end points, an instance per (step, operator) once the per-rank stream number is dropped from the
    column name (`stream_48_0_AllReduce-op663` and `stream_37_0_AllReduce-op663` are one operator); ranks of
    different pipeline stages run different graphs and are never matched with each other."""
    from reportgen.loaders.communication import op_kind

    frames = []
    stage_of = run.info.stage_of_rank if run.info.stages > 1 else {}
    for r, d in run.ranks.items():
        st = d.step_trace
        ev = getattr(st, "comm_events", None) if st is not None else None
        if ev is None or not len(ev):
            continue
        name = ev["name"].astype(str).str.replace(STREAM_PREFIX_RE, "", regex=True)
        kind = np.array(["p2p" if op_kind(n) == "p2p" else "collective" for n in name], dtype=object)
        group = f"stage {stage_of.get(int(r), 0)}" if stage_of else "step trace"
        step = ev["step"].astype("Int64")
        frames.append((int(r), pd.DataFrame({"step": step, "op": name, "group": group,
                                             "key": step.astype(str) + ":" + name, "kind": kind,
                                             "start_ms": ev["start_ms"].astype(float),
                                             "dur_ms": (ev["end_ms"] - ev["start_ms"]).astype(float)})))
    return frames


def pseudo_group_text(gid: str) -> "Optional[Msg]":
    """The words for the groups this module makes up where the profile names none (legacy step traces: "stage N",
    "step trace"; no group recorded: ""), in the report's language; None for a group the profile names."""
    if gid == "":
        return lazy(N_("all ranks (group not recorded)"))
    if gid == "step trace":
        return lazy(N_("all ranks (step trace)"))
    if gid.startswith("stage "):
        return lazy(N_("stage {n} (step trace)"), n=gid[6:])
    return None


def arrivals(run: "Run") -> Optional[Arrivals]:
    frames, source = _instances_of(run), "collectives"
    if len(frames) < 2:
        frames, source = _step_trace_events(run), "step trace"
    if len(frames) < 2:
        return None
    # each rank's rows coded on their own (`rank_inputs`: integers, no stack of every rank's text), then the codes
    # of every rank one after the other: the rows with a start, an elapse, a group and a key, in the ranks' order.
    # Memory (issue 33): a few 4- and 8-byte arrays a row (1.6 million rows at 1,024 ranks), freed as soon as done
    parts = [_inputs_of(run, r, x) if source == "collectives" else rank_inputs(x) for r, x in frames]
    n_of = np.array([len(p.at) for p in parts], dtype=np.int64)
    fi = np.repeat(np.arange(len(frames), dtype=np.int32), n_of)  # each row's frame (its rank: one a frame)
    gcode, gu = _merged([(p.group, p.groups) for p in parts])
    kind = _merged([(p.kind, p.kinds) for p in parts])[0] + 1
    inst, hashed = _instance_codes(frames, parts, gcode, n_of)
    nd = int(inst.max()) + 1 if len(inst) else 0
    # an instance whose rows name more than one kind is not one collective: left out
    seg = _segments(inst)
    keep = (_per(kind, seg, nd, np.minimum) == _per(kind, seg, nd, np.maximum))[inst]
    del seg, kind
    # a rank counted once per instance (its first row), and instances on two ranks or more. The instances are
    # numbered by the hashes (`hashed`) and no rank repeats a hash (`RankInputs.distinct_keys`, found where the rank
    # was loaded): every row is its rank's first of its instance; else one hash pass over the (frame, instance)
    # numbers (a sort per rank cost ~0.1 ms a rank)
    if not (hashed and all(p.distinct_keys for p in parts)):
        keep &= ~pd.Series(fi.astype(np.int64) * max(1, nd) + inst, copy=False).duplicated().to_numpy()
    keep &= np.bincount(inst[keep], minlength=nd)[inst] >= 2
    if not keep.any():
        return None
    sel = np.flatnonzero(keep)  # the kept rows' positions in the stacked codes
    del keep
    fi, inst, gcode = fi[sel], inst[sel], gcode[sel]
    start = _stacked(frames, parts, "start_ms")[sel]
    dur = _stacked(frames, parts, "dur_ms")[sel]
    # per instance: the spread of the ends and of the starts (whether the clocks agree), the first arrival
    seg = _segments(inst)
    end = start + dur
    end_spread = _per(end, seg, nd, np.maximum) - _per(end, seg, nd, np.minimum)
    del end
    start_spread = _per(start, seg, nd, np.maximum) - _per(start, seg, nd, np.minimum)
    live = np.bincount(inst, minlength=nd) > 0
    same_clock = float(pd.Series(end_spread[live]).median()) <= max(
        CLOCK_TOLERANCE_MS, 0.1 * float(pd.Series(start_spread[live]).median()))
    del end_spread, start_spread, live
    if same_clock:
        arr_all = start
        del dur
    else:
        arr_all = -dur
        del start, dur
    late_ms = arr_all - _per(arr_all, seg, nd, np.minimum)[inst]
    del seg
    # per instance, vectorised (a Python loop over instances costs seconds at 1,024 ranks): sorted by arrival, the
    # first, the last and the one before it, and the median of all but the last (sorted: the middle one or two)
    xo = np.lexsort((arr_all, inst))  # by instance number, then arrival (stable)
    arr_v = arr_all[xo]
    del arr_all
    inst_id = inst[xo]
    starts = np.flatnonzero(np.r_[True, inst_id[1:] != inst_id[:-1]])
    del inst_id
    lens = np.diff(np.r_[starts, len(xo)])
    last = starts + lens - 1
    m = lens - 1  # all but the last
    lastv, firstv, beforev = arr_v[last], arr_v[starts], arr_v[last - 1]
    med = (arr_v[starts + (m - 1) // 2] + arr_v[starts + m // 2]) / 2
    del arr_v
    rank_of = np.array([r for r, _ in frames], dtype=np.int64)
    firstr, lastr = rank_of[fi[xo[starts]]], rank_of[fi[xo[last]]]
    head = sel[xo[last]]  # the last arrivals' positions in the stacked codes
    del xo
    txt = _rows_text(frames, parts, n_of, head, ["step", "op", "group", "key", "kind"])
    instances = pd.DataFrame({
        "step": txt["step"].to_numpy(), "op": txt["op"].astype(str).array,
        "group": txt["group"].array, "key": txt["key"].array,
        "kind": txt["kind"].array, "n": lens,
        "first_rank": firstr, "last_rank": lastr, "spread_ms": lastv - firstv,
        "last_behind_median_ms": lastv - med, "last_margin_ms": lastv - beforev})
    if str(txt["step"].dtype) == "Int64":
        instances["step"] = instances["step"].astype("Int64")
    # the lateness rows: numbers and codes, no text a row (the step, group, operator and kind as categoricals of
    # their distinct values)
    opc, opu = _merged([_texts(x, "op", p) for (_, x), p in zip(frames, parts)])
    kc, ku = _merged([(p.kind, p.kinds) for p in parts])
    sc, su = _merged([_texts(x, "step", p) for (_, x), p in zip(frames, parts)])
    late = pd.DataFrame({"rank": rank_of[fi], "step": pd.Categorical.from_codes(sc[sel], categories=_categories(su)),
                         "op": pd.Categorical.from_codes(opc[sel], categories=_categories(opu)),
                         "group": pd.Categorical.from_codes(gcode, categories=_categories(gu)),
                         "kind": pd.Categorical.from_codes(kc[sel], categories=_categories(ku)),
                         "late_ms": late_ms, "inst": inst}, copy=False)
    return Arrivals(late=late, instances=instances, basis="start times" if same_clock else "elapsed times",
                    source=source)


def _segments(inst: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rows ordered by instance number (`_per`'s input): that order, where each instance's rows start in it
    and the instance numbers of those starts."""
    order = np.argsort(inst, kind="stable")
    si = inst[order]
    starts = np.flatnonzero(np.r_[True, si[1:] != si[:-1]]) if len(si) else np.zeros(0, dtype=np.intp)
    return order, starts, si[starts]


def _per(v: np.ndarray, seg: tuple, n: int, how) -> np.ndarray:
    """Per instance number (0..n-1) the min / max (`how`: np.minimum / np.maximum, NaN propagated) of `v` over its
    rows (`seg`: `_segments` of the rows' instance numbers; a reduction over each instance's contiguous rows, ~10x
    faster than `how.at` in place); +-inf for a number without rows."""
    order, starts, ids = seg
    out = np.full(n, np.inf if how is np.minimum else -np.inf)
    if len(starts):
        out[ids] = how.reduceat(v[order], starts)
    return out


def _stacked(frames: list[tuple[int, pd.DataFrame]], parts: list["RankInputs"], name: str) -> np.ndarray:
    return np.concatenate([_floats(_values(x, name))[p.at] for (_, x), p in zip(frames, parts)]
                          if parts else [np.zeros(0)])


@dataclass
class RankInputs:
    """One rank's collective instances as integers (`rank_inputs`): the rows that can take part (a start, an
    elapse, a group and a key), their group and kind as codes into the rank's few distinct values, and a 64-bit
    hash of (group, key), the same on every rank for the same instance (no run-wide factorisation of the text)."""

    at: np.ndarray  # the rows' positions in the rank's frame
    group: np.ndarray  # codes into `groups` (the values as they are)
    groups: list
    kind: np.ndarray  # codes into `kinds` (the kinds as text; -1: missing)
    kinds: list
    key_hash: Optional[np.ndarray]  # uint64 per row; None where a group or key is not text (then matched exactly)
    # the rows' operator and step as codes into the rank's distinct values (`_local_codes`; None: made on use)
    op: Optional[tuple[np.ndarray, list]] = None
    step: Optional[tuple[np.ndarray, list]] = None
    distinct_keys: bool = False  # True: no two rows have the same `key_hash` (each instance once on the rank)


_GROUP_MIX = np.uint64(0x9E3779B97F4A7C15)  # (the golden-ratio multiplier: a group's hash spread over 64 bits)


def _floats(v) -> np.ndarray:
    """As `Series.to_numpy(dtype=float, na_value=nan)`."""
    if isinstance(v, np.ndarray):
        return v if v.dtype == np.float64 else v.astype(np.float64)
    return v.to_numpy(dtype=np.float64, na_value=np.nan)


def _objects(x: pd.DataFrame, name: str, at: np.ndarray) -> np.ndarray:
    """As `Series.to_numpy(dtype=object)` at rows `at`."""
    v = _values(x, name)
    if isinstance(v, np.ndarray):
        return v[at].astype(object)
    return v[at].to_numpy(dtype=object)


def rank_inputs(x: pd.DataFrame) -> RankInputs:
    """`RankInputs` of one rank's instances frame (`COLUMNS`): a pure function of the rank."""
    ok = np.asarray(pd.notna(_values(x, "start_ms")), dtype=bool)
    text = {}
    for c in ("dur_ms", "group", "key"):
        v = _values(x, c)
        text[c] = _all_text(v)
        if not text[c]:  # (a column of texts only has nothing missing)
            ok &= np.asarray(pd.notna(v), dtype=bool)
    at = np.flatnonzero(ok)
    gc, gu = pd.factorize(_objects(x, "group", at))
    kc, ku = pd.factorize(_kind_texts(x)[at])
    ku = [k if type(k) is str else str(k) for k in ku]  # (a str subclass as the str it is: `_kind_texts`)
    keys = _objects(x, "key", at)
    h = None
    if (text["key"] and len(at) or pd.api.types.infer_dtype(keys, skipna=False) == "string") and \
            pd.api.types.infer_dtype(np.asarray(gu, dtype=object), skipna=False) in ("string", "empty"):
        gh = pd.util.hash_array(np.asarray(gu, dtype=object), categorize=False)
        h = pd.util.hash_array(keys, categorize=False) + gh[gc] * _GROUP_MIX if len(at) else np.zeros(0, np.uint64)
    return RankInputs(at=at.astype(np.int32), group=gc.astype(np.int32), groups=list(gu), kind=kc.astype(np.int32),
                      kinds=ku, key_hash=h, op=_small(_local_codes(x, "op", at)),
                      step=_small(_local_codes(x, "step", at)),
                      distinct_keys=h is not None and len(pd.unique(h)) == len(h))


def _all_text(v) -> bool:
    """`v` is an object array of texts only (`str` and its subclasses: nothing missing in it). (pandas' inference
    over the array in C: a quarter of a check of each value's type in Python.)"""
    return isinstance(v, np.ndarray) and v.dtype == object and pd.api.types.infer_dtype(v, skipna=False) == "string"


def _kind_texts(x: pd.DataFrame) -> np.ndarray:
    """The `kind` column as text (`astype(str)`: a missing value stays missing) in an object array. A column of
    texts only (the loaders' `_texts`) is that text already: its own array, not a round trip through pandas' string
    dtype (~0.3 ms a rank); a str subclass in it stands for its str (the caller's distinct kinds made str)."""
    if "kind" in x.columns:
        v = _values(x, "kind")
        if _all_text(v):
            return v
    kind = x["kind"] if "kind" in x.columns else pd.Series(np.nan, index=x.index, dtype=object)
    return kind.astype(str).to_numpy(dtype=object)


def _small(cu: tuple[np.ndarray, list]) -> tuple[np.ndarray, list]:
    """Codes in the smallest integer type that holds them (16 bits where the rank has fewer than 32,768 values)."""
    c, u = cu
    return c.astype(np.int16 if len(u) < 2 ** 15 else np.int32), u


def rank_arrival(data: "RankData") -> Optional[RankInputs]:
    """`rank_inputs` of the rank's collective instances (`analysis.per_rank`: computed where the rank is loaded)."""
    c = data.communication
    inst = getattr(c, "instances", None) if c is not None else None
    if inst is None or not len(inst) or not {"start_ms", "dur_ms", "group", "key", "kind"} <= set(inst.columns):
        return None
    return rank_inputs(inst)


def _inputs_of(run: "Run", r: int, x: pd.DataFrame) -> RankInputs:
    """The rank's inputs as its loading worker made them (`RankData.figures`), else made here from `x`."""
    pre = getattr(run.ranks[r].figures, "arrival", None)
    if isinstance(pre, RankInputs) and (not len(pre.at) or int(pre.at[-1]) < len(x)):
        return pre
    return rank_inputs(x)


def _merged(parts: list[tuple[np.ndarray, list]]) -> tuple[np.ndarray, list]:
    """Codes into each rank's own distinct values -> codes into the run's (numbered as first seen, -1 kept), one
    array for the ranks one after the other, and the run's distinct values. The ranks that list the same values
    in the same order (ranks of one role run the same operators) share one mapping."""
    index: dict = {}
    seen: dict[tuple, int] = {}
    maps: list[np.ndarray] = []
    at = np.zeros(len(parts), dtype=np.int64)  # where each part's mapping starts in `maps` joined
    size = 0
    for i, (_, u) in enumerate(parts):
        key = tuple(u)
        k = seen.get(key)
        if k is None:
            maps.append(np.array([index.setdefault(v, len(index)) for v in u] + [-1], dtype=np.int32))
            k = seen[key] = size
            size += len(maps[-1])
        at[i] = k
    if not parts:
        return np.zeros(0, dtype=np.int32), list(index)
    # one gather over every row (not one a rank): a code c of part i at at[i] + c, a missing one (-1) at its
    # mapping's last place (-1)
    lens = np.array([len(c) for c, _ in parts], dtype=np.int64)
    it = np.int32 if size < 2 ** 31 else np.int64  # (4 bytes a row)
    c = np.concatenate([np.asarray(c, dtype=it) for c, _ in parts])
    neg = c < 0
    c += np.repeat(at.astype(it), lens)
    if neg.any():
        c[neg] = np.repeat((at + np.array([len(u) for _, u in parts], dtype=np.int64)).astype(it), lens)[neg]
    return np.concatenate(maps)[c], list(index)


def _texts(x: pd.DataFrame, name: str, p: RankInputs) -> tuple[np.ndarray, list]:
    """The rank's `name` ("op" / "step") codes: as its loading worker made them, else made here."""
    got = getattr(p, name, None)
    return got if got is not None else _local_codes(x, name, p.at)


def _local_codes(x: pd.DataFrame, name: str, at: np.ndarray) -> tuple[np.ndarray, list]:
    """The column's values at rows `at` as codes into their distinct values (first seen; -1: missing), as a
    factorisation of the values as objects gives them: an object column's own objects, a nullable integer column's
    integers factorised as integers (the same codes, the distinct values as Python ints), not a copy of each
    value as an object."""
    if name not in x.columns:
        return np.full(len(at), -1, dtype=np.int32), []
    v = _values(x, name)
    if isinstance(v, np.ndarray) and v.dtype == object or isinstance(v, pd.arrays.IntegerArray):
        c, u = pd.factorize(v if len(at) == len(v) else v[at])
        return c, u.tolist()
    c, u = pd.factorize(_objects(x, name, at))
    return c, list(u)


def _categories(values: list) -> pd.Index:
    return pd.Index(np.array(values + [None], dtype=object)[:-1], dtype=object)


def _instance_codes(frames: list[tuple[int, pd.DataFrame]], parts: list[RankInputs], gcode: np.ndarray,
                    n_of: np.ndarray) -> tuple[np.ndarray, bool]:
    """One integer per (group, key) over the stacked rows, numbered as first seen (as a factorisation of the pair
    numbers them): from the ranks' hashes, checked against the text (every row's group and key are those of its
    instance's first row: a 64-bit collision can never join two instances), else from the text itself; and whether
    they come from the hashes."""
    if all(p.key_hash is not None for p in parts):
        c, _ = pd.factorize(np.concatenate([p.key_hash for p in parts]) if len(parts) else np.zeros(0, np.uint64))
        c = c.astype(np.int32)
        # each instance's first row (every number 0..n-1 occurs, numbered as first seen: a number's first row is
        # where the codes pass the largest before it)
        first = np.flatnonzero(c > np.maximum.accumulate(np.r_[np.int32(-1), c[:-1]])) if len(c) else \
            np.zeros(0, dtype=np.int64)
        same = bool((gcode == gcode[first[c]]).all())
        if same:
            rep = _rows_text(frames, parts, n_of, first, ["key"])["key"].to_numpy(dtype=object)
            lo = 0
            for (_, x), p in zip(frames, parts):
                hi = lo + len(p.at)
                if not (_objects(x, "key", p.at) == rep[c[lo:hi]]).all():
                    same = False
                    break
                lo = hi
        if same:
            return c, True
    index: dict = {}
    out, lo = [], 0
    for (_, x), p in zip(frames, parts):
        hi = lo + len(p.at)
        out.append(np.array([index.setdefault((g, k), len(index)) for g, k in
                             zip(gcode[lo:hi].tolist(), _objects(x, "key", p.at))], dtype=np.int32))
        lo = hi
    return (np.concatenate(out) if out else np.zeros(0, dtype=np.int32)), False


def _joined(parts: list, back: Optional[np.ndarray] = None) -> pd.Series:
    """The ranks' pieces of one column one after the other (`back`: then the rows taken in that order): numpy
    arrays of one dtype joined as arrays and made a Series once (its dtype inferred over all the values, as from a
    stack of the ranks' columns), pandas' arrays of one type and dtype as their concatenation joins them; else as
    Series."""
    if parts and all(isinstance(a, np.ndarray) for a in parts) and len({a.dtype for a in parts}) == 1:
        v = np.concatenate(parts)
        return pd.Series(v if back is None else v[back], copy=False)
    if parts and len({type(a) for a in parts}) == 1 and len({a.dtype for a in parts}) == 1 and \
            hasattr(type(parts[0]), "_concat_same_type"):
        v = type(parts[0])._concat_same_type(parts)
        return pd.Series(v if back is None else v.take(back), copy=False)
    out = pd.concat([pd.Series(a, copy=False) for a in parts], ignore_index=True)
    return out if back is None else out.iloc[back].reset_index(drop=True)


def _rows_text(frames: list[tuple[int, pd.DataFrame]], parts: list[RankInputs], n_of: np.ndarray, pos: np.ndarray,
               cols: list[str]) -> pd.DataFrame:
    """The `cols` of the stacked rows at `pos` (in that order), read from the ranks' own frames: the dtypes a
    stack of every rank's frame would give them (each rank's frame takes part, empty where none of its rows)."""
    bounds = np.r_[0, np.cumsum(n_of)]
    order = np.argsort(pos, kind="stable")
    sp = pos[order]
    cut = np.searchsorted(sp, bounds)
    pieces: dict[str, list] = {c: [] for c in cols}
    for i, ((_, x), p) in enumerate(zip(frames, parts)):
        rows = p.at[sp[cut[i]:cut[i + 1]] - bounds[i]]
        for c in cols:  # the values only (a piece with its index costs 8 bytes a row more)
            pieces[c].append(_values(x, c)[rows])
    back = None
    if len(order) and not (np.diff(order) > 0).all():  # (the rows put back in `pos` order before the Series are
        back = np.empty(len(order), dtype=np.int64)    # made: no take of arrow strings)
        back[order] = np.arange(len(order))
    return pd.DataFrame({c: _joined(v, back) for c, v in pieces.items()})


@dataclass
class LateRank:
    rank: int
    last_in: int  # significant instances it reached last
    significant: int  # instances whose spread is significant
    cost_ms: float  # per step: how long the median peer waited for it, summed over the instances it was last in
    saving_ms: float  # per step: how much earlier those collectives would start had it arrived with the next latest
    worst_ms: float  # its largest lateness after the first rank
    worst_op: str
    worst_step: object
    first_rank: int  # the first to arrive at that instance


def late_ranks(arr: Arrivals, n_steps: int, min_abs_ms: float, min_share: float, step_ms: float,
               persistence: float) -> list[LateRank]:
    """Ranks that reach the collectives last: in at least `persistence` of the instances whose spread (last − first
    arrival) is at least `min_abs_ms` and `min_share` of the step, and costing the median peer at least as much per
    step."""
    inst = arr.instances
    floor = max(min_abs_ms, min_share * step_ms if step_ms == step_ms else 0.0)
    sig = inst[inst["spread_ms"] >= floor]
    if sig.empty:
        return []
    out = []
    n_steps = max(1, n_steps)
    for r, x in sig.groupby("last_rank"):
        if len(x) < persistence * len(sig):
            continue
        # and in `persistence` of the steps: a one-off stall (one step) is the stall rule's, not a late rank
        if x["step"].notna().any() and x["step"].nunique() < persistence * n_steps:
            continue
        cost = float(x["last_behind_median_ms"].sum()) / n_steps
        if cost < floor:
            continue
        w = x.loc[x["spread_ms"].idxmax()]
        out.append(LateRank(rank=int(r), last_in=len(x), significant=len(sig), cost_ms=cost,
                            saving_ms=float(x["last_margin_ms"].sum()) / n_steps,
                            worst_ms=float(w["spread_ms"]), worst_op=str(w["op"]), worst_step=w["step"],
                            first_rank=int(w["first_rank"])))
    return sorted(out, key=lambda x: -x.cost_ms)
