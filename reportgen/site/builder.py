"""Phase 2 of the site build: render the planned pages and write them. The only module that writes output.

Output is written to a temporary sibling and moved into place at the end, so a failed run never leaves a
half-written report over a good one.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
import multiprocessing
import posixpath
import re
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence, Union

from jinja2 import (
    Environment,
    PackageLoader,
    StrictUndefined,
    pass_context,
    select_autoescape,
)
from markupsafe import Markup

from reportgen import __version__, fmt, i18n
from reportgen.loaders import timeline
from reportgen.pools import deferred_sigint, ignore_sigint, stop_pool
from reportgen.site import html_rows
from reportgen.site.assets import short_hash, static_text, vega_bundle
from reportgen.site.findings_md import findings_markdown
from reportgen.site.problems import translate_problem
from reportgen.site.csp import csp_hash
from reportgen.site.page import LazyRows, Page, SitePlan
from reportgen.urls import INDEX, in_tree, language_href, tree_root, url_function

# Output writing (staging, swap, marker, umask, locks) lives in site/output.py; these names stay importable here.
from reportgen.site.output import (MARKER, _swap_into_place, check_output, staged_folder,  # noqa: E402,F401 - re-exported
                                   write_index_files)
from reportgen.site.output import atomic_write as _atomic_write, json_text  # noqa: E402


# The rank tables' cells and rows are built in Python (site/html_rows.py); these names stay importable here.
_sort_key, _num_cell, _ms_cells = html_rows.sort_key, html_rows.num_cell, html_rows.ms_cells


_INF = (float("inf"), float("-inf"))
_PLAIN = frozenset((int, str, bool, type(None)))  # page JSON values `_compact` leaves as they are


def _compact(value, href=None):
    """Page-embedded JSON (chart data, the step selector's and the single file's rank tables) with floats cut to 7
    significant digits: the pages show at most 3 decimals, and `167.83036663599998` is most of a large run's
    chart bytes. summary.json and the CSVs keep every digit.

    `href` (the page's resolver's `href`): also resolve every string under an `href` (or `*_href`) key, as
    `urls.resolve_hrefs` does, in the same walk (a rank page's chart data has thousands of numbers to walk)."""
    if isinstance(value, float):
        return float(f"{value:.7g}") if value == value and value not in _INF else value
    if isinstance(value, dict):
        if href is not None:
            return {k: ((href(v) or "") if isinstance(v, str) and (k == "href" or k.endswith("_href")) else
                        v if type(v) in _PLAIN else _compact(v, href)) for k, v in value.items()}
        return {k: v if type(v) in _PLAIN else _compact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if type(v) in _PLAIN else _compact(v, href) for v in value]
    if isinstance(value, tuple):  # (no href is looked for inside a tuple, as in `urls.resolve_hrefs`)
        return [v if type(v) in _PLAIN else _compact(v) for v in value]
    return value


@pass_context
def _json_script(context, value) -> Markup:
    """JSON for a <script type="application/json"> block, with </script> and <!-- made harmless.

    Every `href` in the data is resolved from the page being rendered (chart links, the step table's rows)."""
    url = context.get("url")  # (`url(target)` is the resolver's href, "" for none)
    text = json_text(_compact(value, url if hasattr(url, "resolver") else None), separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text)


_DICT_ATTRS = frozenset(dir(dict))


class _Environment(Environment):
    """Jinja's environment; `row.key` on a plain dict (the rows of every table) is looked up as the key at once
    when `dict` has no such attribute. Jinja finds the same value, after raising and catching an AttributeError
    (a rank page has some 900 such lookups)."""

    def getattr(self, obj, attribute):
        if type(obj) is dict and attribute not in _DICT_ATTRS:
            try:
                return obj[attribute]
            except KeyError:
                pass
        return Environment.getattr(self, obj, attribute)


def make_env() -> Environment:
    # auto_reload off: the templates do not change during a build (Jinja would stat each one at every include)
    env = _Environment(loader=PackageLoader("reportgen", "templates"), autoescape=select_autoescape(default=True),
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, auto_reload=False)
    i18n.install(env)  # `_()` / `{% trans %}` in the templates, in the language of this build
    env.globals.update(html_lang=i18n.html_lang(), lang=i18n.current())
    # `_("literal")` is for the templates' own text (newstyle gettext marks its result safe and escapes only the
    # named parameters); text that comes from data is translated with `|t`, which returns a plain, escaped string.
    env.filters["t"] = html_rows.translate
    env.filters["problem"] = translate_problem  # a stored data-quality problem in the report language
    env.filters.update(ms=fmt.ms_cell, pct=fmt.percent, pct1=fmt.share, num=fmt.number, jsonscript=_json_script,
                       signed_pct=lambda v, digits=1: fmt.signed_percent(v, fmt.MISSING, digits),
                       csp_hash=csp_hash, **html_rows.FILTERS)
    env.globals["num_cell_fn"] = _num_cell  # `num_cell` in _macros.html
    env.globals["lang_links"] = []  # a site in two languages: the link to the same page in the other one
    env.globals["_"] = _template_gettext(i18n.translations(i18n.current()).gettext)
    return env


def _template_gettext(lookup: Callable[[str], str]):
    """The templates' `_()`: what Jinja's newstyle gettext returns (the message looked up, made Markup under
    autoescape, then `% variables`, which escapes the variables), in one call instead of three, and a message
    without variables looked up once per build (a rank page has 125 `_()` calls, thousands of pages the same)."""
    done: dict = {}

    @pass_context
    def gettext(context, message: str, **variables):
        if variables:
            rv = lookup(message)
            return (Markup(rv) if context.eval_ctx.autoescape else rv) % variables
        key = (message, context.eval_ctx.autoescape)
        rv = done.get(key)
        if rv is None:
            rv = done[key] = (Markup(lookup(message)) if key[1] else lookup(message)) % variables
        return rv
    return gettext


def csv_value(v):
    """A CSV cell: whole floats as integers (a count is `208`, not `208.0`); other floats with the digits the data
    carries, 9 significant digits or 6 decimals, whichever keeps more (ms totals of nanosecond durations keep every
    nanosecond; `8.552121000000003` becomes `8.552121`, summation noise dropped). Timestamps and other numbers of
    12+ digits keep their shortest repr. `tests/test_size.py` checks the round trip."""
    if type(v) is float:
        a = abs(v)
        if a < 1000.0:  # (NaN fails every comparison: below)
            return int(v) if v.is_integer() else f"{v:.9g}"  # fewer than 4 integer digits: 9 significant
        if not math.isfinite(v):
            return v
        if v.is_integer() and a < 1e15:
            return int(v)
        digits = max(9, math.floor(math.log10(a)) + 1 + 6)
        return repr(v) if digits >= 17 else f"{v:.{digits}g}"
    if isinstance(v, float) and not isinstance(v, bool):  # a float subclass (numpy float64): the same rule
        return csv_value(float(v))
    return v


def _csv_field(v) -> str:
    """What `csv.writer` writes for a cell holding `v` (after `csv_value`): floats as their repr, else str."""
    v = csv_value(v)
    return v if isinstance(v, str) else repr(v) if isinstance(v, float) else str(v)


_CSV_SPECIAL = re.compile('[,"\r\n]').search  # a field holding one of these is quoted (csv.QUOTE_MINIMAL)


def _csv_quoted(field: str) -> str:
    return '"' + field.replace('"', '""') + '"' if _CSV_SPECIAL(field) else field


def _csv_text(columns: list[dict], rows) -> str:
    """A download's CSV, as `csv.writer` writes it: a header of the columns' labels, then a line per row (rows of
    dicts, or a `LazyRows` that gives its table column by column). Built column by column, each cell as
    `csv_value` writes it (its commonest cases inline: a large run writes millions of cells), a column scanned
    once for characters that need quotes."""
    keys = [c["key"] for c in columns]
    if isinstance(rows, LazyRows) and rows.columns:
        table = rows.fn()
        n = len(next(iter(table.values()), ()))
    else:
        rows = list(rows)
        table, n = {k: [r.get(k) for r in rows] for k in keys}, len(rows)
    if len(keys) < 2:  # (csv writes a lone empty field as "")
        buf = io.StringIO()
        w = csv.writer(buf)
        w.writerow([c["label"] for c in columns])
        w.writerows([["" if v is None else csv_value(v) for v in vals] for vals in zip(*[table.get(k) or [None] * n
                                                                                          for k in keys])]
                    if keys else [[]] * n)
        return buf.getvalue()
    cells = []
    for k in keys:
        col = ["" if v is None else v if (t := type(v)) is str else str(v) if t is int else
               ((str(int(v)) if v.is_integer() else f"{v:.9g}") if t is float and -1000.0 < v < 1000.0 else
                _csv_field(v)) for v in table.get(k) or [None] * n]
        if _CSV_SPECIAL("\x00".join(col)):
            col = [_csv_quoted(f) for f in col]
        cells.append(col)
    header = ",".join(_csv_quoted(str(c["label"])) for c in columns)
    return "\r\n".join([header, *map(",".join, zip(*cells))]) + "\r\n"


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

    With `jobs` > 1 the rank pages (thousands of them on a large run) are rendered and written by that many
    worker processes, forked from this one so the planned pages are not pickled; each worker sends back only the
    chart specs its pages share.

    `translations`: the same site planned in other languages, written under `out/<lang>/`; every page of each
    language links to the same page of the others. summary.json is written once (this build's language),
    findings.md in each language's tree (`findings`: the typed findings, rendered in each language; without them,
    the summary's, in the first tree only). `summary` may be a function: it is then called while the rank pages are being written."""
    check_output(out, run_root, single_file=False)
    trees = language_trees(plan, translations)
    with staged_folder(out) as tmp:
        assets = tmp / "assets"
        assets.mkdir()
        names = {}
        for key, text, ext in (("vega", vega_bundle(), "js"), ("css", static_text("report.css"), "css"),
                               ("js", static_text("report.js"), "js")):
            name = f"{key}-{short_hash(text)}.{ext}"
            (assets / name).write_text(text, encoding="utf-8")
            names[key] = "assets/" + name
        done, made = 0, {}

        def meanwhile() -> None:  # the first tree's rank writers are at work: build the summary here meanwhile
            if "summary" not in made:
                made["summary"] = summary() if callable(summary) else summary
        for tree in trees:
            with i18n.use(tree.lang):
                # the total grows as each tree's cluster pages are planned (the progress counter shows it)
                total = sum(t.plan.page_count() for t in trees)
                done = _write_tree(tree, tmp, names, jobs, progress, done, total, meanwhile)
        meanwhile()
        summary = made["summary"]
        for ex in plan.exports:
            _export_trace(run_root, ex, tmp)
        (tmp / "summary.json").write_text(json_text(summary, indent=2), encoding="utf-8")
        for tree in trees if findings is not None else trees[:1]:
            with i18n.use(tree.lang):
                (tmp / in_tree(tree.root, "findings.md")).write_text(findings_markdown(summary, findings),
                                                                     encoding="utf-8")
        (tmp / MARKER).write_text(f"msreport {__version__}\n", encoding="utf-8")
    return out / INDEX


def _write_tree(tree: LanguageTree, tmp: Path, names: dict, jobs: int,
                progress: Optional[Callable[[int, int], None]], done: int, total: int,
                meanwhile: Callable[[], None] = lambda: None) -> int:
    """Write one language's pages (in the current language); return the count of pages written so far."""
    env = make_env()
    plan = tree.plan
    shared = SharedSpecs()
    # rank pages: planned ones, and the lazy ones (planned as they are written: `SitePlan.page_at`)
    rank_idx = plan.rank_page_ids()
    parallel = jobs > 1 and len(rank_idx) >= PARALLEL_MIN_PAGES and "fork" in multiprocessing.get_all_start_methods()
    # the rank pages' writers are forked and given their pages first; this process then plans and writes the
    # cluster pages (and `meanwhile`) while they work: on two cores that hides most of that time
    writers = _RankWriters(env, tree, rank_idx, tmp, names, jobs) if parallel else None
    try:
        before = len(plan.pages)
        plan.realize()
        total += len(plan.pages) - before  # the pages planned just now
        serial = [i for i, p in enumerate(plan.pages) if not parallel or p.nav != "ranks"]
        if not parallel:
            serial += [i for i in rank_idx if i < 0]
        for i in serial:
            _write_page(env, tree, plan.page_at(i), tmp, names, shared)
            done += 1
            if progress:
                progress(done, total)
        meanwhile()
        if writers is not None:
            for n, specs in writers.results():
                shared.specs.update(specs)
                done += n
                if progress:
                    progress(done, total)
    finally:
        if writers is not None:
            writers.close()
    (tmp / tree.specs).write_text(shared.script(), encoding="utf-8")
    return done


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


def _write_page(env: Environment, tree: LanguageTree, page: Page, tmp: Path, names: dict,
                shared: "SharedSpecs") -> None:
    url = _site_url(page.path, tree.root)
    per_rank = page.nav == "ranks"  # thousands of pages with the same chart shapes: share the specs
    html = _render(env, "page.html", tree.plan, page, url, single=False,
                   asset_css=url(names["css"]), asset_js=url(names["js"]), asset_vega=url(names["vega"]),
                   asset_specs=url(tree.specs) if per_rank else "",
                   share_spec=shared.share if per_rank else _no_sharing,
                   inline_css="", inline_js="", inline_vega="", lang_links=tree.lang_links(page.path))
    target = tmp / in_tree(tree.root, page.path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(html, encoding="utf-8")
    for path, columns, rows in page.downloads:  # the page's CSVs (a rank page's: written by the same worker)
        dest = tmp / in_tree(tree.root, path)
        dest.parent.mkdir(parents=True, exist_ok=True)
        text = _csv_text(columns, rows)
        if path.endswith(".gz"):  # a large run's per-rank tables; mtime 0: the same bytes on every build
            dest.write_bytes(gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0))
        else:
            dest.write_text(text, encoding="utf-8")


# What the forked page writers read: set just before the pool starts, inherited by the children (never pickled).
_FORKED: dict = {}


class _RankWriters:
    """`jobs` forked processes rendering and writing the pages `idx` (in chunks), started at once; `results()`
    yields (pages written, their shared specs) per chunk, in order; `close()` stops them (at once after a failure
    or Ctrl-C: the staged folder is then discarded)."""

    def __init__(self, env: Environment, tree: LanguageTree, idx: list[int], tmp: Path, names: dict,
                 jobs: int) -> None:
        size = max(8, -(-len(idx) // (jobs * 8)))  # ~8 chunks per worker: even load, little messaging
        self.chunks = [idx[i:i + size] for i in range(0, len(idx), size)]
        _FORKED.update(env=env, tree=tree, tmp=tmp, names=names)
        self.ex = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("fork"),
                                      initializer=ignore_sigint)
        self.ok = False
        try:
            with deferred_sigint():  # the workers are forked at the first submit
                self.futs = [self.ex.submit(_write_chunk, c) for c in self.chunks]
        except BaseException:
            self.close()
            raise

    def results(self):
        for c, fut in zip(self.chunks, self.futs):
            yield len(c), fut.result()
        self.ok = True

    def close(self) -> None:
        _FORKED.clear()
        if self.ok:
            self.ex.shutdown()
        else:  # Ctrl-C or a failure: stop the workers now (the staged folder is discarded)
            stop_pool(self.ex)


def _write_chunk(idx: list[int]) -> dict:
    """In a forked worker: render and write the pages `idx`; return the chart specs they share."""
    st = _FORKED
    shared = SharedSpecs()
    tree = st["tree"]
    with i18n.use(tree.lang):  # a worker may be forked from a thread that does not carry the build's language
        for i in idx:
            _write_page(st["env"], tree, tree.plan.page_at(i), st["tmp"], st["names"], shared)
    return shared.specs


def _export_trace(run_root: Path, ex, tmp: Path) -> None:
    """Copy (or convert) a rank's trace into the site. The source path came from discovery, inside the run."""
    src = (run_root / ex.source).resolve()
    try:
        src.relative_to(run_root.resolve())
    except ValueError:
        return  # never read outside the run folder
    target = tmp / ex.dest
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "w", encoding="utf-8") as f:
        timeline.export_trace(src, f, ex.convert)


SHARED_SPECS = "assets/rank-specs.js"


def _no_sharing(chart) -> None:
    return None


class SharedSpecs:
    """Chart specs shared by the rank pages: each page carries only its chart's data and the key of its spec in
    `assets/rank-specs.js` (the spec without data is the same on every rank page of a shape)."""

    def __init__(self) -> None:
        self.specs: dict[str, dict] = {}
        self._keys: dict[int, str] = {}

    def share(self, chart) -> Optional[dict]:
        spec = chart["spec"] if isinstance(chart, dict) else chart.spec
        if "datasets" not in spec:
            return None
        body = {k: v for k, v in spec.items() if k != "datasets"}
        text = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
        key = short_hash(text)
        self.specs.setdefault(key, body)
        return {"key": key, "data": {"datasets": spec["datasets"]}}

    def script(self) -> str:
        text = json_text(self.specs, separators=(",", ":"))
        return "window.MSREPORT_SPECS = " + text.replace("</", "<\\/") + ";\n"


def _render(env: Environment, template: str, plan: SitePlan, page: Page, url, *, single: bool, **extra) -> str:
    """Render one page's template (`page.html` around its partial, or the partial alone) with its context."""
    extra.setdefault("share_spec", _no_sharing)
    extra.setdefault("asset_specs", "")
    return env.get_template(template).render(page=page, ctx=page.context, charts=page.charts, nav=plan.nav, url=url,
                                             single=single, **extra)


def write_single_file(plan: SitePlan, summary: dict, out: Path, run_root: Path,
                      findings: Optional[Sequence] = None) -> Path:
    """Write one self-contained HTML file (Vega inlined once) and `<name>.summary.json` beside it.

    The same partials as the site, with the same contexts, stacked in one page; rank pages become one compact
    rank view. Links are resolved for the single file (anchors inside it)."""
    check_output(out, run_root, single_file=True)
    env = make_env()
    url = url_function(INDEX, single=True)
    fragments = [Markup(_render(env, page.partial, plan, page, url, single=True))
                 for page in plan.pages if page.single]
    index = next(p for p in plan.pages if p.path == INDEX)
    sr = plan.single_ranks
    # the flagged ranks' whole pages, their ids scoped so they cannot clash with the cluster sections' ids
    rank_pages = [{"rank": p.context.rank, "anchor": f"r{p.context.rank}-rank-page-{p.context.rank}",
                   "html": Markup(scope_ids(_render(env, p.partial, plan, p, url, single=True),
                                            f"r{p.context.rank}-"))} for p in sr.pages]
    html = env.get_template("single.html").render(
        page=index, ctx=index.context, charts=[], nav=plan.nav, url=url, single=True, fragments=fragments,
        rank_data=sr.data, rank_meta=sr.meta, rank_pages=rank_pages, line_template=sr.line_template,
        rank_ids=sr.rank_ids,
        asset_css="", asset_js="", asset_vega="",
        inline_css=Markup(static_text("report.css")), inline_js=Markup(static_text("report.js")),
        inline_vega=Markup(vega_bundle()))
    out.parent.mkdir(parents=True, exist_ok=True)
    summary_path = out.with_name(out.stem + ".summary.json")
    _atomic_write(out, html)
    _atomic_write(summary_path, json_text(summary, indent=2))
    _atomic_write(out.with_name(out.stem + ".findings.md"), findings_markdown(summary, findings))
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
                                                               css=Markup(static_text("report.css")),
                                                               lang_links=links)

    entry = write_index_files(out, page("", trees[0][1]), json_text(summary, indent=2), single_file=single_file)
    if not single_file:
        for tree_dir, lang in trees[1:]:
            (out / tree_dir).mkdir(parents=True, exist_ok=True)
            (out / tree_dir / INDEX).write_text(page(tree_dir, lang), encoding="utf-8")
    return entry
