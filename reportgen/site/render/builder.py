"""Phase 2 of the site build: render the planned pages and write them: the multi-page site (`write_site`, its rank
pages by forked writers), the single file (`write_single_file`) and the landing page of a folder of several runs
(`write_runs_index`).

Every file goes through `output` (staged beside the report and swapped into place at the end, so a failed run never
leaves a half-written report over a good one); the pages get their style and scripts from `page_assets`.
"""

from __future__ import annotations

import gc
import json
import multiprocessing
import posixpath
import re
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence, Union

from jinja2 import Environment
from markupsafe import Markup

from reportgen import __version__, i18n, rankcache
from reportgen.pools import can_fork, deferred_sigint, init_worker, release_freed_memory, stop_pool
from reportgen.site.plan.page import Page, SitePlan
from reportgen.site.render.assets import short_hash
from reportgen.site.render import csv_store, reuse, trace_copies
from reportgen.site.render.csv_store import CsvStore
from reportgen.site.render.csv_text import csv_text
from reportgen.site.render.findings_md import findings_markdown
from reportgen.site.render.jinja_env import make_env
from reportgen.site.render.output import (atomic_write, check_output, json_text, staged_folder, write_index_files,
                                          write_marker)
from reportgen.site.render.page_assets import PageAssets, style
from reportgen.urls import FINDINGS_MD, INDEX, in_tree, language_href, tree_root, url_function


PARALLEL_MIN_PAGES = 64  # rank pages below this are written in this process (a pool costs more than it saves)


@dataclass
class LanguageTree:
    """One language of the site: its planned pages and where they go (`root`: "" or "en/", see `urls.tree_root`)."""

    lang: str
    root: str
    plan: SitePlan
    specs: str  # its rank pages' shared chart specs (the specs carry translated titles: one file per language)
    others: list = field(default_factory=list)  # the other trees: (lang, root) for the language switch

    def lang_links(self, page_path: str) -> list[dict]:
        return [{"code": lang, "label": i18n.LANGUAGE_NAMES.get(lang, lang),
                 "href": language_href(page_path, self.root, root)} for lang, root in self.others]


def language_trees(plan: SitePlan, translations: Sequence[tuple[str, SitePlan]] = ()) -> list[LanguageTree]:
    """The primary language's tree (the current language, at the root) and one tree per other language."""
    trees = [LanguageTree(i18n.current(), "", plan, SHARED_SPECS)]
    trees += [LanguageTree(lang, tree_root(lang, primary=False), p, SHARED_SPECS.replace(".js", f"-{lang}.js"))
              for lang, p in translations]
    for t in trees:
        t.others = [(o.lang, o.root) for o in trees if o is not t]
    return trees


