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
def sample_report(tmp_path_factory):
    """`report_of(rel)` -> (exit code, report folder): the report of the real sample `rel` with the default options
    (`-q`), built once per session and shared by the tests that read it without changing it (test_samples.py builds
    every sample; before, seven other tests built some of them again)."""
    from reportgen.cli import main

    built: dict[str, tuple[int, Path]] = {}

    def report_of(rel: str) -> tuple[int, Path]:
        if rel not in built:
            src = sample(rel)  # skips when the samples are absent
            out = tmp_path_factory.mktemp("sample-report") / "report"
            built[rel] = (main([str(src), "-o", str(out), "-q"]), out)
        return built[rel]

    return report_of


@pytest.fixture(scope="session")
def synth_8(tmp_path_factory) -> Path:
    from reportgen.synth import generate_run

    return generate_run(tmp_path_factory.mktemp("synth8") / "run", ranks=8, steps=6, seed=1)


@pytest.fixture(scope="session")
def synth_8_report(tmp_path_factory, synth_8) -> Path:
    """synth_8's report with the default options, built once per session (per worker) for the tests that read it
    without changing it; a test that needs an earlier report in place copies it (issue 31: one build per fixture)."""
    from reportgen.cli import main

    out = tmp_path_factory.mktemp("synth8-report") / "report"
    assert main([str(synth_8), "-o", str(out), "-q"]) == 0
    return out


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


# --- one compiled template and one schema check per distinct input, for the whole session (issue 31: the default
# suite within 8 min). The tests build some 150 reports in this process; each build made a new Jinja environment
# that compiled the same ~23 templates again (~0.25 s a build), and validated every chart spec against Vega-Lite's
# schema again (~0.25 s a build) although most specs repeat from build to build. Neither changes what is checked:
# every build still renders every page with the same compiled templates (every Environment reportgen makes has the
# same settings: `site.builder.make_env`; the key is the template's name and source), and every distinct spec is
# still validated (a spec that was valid once is valid again; errors are never remembered, so an invalid spec raises
# at every build). Builds in a child process (`python -m reportgen`) pay in full, as before.
def _share_compiled_templates() -> None:
    import jinja2

    class _MemoryBytecodeCache(jinja2.BytecodeCache):
        def __init__(self):
            self.store: dict[str, bytes] = {}

        def load_bytecode(self, bucket):
            if bucket.key in self.store:
                bucket.bytecode_from_string(self.store[bucket.key])

        def dump_bytecode(self, bucket):
            self.store[bucket.key] = bucket.bytecode_to_string()

    cache, init = _MemoryBytecodeCache(), jinja2.Environment.__init__

    def init_cached(self, *a, **kw):
        if not a:  # spontaneous environments (jinja2.Template) pass every setting by position
            kw.setdefault("bytecode_cache", cache)
        init(self, *a, **kw)

    jinja2.Environment.__init__ = init_cached


def _validate_each_spec_once() -> None:
    import json

    try:
        from altair.utils import schemapi
    except ImportError:
        return
    errors_of, valid = schemapi._get_errors_from_spec, set()

    def errors_once(spec, schema, rootschema=None):
        try:
            key = (id(schema), id(rootschema), json.dumps(spec, sort_keys=True))
        except (TypeError, ValueError):
            return errors_of(spec, schema, rootschema=rootschema)
        if key in valid:
            return []
        errors = errors_of(spec, schema, rootschema=rootschema)
        if not errors:
            valid.add(key)
        return errors

    schemapi._get_errors_from_spec = errors_once


_share_compiled_templates()
_validate_each_spec_once()


# --- CI's plain-clone stage: only the tests that reach the samples (issue 31) -----------------------------------
# With MSREPORT_SAMPLES_ONLY=1 (and MSREPORT_SAMPLES pointing at a missing folder), every test file is still
# collected, and only the tests that can reach the samples run: those whose code, fixtures (transitively), helper
# functions of tests/ or parameters name SAMPLES, sample() or samples_root, or hold a path below SAMPLES. Every
# other test never looks at the samples, so it runs the same with or without them and the default stage has run it.
_SAMPLE_NAMES = {"SAMPLES", "sample", "samples_root"}
_TESTS = Path(__file__).resolve().parent


