"""Table cells and rows of the rank pages, built in Python (template filters and globals, see `builder.make_env`).

A large run has thousands of rank pages, each with some 600 table cells: Jinja spends several times longer on a
cell (attribute lookups, filter calls, escaping, one generator step per piece) than an f-string does. Each row
builder here writes exactly what the template loop it replaced wrote (`tests/test_fast_paths.py` renders both);
every value from the data is escaped (`markupsafe.escape`), and a text that comes from data is translated with
`i18n.translate`, as the templates' `|t` filter does. Texts of the templates themselves (`_()`) stay in the
templates and are passed in.
"""

from __future__ import annotations

import re

from markupsafe import Markup, escape

from reportgen import fmt, i18n

_CELL_FORMATS = {"ratio": fmt.share, "num": fmt.number}
_MS = fmt.ms_cell
_NUM = fmt.number
_PCT1 = fmt.share
_NEEDS_ESCAPE = re.compile("[&<>\"']").search


def esc(v, _str=str, _int=int):
    """`escape(v)` as text: a string with nothing to escape, or an int, without building a Markup of it (~0.5 us
    less a cell: a rank page escapes some 200 names, labels and ranks); anything else escaped."""
    t = type(v)
    if t is _str:
        return escape(v) if _NEEDS_ESCAPE(v) else v
    return _str(v) if t is _int else escape(v)


def _ms_html(v, _float=float) -> str:
    """`escape(fmt.ms_cell(v))`: a float's text (digits, separators, a sign: nothing to escape) as it is; any
    other value (a label in a number column) escaped (~0.8 us less a cell: a rank page has some 250)."""
    return _MS(v) if type(v) is _float else escape(_MS(v))


_TRANSLATED: dict = {}


def translate(value):
    """`i18n.translate` (the `|t` filter), remembered per language for strings: a rank page translates some 150
    labels, the same ones on every page (a gettext lookup, a regular expression and often a second lookup each)."""
    if type(value) is not str:
        return i18n.translate(value)
    key = (i18n.current(), value)
    out = _TRANSLATED.get(key)
    if out is None:
        if len(_TRANSLATED) > 50_000:  # labels from data (group names): bounded
            _TRANSLATED.clear()
        out = _TRANSLATED[key] = i18n.translate(value)
    return out


