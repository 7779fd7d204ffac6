"""The pipeline: discover -> load -> analyse (findings) -> plan pages -> write. One call per phase, each timed.

`build_report` holds the output lock for the whole run (a second run writing the same output fails at once) and
checks the output before any data is read, so a refusal costs nothing.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import importlib
import logging
import pickle
import time
from dataclasses import dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, Optional

from reportgen import i18n, rankcache
from reportgen.dataquality import dq
from reportgen.i18n import Msg, lazy
from reportgen.analysis import analyze, drop_instances
from reportgen.analysis.communication import release_comm_inputs
from reportgen.analysis.per_rank import rank_figures
from reportgen.analysis.execution import select
from reportgen.discover import RunLayout
from reportgen.layouts import discover, load_execution, load_run, timeline_ranks
from reportgen.model import DataIssue, Run
from reportgen.pools import gc_paused, release_freed_memory
from reportgen.progress import Progress
from reportgen.site.render import output
from reportgen.urls import INDEX

log = logging.getLogger("msreport")

# The later stages' modules (the rules; the site's planning and writing, with altair, Jinja and networkx: ~0.45 s of
# imports), imported once the first rank is loaded (`load_phase`): the load's worker processes, forked at its start,
# never need them, so they are imported beside the workers instead of before them. The functions below name them.
LATER_MODULES = ("reportgen.rules", "reportgen.site.plan.planner", "reportgen.site.render.builder",
                 "reportgen.site.views.summary")


def import_later_modules() -> None:
    with gc_paused(long_lived=True):  # (modules: kept to the end, no cycle worth a pass; `entry._import_cli`)
        for name in LATER_MODULES:
            importlib.import_module(name)


def run_rules(analysis, overrides):
    from reportgen.rules import run_rules as run
    return run(analysis, overrides)


def plan_pages(analysis, findings, **kw):
    from reportgen.site.plan.planner import plan_pages as plan
    return plan(analysis, findings, **kw)


def build_summary(analysis, findings, thresholds, metrics=None):
    from reportgen.site.views.summary import build_summary as build
    return build(analysis, findings, thresholds, metrics)


def summary_metrics(analysis, findings):
    from reportgen.site.views.summary import summary_metrics as metrics
    return metrics(analysis, findings)


def _builder():
    from reportgen.site.render import builder
    return builder


@dataclass(frozen=True)
class BuildOptions:
    """Everything the command line decides about one build."""

    single_file: bool = False
    jobs: int = 1
    progress: bool = False  # progress bar / lines on stderr
    device_memory_mb: Optional[float] = None
    peak_tflops: Optional[float] = None  # --peak-tflops: every rank's peak dense TFLOPS
    model_flops: Optional[float] = None  # --model-flops: the whole job's FLOPs per step
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: MappingProxyType({}))
    marey_steps: tuple[int, ...] = ()
    title: Optional[str] = None
    lang: str = "en"  # the report's language (reportgen.i18n.LANGUAGES): the output's root and summary.json
    other_langs: tuple[str, ...] = ()  # the same site also in these languages, under OUT/<lang>/ (not single-file)
    scheduler: Optional[str] = None  # None / "local": local processes (`jobs`); "tcp://HOST:PORT": a Dask cluster
    cache: bool = True  # reuse / write the per-rank summaries cached beside the output (reportgen.rankcache)

    def __post_init__(self) -> None:
        object.__setattr__(self, "overrides", MappingProxyType({k: MappingProxyType(dict(v))
                                                                 for k, v in dict(self.overrides or {}).items()}))
        object.__setattr__(self, "marey_steps", tuple(int(s) for s in self.marey_steps or ()))
        if self.jobs < 1:
            raise ValueError("jobs must be at least 1")
        object.__setattr__(self, "other_langs", tuple(l for l in self.other_langs if l != self.lang))
        if self.single_file and self.other_langs:
            raise ValueError("a single-file report takes one language")


@dataclass
class BuildResult:
    entry: Path  # the file to open
    summary: dict
    runs: int
    ranks: int
    seconds: float
    timings: list[tuple[str, float]] = field(default_factory=list)  # (stage, seconds)


# --- phases --------------------------------------------------------------------------------------------------------


def load_phase(layout: RunLayout, opts: BuildOptions, ui: Progress) -> Run:
    """The ranks, then the operators of the steps the execution view shows (chosen from the step times)."""
    counter = ui.counter(lazy("ranks loaded"))

    def progress(done: int, total: int) -> None:
        if done == 1:  # (the load's workers are running by now)
            import_later_modules()
        counter(done, total)
    run = load_run(layout, jobs=opts.jobs, progress=progress, scheduler=opts.scheduler,
                   derive=rank_figures)  # the analyses' per-rank share, computed where each rank is loaded
    try:  # safety net: loaders never raise by contract; an unforeseen trace must not cost the rest of the report
        sel = select(run, timeline_ranks(layout), list(opts.marey_steps))
        run.execution = load_execution(layout, run, sel.steps, sel.reasons, sel.ranks, sel.skipped, jobs=opts.jobs)
    except Exception as e:  # noqa: BLE001
        log.warning("execution view skipped: %s: %s", type(e).__name__, e)
        log.debug("execution view traceback", exc_info=True)
        run.issues.append(DataIssue("", dq("report.execution-view-unreadable", name=type(e).__name__, value=e),
                                    "warning"))
    return run


def analyse_phase(run: Run, opts: BuildOptions, inputs: Optional[tuple] = None):
    """The analysis, then the rules. `inputs`: what the run was loaded from (`analysis_inputs`): both results are
    then cached beside the output (`rankcache.run_memo`), the analysis keyed by the inputs and the settings it
    reads, the findings by those and the rules' thresholds (other `--set` values re-run the rules alone)."""
    overrides = {k: dict(v) for k, v in opts.overrides.items()}
    if inputs is None:
        analysis = _analyze(run, opts)
        findings, thresholds = run_rules(analysis, overrides)
        release_freed_memory()
        return analysis, findings, thresholds
    ident, key = inputs
    refs = run_refs(run)
    analysis = rankcache.run_memo("analysis", ident, key, refs, lambda: _analyze(run, opts), background=True)
    drop = not any(getattr(i, "code", "") == "analysis.waits-failed" for i in analysis.issues)
    for d in run.ranks.values():  # (an analysis from the cache: the frames it would have read, never opened)
        if d.communication is not None:
            d.communication.release_sealed(instances=drop)
    if drop:
        drop_instances(run)  # (as `analyze` does once the waits are made: an analysis from the cache leaves them too)
    release_comm_inputs(run)  # (as `analyze` does once the communication analysis has read them)
    analysis.source = key  # (the same analysis, cached or made: what it was made from)
    refs.update(_refs_of(("analysis",), analysis, depth=2))
    findings, thresholds = rankcache.run_memo("rules", ident, _rules_key(key, opts), refs,
                                              lambda: run_rules(analysis, overrides))
    # the rules' temporaries handed back (~90 MB of freed heap at 1,024 ranks) before the pages are planned and
    # their writers forked (each counts the pages its parent holds)
    release_freed_memory()
    return analysis, findings, thresholds


