"""Shared fixtures: the real samples (skipped when absent) and synthetic runs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

# every chart spec a test builds is checked against Vega-Lite's schema (builds skip it: charts/theme.VALIDATE);
# set before reportgen is imported, and inherited by the msreport processes the tests start
os.environ.setdefault("MSREPORT_VALIDATE_SPECS", "1")

# the real samples beside the repository; MSREPORT_SAMPLES points elsewhere (CI sets it to a missing folder to prove
# that the suite passes on a plain clone, every sample test skipping)
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


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium through playwright, one per test module (the browser tests)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright (test extra) is not installed")
    exe = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(exe).exists():
        if os.environ.get("CI"):
            pytest.fail("Chromium is not installed; .ci/run must install it (apt-get install -y chromium)")
        pytest.skip("Chromium not installed")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield b
        finally:
            b.close()