def sort_key(v) -> str:
    """The `data-v` sort key of a numeric cell: 7 significant digits (a float's full repr only makes pages larger;
    the tables show at most 3 decimals)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return str(int(v))
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return "" if v != v else f"{v:.7g}"
    return str(v)


def num_cell(v, fmt: str = "ms", cls: str = "", badge: str = "", key: bool = False) -> Markup:
    """One numeric `<td>` (`num_cell` in the templates). The table sorter reads the number the cell shows, so only
    a cell with a badge after its number carries a `data-v` sort key (a key per cell was a fifth of a rank page);
    `key`: carry it anyway (the full-precision value the CSV button saves, for the small cluster tables)."""
    return _td(v, fmt, f"num {cls}" if cls else "num", badge, key)


def _td(v, fmt: str, cls: str, badge: str, key: bool) -> Markup:
    return Markup(_td_text(v, fmt, cls, badge, key))


def _td_text(v, fmt: str, cls: str, badge: str, key: bool) -> str:
    """`_td` as text (a row builder joins its cells, then makes the table one Markup)."""
    form = _CELL_FORMATS.get(fmt, _MS)
    text = form(v) if form is _MS and type(v) is float else esc(form(v))  # (`_ms_html`)
    c = f' class="{esc(cls)}"' if cls else ""
    if badge:
        return (f'<td{c} data-v="{escape(sort_key(v))}">{text} '
                f'<span class="badge slow">{escape(badge)}</span></td>')
    if key:
        return f'<td{c} data-v="{escape(sort_key(v))}">{text}</td>'
    return f"<td{c}>{text}</td>"


def _ms_td(v) -> str:
    return f'<td class="num">{_ms_html(v)}</td>'


def bare_cell(v, fmt: str = "ms", cls: str = "", badge: str = "") -> Markup:
    """`num_cell` in a table that aligns its numeric columns itself (`table.n1`, `n2`, `n4`, `nlk`: report.css):
    no `num` class on each cell (a rank page has a few hundred such cells, a thousand pages or more)."""
    return _td(v, fmt, cls, badge, False)


def _ms_bare(v) -> str:
    """`bare_cell(v)` as text (ms)."""
    return f"<td>{_ms_html(v)}</td>"


def _ms_column(values: list, _float=float) -> list:
    """`[_ms_bare(v) for v in values]`, a call a cell instead of three (a rank page has some 250 such cells); a
    column of floats (the common case) formatted at once (`fmt.ms_cells`)."""
    if all([type(v) is _float for v in values]):
        return [f"<td>{t}</td>" for t in fmt.ms_cells(values)]
    return [f"<td>{_MS(v)}</td>" if type(v) is _float else f"<td>{escape(_MS(v))}</td>" for v in values]


def ms_cells(values) -> Markup:
    """A row of numeric `<td>` cells (ms) in one call (filter `ms_cells`)."""
    return Markup("".join(map(_ms_td, values)))


def _step_td(step) -> str:
    """The step number cell of the rank pages' per-step tables (`—` for a step without a number, sorted first;
    the tables align their numbers: `table.n1`)."""
    if step is None:
        return '<td data-v="">—</td>'
    s = escape(step)
    return f'<td data-v="{s}">{s}</td>'


def step_rows(rows: list[dict], phases: list[dict]) -> Markup:
    """The rank's step table (`_rank_steps.html`): a row per step, a cell (ms) per phase."""
    keys = [p["key"] for p in phases]
    out = []
    for row in rows:
        step = row["step"]
        s = "" if step is None else escape(step)
        cells = "".join(_ms_column([row[k] for k in keys]))
        out.append(f'<tr><td data-v="{s}">{"—" if step is None else s}</td>{cells}</tr>\n')
    return Markup("".join(out))


def phase_cells(values: dict, phases: list[dict]) -> Markup:
    """A step table's footer cells (`_rank_steps.html`: the rank's average, the cluster median): a cell (ms) per
    phase, "—" for a phase the values lack."""
    return Markup("".join(_ms_column([values.get(p["key"]) for p in phases])))


def step_value_rows(rows: list[dict]) -> Markup:
    """Per-step rows of a step cell and ms cells (`row["values"]`: the overlap section's per-step table)."""
    return Markup("".join([f'<tr>{_step_td(row["step"])}{"".join(_ms_column(row["values"]))}</tr>'
                           for row in rows]))


def comm_step_rows(rows: list[dict]) -> Markup:
    """The rank's communication per step (`_rank_comm.html`)."""
    return Markup("".join([f'<tr>{_step_td(r["step"])}{_ms_bare(r["communication_ms"])}'
                           f'{_ms_bare(r["transit_ms"])}{_ms_bare(r["wait_ms"])}</tr>' for r in rows]))


# A table row of plain cells, declared as (key, kind) pairs: `code` (the value in <code>), `t` (a data text,
# translated), and the numbers `num`, `ms`, `pct1` (the filters of the same names). A table is written column by
# column (each kind's cells in one comprehension, a `t` column's cell once per distinct label), then joined by row.
def _t_cells(values: list) -> list:
    """A `t` column: a label's cell written once (the labels of a column repeat: sides, kinds, groups; a string's
    only: 1 and 1.0 are one key of a dict, not one text)."""
    done: dict = {}
    out = []
    for v in values:
        if type(v) is str:
            cell = done.get(v)
            if cell is None:
                cell = done[v] = f"<td>{esc(translate(v))}</td>"
        else:
            cell = f"<td>{escape(translate(v))}</td>"
        out.append(cell)
    return out


