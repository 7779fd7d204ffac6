"""Host step markers (`ProfilerStep#N`) from Chrome-trace files, streamed so big traces stay cheap.

Used for PyTorch Kineto traces and as a fallback for torch_npu runs without step_trace_time.csv.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Optional

import pandas as pd

from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.traces import trace_cut, TRACE_ERRORS, trace_events
from reportgen.numbers import to_float, to_int
from reportgen.model import HOST_PHASES, StepTrace

STEP_RE = re.compile(r"^ProfilerStep#(\d+)$")


def load_host_steps(path: Path, log: IssueLog) -> Optional[StepTrace]:
    """Stream a trace (a JSON list, or an object with `traceEvents`) and keep the ProfilerStep slices."""
    steps: dict[int, float] = {}
    try:
        for e in trace_events(path):
            name = e.get("name")
            if not name or not name.startswith("ProfilerStep#") or e.get("ph") != "X":
                continue
            m = STEP_RE.match(name)
            dur = to_float(e.get("dur"))
            if m and not math.isnan(dur) and to_int(m.group(1)) is not None:
                steps[to_int(m.group(1))] = dur / 1e3
    except TRACE_ERRORS as e:
        trace_cut(log, path, e, f"{len(steps)} step marker(s) read before the error")
    if not steps:
        return None
    df = pd.DataFrame({"step": pd.array(sorted(steps), dtype="Int64"),
                       "total": [steps[k] for k in sorted(steps)]})
    return StepTrace(kind="host", steps=df[["step", *HOST_PHASES]], source=log.rel(path))
