"""What the report could judge: per area of the analysis, whether the data behind it was read, for which ranks, and
from which files. A verdict is only as good as its coverage: "nothing to report" is said only when the areas the
rules need were read; otherwise the verdict names the checks that could not run and why.
"""

from __future__ import annotations

from reportgen.i18n import N_, lazy, text

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from reportgen.layouts import LAYOUTS

if TYPE_CHECKING:
    from reportgen.analysis import Analysis

READ, PARTIAL, ABSENT, UNSUPPORTED = "read", "partial", "absent", "unsupported"

# area -> (label, the rank's field that holds it: `RankData.holds` tells, without opening a sealed field)
AREAS: dict[str, tuple[str, str]] = {
    "step_trace": (N_("Step trace"), "step_trace"),
    "overlap": (N_("Overlap (computation / communication)"), "overlap"),
    "communication": (N_("Communication per operator"), "communication"),
    "links": (N_("Links (bandwidth per link)"), ""),  # cluster-level, from the communication files
    "operators": (N_("Operators"), "operators"),
    "memory": (N_("Memory"), "memory"),
    "data_pipeline": (N_("Data pipeline"), "dataprep"),
    "timeline": (N_("Timeline"), "timeline"),
}



@dataclass(frozen=True)
class Area:
    id: str
    label: str
    status: str  # read | partial | absent | unsupported
    ranks: int  # ranks with data
    of: int  # ranks in the run
    files: list[str] = field(default_factory=list)  # a few of the files behind it
    note: Any = ""  # text or an i18n.Msg, rendered in the report's language by to_dict

    def to_dict(self) -> dict:
        return {"status": self.status, "label": self.label, "ranks": self.ranks, "of": self.of,
                "files": self.files, "note": text(self.note)}


@dataclass(frozen=True)
class Coverage:
    areas: dict[str, Area]
    gaps: list  # the checks that could not run, with why: plain sentences (or i18n.Msg, rendered by to_dict)

    @property
    def complete(self) -> bool:
        """The areas the rules need were read: "nothing to report" may be said."""
        return not self.gaps

    def to_dict(self) -> dict:
        return {"areas": {k: a.to_dict() for k, a in self.areas.items()}, "complete": self.complete,
                "gaps": [text(g) for g in self.gaps]}


def _sources(obj) -> list[str]:
    if obj is None:
        return []
    src = getattr(obj, "source", None) or getattr(obj, "sources", None)
    if isinstance(src, dict):
        return [str(v) for v in src.values() if v]
    if isinstance(src, (list, tuple)):
        return [str(v) for v in src if v]
    return [str(src)] if src else []


def _status(n: int, total: int) -> str:
    return READ if total and n >= total else (PARTIAL if n else ABSENT)


def world_size(run) -> int:
    """The job's size as the ranks' metadata gives it (Kineto's distributedInfo world_size, the profiler's rank
    size), at least the ranks read."""
    return max(len(run.rank_ids), int(run.info.rank_size or 0))


def coverage(a: "Analysis") -> Coverage:
    run = a.run
    ids = run.rank_ids
    total = len(ids)
    world = world_size(run)
    unsupported = set(LAYOUTS[run.info.layout].cannot_show) if run.info.layout in LAYOUTS else set()  # never in its files
    areas: dict[str, Area] = {}
    for key, (label, name) in AREAS.items():
        if key == "links":
            n_links = len(a.comm.links) if a.comm.has_data else 0
            reporters = set(int(r) for r in a.comm.per_rank.index) if a.comm.has_data and n_links else set()
            status = READ if n_links and len(reporters) >= total else (PARTIAL if n_links else ABSENT)
            if total == 1 and world > 1 and not n_links:
                status, note = UNSUPPORTED, lazy("one rank of {world} profiled alone: the links between ranks need "
                                                 "the other ranks' data", world=world)
            elif total == 1 and not n_links:
                status, note = UNSUPPORTED, lazy("a single device has no links to other devices")
            elif key in unsupported and not n_links:
                status, note = UNSUPPORTED, lazy("{layout} does not record links", layout=lazy(run.info.layout_label))
            else:
                note = lazy("{n} link(s)", n=n_links) if n_links else ""
            areas[key] = Area(key, label, status, len(reporters), total, [], note)
            continue
        files: list[str] = []
        n = 0
        for r in ids:
            d = run.ranks[r]
            if not d.holds(name):
                continue
            n += 1
            if len(files) < 3:  # (the first ranks' objects only are read)
                files += [f for f in _sources(getattr(d, name)) if f not in files][: 3 - len(files)]
        status = _status(n, total)
        note = ""
        if key in unsupported and not n:
            status, note = UNSUPPORTED, lazy("{layout} does not carry it", layout=lazy(run.info.layout_label))
        if key == "step_trace" and a.steps.kind == "host":
            status = PARTIAL if n else status
            note = lazy("only step totals (ProfilerStep ranges): no phases inside the step")
        if key == "communication" and total == 1 and not n and world > 1:
            note = lazy("no collective found for this rank of {world}", world=world)
        elif key == "communication" and total == 1 and not n:
            status, note = UNSUPPORTED, lazy("a single device does not communicate")
        areas[key] = Area(key, label, status, n, total, files, note)
    return Coverage(areas, _gaps(a, areas))


def _gaps(a: "Analysis", areas: dict[str, Area]) -> list[str]:
    total = len(a.run.rank_ids)
    gaps = []
    st = areas["step_trace"]
    if st.status in (ABSENT, UNSUPPORTED):
        gaps.append("no step trace was found, so slow ranks, the step phases, the step interval and the pipeline "
                    "checks could not run")
    elif a.steps.kind == "host":
        gaps.append("only step totals were found: slow ranks inside a step (computation against communication "
                    "and waiting) cannot be seen without operator or communication data")
    elif st.status == PARTIAL:
        gaps.append(f"{st.of - st.ranks} of {st.of} ranks have no step trace and were not judged")
    world = world_size(a.run)
    if total == 1 and world > 1:
        gaps.append(lazy("one rank of {world} was profiled alone: late arrival at collectives, slow ranks and slow "
                         "links need the other ranks' traces, and the waiting inside its communication cannot be "
                         "told apart from the transfer; its own computation, communication and overlap were judged",
                         world=world))
    if total > 1:
        comm, ovl = areas["communication"], areas["overlap"]
        if comm.status in (ABSENT, UNSUPPORTED) and ovl.status in (ABSENT, UNSUPPORTED):
            gaps.append("no communication or overlap data was found, so late arrival at collectives, slow links "
                        "and communication-bound steps could not be checked")
        elif comm.status == PARTIAL:
            gaps.append(f"{comm.of - comm.ranks} of {comm.of} ranks have no communication data")
    return gaps
