"""Synthetic communication files: Ascend communication(.matrix).json and MindInsight hccl_raw."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from reportgen.loaders.groups import double_hash

if TYPE_CHECKING:
    from reportgen.synth import Plan, StepModel

HCCS_GBPS = 19.0
RDMA_GBPS = 12.0
LOCAL_GBPS = 320.0
DP_GRAD_MB = 160.0  # gradient bytes all-reduced per step by each data-parallel group (2 operators)
TP_MB = 64.0
PP_MB = 16.777216
IDLE_MS = 0.02  # idle gap inside each operator


def _link_bw(src: int, dst: int, per_host: int, plan: "Plan") -> tuple[str, float]:
    same = src // per_host == dst // per_host
    tr, bw = ("HCCS", HCCS_GBPS) if same else ("RDMA", RDMA_GBPS)
    bw *= 1 + 0.01 * (((src * 7 + dst * 13) % 11) - 5) / 5  # steady per-link differences of about 1 %
    if tr == "RDMA" and plan.slow_nic:
        bw *= min(plan.nic_factor(src, per_host), plan.nic_factor(dst, per_host))
    return tr, bw * plan.slow_link.get((src, dst), 1.0)


def _base_ops(r: int, groups: dict, s: int, per_host: int, plan: "Plan") -> list[dict]:
    """The communication operators of rank r in step s with their local links (ring algorithms), at nominal
    speed: `time` is the transfer over the rank's own link, `ring_time` the operator's duration (a ring is as
    slow as its slowest hop). With `plan.comm_ops_per_step` (the realistic size), the collectives of the
    largest non-data-parallel groups (tensor parallel; else data parallel) are split into that many operators
    per step (one per layer, as Megatron issues them), moving the same bytes in total."""
    ops = []
    mine = [(gid, g) for gid, g in sorted(groups.items(), key=lambda kv: int(kv[0].rsplit("_", 1)[1]))
            if len(g["global_ranks"]) >= 2 and g["group_name"] != "default_group" and r in g["global_ranks"]]
    kinds_of = {gid: _kinds(g) for gid, g in mine}
    reps = _repeats(kinds_of, mine, getattr(plan, "comm_ops_per_step", 0))
    for gid, g in mine:
        members = g["global_ranks"]
        n = len(members)
        loc = members.index(r)
        peer = members[(loc + 1) % n]
        name = g["group_name"]
        # a ring is as slow as its slowest link: every member waits for the slowest hop
        ring_bw = _ring_bw(tuple(members), per_host, plan)
        tr, bw = _link_bw(r, peer, per_host, plan)
        k = 0
        for j, (opname, size) in enumerate(kinds_of[gid]):
            rep = reps.get((gid, j), 1)
            for _ in range(rep):
                part = size / rep
                ops.append({"name": f"hcom_{opname}__{gid.rsplit('_', 1)[1]}_{s}_{k}@{double_hash(gid)}",
                            "short": opname.lower(), "group": str(double_hash(gid)), "local": loc,
                            "peer_local": (loc + 1) % n, "transport": tr, "size": part, "time": part / bw,
                            "ring_time": part / ring_bw, "p2p": name == "pp", "n": n, "kind": name,
                            "members": members, "bw": bw, "per_host": per_host})
                k += 1
    return ops


def _kinds(g: dict) -> list[tuple[str, float]]:
    n = len(g["global_ranks"])
    name = g["group_name"]
    if name == "dp":
        return [("allReduce", DP_GRAD_MB / 2 * 2 * (n - 1) / n)] * 2
    if name == "tp":
        return [("allGather", TP_MB * (n - 1) / n), ("reduceScatter", TP_MB * (n - 1) / n)]
    return [("batchSendRecv", PP_MB)]


def _repeats(kinds_of: dict, mine: list, target: int) -> dict:
    """(group id, operator) -> how many operators per step carry it, so that the rank has `target` in total."""
    have = sum(len(k) for k in kinds_of.values())
    if not target or target <= have:
        return {}
    split = [gid for gid, g in mine if g["group_name"] == "tp"] or [gid for gid, g in mine if g["group_name"] == "dp"]
    slots = [(gid, j) for gid in split for j in range(len(kinds_of[gid]))]
    if not slots:
        return {}
    extra = target - have
    out = {}
    for i, slot in enumerate(slots):
        out[slot] = 1 + extra // len(slots) + (1 if i < extra % len(slots) else 0)
    return out


_RING_CACHE: dict = {}


def _ring_bw(members: tuple, per_host: int, plan: "Plan") -> float:
    key = (members, per_host, tuple(sorted(plan.slow_link.items())),
           tuple(sorted(getattr(plan, "slow_nic", {}).items())))
    bw = _RING_CACHE.get(key)
    if bw is None:
        n = len(members)
        bw = min(_link_bw(members[i], members[(i + 1) % n], per_host, plan)[1] for i in range(n))
        if len(_RING_CACHE) > 100_000:
            _RING_CACHE.clear()
        _RING_CACHE[key] = bw
    return bw


def nominal_transit(ranks: int, groups: dict, per_host: int, plan: "Plan") -> np.ndarray:
    """Per rank, the time its communication operators of one step take at nominal speed (Σ ring times, ms).

    The step model (`synth.simulate`) takes this as the rank's transit time, so the step trace and the
    communication files describe the same time: a slow link lengthens the steps of its ring, too."""
    return np.array([sum(o["ring_time"] for o in _base_ops(r, groups, 0, per_host, plan)) for r in range(ranks)])


def _ops_for_rank(r: int, groups: dict, m: "StepModel", s: int, per_host: int, plan: "Plan") -> list[dict]:
    """The communication operators of rank r in step s, scaled to the step model.

    Identities with the step trace (per rank and step): Σ ring_time = transit = overlapped / 0.35;
    Σ (time + wait + idle) = transit + wait + bubble = the step trace's Communication (overlapped + not
    overlapped); the pipeline bubble is time spent waiting in the send/receive operators (MindInsight's
    hccl_raw has no such operator: its step trace shows the bubble in a Receive column of its own)."""
    ops = _base_ops(r, groups, s, per_host, plan)
    if not ops:
        return ops
    hidden = getattr(m, "hidden", 0.35)
    transit_total = float(m.overlapped[r, s]) / 0.35 if hidden == 0.35 else float(m.transit[r, s])
    nominal = sum(o["ring_time"] for o in ops)
    f = transit_total / nominal if nominal > 0 else 1.0
    for o in ops:  # the step's own speed (the model's per-step noise), same for every operator of the step
        o["time"] *= f
        o["ring_time"] *= f
    bubble = float(m.bubble[r, s])
    wait_total = max(0.0, float(m.comm_nov[r, s]) - bubble - (0.65 if hidden == 0.35 else 1 - hidden) * transit_total)
    # the rank's wait goes to its data-parallel collectives (the last one of the step takes most of it)
    coll = [o for o in ops if not o["p2p"]] or ops
    for i, o in enumerate(coll):
        o["wait"] = wait_total * (0.7 if i == len(coll) - 1 else 0.3 / max(1, len(coll) - 1))
        if len(coll) == 1:
            o["wait"] = wait_total
    p2p = [o for o in ops if o["p2p"]]
    for o in p2p:  # a later stage waits for its activations in the receive
        o["wait"] = o.get("wait", 0.0) + bubble / len(p2p)
    for o in ops:
        o.setdefault("wait", 0.0)
        o["wait"] += max(0.0, o["ring_time"] - o["time"])  # a fast link waits for the slow hop of its ring
        o["idle"] = IDLE_MS
        o["wait"] = max(0.0, o["wait"] - IDLE_MS)  # the idle gap is part of the time the step trace counts
        o["elapse"] = o["time"] + o["wait"] + o["idle"]
    return ops


def _start_us(o: dict, s: int) -> float:
    """An operator's start on its rank: every member of a synchronous collective leaves it together (the same end
    on every rank, from the step and the operator's place in its group), so it started `elapse` before that end:
    the last rank to arrive starts latest and waits least."""
    base, _, _ = o["name"].partition("@")
    gid, _, k = base.rsplit("__", 1)[1].partition("_")
    slot = int(gid) * 64 + int(k.rsplit("_", 1)[1])
    end = 1.7e15 + s * 3e10 + (slot + 1) * 1e6  # 1 s apart: a rank's operators never overlap
    return round(end - round(o["elapse"], 6) * 1e3, 3)


def _op_info(o: dict, ts_us: float) -> dict:
    tr = o["transport"]
    band = {t: {"Transit Time(ms)": 0, "Transit Size(MB)": 0, "Bandwidth(GB/s)": 0, "Large Packet Ratio": 0,
                "Size Distribution": {}} for t in ("RDMA", "HCCS", "PCIE", "SDMA", "SIO")}
    entry = {"Transit Time(ms)": round(o["time"], 6), "Transit Size(MB)": round(o["size"], 6),
             "Bandwidth(GB/s)": round(o["size"] / o["time"], 4), "Large Packet Ratio": 1.0,
             "Size Distribution": {str(round(o["size"], 6)): [1, round(o["time"], 6)]}}
    band[tr] = entry
    if tr != "RDMA":
        band["SDMA"] = dict(entry)
    w, t = o["wait"], o["time"]
    return {"Communication Time Info": {
        "Start Timestamp(us)": ts_us, "Elapse Time(ms)": round(o["elapse"], 6), "Transit Time(ms)": round(t, 6),
        "Wait Time(ms)": round(w, 6), "Synchronization Time(ms)": round(w * 0.9, 6),
        "Idle Time(ms)": round(o["idle"], 6), "Wait Time Ratio": round(w / (w + t), 4) if w + t else 0,
        "Synchronization Time Ratio": round(w * 0.9 / (w * 0.9 + t), 4) if w + t else 0},
        "Communication Bandwidth Info": band}


MATRIX_TAGS = ("top1", "middle", "bottom1", "bottom2", "bottom3")


def _mesh_links(o: dict, plan: "Plan") -> dict:
    """A full-mesh collective inside a server: the rank sends 1/(n-1) of the bytes to every other member over that
    member's link (its own bandwidth, `_link_bw`: a slow link stays one link), at the step's speed."""
    n, loc, members = o["n"], o["local"], o["members"]
    speed = o["time"] * o["bw"] / o["size"]  # the step model's factor on the nominal transfer time
    size = o["size"] / (n - 1)
    out = {}
    for p in range(n):
        if p == loc:
            continue
        tr, bw = _link_bw(members[loc], members[p], o["per_host"], plan)
        time = size / bw * speed
        out[f"{loc}-{p}"] = {"Transport Type": tr, "Transit Size(MB)": round(size, 6),
                             "Transit Time(ms)": round(time, 6), "Bandwidth(GB/s)": round(size / time, 4)}
    return out


def write_ascend_comm(out: Path, r: int, m: "StepModel", groups: dict, per_host: int, first_step: int,
                      steps: int, plan: "Plan") -> None:
    comm: dict = {}
    matrix: dict = {}
    for s in range(steps):
        key = f"step{first_step + s}"
        ops = _ops_for_rank(r, groups, m, s, per_host, plan)
        kinds: dict = {"collective": {}, "p2p": {}}
        mkinds: dict = {"collective": {}, "p2p": {}}
        for i, o in enumerate(ops):
            kind = "p2p" if o["p2p"] else "collective"
            kinds[kind][o["name"]] = _op_info(o, _start_us(o, s))
            link = {"Transport Type": o["transport"], "Transit Size(MB)": round(o["size"], 6),
                    "Transit Time(ms)": round(o["time"], 6), "Bandwidth(GB/s)": round(o["size"] / o["time"], 4)}
            self_link = {"Transport Type": "LOCAL", "Transit Size(MB)": round(o["size"], 6),
                         "Transit Time(ms)": round(o["size"] / LOCAL_GBPS, 6), "Bandwidth(GB/s)": LOCAL_GBPS}
            links = {f"{o['local']}-{o['peer_local']}": link, f"{o['local']}-{o['local']}": self_link}
            if getattr(plan, "mesh", False) and o["kind"] == "tp" and o["n"] > 2:
                links = {f"{o['local']}-{o['local']}": self_link, **_mesh_links(o, plan)}
            base = o["name"].split("@")[0]
            tot = mkinds[kind].setdefault(f"{o['short']}-total@{o['group']}", {})
            for lk, li in links.items():
                cur = tot.setdefault(lk, {"Transport Type": li["Transport Type"], "Transit Size(MB)": 0.0,
                                          "Transit Time(ms)": 0.0, "Bandwidth(GB/s)": 0.0})
                cur["Transit Size(MB)"] = round(cur["Transit Size(MB)"] + li["Transit Size(MB)"], 6)
                cur["Transit Time(ms)"] = round(cur["Transit Time(ms)"] + li["Transit Time(ms)"], 6)
                cur["Bandwidth(GB/s)"] = round(cur["Transit Size(MB)"] / cur["Transit Time(ms)"], 4)
            tag = "top1" if f"{o['short']}-top1@{o['group']}" not in mkinds[kind] else "bottom1"
            if getattr(plan, "mesh", False):  # torch_npu's full set: top1, middle, bottom1-3 (then only the total)
                have = sum(1 for t in MATRIX_TAGS if f"{o['short']}-{t}@{o['group']}" in mkinds[kind])
                if have == len(MATRIX_TAGS):
                    continue
                tag = MATRIX_TAGS[have]
            mkinds[kind][f"{o['short']}-{tag}@{o['group']}"] = {lk: {**li, "Op Name": base}
                                                               for lk, li in links.items()}
        comm[key] = kinds
        matrix[key] = mkinds
    text = json.dumps(comm)
    mtext = json.dumps(matrix)
    if r in plan.corrupt_comm:
        text = text[: len(text) // 2]
        mtext = mtext[: len(mtext) // 2]
    (out / "communication.json").write_text(text, encoding="utf-8")
    (out / "communication_matrix.json").write_text(mtext, encoding="utf-8")


def mindinsight_groups(ranks: int, stages: int) -> dict:
    """The groups of MindInsight's hccl_raw files: one data-parallel group per stage."""
    per_stage = ranks // stages
    return {f"group_name_{st + 1}": {"group_name": "dp", "global_ranks": list(range(st * per_stage, (st + 1) * per_stage))}
            for st in range(stages)}


