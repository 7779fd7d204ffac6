"""The Jinja environment every page of msreport is rendered with (the site, the single file, compare, trend, the
runs index): autoescape, the report's filters, the templates' `_()` in the build's language, and the compact JSON
that pages embed (`compact`, the `jsonscript` filter).
"""

from __future__ import annotations

from typing import Callable, Optional

from jinja2 import Environment, PackageLoader, StrictUndefined, pass_context, select_autoescape
from jinja2.ext import Extension
from jinja2.lexer import Token, TokenStream
from markupsafe import Markup, escape

from reportgen import fmt, i18n, urls
from reportgen.i18n import N_
from reportgen.site.render import html_rows
from reportgen.site.render.csp import csp_hash
from reportgen.site.render.output import json_text
from reportgen.site.render.template_cache import CACHE
from reportgen.site.views.problems import translate_problem


_INF = (float("inf"), float("-inf"))
_PLAIN = frozenset((int, str, bool, type(None)))  # page JSON values `_compact` leaves as they are


def compact(value, href=None):
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
                        v if type(v) in _PLAIN else compact(v, href)) for k, v in value.items()}
        return {k: v if type(v) in _PLAIN else compact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [v if type(v) in _PLAIN else compact(v, href) for v in value]
    if isinstance(value, tuple):  # (no href is looked for inside a tuple, as in `urls.resolve_hrefs`)
        return [v if type(v) in _PLAIN else compact(v) for v in value]
    return value


@pass_context
def _json_script(context, value) -> Markup:
    """JSON for a <script type="application/json"> block, with </script> and <!-- made harmless.

    Every `href` in the data is resolved from the page being rendered (chart links, the step table's rows)."""
    url = context.get("url")  # (`url(target)` is the resolver's href, "" for none)
    text = json_text(compact(value, url if hasattr(url, "resolver") else None), separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    return Markup(text)


@pass_context
def chart_figure(context, c) -> Markup:
    """A chart's `<figure>` (`chart` in the templates, `_macros.html`): its spec, or the key of the spec it shares
    (`share_spec`, the rank pages'), its columns and its per-step data, each a JSON script (`_json_script`); a
    large run's rank page leaves out a shared spec's data when the columns carry all of it (every dataset empty and
    named in them: report.js fills them in, ~75 bytes a chart on a thousand pages). `c`: a `Chart`, or a dict of
    the same fields. Written here, as the macro it replaced did (`tests/test_fast_paths.py`), in one call: a rank
    page draws three, on thousands of pages."""
    if isinstance(c, dict):
        get, carry = c.__getitem__, c.get("columns_carry")
    else:
        get, carry = c.__getattribute__, getattr(c, "columns_carry", None)
    shared = context["share_spec"](c)
    step_data, table = get("step_data"), get("table")
    out = [f'<figure class="chart" id="fig-{escape(get("id"))}" data-renderer="{escape(get("renderer"))}"']
    if shared:
        out.append(f' data-spec="{escape(shared["key"])}"')
    if step_data:
        out.append(' data-steps="1"')
    if table:
        out.append(f' data-table="{escape(table["id"])}" data-table-cols="{Markup(",").join(table["cols"])}" '
                   f'data-table-set="{escape(table["dataset"])}"')
    out.append('>\n  <div class="vis"></div>\n')
    caption = get("caption")
    if caption:
        out.append(f"<figcaption>{escape(html_rows.translate(caption))}</figcaption>")
    if not (context.get("gz_csvs") and shared and carry is not None and carry(shared["data"]["datasets"])):
        spec = shared["data"] if shared else get("spec")
        out.append(f'  <script type="application/json" class="spec">{_json_script(context, spec)}</script>')
    columns = get("columns")
    if columns:
        out.append(f'<script type="application/json" class="columns">{_json_script(context, columns)}</script>')
    if step_data:
        out.append(f'<script type="application/json" class="step-data">{_json_script(context, step_data)}</script>')
    out.append("</figure>")
    return Markup("".join(out))


@pass_context
def sections_html(context, sections, **names) -> Markup:
    """`{% for s in sections %}{% include s.template %}{% endfor %}` in one call (a rank page's ten sections,
    `sections_html` in _rank.html): each section's template rendered with what the include gives it -- the page's
    names, `s`, and the caller's `names` (the macros it imported) -- in a context of its own, the names gathered
    once for all the sections. Jinja's include copies every name (some 80) and a set of the globals' for each
    one (~10 us an include, on thousands of pages)."""
    env = context.environment
    found = env.section_templates  # type: ignore[attr-defined]
    given = context.get_all()
    given.update(names)
    out = []
    for s in sections:
        t = found.get(s.template)
        if t is None:
            t = found[s.template] = env.get_template(s.template)
        given["s"] = s  # (a section's own `{% set %}` goes to its context's vars, never to `given`)
        out.append(env.concat(t.root_render_func(env.context_class(env, given, t.name, t.blocks))))
    return Markup("".join(out))


# csv_file's texts (the templates' `_()` messages once were)
_CSV_TITLE = N_("Download the full table as a CSV file (every row, numbers at full precision)")
_CSV_ROWS, _CSV_EVERY, _CSV_GZ = N_("CSV (all %(n)s rows)"), N_("CSV (every row)"), N_("gzip-compressed")


@pass_context
def csv_file(context, path: str, table, label=None) -> Markup:
    """The link to a table's server-side CSV file (`csv_file` in _macros.html): the file it is written as
    (`urls.large_csv`), titled, labelled `label` or by the rows it holds (`csv_rows`), said gzip-compressed when it
    is. Written here, as the macro it replaced did (`tests/test_fast_paths.py`), in one call: a large run's rank
    pages link two or three each, on thousands of pages."""
    env = context.environment
    lookup, autoescape = env.folded_lookup, context.eval_ctx.autoescape  # type: ignore[attr-defined]
    path = urls.large_csv(path, context.get("gz_csvs", False))
    gz = path.endswith(".gz")
    if label:
        text = escape(label)
    else:
        n_rows = csv_rows(context.get("page"), path)
        text = (_message(lookup, _CSV_ROWS, autoescape, {"n": n_rows}) if n_rows is not None
                else _message(lookup, _CSV_EVERY, autoescape, {}))
    title = _message(lookup, _CSV_TITLE, autoescape, {})
    after = f" {_message(lookup, _CSV_GZ, autoescape, {})}" if gz else ""
    return Markup(f'<a class="csv-download" data-csv-for="{escape(table)}" href="{escape(context["url"](path))}" '
                  f'title="{title}"{" download" if gz else ""}>{text}{after}</a>')


# issues_table's texts (the templates' `_()` messages once were)
_ISSUES_FILTER, _ISSUES_FILTER_LABEL = N_("Filter…"), N_("Filter data-quality table")
_ISSUES_HEAD = (N_("Severity"), N_("File"), N_("Problem"))
_ISSUES_RUN, _ISSUES_NONE = N_("(run)"), N_("Every input file that was found could be read.")


@pass_context
def issues_table(context, issues, id) -> Markup:
    """A data-quality table (`issues_table` in _macros.html: a rank page's, the overview's): a row per issue
    (severity, file, problem in the report language), or the sentence that every file was read. Written here, as
    the macro it replaced did (`tests/test_fast_paths.py`), in one call: a rank page's import of the macro alone
    was ~25 us (Jinja sets the page's globals against the macros' own), on thousands of pages."""
    env = context.environment
    lookup, autoescape = env.folded_lookup, context.eval_ctx.autoescape  # type: ignore[attr-defined]

    def text(message: str):
        return _message(lookup, message, autoescape, {})
    if not issues:
        return Markup(f'<p class="ok">{text(_ISSUES_NONE)}</p>\n')
    get = env.getattr
    tid = escape(id)
    rows = []
    for i in issues:
        severity = get(i, "severity")
        file = get(i, "file")
        rows.append(f'<tr class="sev-{escape(severity)}"><td><span class="badge {escape(severity)}">'
                    f'{escape(html_rows.translate(severity))}</span></td><td><code>{escape(file or text(_ISSUES_RUN))}'
                    f'</code></td><td>{escape(translate_problem(i))}</td></tr>\n')
    head = "".join(f"<th>{text(h)}</th>" for h in _ISSUES_HEAD)
    return Markup(f'<div class="table-tools"><input type="search" placeholder="{text(_ISSUES_FILTER)}" '
                  f'data-filter="{tid}" aria-label="{text(_ISSUES_FILTER_LABEL)}"></div>\n'
                  f'<table class="sortable" id="{tid}">\n<thead><tr>{head}</tr></thead>\n<tbody>\n'
                  f'{"".join(rows)}</tbody></table>\n')


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


class FoldedGettext(Extension):
    """`_("literal")` in a template (a message of the template's own, no variables: some 100 on a rank page) looked
    up when the template is compiled, not at every render: the call becomes the constant `("translation"|safe)`,
    which Jinja folds into the text around it. The same text as the templates' `_()` at render time
    (`_message`, as `_template_gettext` gives it). A template's compiled code then depends on
    the language and its catalog: `template_cache` keys it by `environment.folded_key` (`i18n.catalog_key`)."""

    def filter_stream(self, stream: TokenStream):
        lookup = self.environment.folded_lookup  # type: ignore[attr-defined]
        toks = list(stream)
        i, n = 0, len(toks)
        while i < n:
            t = toks[i]
            if (t.type == "name" and t.value == "_" and i + 3 < n and toks[i + 1].type == "lparen"
                    and toks[i + 2].type == "string" and toks[i + 3].type == "rparen"
                    and (i == 0 or toks[i - 1].type != "dot")):
                text = self._folded(lookup, toks[i + 2].value)
                if text is not None:
                    line = t.lineno
                    yield from (Token(line, "lparen", "("), Token(line, "string", text), Token(line, "pipe", "|"),
                                Token(line, "name", "safe"), Token(line, "rparen", ")"))
                    i += 4
                    continue
            yield t
            i += 1

    @staticmethod
    def _folded(lookup: Callable[[str], str], message: str) -> Optional[str]:
        try:
            return str(_message(lookup, message, True, {}))
        except (ValueError, KeyError, TypeError):  # (a message that fails at render time fails there: left so)
            return None


def make_env() -> Environment:
    # auto_reload off: the templates do not change during a build (Jinja would stat each one at every include);
    # their compiled code is kept between environments and builds (`template_cache`)
    env = _Environment(loader=PackageLoader("reportgen", "templates"), autoescape=select_autoescape(default=True),
                       undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True, auto_reload=False,
                       bytecode_cache=CACHE, extensions=[FoldedGettext])
    lookup = i18n.translations(i18n.current()).gettext
    env.extend(folded_lookup=lookup, folded_key=i18n.catalog_key(i18n.current()))
    i18n.install(env)  # `_()` / `{% trans %}` in the templates, in the language of this build
    env.globals.update(html_lang=i18n.html_lang(), lang=i18n.current())
    # `_("literal")` is for the templates' own text (newstyle gettext marks its result safe and escapes only the
    # named parameters); text that comes from data is translated with `|t`, which returns a plain, escaped string.
    env.filters["t"] = html_rows.translate
    env.filters["problem"] = translate_problem  # a stored data-quality problem in the report language
    env.filters.update(ms=fmt.ms_cell, pct=fmt.percent, pct1=fmt.share, num=fmt.number, jsonscript=_json_script,
                       signed_pct=lambda v, digits=1: fmt.signed_percent(v, fmt.MISSING, digits),
                       csp_hash=csp_hash, **html_rows.FILTERS)
    env.globals["paths"] = urls  # page paths in the templates: `url(paths.STEP_TRACE)`
    env.globals["num_cell_fn"] = html_rows.num_cell  # `num_cell` in _macros.html
    env.globals["chart_fn"] = chart_figure  # `chart` in _macros.html
    env.globals["bare_cell"] = html_rows.bare_cell  # its cell in a table that aligns its numbers (`table.n3`)
    env.globals["csv_file_fn"] = csv_file  # `csv_file` in _macros.html
    env.globals["sections_html"] = sections_html  # a rank page's sections
    env.extend(section_templates={})  # (`sections_html`: the templates by name, loaded once)
    env.globals["facts_table_fn"] = html_rows.facts_table  # `facts_table` in _macros.html
    env.globals["issues_table_fn"] = issues_table  # `issues_table` in _macros.html
    env.globals["lang_links"] = []  # a site in two languages: the link to the same page in the other one
    env.globals["_"] = _template_gettext(lookup)
    return env


def csv_rows(page, path: str) -> Optional[int]:
    """How many rows the page's CSV download `path` holds, or None where that is not known without building it
    (a rank page's lazily built rows) or the page writes no such file."""
    for dl_path, _columns, rows in getattr(page, "downloads", None) or ():
        if dl_path == path:
            return len(rows) if hasattr(rows, "__len__") else None
    return None


# `_()` variables whose text is told by their type and value (not a float: 0.0 and -0.0 are one key, not one text)
_PLAIN_ARGS = frozenset((str, int, bool, type(None), Markup))


def _message(lookup: Callable[[str], str], message: str, autoescape: bool, variables: dict):
    """What Jinja's newstyle gettext gives for `_(message, **variables)`: the message looked up, made Markup under
    autoescape, then `% variables` (which escapes them)."""
    rv = lookup(message)
    return (Markup(rv) if autoescape else rv) % variables


def _template_gettext(lookup: Callable[[str], str]):
    """The templates' `_()`: what Jinja's newstyle gettext returns (the message looked up, made Markup under
    autoescape, then `% variables`, which escapes the variables), in one call instead of three, looked up once per
    build: a message without variables, and one with plain variables per their values and types (a rank page
    has 125 `_()` calls, a dozen with variables, mostly the same counts from page to page; a Markup variable is
    not escaped, a str of the same text is: the type is part of the key)."""
    done: dict = {}

    @pass_context
    def gettext(context, message: str, **variables):
        autoescape = context.eval_ctx.autoescape
        if variables:
            if not all(type(v) in _PLAIN_ARGS for v in variables.values()):
                return _message(lookup, message, autoescape, variables)
            key = (message, autoescape, *((k, type(v), v) for k, v in variables.items()))
        else:
            key = (message, autoescape)
        rv = done.get(key)
        if rv is None:
            if len(done) > 20_000:  # (variables from data: bounded)
                done.clear()
            rv = done[key] = _message(lookup, message, autoescape, variables)
        return rv
    return gettext
