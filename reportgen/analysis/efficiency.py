"""Efficiency: the device of every rank and its peak, model FLOPs utilisation (MFU) and the headroom of the GEMMs.

* **Peak.** The device model the profile records (Kineto `deviceProperties`, Ascend NPU_INFO / msprof info.json) is
  looked up in `reportgen/data/peaks.toml` (vendor datasheet figures, sources in docs/peaks.md): peak dense TFLOPS per
  data type and memory bandwidth. An Ascend device whose info.json records its AI Core count and clock has its fp16 /
  bf16 peak from them (cores x MHz x 1e6 x 4096 x 2: HiSilicon's formula, as MindSpore's FLOPs parser applies it)
  when the table has no figure. `--peak-tflops` overrides every rank. A device that is not in the table (or whose
  name does not say which product it is) has no peak: the report says so and computes no MFU.
* **FLOPs per step.** In this order: `--model-flops` (the whole job's FLOPs per step, each rank an equal share); the
  profiler's own counts (Kineto `with_flops`); the FLOPs of matrix multiplications, convolutions and attention from
  their input shapes (Kineto `record_shapes`, torch_npu kernel_details.csv MatMul kernels: `loaders.op_flops`); MindInsight's flops_summary (each AI Core operator's FLOPs once: one
  step of the graph). None of these: "FLOPs missing: not reported, not guessed".
* **MFU** of a rank = its FLOPs in the complete steps / (their total time x peak); per step the same with one step.
  The data type of the peak is that of the GEMMs carrying the most FLOPs; without one, bf16 (else fp16), as MFU is
  conventionally quoted, and the note says so.
* **GEMM headroom.** For each operator shape with known FLOPs (operator, shapes, data type): achieved TFLOPS = FLOPs / device time of the
  kernels it launched; headroom per step = its time minus its time at `ceiling_fraction` x peak (never below 0),
  averaged over the ranks that run it; largest first.
"""

from __future__ import annotations

import math
import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from reportgen.analysis.codes import column_array
from reportgen.i18n import Msg, N_, lazy
from reportgen.model import Run

PEAKS_FILE = Path(__file__).resolve().parent.parent / "data" / "peaks.toml"
DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
ASCEND_CUBE_FLOP_PER_CYCLE = 4096 * 2  # 16 x 16 x 16 fp16 multiply-adds per AI Core per cycle


@dataclass(frozen=True)
class PeakEntry:
    name: str
    patterns: tuple[str, ...]
    tflops: dict
    mem_gbps: Optional[float]
    source: str
    ambiguous: bool = False


@dataclass(frozen=True)
class PeakTable:
    devices: tuple[PeakEntry, ...]
    ceiling_fraction: float
    top_gemms: int


def parse_peaks(text: str) -> PeakTable:
    """The peak table from its TOML text (`reportgen/data/peaks.toml`); ValueError on a malformed entry."""
    data = tomllib.loads(text)
    eff = data.get("efficiency") or {}
    frac = float(eff.get("ceiling_fraction", 0.8))
    if not 0 < frac <= 1:
        raise ValueError(f"ceiling_fraction must be in (0, 1], not {frac}")
    out = []
    for d in data.get("device") or []:
        pats = d.get("match")
        if not isinstance(d.get("name"), str) or not isinstance(pats, list) or not pats:
            raise ValueError(f"peak table entry without name / match: {d!r}")
        for p in pats:
            re.compile(p)
        tf = {k: float(d[k]) for k in DTYPES if k in d}
        if any(not v > 0 for v in tf.values()):
            raise ValueError(f"peak table entry {d['name']}: TFLOPS must be positive")
        out.append(PeakEntry(d["name"], tuple(pats), tf, float(d["mem_gbps"]) if "mem_gbps" in d else None,
                             str(d.get("source", "")), bool(d.get("ambiguous", False))))
    return PeakTable(tuple(out), frac, int(eff.get("top_gemms", 10)))


@lru_cache(maxsize=1)
def peak_table() -> PeakTable:
    return parse_peaks(PEAKS_FILE.read_text(encoding="utf-8"))