def _summary(analysis, findings, thresholds, inputs: Optional[tuple], opts: BuildOptions) -> dict:
    """summary.json's content. Its metrics (most of its cost) are the same in every language: cached with the
    findings' key (other thresholds: made again) when they hold plain data only."""
    if inputs is None:
        return build_summary(analysis, findings, thresholds)
    ident, key = inputs
    metrics = rankcache.run_memo("metrics", ident, _rules_key(key, opts), {}, lambda: summary_metrics(analysis, findings),
                                 keep=_plain)
    return build_summary(analysis, findings, thresholds, metrics)


def _rules_key(key: tuple, opts: BuildOptions) -> tuple:
    """The findings' key (and summary.json's metrics', made from them): the analysis' key and the `--set` values."""
    return key, sorted((k, dict(v)) for k, v in opts.overrides.items())


_PLAIN = (str, int, float, bool, type(None))


def _plain(v) -> bool:
    """Only JSON's values (no text translated when written: a lazy message, an object)."""
    todo = [v]
    while todo:
        x = todo.pop()
        t = type(x)
        if t is dict:
            if not all(type(k) in _PLAIN for k in x):
                return False
            todo.extend(x.values())
        elif t is list or t is tuple:
            todo.extend(x)
        elif t not in _PLAIN:
            return False
    return True