_COLUMNS = {
    "code": lambda vs: [f"<td><code>{esc(v)}</code></td>" for v in vs],
    "t": _t_cells,
    "num": lambda vs: [f"<td>{esc(_NUM(v))}</td>" for v in vs],
    "ms": _ms_column,
    "pct1": lambda vs: [f"<td>{esc(_PCT1(v))}</td>" for v in vs],
    "text": lambda vs: [f"<td>{esc(v)}</td>" for v in vs],
}


def _plain_rows(*cells: tuple[str, str]):
    """A filter writing a `<tr>` of these cells per item."""
    spec = [(key, _COLUMNS[kind]) for key, kind in cells]

    def rows(items: list[dict]) -> Markup:
        cols = [column([it[key] for it in items]) for key, column in spec]
        return Markup("".join(["<tr>" + "".join(row) + "</tr>" for row in zip(*cols)]))
    return rows


# the rank's longest communication operators (`_rank_comm.html`)
comm_op_rows = _plain_rows(("op", "code"), ("group", "t"), ("kind", "t"), ("calls", "text"),
                           ("communication_ms", "ms"), ("transit_ms", "ms"), ("wait_ms", "ms"), ("wait_ratio", "pct1"),
                           ("per_call_ms", "ms"))
# the rank's operator types and its longest operators (`_rank_ops.html`)
op_type_rows = _plain_rows(("op_type", "code"), ("side", "t"), ("core", "t"), ("count", "num"), ("total_ms", "ms"),
                           ("avg_ms", "ms"), ("min_ms", "ms"), ("max_ms", "ms"), ("share", "pct1"))
op_detail_rows = _plain_rows(("name", "code"), ("op_type", "code"), ("side", "t"), ("count", "num"),
                             ("total_ms", "ms"), ("avg_ms", "ms"), ("share", "pct1"))


def facts_table(facts) -> Markup:
    """A table of (label, value) rows, both data texts translated (`facts_table` in _macros.html: a rank page's
    facts, the overview's)."""
    rows = "".join([f"<tr><th>{esc(translate(k))}</th><td>{esc(translate(v))}</td></tr>\n" for k, v in facts])
    return Markup(f'<table class="facts">\n{rows}</table>')


def compare_rows(rows: list[dict]) -> Markup:
    """Label, this rank, stage mean, cluster median (`_rank_overlap.html`)."""
    return Markup("".join([f'<tr><td>{esc(translate(c["label"]))}</td>{_ms_bare(c["value"])}'
                           f'{_ms_bare(c["stage_mean"])}{_ms_bare(c["median"])}</tr>' for c in rows]))


def link_rows(links: list[dict], local: str, slow: str) -> Markup:
    """The links a rank reports (`_rank_comm.html`); `local` and `slow`: the template's texts for a link inside
    the device and for the slow badge."""
    out = []
    for lk in links:
        loc = "" if lk["mapped"] else f" {local}"
        hot = lk["slow"]
        tr = '<tr class="slow">' if hot else "<tr>"
        bw = lk["bandwidth_gbps"]
        out.append(f'{tr}<td>{esc(lk["src"])}{loc}</td>'
                   f'<td>{esc(lk["dst"])}{loc}</td><td>{esc(lk["transport"])}</td>'
                   f'<td>{esc(translate(lk["group"]))}</td>{_ms_bare(lk["time_ms"])}{_ms_bare(lk["size_mb"])}'
                   f'{_td_text(bw, "ms", "hot", slow, False) if hot else _ms_bare(bw)}</tr>')
    return Markup("".join(out))


FILTERS = {"ms_cells": ms_cells, "sortkey": sort_key, "step_rows": step_rows, "phase_cells": phase_cells,
           "step_value_rows": step_value_rows, "comm_step_rows": comm_step_rows, "comm_op_rows": comm_op_rows,
           "op_type_rows": op_type_rows, "op_detail_rows": op_detail_rows, "compare_rows": compare_rows, "link_rows": link_rows}
