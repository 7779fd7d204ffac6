"""profiler_info_{rank}.json, profiler_metadata.json and msprof info.json: facts about a rank."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from reportgen.dataquality import dq
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.jsonfile import check_json_numbers, read_json
from reportgen.loaders.schema import Door
from reportgen.model import RankInfo, shared_ranks
from reportgen.numbers import to_int as _int




def load_profiler_info(path: Path, info: RankInfo, log: IssueLog) -> None:
    """Fill `info` from a profiler_info file (MindSpore legacy or torch_npu/MindSpore 2.3+)."""
    data = read_json(path, log)
    if data is None:
        return
    if not isinstance(data, dict):
        log.add(path, dq("metadata.expected-json-object"), "error")
        return
    check_json_numbers(path, log, data, ("rank_id", "rank_size", "stage_num"))
    rid = _int(data.get("rank_id"))
    if rid is not None and rid != info.rank and rid >= 0:
        log.add(path, dq("metadata.rank-id-inside-file", rid=rid, info=info.rank), "warning")
    for key, label in (("ms_version", "MindSpore"), ("torch_npu_version", "torch_npu"),
                       ("cann_version", "CANN"), ("torch_version", "PyTorch")):
        if data.get(key):
            info.versions[label] = str(data[key])
    if "ms_version" in data or "context_mode" in data:
        info.framework = "MindSpore"
    elif "torch_npu_version" in data or path.parent.name.endswith("_ascend_pt"):
        info.framework = "torch_npu"
    elif path.parent.name.endswith("_ascend_ms"):
        info.framework = "MindSpore"
    if data.get("parallel_mode"):
        info.parallel_mode = str(data["parallel_mode"])
    info.stage_num = _int(data.get("stage_num")) or info.stage_num
    info.rank_size = _int(data.get("rank_size")) or info.rank_size
    if data.get("context_mode"):
        info.versions.setdefault("context mode", str(data["context_mode"]))
    cfg = data.get("config")
    if isinstance(cfg, dict):
        exp = cfg.get("experimental_config") or {}
        if isinstance(exp, dict):
            lvl = exp.get("_profiler_level") or exp.get("profiler_level")
            if lvl:
                info.profiler_level = str(lvl)
            et = exp.get("_export_type") or exp.get("export_type")
            if et:
                info.export_type = ",".join(et) if isinstance(et, list) else str(et)


def _whole(values: list) -> bool:
    """Every value a plain int (not a bool, not a float): `all(type(x) is int for x in values)` at C speed (the
    world group of 4,096 ranks in every rank's file: 0.4 ms a rank as a generator)."""
    return set(map(type, values)) <= {int}


def load_profiler_metadata(path: Path, info: RankInfo, log: IssueLog) -> None:
    """Read distributed_args and parallel_group_info (torch_npu / MindSpore 2.3+)."""
    data = read_json(path, log)
    if data is None:
        return
    if not isinstance(data, dict):
        log.add(path, dq("metadata.expected-json-object"), "error")
        return
    door = Door(log, path)
    args = data.get("distributed_args")
    if isinstance(args, dict):
        for k in ("world_size", "rank"):
            if k in args:
                door.field(args, k, "distributed_args", "profiler_metadata.json")
        info.distributed_args = args
        ws = _int(args.get("world_size"))
        if ws:
            info.rank_size = info.rank_size or ws
    groups = data.get("parallel_group_info")
    if isinstance(groups, str):  # some writers store it as a JSON string
        try:
            groups = json.loads(groups)
        except ValueError:
            log.add(path, dq("metadata.parallel-group-info-not"))
            groups = None
    if isinstance(groups, dict):
        clean = {}
        for gid, g in groups.items():
            if isinstance(g, dict) and isinstance(g.get("global_ranks"), list):
                ranks = g["global_ranks"]
                where = f"parallel_group_info {str(gid)[:40]!r}"
                whole = _whole(ranks)
                if not (whole and (not ranks or min(ranks) >= 0)):  # the common case: at C speed
                    ids = [_int(x) if not isinstance(x, bool) else None for x in ranks]
                    bad = [x for x, i in zip(ranks, ids) if i is None or i < 0]
                    if bad:
                        door.note_many(dq("metadata.global-ranks-invalid"),
                                       len(bad), f"{where}: {str(bad[0])[:40]!r}")
                        ranks = [i for i in ids if i is not None and i >= 0]
                        whole = _whole(ranks)
                if g.get("group_rank") is not None:
                    door.field(g, "group_rank", where, "profiler_metadata.json")
                if not whole:  # the common case, checked fast (once)
                    ranks = [r for r in (_int(x) for x in ranks) if r is not None]
                clean[str(gid)] = {"group_name": str(g.get("group_name", "")), "global_ranks": shared_ranks(ranks),
                                  "group_rank": _int(g.get("group_rank"))}
        info.parallel_groups = clean
    door.close()


def load_msprof_info(device_dir: Path, info: RankInfo, log: IssueLog) -> None:
    """Host and device facts from an msprof `info.json.N`."""
    for p in sorted(device_dir.glob("info.json.*")):
        data = read_json(p, log)
        if not isinstance(data, dict):
            continue
        if data.get("hostname"):
            info.host = info.host or str(data["hostname"])
        dev = data.get("DeviceInfo")
        if isinstance(dev, list) and dev and isinstance(dev[0], dict):
            d = _int(dev[0].get("id"))
            if d is not None:
                info.device = d
        if data.get("version"):
            info.versions.setdefault("msprof", str(data["version"]))
        _chip(data, info)
        break


# msprof's chip id (info.json `platform_version`, msprof's ChipId enum) -> chip family; only the ids whose family is
# certain: 1 = CHIP_V2_1_0 (Ascend 910), 5 = CHIP_V4_1_0 (Ascend 910B series).
PLATFORM_CHIPS = {"1": "Ascend910", "5": "Ascend910B"}


def load_chip_info(rank_dir: Path, info: RankInfo, log: IssueLog) -> None:
    """torch_npu / MindSpore 2.3+ output: the chip facts of the first `PROF_*/device_*/info.json.N` in the rank's
    folder (the rest of the rank's facts come from its own files)."""
    for p in sorted(rank_dir.glob("PROF_*/device_*/info.json.*"))[:1]:
        data = read_json(p, log)
        if isinstance(data, dict):
            _chip(data, info)


def _chip(data: dict, info: RankInfo) -> None:
    """The chip family and the AI Core count and clock (the fp16 peak: cores x MHz x 4096 x 2) from info.json."""
    chip = PLATFORM_CHIPS.get(str(data.get("platform_version", "")).strip())
    if chip and not info.device_model:
        info.device_model = chip
    dev = data.get("DeviceInfo")
    if isinstance(dev, list) and dev and isinstance(dev[0], dict):
        cores, mhz = _num(dev[0].get("ai_core_num")), _num(dev[0].get("aic_frequency"))
        if cores and mhz and 0 < cores < 10_000 and 0 < mhz < 100_000:
            info.device_compute = {"ai_core_num": int(cores), "aic_frequency_mhz": mhz,
                                   "platform_version": str(data.get("platform_version", ""))}


def _num(v) -> Optional[float]:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if f == f and f not in (float("inf"), float("-inf")) else None