def write_site(plan: SitePlan, summary: Union[dict, Callable[[], dict]], out: Path, run_root: Path, *,
               progress: Optional[Callable[[int, int], None]] = None, jobs: int = 1,
               translations: Sequence[tuple[str, SitePlan]] = (), findings: Optional[Sequence] = None) -> Path:
    """Write the multi-page site to folder `out`; return the path of index.html.

    With `jobs` > 1 the rank pages (thousands of them on a large run) are rendered and written by `jobs` - 1
    worker processes, forked from this one so the planned pages are not pickled, and by this one once its cluster
    pages are written (`_RankWriters`); each worker sends back only the chart specs its pages share.

    `translations`: the same site planned in other languages, written under `out/<lang>/`; every page of each
    language links to the same page of the others. summary.json is written once (this build's language),
    findings.md in each language's tree (`findings`: the typed findings, rendered in each language; without them,
    the summary's, in the first tree only). `summary` may be a function: it is then called while the rank pages are being written."""
    check_output(out, run_root, single_file=False)
    trees = language_trees(plan, translations)
    folder = rankcache.active()  # the gzipped CSVs of the last build, kept in its cache folder
    store = CsvStore(folder, CSV_GZIP) if folder is not None else None  # (active: None for a planted link)
    _MADE.clear()
    with staged_folder(out) as tmp, csv_store.use(store), reuse.use(reuse.Previous(out, tmp)):
        assets = PageAssets.write(tmp)
        done, made = 0, {}

        def meanwhile() -> None:  # the first tree's rank writers are at work: build the summary here meanwhile
            if "summary" not in made:  # (and its text: ~60 ms at 1,024 ranks, not after the last page)
                made["summary"] = summary() if callable(summary) else summary
                made["text"] = summary_text(made["summary"])
        exports = list(plan.exports)  # the trace copies: the first tree's page writers take them when forked
        trace_copies.prune(run_root, [ex.dest for ex in exports if ex.dest.endswith(".gz")])  # (others' kept copies)
        for tree in trees:
            with i18n.use(tree.lang):
                # the total grows as each tree's cluster pages are planned (the progress counter shows it)
                total = sum(t.plan.page_count() for t in trees)
                done = _write_tree(tree, tmp, assets, jobs, progress, done, total, meanwhile,
                                   exports=(run_root, exports))
        meanwhile()
        summary = made["summary"]
        for ex in exports:  # (no forked writers: copied here)
            trace_copies.export_trace(run_root, ex, tmp)
        (tmp / "summary.json").write_text(made["text"], encoding="utf-8")
        for tree in trees if findings is not None else trees[:1]:
            with i18n.use(tree.lang):
                (tmp / in_tree(tree.root, FINDINGS_MD)).write_text(findings_markdown(summary, findings),
                                                                     encoding="utf-8")
        write_marker(tmp)
        if store is not None:
            store.save()
    return out / INDEX


def _write_tree(tree: LanguageTree, tmp: Path, assets: PageAssets, jobs: int,
                progress: Optional[Callable[[int, int], None]], done: int, total: int,
                meanwhile: Callable[[], None] = lambda: None, exports: Optional[tuple[Path, list]] = None) -> int:
    """Write one language's pages (in the current language); return the count of pages written so far.
    `exports`: (run folder, trace copies still to make): forked page writers make them (the list is emptied),
    beside the rank pages and while this process writes the cluster pages (~0.1 s of CPU each)."""
    env = make_env()
    plan = tree.plan
    shared = SharedSpecs()
    # rank pages: planned ones, and the lazy ones (planned as they are written: `SitePlan.page_at`)
    rank_idx = plan.rank_page_ids()
    parallel = jobs > 1 and len(rank_idx) >= PARALLEL_MIN_PAGES and can_fork()
    # the rank pages' writers are forked and given their pages first; this process then plans and writes the
    # cluster pages (and `meanwhile`) while they work: on two cores that hides most of that time
    copies: list = []  # (run folder, trace export) for the writers
    if parallel and exports is not None:
        copies = [(exports[0], ex) for ex in exports[1]]
        exports[1].clear()
    if parallel:  # loaded before the fork: each writer would load (or compile) them again
        preload(env, RANK_TEMPLATES)
    elsewhere = ELSEWHERE if parallel and plan.later is not None else ()
    writers = _RankWriters(env, tree, rank_idx, tmp, assets, jobs, copies, elsewhere) if parallel else None
    try:
        before = len(plan.pages)
        plan.realize(elsewhere)
        total += len(plan.pages) - before  # the pages planned just now
        serial = [i for i, p in enumerate(plan.pages) if not parallel or p.nav != "ranks"]
        if not parallel:
            serial += [i for i in rank_idx if i < 0]
        for i in serial:
            write_page(env, tree, plan.page_at(i), tmp, assets, shared)
            done += 1
            if progress:
                progress(done, total)
        meanwhile()
        if writers is not None:
            for chunk in writers.claimed():  # this process writes rank pages too: the chunks no writer claimed
                for i in chunk:
                    write_page(env, tree, plan.page_at(i), tmp, assets, shared)
                if progress:
                    progress(done + writers.written(), total)
            for n, (specs, csvs), planned in writers.results():
                shared.specs.update(specs)
                if csvs is not None and csv_store.active() is not None:
                    csv_store.active().merge(csvs)
                total += planned  # cluster pages a writer planned (not counted before)
                done += n
            done += writers.written()
            if progress:
                progress(done, total)
    finally:
        if writers is not None:
            writers.close()
    (tmp / tree.specs).write_text(shared.script(), encoding="utf-8")
    return done