def _holds_sample_path(obj) -> bool:
    if isinstance(obj, (str, Path, list, tuple, dict, set, frozenset)):
        return str(SAMPLES) in repr(obj)[:100_000]
    return False


def _reaches_samples(fn, seen: set) -> bool:
    import types

    fn = getattr(fn, "__wrapped__", fn)
    code = getattr(fn, "__code__", None)
    if code is None or code in seen:
        return False
    seen.add(code)
    glb = getattr(fn, "__globals__", {})

    def names(c):
        yield from c.co_names
        for k in c.co_consts:
            if isinstance(k, types.CodeType):
                yield from names(k)

    import sys

    for n in names(code):
        if n in _SAMPLE_NAMES:
            return True
        obj = glb.get(n, sys.modules.get(n))
        if isinstance(obj, types.ModuleType):  # a test module's helpers (`from test_browser import render`)
            src = getattr(obj, "__file__", None) or ""
            if Path(src).parent == _TESTS and any(w in Path(src).read_text(encoding="utf-8") for w in _SAMPLE_NAMES):
                return True
        elif isinstance(obj, (types.FunctionType, types.MethodType)):
            if Path(obj.__code__.co_filename).resolve().parent == _TESTS and _reaches_samples(obj, seen):
                return True
        elif isinstance(obj, type) and getattr(obj, "__module__", "").startswith(("tests", "test_")):
            if any(_reaches_samples(v, seen) for v in vars(obj).values() if isinstance(v, types.FunctionType)):
                return True
        elif _holds_sample_path(obj):
            return True
    return False


def _item_reaches_samples(item) -> bool:
    seen: set = set()
    if "samples_root" in getattr(item, "fixturenames", ()):
        return True
    callspec = getattr(item, "callspec", None)
    if callspec is not None and any(_holds_sample_path(v) or isinstance(v, Path) and str(SAMPLES) in str(v)
                                    for v in callspec.params.values()):
        return True
    if _reaches_samples(getattr(item, "function", None), seen):
        return True
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info else ()):
        if any(_reaches_samples(d.func, seen) for d in defs):
            return True
    return False


def pytest_collection_modifyitems(config, items):
    if os.environ.get("MSREPORT_SAMPLES_ONLY") != "1":
        return
    keep = [i for i in items if _item_reaches_samples(i)]
    dropped = [i for i in items if i not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def typed_and_dicts(read, monkeypatch) -> tuple:
    """`read()` over the typed events, then over orjson's dicts (the typed decoder refused): (the typed result, the
    dicts' result, what the typed decoder gave at each call of the first read: None where it refused)."""
    from reportgen.loaders import trace_typed, traces

    took: list = []
    with monkeypatch.context() as m:
        m.setattr(traces, "typed_events", lambda *a: took.append(r := trace_typed.typed_events(*a)) or r)
        typed = read()
    with monkeypatch.context() as m:
        m.setattr(traces, "typed_events", lambda *a: None)
        return typed, read(), took


def plain(x):
    """A reader's result as comparable data (arrays and frames as lists / JSON, objects as their fields): the typed
    and the dict paths' results compared (tests/test_trace_typed.py, tests/test_kineto_typed.py)."""
    import dataclasses

    import numpy as np
    import pandas as pd

    if isinstance(x, np.ndarray):
        return str(x.dtype), repr(x.tolist())
    if isinstance(x, pd.DataFrame):
        return x.to_json(double_precision=15), repr(x.dtypes.tolist())
    if dataclasses.is_dataclass(x):
        return type(x).__name__, plain(vars(x))
    if isinstance(x, dict):
        return [(repr(k), plain(v)) for k, v in x.items()]
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if hasattr(x, "__dict__") and not isinstance(x, type):
        return type(x).__name__, plain(vars(x))
    return repr(x)
