"""Shared fixtures: the real samples (skipped when absent) and synthetic runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# every chart spec a test builds is checked against Vega-Lite's schema (builds skip it: charts/theme.VALIDATE);
# set before reportgen is imported, and inherited by the msreport processes the tests start
os.environ.setdefault("MSREPORT_VALIDATE_SPECS", "1")

# `../shared/samples` beside the repository; MSREPORT_SAMPLES points elsewhere (a git worktree in another folder)
SAMPLES = Path(os.environ.get("MSREPORT_SAMPLES") or Path(__file__).resolve().parents[1].parent / "shared" / "samples")


def sample(rel: str) -> Path:
    p = SAMPLES / rel
    if not p.exists():
        pytest.skip(f"sample {rel} not available")
    return p


@pytest.fixture
def samples_root() -> Path:
    if not SAMPLES.exists():
        pytest.skip("../shared/samples not available")
    return SAMPLES


@pytest.fixture(scope="session")
def synth_8(tmp_path_factory) -> Path:
    from reportgen.synth import generate_run

    return generate_run(tmp_path_factory.mktemp("synth8") / "run", ranks=8, steps=6, seed=1)


@pytest.fixture(scope="session")
def example_site(tmp_path_factory) -> Path:
    """The README's example report, built once per session."""
    from reportgen.cli import main

    out = tmp_path_factory.mktemp("example") / "report"
    assert main(["--example", "-o", str(out), "-q", "--lang", "en"]) == 0
    return out