def find_device(model: Optional[str], table: Optional[PeakTable] = None) -> Optional[PeakEntry]:
    """The table's entry for a recorded device name (first match in file order), None when none matches."""
    if not model:
        return None
    for e in (table or peak_table()).devices:
        if any(re.search(p, model, re.I) for p in e.patterns):
            return e
    return None


@dataclass
class DevicePeak:
    """What is known of one recorded device's peak. `status`: "table" | "derived" (Ascend cores x clock) |
    "override" (--peak-tflops) | "unknown" (not in the table) | "ambiguous" (the name does not say which product) |
    "not recorded" (the profile names no device)."""

    model: Optional[str]
    status: str
    entry: str = ""  # the table's name of the device
    tflops: dict = field(default_factory=dict)  # data type -> TFLOPS
    mem_gbps: Optional[float] = None
    source: str = ""
    ranks: list[int] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"model": self.model, "status": self.status, "entry": self.entry or None,
                "peak_tflops": {k: v for k, v in self.tflops.items()}, "memory_gbps": self.mem_gbps,
                "source": self.source or None, "ranks": self.ranks}


@dataclass
class RankEfficiency:
    rank: int
    stage: int
    flops_per_step: Optional[float]  # FLOPs
    step_ms: Optional[float]
    dtype: str
    peak_tflops: Optional[float]
    mfu: Optional[float]  # 0..1
    per_step: list[tuple[int, float]] = field(default_factory=list)  # (step, mfu)
    known_ms: Optional[float] = None  # device time per step of the operators whose FLOPs are known
    computing_ms: Optional[float] = None  # computing time per step (step trace)
    dtype_assumed: bool = False  # no data type recorded: the peak is bf16's (else fp16's), as MFU is quoted

    @property
    def known_share(self) -> Optional[float]:
        if self.known_ms is None or not self.computing_ms:
            return None
        return min(1.0, self.known_ms / self.computing_ms)


@dataclass
class GemmRow:
    op: str
    shapes: str
    dtype: str
    ranks: int
    calls_per_step: float
    ms_per_step: float  # device time per step, mean over the ranks that run it
    tflops: float  # achieved
    peak_tflops: Optional[float]
    efficiency: Optional[float]  # achieved / peak
    headroom_ms: Optional[float]  # per step


@dataclass
class Efficiency:
    ceiling_fraction: float
    devices: list[DevicePeak]
    per_rank: list[RankEfficiency]
    flops_basis: str  # "model" | "profiler" | "shapes" | "mindinsight" | ""
    stages: list[dict] = field(default_factory=list)  # stage, ranks, mfu (time-weighted over its ranks)
    gemms: list[GemmRow] = field(default_factory=list)
    statement: Optional[Msg] = None  # why there is no MFU, in words
    notes: list[Msg] = field(default_factory=list)

    @property
    def mfu(self) -> Optional[float]:
        """The run's MFU: its ranks' FLOPs over their time x peak (ranks with an MFU)."""
        rows = [r for r in self.per_rank if r.mfu is not None]
        if not rows:
            return None
        num = sum(r.flops_per_step for r in rows)
        den = sum(r.step_ms * 1e-3 * r.peak_tflops * 1e12 for r in rows)
        return num / den if den > 0 else None

    @property
    def headroom_ms(self) -> Optional[float]:
        vals = [g.headroom_ms for g in self.gemms if g.headroom_ms is not None]
        return sum(vals) if vals else None


BASIS_LABELS = {
    "model": N_("--model-flops (the whole job's FLOPs per step, an equal share per rank)"),
    "profiler": N_("the profiler's FLOPs counts (Kineto with_flops)"),
    "shapes": N_("the FLOPs of matrix multiplications, convolutions and attention from their input shapes (other "
                 "operators not counted: a lower bound)"),
    "mindinsight": N_("MindInsight flops_summary (each AI Core operator's FLOPs once per step)"),
}
STATUS_LABELS = {
    "table": N_("peak from the table (vendor datasheet)"),
    "derived": N_("peak from the profile's AI Core count and clock"),
    "override": N_("peak from --peak-tflops"),
    "unknown": N_("not in the peak table: no peak, no MFU (pass --peak-tflops)"),
    "ambiguous": N_("the recorded name does not say which product (peaks differ): no MFU (pass --peak-tflops)"),
    "not recorded": N_("the profile does not name the device: no MFU (pass --peak-tflops)"),
}


