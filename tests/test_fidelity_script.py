"""scripts/fidelity.py compare: timing fields ignored, any number or CSV cell change reported."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("fidelity", ROOT / "scripts" / "fidelity.py")
fidelity = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fidelity)


def _snap(base: Path, step_ms: float, generated: str, cell: str) -> Path:
    (base / "run" / "cluster").mkdir(parents=True)
    (base / "run" / "summary.json").write_text(json.dumps({"generated_at": generated, "steps": [{"ms": step_ms}]}))
    (base / "run" / "cluster" / "step-trace.csv").write_text(f"rank,ms\n0,{cell}\n")
    return base


def test_timing_field_ignored(tmp_path):
    a = _snap(tmp_path / "a", 12.5, "2026-01-01", "12.5")
    b = _snap(tmp_path / "b", 12.5, "2026-02-02", "12.5")
    assert fidelity.compare(a, b) == 0


def test_number_and_csv_change_detected(tmp_path, capsys):
    a = _snap(tmp_path / "a", 12.5, "x", "12.5")
    b = _snap(tmp_path / "b", 12.6, "x", "12.50")
    assert fidelity.compare(a, b) == 1
    out = capsys.readouterr().out
    assert "differs: run/summary.json" in out and "differs: run/cluster/step-trace.csv" in out
    assert "2 differences" in out


def test_missing_file_detected(tmp_path):
    a = _snap(tmp_path / "a", 1.0, "x", "1")
    b = _snap(tmp_path / "b", 1.0, "x", "1")
    (b / "run" / "cluster" / "step-trace.csv").unlink()
    assert fidelity.compare(a, b) == 1


def test_compact_csv_numbers_count_as_the_same_numbers(tmp_path, capsys):
    """Issue 17: CSVs write `208` for `208.0` and drop float noise; compare accepts exactly that rewrite."""
    a = _snap(tmp_path / "a", 1.0, "x", "208.0")
    b = _snap(tmp_path / "b", 1.0, "x", "208")
    assert fidelity.compare(a, b) == 0
    a = _snap(tmp_path / "c", 1.0, "x", "8.552121000000003")
    b = _snap(tmp_path / "d", 1.0, "x", "8.552121")
    assert fidelity.compare(a, b) == 0
    b = _snap(tmp_path / "e", 1.0, "x", "8.55212")  # a digit the data carries is lost: a difference
    assert fidelity.compare(a, b) == 1
