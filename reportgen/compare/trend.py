"""`msreport trend`: step time, phases and findings over many summaries (a CI history), in date order."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

from reportgen.compare import read_summary
from reportgen.compare.model import (PHASE_LABELS, SEVERITY_RANK, _cluster_means, _finding_key, _spread, _subject,
                                     english, phase_label)
from reportgen.i18n import Msg, lazy
from reportgen.errors import ReportError

SCHEMA = "msreport.trend/1"


@dataclass
class TrendRun:
    index: int
    label: str
    source: str
    generated_at: Optional[str]
    date_source: str  # "summary" (generated_at) | "file time"
    ranks: int
    step_ms: Optional[float]
    step_noise_ms: Optional[float]
    phases: dict[str, float]
    findings: list[str]  # keys of the warning / critical findings


@dataclass
class TrendFinding:
    key: str
    id: str
    severity: str  # the worst severity seen
    subject: Msg
    title: str
    title_en: str
    present: list[bool]
    first: int  # run index
    last: int


@dataclass
class Trend:
    runs: list[TrendRun]
    phases: list[str]
    findings: list[TrendFinding]
    notes: list[Msg] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"schema": SCHEMA, "runs": [asdict(r) for r in self.runs],
                "phases": [{"key": k, "label": phase_label(k)} for k in self.phases],
                "findings": [english(asdict(f)) for f in self.findings], "notes": english(self.notes)}


def _summary_path(p: Path) -> Path:
    p = Path(p)
    if p.is_dir():
        if (p / "summary.json").is_file():
            return p / "summary.json"
        raise ReportError(f"{p} is a folder without summary.json; trend reads summaries (run msreport on it first)")
    if not p.exists():
        raise ReportError(f"{p} does not exist")
    return p


def _when(summary: dict, path: Path) -> tuple[datetime, str]:
    ts = summary.get("generated_at")
    if ts:
        try:
            d = datetime.fromisoformat(str(ts).replace("Z", "+00:00"))
            return (d if d.tzinfo else d.replace(tzinfo=timezone.utc)), "summary"
        except ValueError:
            pass
    return datetime.fromtimestamp(os.stat(path).st_mtime, tz=timezone.utc), "file time"


def _label(path: Path) -> str:
    parts = [x for x in path.parts if x not in ("summary.json",)]
    if path.name == "summary.json" and len(parts) >= 1:
        return parts[-1]
    return path.name.removesuffix(".json").removesuffix(".summary")


def build_trend(paths: list[Path]) -> Trend:
    if not paths:
        raise ReportError("give at least one summary.json")
    loaded = []
    for n, p in enumerate(paths):
        sp = _summary_path(p)
        s = read_summary(sp)
        when, src = _when(s, sp)
        loaded.append((when, n, sp, s, src, str(p)))
    loaded.sort(key=lambda t: (t[0], t[1]))
    notes = []
    if any(t[4] != "summary" for t in loaded):
        notes.append(lazy("some summaries carry no generated_at (written before msreport added it); their file "
                          "modification time orders them"))
    runs, found, phase_keys = [], {}, set()
    for i, (when, _, sp, s, src, given) in enumerate(loaded):
        means = _cluster_means(s)
        phases = {k: v for k, v in means.items() if k != "total_ms"}
        phase_keys |= set(phases)
        keys = []
        for f in s.get("findings") or []:
            if SEVERITY_RANK.get(f.get("severity"), 0) < 1:
                continue
            k = "|".join(str(x) for x in _finding_key(f))
            keys.append(k)
            tf = found.get(k)
            if tf is None:
                found[k] = tf = TrendFinding(k, f.get("id", ""), f.get("severity", ""), _subject(f), f.get("title", ""),
                                             f.get("title_en") or f.get("title", ""), [False] * len(loaded), i, i)
            if SEVERITY_RANK.get(f.get("severity"), 0) > SEVERITY_RANK.get(tf.severity, 0):
                tf.severity = f["severity"]
            tf.present[i] = True
            tf.last = i
        runs.append(TrendRun(i, _label(sp), given, s.get("generated_at") or when.isoformat(timespec="seconds"),
                             src, len((s.get("run") or {}).get("ranks") or []), means.get("total_ms"),
                             ((_spread(s).get("cluster") or {}).get("total_ms")), phases, keys))
    if len({r.ranks for r in runs}) > 1:
        notes.append(lazy("the runs have different rank counts: {counts}",
                          counts=", ".join(f"{r.label}: {r.ranks}" for r in runs)))
    order = list(PHASE_LABELS)
    phases = sorted(phase_keys, key=lambda k: (order.index(k) if k in order else 99, k))
    findings = sorted(found.values(), key=lambda f: (f.first, -SEVERITY_RANK.get(f.severity, 0), f.id))
    return Trend(runs, phases, findings, notes)