def device_peak(model: Optional[str], compute: dict, override: Optional[float],
                table: Optional[PeakTable] = None) -> DevicePeak:
    """The peak of one recorded device (see the module doc for the order)."""
    if override is not None:
        return DevicePeak(model, "override", tflops={"any": float(override)}, source="--peak-tflops")
    entry = find_device(model, table)
    if entry is not None and not entry.ambiguous and entry.tflops:
        return DevicePeak(model, "table", entry.name, dict(entry.tflops), entry.mem_gbps, entry.source)
    cores, mhz = compute.get("ai_core_num"), compute.get("aic_frequency_mhz")
    if cores and mhz and cores > 0 and mhz > 0:
        tf = cores * mhz * 1e6 * ASCEND_CUBE_FLOP_PER_CYCLE / 1e12
        return DevicePeak(model, "derived", entry.name if entry else "", {"fp16": tf, "bf16": tf},
                          entry.mem_gbps if entry else None,
                          f"info.json: {int(cores)} AI Cores x {mhz:g} MHz x 4096 x 2")
    if entry is not None:
        return DevicePeak(model, "ambiguous", entry.name, source=entry.source)
    return DevicePeak(model, "unknown" if model else "not recorded")


def pick_peak(dp: DevicePeak, dtype: str) -> tuple[Optional[float], str]:
    """(TFLOPS, data type used) for a device and the GEMMs' data type ('' unknown)."""
    if not dp.tflops:
        return None, dtype
    if "any" in dp.tflops:
        return dp.tflops["any"], dtype
    if dtype:
        return dp.tflops.get(dtype), dtype
    for d in ("bf16", "fp16"):
        if d in dp.tflops:
            return dp.tflops[d], d
    return None, dtype


def _float_column(frame: pd.DataFrame, name: str) -> np.ndarray:
    """`frame[name].astype(float).to_numpy()` (read only: the column's own array where it is float64)."""
    v = column_array(frame, name)
    if isinstance(v, np.ndarray):
        return v if v.dtype == np.float64 else v.astype(float)
    return np.asarray(pd.Series(v, copy=False).astype(float).to_numpy())


def _complete_steps(data) -> Optional[pd.DataFrame]:
    st = data.step_trace
    if st is None or st.steps is None or not len(st.steps) or "total" not in st.steps:
        return None
    return st.steps