def _analyze(run: Run, opts: BuildOptions):
    return analyze(run, device_memory_mb=opts.device_memory_mb, peak_tflops=opts.peak_tflops,
                   model_flops=opts.model_flops, release_inputs=True, beside=opts.jobs > 1)


def input_files(layout: RunLayout) -> tuple[tuple, tuple]:
    """The size and modification time of the run-level files and of every rank file discovery found, taken BEFORE
    the load (`analysis_inputs`' key): a file rewritten while the ranks are read (a live job) then keys the results
    read from it by what it was before, so the next build sees a changed file and computes them again."""
    run_level = sorted(str(p) for ps in layout.run_files.values() for p in ps)
    every = sorted(str(p) for rf in layout.ranks.values() for ps in rf.files.values() for p in ps)
    return tuple(map(rankcache._stat_key, run_level)), tuple(map(rankcache._stat_key, every))


def analysis_inputs(layout: RunLayout, opts: BuildOptions, rank_keys: list,
                    files: Optional[tuple[tuple, tuple]] = None) -> Optional[tuple]:
    """(the run's name, a digest of what its analysis is computed from) for `analyse_phase`'s cache: every rank's cache key
    (`rankcache.rank_key`: the files of the rank, msreport's code), the run-level files' sizes and modification
    times, what discovery found and the settings the load and the analysis read. None: a rank was loaded without
    a key (no cache), so nothing whole-run is cached either. `files`: `input_files(layout)` as taken before the
    load (default: taken now)."""
    if any(k is None for k in rank_keys):
        return None
    run_level, every = files if files is not None else input_files(layout)
    if len(rank_keys) != len(layout.ranks):  # a layout that reads its ranks itself: every file it found
        run_level = tuple(sorted(run_level + every, key=lambda k: k[0]))
    key = (tuple(rank_keys), run_level,
           str(Path(layout.root).absolute()), str(Path(layout.base).absolute()), layout.layout, layout.name,
           layout.key, layout.world_size, sorted(layout.group_ranks), sorted(layout.ranks),
           repr(sorted(layout.parallel_hint.items(), key=repr)), layout.issues,
           opts.device_memory_mb, opts.peak_tflops, opts.model_flops, opts.marey_steps)
    try:  # (digested once here, not pickled again by each `run_memo` keyed by it: ~20 ms each at 1,024 ranks)
        digest = hashlib.sha256(pickle.dumps(key, protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()
    except Exception:  # noqa: BLE001  # inputs that cannot be pickled: nothing whole-run is cached
        return None
    return f"{Path(layout.root).absolute()}|{layout.label}", digest


def _refs_of(pid: tuple, obj, depth: int) -> dict:
    """{reference: object} for `obj` and, `depth` levels down, the values of its dataclass fields (objects that
    can be told apart by identity: no numbers, texts or None)."""
    out = {pid: obj}
    if depth and is_dataclass(obj):
        own = getattr(obj, "__dict__", None)
        for f in fields(obj):
            if own is not None and f.name not in own:  # (a field still sealed, `model.RankData`: left so; no
                continue  # object of it exists, so nothing refers to it)
            v = getattr(obj, f.name)
            if not isinstance(v, _IMMUTABLE):
                out.update(_refs_of(pid + (f.name,), v, depth - 1))
    return out


_IMMUTABLE = (type(None), bool, int, float, complex, str, bytes, tuple, frozenset)


def run_refs(run: Run) -> dict:
    """The loaded run's objects a cached analysis refers to (`rankcache.run_memo`'s `refs`): the run, its fields,
    each rank and the values of the rank's fields."""
    refs = _refs_of(("run",), run, depth=2)
    for r, d in run.ranks.items():
        refs.update(_refs_of(("rank", r), d, depth=1))
    return refs


_kept: list = []  # what the last build made, held to the process's exit (`keep_until_exit`)
_keep = False


def keep_until_exit() -> None:
    """From now on, what a build made (the loaded run, its analysis, findings and planned pages) is held when the
    build ends instead of freed: for the command, which exits right after without the interpreter's teardown
    (`entry._leave`), where freeing those objects one by one cost ~0.1 s at 1,024 ranks. The next build lets them
    go as it starts (several runs in one folder: one run's objects held at a time). Not for a library caller: its
    builds' objects are freed as usual."""
    global _keep
    _keep = True


def build_one(layout: RunLayout, out: Path, opts: BuildOptions, ui: Optional[Progress] = None) -> tuple[Path, dict]:
    if _kept:  # (the previous run's: several runs in one folder)
        _kept.clear()
        gc.unfreeze()
    ui = ui or Progress(False)
    def named(stage: Msg) -> Msg:  # several runs: each stage names its run
        return lazy("{run}: {stage}", run=layout.label, stage=stage) if opts.title else stage

    with ui.stage(named(lazy("load {n} rank(s)", n=len(layout.ranks)))), rankcache.recording() as rank_keys:
        files = input_files(layout) if opts.cache else None  # (before the files are read)
        run = load_phase(layout, opts, ui)
    inputs = analysis_inputs(layout, opts, rank_keys, files)
    with _long_lived(), ui.stage(named(lazy("analyse"))):
        analysis, findings, thresholds = analyse_phase(run, opts, inputs)
    with _long_lived(), ui.stage(named(lazy("plan pages"))):
        defer = not opts.single_file  # the site's pages are planned by the builder as it writes them
        plan = plan_pages(analysis, findings, thresholds=thresholds, title=opts.title, lazy_ranks=defer)
        made: dict = {}

        def summary_now() -> dict:  # the site builds it while the rank pages are written
            if "summary" not in made:  # (the same in every language: cached with the findings' key)
                made["summary"] = _summary(analysis, findings, thresholds, inputs, opts)
            return made["summary"]
        translations = []
        for lang in opts.other_langs:  # the same pages in another language (`--lang zh,en`), under OUT/<lang>/
            with i18n.use(lang):
                translations.append((lang, plan_pages(analysis, findings, thresholds=thresholds, title=opts.title,
                                                      lazy_ranks=defer)))
    with _long_lived(), ui.stage(named(lazy("write"))):
        if opts.single_file:
            entry = _builder().write_single_file(plan, summary_now(), out, layout.root, findings=findings)
        else:
            entry = _builder().write_site(plan, summary_now, out, layout.root,
                                          progress=ui.counter(lazy("pages written")), jobs=opts.jobs,
                                          translations=translations, findings=findings)
        summary = summary_now()
    if _keep:
        _kept.append((run, analysis, findings, thresholds, plan, translations, made))
        gc.freeze()  # (held to the exit: no pass of the collector walks them again)
    return entry, summary


@contextlib.contextmanager
def _long_lived():
    """Every object made so far (the loaded run, its analysis: millions at 1,024 ranks) left out of the cyclic
    collector's passes inside the block (`gc.freeze`): the analysis, the pages' planning and writing make many
    small objects, and the full passes over the run they trigger cost ~15 % of the analyse stage's CPU (~0.3 s a
    pass at 512 ranks) and ~3-5 % of the write stage's (the forked page writers inherit the frozen state, and their
    copy-on-write pages are not touched by those passes either). The run's objects the analysis lets go are freed
    all the same (reference counting: they make no cycle, a collection after the analysis finds none). Unfrozen
    after it (a library caller's later collections see them again); left alone when the caller froze objects
    itself."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def build_report(run_dir: Path, out: Path, options: Optional[BuildOptions] = None, *,
                 ui: Optional[Progress] = None, **kw) -> BuildResult:
    """Build the report of `run_dir` into `out`. `options` (or the same fields as keywords) say how."""
    opts = options or BuildOptions(**kw)
    ui = ui or Progress(opts.progress)
    t0 = time.monotonic()
    run_dir, out = Path(run_dir), Path(out)
    output.check_output(out, run_dir, opts.single_file)
    try:
        with output.output_lock(out), i18n.use(opts.lang), \
                rankcache.use(rankcache.folder_for(out) if opts.cache else None):
            with ui.stage(lazy("discover")), gc_paused(long_lived=True):  # (what it finds is kept)
                layouts = discover(run_dir)
            log.debug("found %d run(s): %s", len(layouts),
                      "; ".join(f"{l.label} ({l.layout}, {len(l.ranks)} ranks)" for l in layouts))
            if len(layouts) == 1:
                entry, summary = build_one(layouts[0], out, opts, ui)
                res = BuildResult(entry, summary, 1, len(summary["run"]["ranks"]), 0.0)
            else:
                res = _build_many(layouts, run_dir, out, opts, ui)
    finally:
        ui.close()
    res.seconds, res.timings = time.monotonic() - t0, list(ui.timings)
    return res


def _build_many(layouts: list[RunLayout], run_dir: Path, out: Path, opts: BuildOptions, ui: Progress) -> BuildResult:
    """Several runs under one folder: one report each, and a landing page that lists them."""
    if opts.single_file:
        entry, combined = _build_subreports(layouts, run_dir, out, out.parent, opts, ui)
    else:
        with output.staged_folder(out) as staging:
            _, combined = _build_subreports(layouts, run_dir, staging, staging, opts, ui)
        entry = out / INDEX
    return BuildResult(entry, combined, len(layouts), sum(len(l.ranks) for l in layouts), 0.0)


def _build_subreports(layouts: list[RunLayout], run_dir: Path, out: Path, folder: Path, opts: BuildOptions,
                      ui: Progress) -> tuple[Path, dict]:
    entries, summaries = [], []
    for n, lay in enumerate(layouts, 1):
        sub = out.with_name(f"{out.stem}.{lay.slug}{out.suffix or '.html'}") if opts.single_file else folder / lay.slug
        ui.info(lazy("run {n}/{total}: {label} ({layout}, {ranks} ranks)", n=n, total=len(layouts), label=lay.label,
                     layout=lay.layout, ranks=len(lay.ranks)))
        entry, summary = build_one(lay, sub, replace(opts, title=f"msreport: {lay.label}"), ui)
        entries.append((lay, entry))
        summaries.append(summary)

    def href(lay: RunLayout, entry: Path) -> str:
        return entry.name if opts.single_file else f"{lay.slug}/index.html"

    def summary_name(lay: RunLayout, entry: Path) -> str:
        return entry.with_name(entry.stem + ".summary.json").name if opts.single_file else f"{lay.slug}/summary.json"

    runs_found = dq("report.separate-runs", n=len(layouts))
    combined = {
        "schema": summaries[0]["schema"],
        "tool": summaries[0]["tool"],
        "run": {"path": str(run_dir), "layout": "multiple", "ranks": [], "steps": 0,
                "parallel_mode": None, "stages": None, "thresholds": summaries[0]["run"]["thresholds"]},
        "runs": [{"path": lay.label, "folder": lay.rel(lay.base), "layout": lay.layout,
                  "summary": summary_name(lay, e)} for lay, e in entries],
        "metrics": {},
        "findings": [f for s in summaries for f in s["findings"]],
        "data_quality": [{"file": "", "problem": runs_found.en, "severity": "info", "code": runs_found.code,
                          "params": dict(runs_found.params)}] + [q for s in summaries for q in s["data_quality"]],
    }
    rows = [{"path": lay.label, "layout": lay.layout, "ranks": len(lay.ranks), "href": href(lay, e)}
            for lay, e in entries]
    with ui.stage(lazy("write the run index")):
        entry = _builder().write_runs_index(rows, combined, str(run_dir), out, single_file=opts.single_file,
                                            other_langs=opts.other_langs)
    return entry, combined