RANK_TEMPLATES = ("page.html", "base.html", "_macros.html", "_rank.html")  # and the sections' `_rank_*.html`


def preload(env: Environment, names: Sequence[str]) -> None:
    """Load the templates `names` and every `_rank_*.html` (rank sections) into `env`'s cache."""
    for name in [*names, *(n for n in env.list_templates(extensions=["html"]) if n.startswith("_rank_"))]:
        env.get_template(name)


_HREFS: dict = {}


def _site_url(page: str, root: str):
    """`url_function(page, single=False, root=root)`, its answers for string targets remembered: a site link
    depends only on the folder of the page (every rank page is in `ranks/`) and the target, and a rank page
    resolves some 25 links (each a `relpath`, which asks the OS for the working folder twice)."""
    url = url_function(page, single=False, root=root)
    folder = posixpath.dirname(in_tree(root, page)) or "."

    def cached(target) -> str:
        if type(target) is not str:
            return url(target)
        key = (root, folder, target)
        out = _HREFS.get(key)
        if out is None:
            if len(_HREFS) > 100_000:
                _HREFS.clear()
            out = _HREFS[key] = url(target)
        return out
    cached.resolver = url.resolver  # type: ignore[attr-defined]
    return cached


# gzip levels (issue 33: the site's size goal at 1,024 ranks). The CSVs of a large run (`CSV_GZIP`): level 9 up to
# 32 KiB of CSV text, 6 above. A rank's operator tables (a few KB: 2,000 of the 2,048 CSVs of the 1,024-rank trace
# benchmark) cost ~0.1 ms at level 9 and are 6 % larger at 6; a rank's 1,600 communication operators (~170 KB of
# text, the comm benchmark) cost 0.82 ms at level 9 and 0.41 ms at 6 for 11 % more bytes (4.9 -> 5.4 KB a rank:
# ~0.5 MB of a 38 MB site at 1,024 ranks, 0.4 s of CPU less).
# (the copied traces' levels: `trace_copies.TRACE_GZIP`)
CSV_GZIP = csv_store.GzipLevels(small=9, large=6, large_bytes=32 * 1024)


def write_page(env: Environment, tree: LanguageTree, page: Page, tmp: Path, assets: PageAssets,
                shared: "SharedSpecs") -> None:
    url = _site_url(page.path, tree.root)
    per_rank = page.nav == "ranks"  # thousands of pages with the same chart shapes: share the specs
    html = render(env, "page.html", tree.plan, page, url, single=False,
                   **assets.template_vars(url), asset_specs=url(tree.specs) if per_rank else "",
                   share_spec=shared.share if per_rank else _no_sharing,
                   lang_links=tree.lang_links(page.path))
    rel = in_tree(tree.root, page.path)
    target = tmp / rel
    _folder(target.parent)
    reuse.put_text(target, rel, html)  # (a link to the replaced report's file when it holds the same bytes)
    for path, columns, rows in page.downloads:  # the page's CSVs (a rank page's: written by the same worker)
        rel = in_tree(tree.root, path)
        dest = tmp / rel
        _folder(dest.parent)
        if path.endswith(".gz"):  # a large run's per-rank tables; mtime 0: the same bytes on every build
            reuse.put(dest, rel, csv_store.gz_csv(columns, rows, CSV_GZIP))  # (kept from the last build)
        else:
            reuse.put_text(dest, rel, csv_text(columns, rows))


_MADE: set = set()  # folders known to exist (a rank page's folder is asked for three times a page)


def _folder(p: Path) -> None:
    if p not in _MADE:
        p.mkdir(parents=True, exist_ok=True)
        if len(_MADE) > 10_000:
            _MADE.clear()
        _MADE.add(p)


# What the forked page writers read: set just before the pool starts, inherited by the children (never pickled).
_FORKED: dict = {}