def write_hccl_raw(d: Path, r: int, m: "StepModel", ranks: int, stages: int, first_step: int, steps: int,
                   plan: "Plan", per_host: int = 8) -> None:
    """MindInsight hccl_raw_{r}.csv, HcclParser generation (ms, KB, KB/s), one data-parallel group per stage."""
    groups = {k: g for k, g in mindinsight_groups(ranks, stages).items() if r in g["global_ranks"]}
    stage = r // (ranks // stages)
    rows = []
    vecs = []
    for s in range(steps):
        ops = _ops_for_rank(r, groups, m, s, per_host, plan)
        op_cost = {}
        link_info: dict = {}
        comm = wait = 0.0
        for k, o in enumerate(ops):
            size_kb = o["size"] * 1e3
            # MindInsight names links inside a server SDMA and between servers RDMA
            tr = "RDMA" if o["transport"] == "RDMA" else "SDMA"
            lk = {f"{o['local']}-{o['peer_local']}": {tr: [o["time"], size_kb, size_kb / (o["time"] / 1e3)]},
                  f"{o['local']}-{o['local']}": {"SDMA": [o["size"] / LOCAL_GBPS, size_kb,
                                                          size_kb / (o["size"] / LOCAL_GBPS / 1e3)]}}
            c = o["time"]  # the transfer; the LOCAL self link overlaps it (communication_cost + wait = elapse)
            name = f"stream_{12 + k}_{k}_AllReduce-op{100 + k + 10 * stage}"
            op_cost[name] = [str(first_step + s), c, o["wait"] + o["idle"], lk]
            comm += c
            wait += o["wait"] + o["idle"]
            for key, v in lk.items():
                for t, vals in v.items():
                    cur = link_info.setdefault(key, {}).setdefault(t, [0.0, 0.0, 0.0])
                    link_info[key][t] = [a + b for a, b in zip(cur, vals)]
        rows.append([str(first_step + s), comm, wait, link_info, op_cost])
        vecs.append((comm, wait, link_info, op_cost))
    if rows:
        n = len(vecs)
        avg_links = {k: {t: list(np.mean([v[2][k][t] for v in vecs], axis=0)) for t in vecs[0][2][k]}
                     for k in vecs[0][2]}
        avg_ops = {name: ["-", float(np.mean([v[3][name][1] for v in vecs])),
                          float(np.mean([v[3][name][2] for v in vecs])),
                          {k: {t: list(np.mean([v[3][name][3][k][t] for v in vecs], axis=0))
                               for t in vecs[0][3][name][3][k]}
                           for k in vecs[0][3][name][3]}] for name in vecs[0][3]}
        rows.append(["-", sum(v[0] for v in vecs) / n, sum(v[1] for v in vecs) / n, avg_links, avg_ops])
    p = d / f"hccl_raw_{r}.csv"
    with open(p, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["step_num", "communication_cost", "wait_cost", "link_info", "communication_operator_cost"])
        for row in rows:
            w.writerow([row[0], row[1], row[2], json.dumps(row[3]), json.dumps(row[4])])
    if r in plan.corrupt_comm:
        text = p.read_text(encoding="utf-8")
        p.write_text(text[: len(text) // 2], encoding="utf-8")
