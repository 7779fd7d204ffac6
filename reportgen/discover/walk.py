"""One bounded walk over the user's folder: each folder is offered to every layout (`layouts.Layout.claim_folder`,
`claim_files`, in the registry's order), and what they claim is collected for their `detect`. Our own earlier
output (`.msreport`), hidden folders and anything deeper than MAX_DEPTH are not entered; a folder reached twice
(a bind mount looping back) is read once."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Protocol

from reportgen.discover.fs import Fs

MAX_DEPTH = 6


class Claimer(Protocol):
    """What the walk asks of a layout (`reportgen.layouts.base.Layout`)."""

    name: str

    def claim_folder(self, d: Path, names: set[str], dirnames: list[str]) -> bool:
        """True: `d` is this layout's folder, read as a whole (the walk does not enter it)."""

    def claim_files(self, d: Path, files: list[Path]) -> list[Path]:
        """The files of `d` (a folder nobody claimed) that are this layout's; the walk goes on below `d`."""


@dataclass
class Scan:
    """What the layouts claimed, in walk order: `folders[layout]` and `files[layout][folder]`."""

    folders: dict[str, list[Path]] = field(default_factory=dict)
    files: dict[str, dict[Path, list[Path]]] = field(default_factory=dict)


def walk(fs: Fs, claimers: Iterable[Claimer]) -> Scan:
    claimers = list(claimers)
    scan = Scan()
    seen: set[tuple[int, int]] = set()
    stack: list[tuple[Path, int]] = [(fs.root, 0)]
    while stack:
        d, depth = stack.pop()
        try:
            st = os.stat(d)
            key = (st.st_dev, st.st_ino)
        except OSError:
            continue
        if key in seen:  # a bind mount looping back; symbolic links are never followed
            fs.note(d, "folder seen twice (a mount looping back into the run); read once", "info")
            continue
        seen.add(key)
        files, dirs = fs.listdir(d)
        names = {p.name for p in files}
        if d != fs.root and ".msreport" in names:
            continue  # our own earlier output
        dirnames = [p.name for p in dirs]
        owner = next((c for c in claimers if c.claim_folder(d, names, dirnames)), None)
        if owner is not None:
            scan.folders.setdefault(owner.name, []).append(d)
            continue
        for c in claimers:
            got = c.claim_files(d, files)
            if got:
                scan.files.setdefault(c.name, {})[d] = got
        if depth < MAX_DEPTH:
            stack.extend((p, depth + 1) for p in reversed(dirs) if not p.name.startswith("."))
    return scan