# cluster pages planned and written by a forked writer, beside the rank pages, instead of this process (the main
# process's cluster pages were the write stage's critical path once the rank pages cost less: the communication
# page's planning and rendering are ~40 % of the cluster pages' at 512 ranks)
# the execution page's planning (its Marey layouts and charts: ~1 s of CPU at 128 trace ranks) too: each kind is a
# task of its own, so two writers take them side by side
ELSEWHERE = ("communication", "execution")


MIN_CHUNK = 4  # rank pages a claim at least


class _RankWriters:
    """`jobs` - 1 forked processes rendering and writing the rank pages `idx`, started at once, and this process
    the `jobs`-th once its own pages are written: each claims the next chunk of pages from a counter they share
    (`claimed`; ~32 chunks per process, so none waits long for another's last chunk). `results()` yields (pages,
    (their shared specs, the CSV store's delta), pages planned there) per cluster-page task a writer did, then per
    writer (its rank pages are counted by `written`); `close()` stops them (at once after a failure or Ctrl-C: the
    staged folder is then discarded). `kinds`: cluster page kinds a writer plans and writes first
    (`SitePlan.plan_elsewhere`).

    (`jobs` writers beside this process kept three processes on two cores, each forked one holding, in its page
    tables, every page of this process's memory: ~0.6 GB each at 1,024 ranks, counted once per process in the
    tree's RSS; the CPU is the same either way.)"""

    def __init__(self, env: Environment, tree: LanguageTree, idx: list[int], tmp: Path, assets: PageAssets,
                 jobs: int, copies: Sequence[tuple] = (), kinds: Sequence[str] = ()) -> None:
        size = max(MIN_CHUNK, len(idx) // (jobs * 32))
        self.chunks = [idx[i:i + size] for i in range(0, len(idx), size)]
        ctx = multiprocessing.get_context("fork")
        # the next chunk to claim and the rank pages written, shared by the writers and this process
        self.next, self.done = ctx.Value("i", 0), ctx.Value("i", 0)
        release_freed_memory()  # (the planning's freed heap: each writer's page tables would hold it too)
        _FORKED.update(env=env, tree=tree, tmp=tmp, assets=assets, chunks=self.chunks, next=self.next,
                       done=self.done)
        writers = max(1, jobs - 1)
        self.ex = ProcessPoolExecutor(max_workers=writers, mp_context=ctx, initializer=init_worker)
        self.ok = False
        try:
            with deferred_sigint():  # the workers are forked at the first submit
                # the trace copies first (the longest tasks), then the cluster pages, then the rank pages
                self.copies = [self.ex.submit(trace_copies.export_trace, root, ex, tmp) for root, ex in copies]
                self.kinds = [self.ex.submit(_write_kinds, (k,)) for k in kinds]
                self.futs = [self.ex.submit(_write_claimed) for _ in range(writers)]
        except BaseException:
            self.close()
            raise

    def claimed(self):
        """The chunks this process claims, one at a time, until none is left."""
        yield from _claims(self.chunks, self.next, self.done)

    def written(self) -> int:
        """Rank pages written so far, by every process."""
        return self.done.value

    def results(self):
        for fut in self.kinds:
            n, got = fut.result()
            yield n, got, n
        for fut in self.futs:
            yield 0, fut.result(), 0
        for fut in self.copies:
            fut.result()
        self.ok = True

    def close(self) -> None:
        _FORKED.clear()
        if self.ok:
            self.ex.shutdown()
        else:  # Ctrl-C or a failure: stop the workers now (the staged folder is discarded)
            stop_pool(self.ex)


def _claims(chunks: list, counter, done):
    """The chunks of `chunks` claimed from the shared `counter`, one at a time (each counted in `done` once the
    caller is back for the next). Where the build froze what it holds (`report._long_lived`, inherited by the forked
    writers), what the pages written so far left behind is frozen too as each chunk is done: the ranks' opened
    operator and memory frames (~140 objects a page, and no garbage cycle among them), which the collector's full
    passes would otherwise walk again and again as they pile up (~0.3 s of CPU a process over a 1,024-rank site)."""
    last = None
    freeze = gc.get_freeze_count() > 0  # (asked once: it counts the frozen objects one by one)
    while True:
        if last is not None:
            if freeze:
                gc.freeze()
            with done.get_lock():
                done.value += len(last)
        with counter.get_lock():
            j = counter.value
            counter.value = j + 1
        if j >= len(chunks):
            return
        last = chunks[j]
        yield last


def _write_claimed() -> tuple[dict, Optional[tuple]]:
    """In a forked writer: render and write the rank pages of every chunk it claims; return the chart specs they
    share and what the CSV store gained (`CsvStore.delta`: tables written, tables used)."""
    st = _FORKED
    shared = SharedSpecs()
    tree = st["tree"]
    with i18n.use(tree.lang):  # a worker may be forked from a thread that does not carry the build's language
        for chunk in _claims(st["chunks"], st["next"], st["done"]):
            for i in chunk:
                write_page(st["env"], tree, tree.plan.page_at(i), st["tmp"], st["assets"], shared)
    store = csv_store.active()
    return shared.specs, store.delta() if store is not None else None


def _write_kinds(kinds: tuple) -> tuple[int, tuple[dict, Optional[tuple]]]:
    """In a forked worker: plan and write the cluster pages of `kinds`; return their count and what the CSV store
    gained."""
    st = _FORKED
    tree = st["tree"]
    with i18n.use(tree.lang):
        pages = tree.plan.plan_elsewhere(kinds)
        shared = SharedSpecs()
        for page in pages:
            write_page(st["env"], tree, page, st["tmp"], st["assets"], shared)
    store = csv_store.active()
    return len(pages), (shared.specs, store.delta() if store is not None else None)


def summary_text(summary: dict) -> str:
    """summary.json's text: compact JSON (no indentation: 40 % of the file at 1,024 ranks; readers parse it, and
    `python -m json.tool` shows it indented)."""
    return json_text(summary, separators=(",", ":"))


SHARED_SPECS = "assets/rank-specs.js"


def _no_sharing(chart) -> None:
    return None


class SharedSpecs:
    """Chart specs shared by the rank pages: each page carries only its chart's data and the key of its spec in
    `assets/rank-specs.js` (the spec without data is the same on every rank page of a shape)."""

    def __init__(self) -> None:
        self.specs: dict[str, dict] = {}
        self._keys: dict[tuple, tuple[list, str]] = {}

    def share(self, chart) -> Optional[dict]:
        spec = chart["spec"] if isinstance(chart, dict) else chart.spec
        if "datasets" not in spec:
            return None
        body = {k: v for k, v in spec.items() if k != "datasets"}
        # a shape's pages carry the very same spec objects (built once, never modified): their key is remembered
        # by the objects' identities (held here, so no id is reused) instead of hashing the spec's JSON each page
        ident = tuple((k, id(v)) for k, v in body.items())
        known = self._keys.get(ident)
        if known is not None and all(a is b for a, b in zip(known[0], body.values())):
            key = known[1]
        else:
            key = short_hash(json.dumps(body, sort_keys=True, separators=(",", ":"), default=str))
            self._keys[ident] = (list(body.values()), key)
        self.specs.setdefault(key, body)
        return {"key": key, "data": {"datasets": spec["datasets"]}}

    def script(self) -> str:
        """The shared specs' script, by key (the same bytes whichever process wrote which page first)."""
        text = json_text(dict(sorted(self.specs.items())), separators=(",", ":"))
        return "window.MSREPORT_SPECS = " + text.replace("</", "<\\/") + ";\n"


def render(env: Environment, template: str, plan: SitePlan, page: Page, url, *, single: bool, **extra) -> str:
    """Render one page's template (`page.html` around its partial, or the partial alone) with its context."""
    extra.setdefault("share_spec", _no_sharing)
    extra.setdefault("asset_specs", "")
    return env.get_template(template).render(page=page, ctx=page.context, charts=page.charts, nav=plan.nav, url=url,
                                             single=single, gz_csvs=plan.large, **extra)


def write_single_file(plan: SitePlan, summary: dict, out: Path, run_root: Path,
                      findings: Optional[Sequence] = None) -> Path:
    """Write one self-contained HTML file (Vega inlined once) and `<name>.summary.json` beside it.

    The same partials as the site, with the same contexts, stacked in one page; rank pages become one compact
    rank view. Links are resolved for the single file (anchors inside it)."""
    check_output(out, run_root, single_file=True)
    env = make_env()
    url = url_function(INDEX, single=True)
    fragments = [Markup(render(env, page.partial, plan, page, url, single=True))
                 for page in plan.pages if page.single]
    index = next(p for p in plan.pages if p.path == INDEX)
    sr = plan.single_ranks
    # the flagged ranks' whole pages, their ids scoped so they cannot clash with the cluster sections' ids
    rank_pages = [{"rank": p.context.rank, "anchor": f"r{p.context.rank}-rank-page-{p.context.rank}",
                   "html": Markup(scope_ids(render(env, p.partial, plan, p, url, single=True),
                                            f"r{p.context.rank}-"))} for p in sr.pages]
    html = env.get_template("single.html").render(
        page=index, ctx=index.context, charts=[], nav=plan.nav, url=url, single=True, fragments=fragments,
        rank_data=sr.data, rank_meta=sr.meta, rank_pages=rank_pages, line_template=sr.line_template,
        rank_ids=sr.rank_ids,
        **PageAssets.inline().template_vars())
    out.parent.mkdir(parents=True, exist_ok=True)
    summary_path = out.with_name(out.stem + ".summary.json")
    atomic_write(out, html)
    atomic_write(summary_path, summary_text(summary))
    atomic_write(out.with_name(out.stem + ".findings.md"), findings_markdown(summary, findings))
    return out


_ID_ATTR = re.compile(r'\bid="([^"]+)"')
_ID_REFS = re.compile(r'\b(href="#|data-filter="|data-colfilter="|data-slowonly="|data-table=")([^"]+)"')


def scope_ids(html: str, prefix: str) -> str:
    """Prefix every id defined in an HTML fragment, and the in-page references to them (`href="#id"`, the table
    tools' `data-filter` & co.), so the fragment can sit in a page that defines the same ids."""
    own = set(_ID_ATTR.findall(html))
    html = _ID_ATTR.sub(lambda m: f'id="{prefix}{m.group(1)}"', html)
    return _ID_REFS.sub(lambda m: f'{m.group(1)}{prefix}{m.group(2)}"' if m.group(2) in own else m.group(0), html)


def write_runs_index(rows: list[dict], summary: dict, root: str, out: Path, *, single_file: bool,
                     other_langs: Sequence[str] = ()) -> Path:
    """Landing page (and combined summary) for a folder that holds several runs.

    Site mode: `out` is the (staged) report folder. Single-file mode: `out` is the HTML file. `other_langs`: the
    sub-reports also carry these languages (`<slug>/<lang>/`); a landing page per language links to them, and
    each landing page to the other ones."""
    trees = [("", i18n.current())] + [(tree_root(lang, primary=False), lang) for lang in other_langs]

    def page(tree_dir: str, lang: str) -> str:
        links = [{"code": code, "label": i18n.LANGUAGE_NAMES.get(code, code),
                  "href": language_href(INDEX, tree_dir, other)} for other, code in trees if code != lang]
        tree_rows = [dict(r, href=posixpath.relpath(posixpath.join(posixpath.dirname(r["href"]), tree_dir, INDEX),
                                                     tree_dir or ".")) for r in rows] if tree_dir else rows
        with i18n.use(lang):
            return make_env().get_template("runs.html").render(runs=tree_rows, root=root, version=__version__,
                                                               css=style(),
                                                               lang_links=links)

    entry = write_index_files(out, page("", trees[0][1]), summary_text(summary), single_file=single_file)
    if not single_file:
        for tree_dir, lang in trees[1:]:
            (out / tree_dir).mkdir(parents=True, exist_ok=True)
            (out / tree_dir / INDEX).write_text(page(tree_dir, lang), encoding="utf-8")
    return entry