def analyze_efficiency(run: Run, peak_tflops: Optional[float] = None, model_flops: Optional[float] = None,
                       table: Optional[PeakTable] = None) -> Efficiency:
    table = table or peak_table()
    frac = table.ceiling_fraction
    devices: dict[tuple, DevicePeak] = {}
    rank_peak: dict[int, DevicePeak] = {}
    for r in run.rank_ids:
        info = run.ranks[r].info
        comp = dict(info.device_compute or {})
        key = (info.device_model, comp.get("ai_core_num"), comp.get("aic_frequency_mhz"))
        if key not in devices:
            devices[key] = device_peak(info.device_model, comp, peak_tflops, table)
        devices[key].ranks.append(r)
        rank_peak[r] = devices[key]
    n_job = max(run.info.rank_size or 0, len(run.rank_ids)) or 1
    has = {r: run.ranks[r].op_flops is not None and len(run.ranks[r].op_flops.ops) > 0 for r in run.rank_ids}
    if model_flops is not None:
        basis = "model"
    elif any(has.values()):
        basis = "profiler" if any(run.ranks[r].op_flops.with_flops for r in run.rank_ids if has[r]) else "shapes"
    elif any(run.ranks[r].flops is not None and run.ranks[r].flops.flops_m for r in run.rank_ids):
        basis = "mindinsight"
    else:
        basis = ""
    per_rank: list[RankEfficiency] = []
    gemm_parts: list[pd.DataFrame] = []
    for r in run.rank_ids:
        data = run.ranks[r]
        steps = _complete_steps(data)
        stage = run.info.stage_of_rank.get(r, 0)
        ops = data.op_flops.ops if has[r] else None
        dtype = ""
        if ops is not None:
            by_dt = ops[ops["dtype"] != ""].groupby("dtype")["flops"].sum()
            dtype = str(by_dt.idxmax()) if len(by_dt) else ""
        recorded = dtype
        peak, dtype = pick_peak(rank_peak[r], dtype)
        assumed = bool(dtype) and not recorded
        if steps is None:
            per_rank.append(RankEfficiency(r, stage, None, None, dtype, peak, None))
            continue
        ids = steps["step"]
        # (the columns' own arrays as float64: a Series and its `astype` a column cost ~0.1 ms a rank)
        totals = _float_column(steps, "total")
        n = len(steps)
        step_ms = float(np.nanmean(totals)) if n else None
        comp_ms = float(pd.Series(_float_column(steps, "computing"), copy=False).mean()) \
            if "computing" in steps else None
        per_step_flops: dict = {}
        known_ms = None
        if ops is not None and ids.notna().any():
            sel = ops[ops["step"].isin([int(s) for s in ids.dropna()])]
            per_step_flops = sel.groupby("step")["flops"].sum().to_dict()
            known_ms = float(sel["device_ms"].sum()) / n if sel["device_ms"].notna().any() else None
            if len(sel):
                gemm_parts.append(sel.assign(rank=r, n_steps=n))
        elif ops is not None:  # one window without step id
            sel = ops[ops["step"].isna()]
            per_step_flops = {None: float(sel["flops"].sum())} if len(sel) else {}
            known_ms = float(sel["device_ms"].sum()) if sel["device_ms"].notna().any() else None
            if len(sel):
                gemm_parts.append(sel.assign(rank=r, n_steps=1))
        if basis == "model":
            fps = model_flops / n_job
            per_step_flops = {(None if pd.isna(s) else int(s)): fps for s in ids}
        elif basis == "mindinsight":
            f = data.flops
            fps = f.flops_m * 1e6 if f is not None and f.flops_m else None
            per_step_flops = {(None if pd.isna(s) else int(s)): fps for s in ids} if fps else {}
        flops_step = (sum(per_step_flops.values()) / n) if per_step_flops else None
        mfu = None
        series: list[tuple[int, float]] = []
        if flops_step is not None and peak and step_ms:
            mfu = flops_step / (step_ms * 1e-3 * peak * 1e12)
            for s, t in zip(ids, totals):
                key = None if pd.isna(s) else int(s)
                if key is not None and key in per_step_flops and t > 0:
                    series.append((key, per_step_flops[key] / (t * 1e-3 * peak * 1e12)))
        per_rank.append(RankEfficiency(r, stage, flops_step, step_ms, dtype, peak, mfu, series, known_ms, comp_ms,
                                       assumed))
    eff = Efficiency(frac, list(devices.values()), per_rank, basis)
    by_stage: dict[int, list[RankEfficiency]] = {}
    for x in per_rank:
        if x.mfu is not None:
            by_stage.setdefault(x.stage, []).append(x)
    for s, rows in sorted(by_stage.items()):
        den = sum(x.step_ms * 1e-3 * x.peak_tflops * 1e12 for x in rows)
        eff.stages.append({"stage": s, "ranks": [x.rank for x in rows],
                           "mfu": sum(x.flops_per_step for x in rows) / den if den > 0 else None})
    eff.gemms = _gemms(gemm_parts, rank_peak, frac, table.top_gemms)
    if not basis:
        eff.statement = lazy(N_("FLOPs missing: no operator in the profile carries a FLOPs count or the shapes of "
                                "its matrix multiplications, convolutions or attention (Kineto with_flops / "
                                "record_shapes off, no MindInsight FLOPs files, or a compiled model: torch.compile and "
                                "CUDA graphs run their kernels without ATen operators), and no --model-flops was "
                                "given; MFU is not reported, not guessed"))
    elif all(x.peak_tflops is None for x in per_rank):
        names = sorted({d.model for d in devices.values() if not d.tflops and d.model})
        eff.statement = (lazy(N_("no peak for {devices}: MFU is not computed (give the device's peak with "
                                 "--peak-tflops)"), devices=", ".join(names[:4])) if names else
                         lazy(N_("the profile does not name the device, so its peak is unknown: MFU is not computed "
                                 "(give the device's peak with --peak-tflops)")))
    elif all(x.mfu is None for x in per_rank):
        eff.statement = lazy(N_("no step times or no FLOPs in the steps read: MFU is not computed"))
    used = sorted({x.dtype for x in per_rank if x.mfu is not None and x.dtype_assumed})
    if used:
        eff.notes.append(lazy(N_("the data type of the work is not recorded: MFU is against the {dtype} peak "
                                     "(--peak-tflops to use another)"), dtype="/".join(used)))
    return eff


