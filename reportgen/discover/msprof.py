"""CANN msprof raw output: PROF_*/device_* folders, one rank each (the rank from the device's info.json)."""

from __future__ import annotations

import re
from pathlib import Path

from reportgen.discover import peek
from reportgen.discover.fs import Fs
from reportgen.discover.runs import RankFiles, RunLayout
from reportgen.model import DataIssue


def prof_devices(fs: Fs, profs: list[Path]) -> list[tuple[int, Path]]:
    out = []
    for prof in profs:
        for dev in fs.dirs(prof):
            m = re.match(r"^device_(\d+)$", dev.name)
            if m:
                infos = [p for p in fs.files(dev) if p.name.startswith("info.json.")]
                rank = peek.msprof_rank(infos)
                out.append((rank if rank is not None else int(m.group(1)), dev))
    return out


def msprof_run(fs: Fs, parent: Path, profs: list[Path]) -> RunLayout:
    run = RunLayout(root=fs.root, base=parent, layout="msprof")
    for rank, dev in prof_devices(fs, profs):
        if rank in run.ranks:
            run.issues.append(DataIssue(run.rel(dev), f"a second msprof folder for rank {rank}; ignored", "warning"))
            continue
        rf = RankFiles(rank=rank, dir=dev)
        rf.add("msprof_device", dev)
        run.ranks[rank] = rf
    return run