def _gemms(parts: list[pd.DataFrame], rank_peak: dict, frac: float, top: int) -> list[GemmRow]:
    if not parts:
        return []
    df = pd.concat(parts, ignore_index=True)
    df = df[df["device_ms"].notna() & (df["device_ms"] > 0)]
    if not len(df):
        return []
    rows = []
    for (op, shapes, dtype), g in df.groupby(["op", "shapes", "dtype"], sort=False):
        per_rank = g.groupby("rank").agg(ms=("device_ms", "sum"), flops=("flops", "sum"), count=("count", "sum"),
                                         n=("n_steps", "first"))
        ms_step = float((per_rank["ms"] / per_rank["n"]).mean())
        calls = float((per_rank["count"] / per_rank["n"]).mean())
        tflops = float(per_rank["flops"].sum() / (per_rank["ms"].sum() * 1e-3) / 1e12)
        peaks = []
        for rk in per_rank.index:
            p, _ = pick_peak(rank_peak[int(rk)], dtype)
            peaks.append(p)
        peak = peaks[0] if peaks and all(p == peaks[0] for p in peaks) else None
        head = None
        if peak:
            ceil_ms = per_rank["flops"] / (frac * peak * 1e12) * 1e3
            head = float(((per_rank["ms"] - ceil_ms).clip(lower=0) / per_rank["n"]).mean())
        rows.append(GemmRow(str(op), str(shapes), str(dtype), len(per_rank), calls, ms_step, tflops, peak,
                            tflops / peak if peak else None, head))
    rows.sort(key=lambda g: (-(g.headroom_ms if g.headroom_ms is not None else -1), -g.ms_per_step))
    return rows[:top]


def summary_dict(e: Efficiency) -> dict:
    """`summary.json` `metrics.efficiency` (docs/summary-json.md)."""
    def num(v, d=6):
        return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else round(float(v), d)
    return {
        "mfu": num(e.mfu),
        "flops_basis": e.flops_basis or None,
        "statement": e.statement.en if e.statement is not None else None,  # summary.json is language-neutral
        "ceiling_fraction": e.ceiling_fraction,
        "devices": [d.to_dict() for d in e.devices],
        "per_rank": {str(x.rank): {"mfu": num(x.mfu), "flops_per_step": num(x.flops_per_step, 1),
                                   "step_ms": num(x.step_ms, 4), "dtype": x.dtype or None,
                                   "peak_tflops": num(x.peak_tflops, 3), "known_flops_share": num(x.known_share, 4),
                                   "per_step": [[s, num(m)] for s, m in x.per_step]}
                     for x in e.per_rank},
        "stages": [{"stage": s["stage"], "ranks": s["ranks"], "mfu": num(s["mfu"])} for s in e.stages],
        "gemm_headroom_ms": num(e.headroom_ms, 4),
        "gemms": [{"op": g.op, "shapes": g.shapes, "dtype": g.dtype or None, "ranks": g.ranks,
                   "calls_per_step": num(g.calls_per_step, 3), "ms_per_step": num(g.ms_per_step, 4),
                   "achieved_tflops": num(g.tflops, 3), "peak_tflops": num(g.peak_tflops, 3),
                   "efficiency": num(g.efficiency, 4), "headroom_ms": num(g.headroom_ms, 4)} for g in e.gemms],
    }
