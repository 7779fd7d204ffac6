"""Issue 17, rank pages cheaper to render: each fast path writes exactly what the plain path it replaces wrote
(the plain path, kept here as the reference, on random and edge-case values)."""
from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path

import numpy as np

from reportgen import urls
from reportgen.charts import column_codec as columnar
from reportgen.site.render import csv_text
from reportgen.site.render import html_rows
from reportgen.site.render import jinja_env
from reportgen.site.render import output
from reportgen.site.plan import page as page_mod
from reportgen.site.pages.rank import resources as rank_resources
def _plain_rounded(values, decimals: int):
    """What the memory chart wrote before `rounded_column`: Python's round, then `number_column`."""
    return columnar.number_column([round(v, decimals) for v in np.asarray(values, dtype=float).tolist()])


def test_rounded_column_hand_cases():
    # 7 significant digits of 3-decimal MB: 43889.512 -> 43889.51; 43889.515 is a tie the float's bits decide
    assert columnar.rounded_column(np.array([43889.512, 43889.5149, 43889.68]), 3) == {"dec": 2,
                                                                                     "d": [4388951, 0, 17]}
    assert columnar.rounded_column(np.array([0.5, 1.5, 2.5]), 0) == {"dec": 0, "d": [0, 2, 0]}  # half to even
    assert columnar.rounded_column(np.array([]), 4) == []
    for bad in (float("nan"), float("inf")):  # not finite: the column stays a plain list
        assert json.dumps(columnar.rounded_column(np.array([1.0, bad]), 3)) == json.dumps([1.0, bad])


def test_rounded_column_equals_the_plain_path_bit_for_bit():
    rng = np.random.default_rng(17)
    cases = []
    for d in range(7):
        cases.append((np.array([0.5, 1.5, 2.5, -0.5, -0.0, 0.0, 1e-9, -1e-9, 9999999.5, 99999995.0, 0.125,
                                1234.5625, 43889.5125, 99999.99995, 9.9999995, 1e8, -1e8, 1.5e8]), d))
        for scale in (1e-7, 1e-3, 1.0, 999.0, 5e4, 1e6, 9.99e7, 2e8):
            cases.append((rng.uniform(-scale, scale, 400), d))
            # values with one decimal more than kept (ties at 5) and with exactly the kept decimals
            cases.append((rng.integers(-10 ** 9, 10 ** 9, 400) / 10.0 ** (d + 1) * (scale / 1e6), d))
            cases.append((np.round(rng.uniform(0, scale, 400), d), d))
            cases.append(((rng.integers(0, 10 ** 7, 400) * 10 + 5) / 10.0 ** (d + 1) * (scale / 1e6), d))
        cases.append((np.arange(400) * 0.5 + 17.0, d))  # already at its decimals (a curve's sampling times)
    for values, d in cases:
        assert json.dumps(columnar.rounded_column(values, d)) == json.dumps(_plain_rounded(values, d)), (d, values)


def test_int_column_equals_number_column():
    """`list_or_runs`' integer columns: `_int_column` is `number_column` (indexes, negatives, beyond exact doubles)."""
    rnd = random.Random(12)
    cases = [[rnd.randrange(40) for _ in range(n)] for n in (1, 16, 17, 300)]
    cases += [[rnd.randrange(-10 ** 6, 10 ** 6) for _ in range(50)], [0] * 20, [2 ** 53 - 1, 0, 5] * 6,
              [2 ** 53, 1, 2] * 6, [-(2 ** 53), 1] * 9, [10 ** 30, 1] * 9, list(range(40))]
    for vals in cases:
        assert columnar._int_column(vals) == columnar.number_column(vals), vals[:5]
    alternating = [i % 2 for i in range(40)]  # runs longer than half: the integers delta-coded
    assert columnar.list_or_runs(alternating) == columnar.number_column(alternating)


def test_runs_of_equals_runs_column():
    assert columnar.runs_of([("a", 2), ("b", 0), ("a", 1), ("c", 3)]) == columnar.runs_column(["a"] * 3 + ["c"] * 3)
    assert columnar.runs_of([]) == columnar.runs_column([]) == {"runs": []}


def _random_json(rnd: random.Random, depth: int = 0):
    kind = rnd.randrange(9 if depth < 4 else 5)
    if kind == 0:
        return rnd.choice([1.0000001234, 167.83036663599998, float("nan"), float("inf"), -0.0, 1e-300, 3.0])
    if kind == 1:
        return rnd.choice([0, -7, True, False, None, 2 ** 60])
    if kind == 2:
        return rnd.choice(["x", "<b>", "ranks/rank-3.html", "cluster/step-trace.html#rank-3", ""])
    if kind == 3:
        return np.float64(rnd.uniform(0, 1e4))
    if kind == 4:
        return np.int64(5)
    if kind in (5, 6):
        d = {}
        for _ in range(rnd.randrange(5)):
            k = rnd.choice(["href", "rank_href", "x", "label", "hrefs", "a_href_b"])
            d[k] = rnd.choice(["ranks/rank-9.html", "index.html#findings"]) if rnd.random() < 0.4 else \
                _random_json(rnd, depth + 1)
        return d
    if kind == 7:
        return [_random_json(rnd, depth + 1) for _ in range(rnd.randrange(6))]
    return tuple(_random_json(rnd, depth + 1) for _ in range(rnd.randrange(4)))


def _old_compact(value):
    if isinstance(value, float):
        return float(f"{value:.7g}") if value == value and value not in (float("inf"), float("-inf")) else value
    if isinstance(value, dict):
        return {k: _old_compact(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_old_compact(v) for v in value]
    return value


def test_compact_with_hrefs_equals_resolving_then_compacting():
    rnd = random.Random(5)
    res = urls.Resolver("ranks/rank-4.html", single=False, root="")
    for _ in range(3000):
        v = _random_json(rnd)
        want = output.json_text(_old_compact(urls.resolve_hrefs(v, res)), separators=(",", ":"))
        assert output.json_text(jinja_env.compact(v, res.href), separators=(",", ":")) == want
        assert output.json_text(jinja_env.compact(v), separators=(",", ":")) == \
            output.json_text(_old_compact(v), separators=(",", ":"))
    # a resolved href, and none inside a tuple (as before)
    out = jinja_env.compact({"a": [{"href": "ranks/rank-9.html"}], "t": ({"href": "ranks/rank-9.html"},)}, res.href)
    assert out == {"a": [{"href": "rank-9.html"}], "t": [{"href": "ranks/rank-9.html"}]}


def _plain_csv(columns, rows) -> str:
    """The CSV as `csv.writer` wrote it, `csv_value` per cell."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow([c["label"] for c in columns])
    for r in rows:
        w.writerow(["" if (v := r.get(c["key"])) is None else csv_text.csv_value(v) for c in columns])
    return buf.getvalue()


def test_csv_text_equals_csv_writer_with_csv_value_per_cell():
    rnd = random.Random(11)
    values = [None, "", " ", "a,b", 'say "x"', "line\nbreak", "cr\r", "nul\x00", "tab\t", "é中", 0, -3, 2 ** 70,
              True, False, 0.0, -0.0, 208.0, 999.9999999999, -999.5, 1000.0, -1000.0, 1234.5678, 8.552121000000003,
              1e-7, 1e300, float("nan"), float("inf"), -float("inf"), np.float64(0.1 + 0.2), np.float64(1e5),
              np.int64(4), np.bool_(True), 1700000000000000.5]
    values += [rnd.uniform(-2000, 2000) for _ in range(300)] + [float(rnd.randint(-999, 999)) for _ in range(50)]
    for n_cols in (0, 1, 2, 5):
        columns = [{"key": f"c{i}", "label": rnd.choice([f"C{i}", "Time (ms)", "a,b", ""])} for i in range(n_cols)]
        for n_rows in (0, 1, 300):
            rows = [{f"c{i}": rnd.choice(values) for i in range(n_cols) if rnd.random() < 0.9}
                    for _ in range(n_rows)]
            want = _plain_csv(columns, rows)
            assert csv_text.csv_text(columns, rows) == want
            table = {c["key"]: [r.get(c["key"]) for r in rows] for c in columns}
            lazy = page_mod.LazyRows(lambda: table, columns=True)
            if n_cols:  # (a table given by columns has its row count in them)
                assert csv_text.csv_text(columns, lazy) == want
                assert list(lazy) == [{k: r.get(k) for k in table} for r in rows]


def test_csv_text_float_columns_equal_csv_writer():
    """Columns of plain floats (the fast path: one C format over the table) against `csv.writer` per cell: whole
    floats, -0.0, tiny values written with an exponent, values at and beyond +-1000, NaN and inf."""
    rnd = random.Random(5)
    special = [0.0, -0.0, 208.0, -3.0, 1.5e-05, -2.5e-300, 999.9999999999, -999.5, 999.99999999, 0.1 + 0.2,
               8.552121000000003, 1000.0, -1234.5678, float("nan"), float("inf")]
    columns = [{"key": k, "label": k} for k in ("name", "a", "b")]
    for n in (1, 2, 50, 400):
        for pool in ([rnd.uniform(-999, 999) for _ in range(64)], special[:10], special):
            rows = [{"name": f"op,{i}" if i % 7 == 0 else f"op{i}", "a": rnd.choice(pool), "b": rnd.choice(pool)}
                    for i in range(n)]
            want = _plain_csv(columns, rows)
            assert csv_text.csv_text(columns, rows) == want
            table = {c["key"]: [r.get(c["key"]) for r in rows] for c in columns}
            assert csv_text.csv_text(columns, page_mod.LazyRows(lambda: table, columns=True)) == want


def test_csv_text_columns_of_unequal_length_write_the_rows_every_column_holds():
    """A table given column by column whose columns differ in length: the rows all columns hold, as `zip` and
    `csv.writer` wrote them (the one-format fast path repeated the row format by the first column's length)."""
    columns = [{"key": "a", "label": "a"}, {"key": "b", "label": "b"}]
    got = csv_text.csv_text(columns, page_mod.LazyRows(lambda: {"a": [1.5, 2.5], "b": [0.5]}, columns=True))
    assert got == _plain_csv(columns, [{"a": 1.5, "b": 0.5}])


def _plain_detail_rows(detail, limit=None):
    """The rank page's operator rows as they were built before `_detail_columns` (records, sorted, `num`)."""
    from reportgen.model import SIDE_LABELS
    from reportgen.site.views.values import num, records
    if limit is not None and len(detail) > limit:
        order = np.argsort(-detail["total_ms"].to_numpy(dtype=float), kind="stable")[:limit]
        detail = detail.iloc[order]
    return [{"side": SIDE_LABELS.get(rec["side"], rec["side"]), "name": rec["name"], "op_type": rec["op_type"],
             **{k: num(rec[k]) for k in ("count", "total_ms", "avg_ms", "share")}}
            for rec in sorted(records(detail), key=rank_resources.longest_first)]


def test_operator_rows_and_csv_columns_equal_the_plain_rows():
    import pandas as pd
    rnd = random.Random(2)
    for n in (0, 1, 5, 40):
        total = [rnd.choice([1.5, 2.0, 0.0, -0.0, float("nan"), rnd.uniform(0, 9), float("inf")]) for _ in range(n)]
        detail = pd.DataFrame({
            "side": [rnd.choice(["ai_core", "aicpu", None, "cube<x>"]) for _ in range(n)],
            "name": [f"op{i},\"q\"" for i in range(n)], "op_type": [rnd.choice(["MatMul", None]) for _ in range(n)],
            "count": [float(rnd.randint(0, 9)) for _ in range(n)], "total_ms": total,
            "avg_ms": [rnd.choice([None, 1.25, float("nan")]) for _ in range(n)],
            "share": pd.array([rnd.choice([0.5, None]) for _ in range(n)], dtype="Float64")})
        for limit in (None, 3, 20, 100):
            assert rank_resources.detail_rows(detail, limit) == _plain_detail_rows(detail, limit) or \
                json.dumps(rank_resources.detail_rows(detail, limit)) == json.dumps(_plain_detail_rows(detail, limit))
        cols = page_mod.LazyRows(lambda: rank_resources.detail_columns(detail), columns=True)
        assert csv_text.csv_text(rank_resources.RANK_OP_COLUMNS, cols) == \
            csv_text.csv_text(rank_resources.RANK_OP_COLUMNS, _plain_detail_rows(detail))


def test_num_column_equals_num_per_value():
    import pandas as pd
    from reportgen.site.views.values import num, num_column
    cases = [np.array([1.5, np.nan, np.inf, -0.0]), np.array([1, 2 ** 62], dtype=np.int64), np.array([True, False]),
             np.array([1.5, None, "2.5", "x", 3], dtype=object), np.array([None, 1.0], dtype=object),
             np.array([pd.NA, 1.0], dtype=object), pd.Series([1.0, None], dtype="Float64"),
             pd.Series(["1", "a"]), pd.Series([1.5, 2.5]), np.array([], dtype=float), [1, None, 2.5]]
    for c in cases:
        plain = [num(v) for v in (c.to_numpy(dtype=object) if hasattr(c, "to_numpy") else np.asarray(c)).tolist()]
        assert json.dumps(num_column(c)) == json.dumps(plain), c



def test_records_equal_the_frames_object_rows():
    """`values.records` reads a frame column by column: the rows `frame.to_numpy(dtype=object)` gives, value for
    value and type for type (a missing string NaN, a missing Int64 pd.NA, numbers as Python numbers)."""
    import pandas as pd
    from reportgen.site.views.values import records
    frames = [
        pd.DataFrame({"a": [1.0, np.nan, -0.0], "s": pd.array(["x", None, "z"], dtype="str"),
                      "i": pd.array([1, None, 3], dtype="Int64")}),
        pd.DataFrame({"a": [1, 2, 3], "b": [True, False, True], "f": np.array([1.5, 2, 3], dtype=np.float32),
                      "u": np.array([1, 2, 2 ** 63], dtype=np.uint64)}),
        pd.DataFrame({"o": [None, "x", 3], "s": pd.array(["a", "b", None], dtype="string"),
                      "b": pd.array([True, None, False], dtype="boolean"), "F": pd.array([1.5, None, 2], dtype="Float64")}),
        pd.DataFrame({"t": pd.to_datetime(["2020-01-01", None, "2021-01-01"]), "c": pd.Categorical(["a", "b", "a"])}),
        pd.DataFrame({"a": [1, 2], "b": [3.0, 4.0]}).rename(columns={"b": "a"}),  # (a repeated name: the last)
        pd.DataFrame(index=[0, 1]), pd.DataFrame({"x": [1.0]}).iloc[:0],
    ]
    for f in frames:
        want = [dict(zip(f.columns, row)) for row in f.to_numpy(dtype=object).tolist()] if len(f) else []
        got = records(f)
        assert len(got) == len(want) and all(list(g) == list(w) for g, w in zip(got, want)), f.dtypes
        for g, w in zip(got, want):
            for k in w:
                assert type(g[k]) is type(w[k]) and (g[k] is w[k] or g[k] == w[k] or (g[k] != g[k] and w[k] != w[k])), k


# ---- the rank tables' rows: html_rows against the template loops they replaced --------------------------------

_OLD_LOOPS = {
    "step_rows": ('{% for row in s.rows %}<tr><td data-v="{{ row.step if row.step is not none else \'\' }}">'
                  '{{ row.step if row.step is not none else "—" }}</td>{% for p in s.phases %}<td>{{ row[p.key]|ms }}'
                  '</td>{% endfor %}</tr>\n{% endfor %}\n', "{{ s.rows|step_rows(s.phases) }}"),
    # (the step table's footer: the rank's average and the cluster median, each a dict by phase)
    "phase_cells": ('{% for row in s.rows %}{% for p in s.phases %}<td>{{ row.get(p.key)|ms }}</td>{% endfor %}'
                    '{% endfor %}\n', "{% for row in s.rows %}{{ row|phase_cells(s.phases) }}{% endfor %}"),
    # (the rank pages' per-step, comparison and link tables align their numbers by the table's class: `bare_cell`)
    "compare_rows": ('{% for c in s.rows %}<tr><td>{{ (c.label|t) }}</td>{{ bare_cell(c.value) }}'
                     '{{ bare_cell(c.stage_mean) }}{{ bare_cell(c.median) }}</tr>{% endfor %}\n',
                     "{{ s.rows|compare_rows }}"),
    # (this loop's cells went through the `ms_cells` filter, which did not escape a value that is not a number)
    "step_value_rows": ('{% for row in s.rows %}<tr><td data-v="{{ row.step if row.step is not none '
                        'else \'\' }}">{{ row.step if row.step is not none else "—" }}</td>{% for v in row["values"] %}'
                        '<td>{{ v|ms }}</td>{% endfor %}</tr>{% endfor %}\n', "{{ s.rows|step_value_rows }}"),
    "comm_step_rows": ('{% for row in s.rows %}<tr><td data-v="{{ row.step if row.step is not none '
                       'else \'\' }}">{{ row.step if row.step is not none else "—" }}</td>{{ bare_cell(row.communication_ms) }}'
                       '{{ bare_cell(row.transit_ms) }}{{ bare_cell(row.wait_ms) }}</tr>{% endfor %}\n',
                       "{{ s.rows|comm_step_rows }}"),
    "comm_op_rows": ('{% for o in s.rows %}<tr><td><code>{{ o.op }}</code></td><td>{{ (o.group|t) }}</td><td>'
                     '{{ (o.kind|t) }}</td><td>{{ o.calls }}</td><td>{{ o.communication_ms|ms }}</td><td>'
                     '{{ o.transit_ms|ms }}</td><td>{{ o.wait_ms|ms }}</td><td>{{ o.wait_ratio|pct1 }}</td><td>'
                     '{{ o.per_call_ms|ms }}</td></tr>{% endfor %}\n', "{{ s.rows|comm_op_rows }}"),
    "op_type_rows": ('{% for t in s.rows %}<tr><td><code>{{ t.op_type }}</code></td><td>{{ (t.side|t) }}</td><td>'
                     '{{ (t.core|t) }}</td><td>{{ t.count|num }}</td><td>{{ t.total_ms|ms }}</td><td>{{ t.avg_ms|ms }}'
                     '</td><td>{{ t.min_ms|ms }}</td><td>{{ t.max_ms|ms }}</td><td>{{ t.share|pct1 }}</td></tr>'
                     '{% endfor %}\n', "{{ s.rows|op_type_rows }}"),
    "op_detail_rows": ('{% for o in s.rows %}<tr><td><code>{{ o.name }}</code></td><td><code>{{ o.op_type }}</code>'
                       '</td><td>{{ (o.side|t) }}</td><td>{{ o.count|num }}</td><td>{{ o.total_ms|ms }}</td><td>'
                       '{{ o.avg_ms|ms }}</td><td>{{ o.share|pct1 }}</td></tr>{% endfor %}\n',
                       "{{ s.rows|op_detail_rows }}"),
    "link_rows": ('{% for l in s.rows %}<tr{% if l.slow %} class="slow"{% endif %}><td>{{ l.src }}'
                  '{% if not l.mapped %} {{ _("(local)") }}{% endif %}</td><td>{{ l.dst }}{% if not '
                  'l.mapped %} {{ _("(local)") }}{% endif %}</td><td>{{ l.transport }}</td><td>{{ (l.group|t) }}</td>'
                  '{{ bare_cell(l.time_ms) }}{{ bare_cell(l.size_mb) }}{{ bare_cell(l.bandwidth_gbps, cls="hot" if l.slow '
                  'else "", badge=_("slow") if l.slow else "") }}</tr>{% endfor %}\n',
                  '{{ s.rows|link_rows(_("(local)"), _("slow")) }}'),
}

_NASTY = ["<script>alert(1)</script>", 'a"b', "it's", "x & y", "AI Core", "AI_CORE", "Computing", "p2p", "critical",
          "Communication (ms)", "中文", "", None, 3, 2.5, float("nan"), 1e-5, -1234567.891, 0.0004, True, "%(n)s",
          float("inf"), -0.0, np.float64(3.25), np.float64("nan")]


def test_html_rows_equal_the_template_loops_they_replaced():
    from reportgen import i18n
    rnd = random.Random(9)
    keys = ["step", "label", "value", "stage_mean", "median", "communication_ms", "transit_ms", "wait_ms", "op",
            "group", "kind", "count", "wait_ratio", "op_type", "side", "core", "total_ms", "avg_ms", "min_ms",
            "max_ms", "share", "name", "a", "b", "src", "dst", "transport", "mapped", "slow", "size_mb",
            "bandwidth_gbps", "time_ms", "calls", "per_call_ms"]
    for lang in ("en", "zh"):
        with i18n.use(lang):
            env = jinja_env.make_env()
            for name, (old, new) in _OLD_LOOPS.items():
                for n in (0, 1, 12):
                    rows = []
                    for _ in range(n):
                        row = {k: rnd.choice(_NASTY) for k in keys}
                        row["step"] = rnd.choice([None, 0, 7, 12345])
                        row["values"] = [rnd.choice(_NASTY) for _ in range(rnd.randrange(4))]
                        rows.append(row)
                    s = {"rows": rows, "phases": [{"key": "a"}, {"key": "b"}, {"key": "total_ms"}]}
                    want = env.from_string(old).render(s=s, num_cell=html_rows.num_cell, bare_cell=html_rows.bare_cell)
                    got = env.from_string(new + "\n").render(s=s)
                    assert got == want, (lang, name)
                    assert "<script>" not in got


def _babel_share(f: float, digits: int, lang: str) -> str:
    """Babel's percentage, except that a value that is not zero but rounds to zero reads "<0.1 %" (">-0.1 %"), never
    "0.0 %" (issue 29)."""
    from reportgen import i18n
    if f != 0 and abs(f) < 0.5 * 10.0 ** -digits:
        return ("<" if f > 0 else ">-") + i18n.format_percent(10.0 ** -digits, digits, lang)
    return i18n.format_percent(f, digits, lang)


def test_remembered_babel_numbers_equal_babel():
    from reportgen import fmt, i18n
    rnd = random.Random(4)
    values = [0.0, -0.0, 1.0, -1.0, 0.165, 0.145, 1234.5, 4476.0, 1e-9, -12345.675, 0.5, 99.95]
    values += [rnd.uniform(-1e4, 1e4) for _ in range(300)] + [float(rnd.randint(0, 10 ** 6)) for _ in range(100)]
    for lang in ("zh", "en"):
        with i18n.use(lang):
            for _ in range(2):  # the second time from memory
                for v in values:
                    digits = 0 if v == int(v) else 2
                    plain = i18n.format_number(v, digits, lang) if lang != "en" else \
                        (f"{v:,.0f}" if v == int(v) else f"{v:,.2f}")
                    assert fmt.number(v) == plain
                    assert fmt.share(v / 100) == _babel_share(v / 100 * 100, 1, lang)
                    assert fmt.percent(v, 2) == _babel_share(v, 2, lang)
                    assert fmt.share(v, 1, "zh") == _babel_share(v * 100, 1, "zh")


def test_bare_cell_is_num_cell_without_the_per_cell_num_class():
    """The rank pages' per-step, comparison and link tables align their numbers by the table's class (report.css
    n1 / n2 / nlk): their cells are `num_cell`'s without `class="num"`, the rest (text, escaping, badge, sort key)
    the same."""
    for v in _NASTY:
        for fmt in ("ms", "num", "ratio"):
            for cls, badge in (("", ""), ("hot", ""), ("hot", "slow"), ("", "<b>")):
                want = str(html_rows.num_cell(v, fmt, cls=cls, badge=badge))
                want = want.replace(' class="num"', "").replace('class="num ', 'class="')
                assert str(html_rows.bare_cell(v, fmt, cls=cls, badge=badge)) == want
    assert str(html_rows.bare_cell(1.5)) == "<td>1.500</td>"
    css = (Path(html_rows.__file__).parents[2] / "templates" / "static" / "report.css").read_text(encoding="utf-8")
    assert "table.nlk td:nth-child(-n+2), table.nlk td:nth-child(n+5)" in css


def test_csv_text_float_arrays_equal_the_lists_num_column_gives():
    """A rank's every-operator CSV hands csv_text float64 arrays (NaN: missing) instead of `num_column` lists: the
    same text, plain columns and columns with missing, non-finite, negative zero and large values alike."""
    from reportgen.site.views.values import num_column
    rnd = np.random.default_rng(5)
    cols = [{"key": k, "label": k} for k in ("name", "a", "b", "c")]
    for n in (0, 1, 40):
        plain = rnd.uniform(-999, 999, n)
        odd = rnd.uniform(-5000, 5000, n)
        if n > 5:
            odd[[1, 2, 3, 4, 5]] = [np.nan, np.inf, -0.0, 1000.0, 0.25]
        ints = np.round(rnd.uniform(0, 50, n))
        names = [f"op,{i}" if i % 7 == 0 else f"op{i}" for i in range(n)]
        arrays = {"name": names, "a": plain, "b": odd, "c": ints}
        lists = {"name": names, **{k: num_column(v) for k, v in arrays.items() if k != "name"}}
        want = csv_text.csv_text(cols, page_mod.LazyRows(lambda lists=lists: lists, columns=True))
        got = csv_text.csv_text(cols, page_mod.LazyRows(lambda arrays=arrays: arrays, columns=True))
        assert got == want
        if n > 5:
            lines = got.split("\r\n")
            assert lines[2].split(",")[2] == lines[3].split(",")[2] == ""  # NaN, inf: missing (as num_column)
            assert lines[4].split(",")[2] == "0" and lines[5].split(",")[2] == "1000"  # (-0.0: a whole number)


def test_template_gettext_with_variables_remembered_per_value_and_type():
    """`_()` with variables, remembered per (value, type): a Markup variable is not escaped where a str of the same
    text is; True and 1, 1 and "1" are told apart; each call gives what the message % its variables gives."""
    from markupsafe import Markup

    env = jinja_env.make_env()
    t = env.from_string('{{ _("Peak memory is %(ratio)s of the capacity.", ratio=v) }}|')
    values = ["<b>x</b>", Markup("<b>x</b>"), 1, True, "1", None, 2.5, -0.0, 0.0, object, "<b>x</b>"]
    for _ in range(2):  # (the second round from what the first remembered)
        for v in values:
            want = Markup("Peak memory is %(ratio)s of the capacity.") % {"ratio": v}
            assert t.render(v=v) == want + "|", v


def test_folded_gettext_gives_what_the_call_gives_in_each_language():
    """`_("literal")` translated when the template is compiled (`jinja_env.FoldedGettext`) renders what the call
    renders: in English and in Chinese, in text, in attributes, as a filter's or a macro's argument, a message with
    `%%` and HTML in it; a call with variables, an attribute named `_` and a message that fails stay calls. And the
    compiled code of one language is never served to the other (`template_cache` keys it by the catalog)."""
    import jinja2
    from reportgen import i18n

    source = ('<p title="{{ _("Filter types…") }}">{{ _("Overview") }} {{ _("Data quality")|upper }}</p>'
              '{% macro m(x) %}[{{ x }}]{% endmacro %}{{ m(_("slow")) }}{{ _("50%% of <b>it</b>") }}'
              '{{ _("Rank %(rank)s", rank=3) }}{{ d._("x") if d is defined else "" }}')
    outputs = {}
    for lang in ("en", "zh"):
        with i18n.use(lang):
            folded = jinja_env.make_env()
            plain = jinja_env.make_env()
            plain.extensions.pop(next(k for k in plain.extensions if k.endswith("FoldedGettext")))
            got, want = folded.from_string(source).render(), plain.from_string(source).render()
            assert got == want, lang
            assert folded.compile(source, raw=True).count("context.call") < plain.compile(source, raw=True).count(
                "context.call")  # (the literal calls are gone from the compiled code)
            outputs[lang] = got
    assert outputs["en"] != outputs["zh"]  # (the messages above are translated: a cache that mixed them would show)
    # a template loaded in one language then the other, through the same bytecode cache: each in its own
    for lang in ("en", "zh", "en"):
        with i18n.use(lang):
            env = jinja_env.make_env()
            env.loader = jinja2.DictLoader({"t.html": source})
            assert env.get_template("t.html").render() == outputs[lang]


# the `chart` macro (`_macros.html`) that `jinja_env.chart_figure` replaced, as it was
_OLD_CHART_MACRO = '{% macro chart(c) -%}\n{% set shared = share_spec(c) %}\n<figure class="chart" id="fig-{{ c.id }}" data-renderer="{{ c.renderer }}"{% if shared %} data-spec="{{ shared.key }}"{% endif %}{% if c.step_data %} data-steps="1"{% endif %}{% if c.table %} data-table="{{ c.table.id }}" data-table-cols="{{ c.table.cols|join(\',\') }}" data-table-set="{{ c.table.dataset }}"{% endif %}>\n  <div class="vis"></div>\n  {% if c.caption %}<figcaption>{{ (c.caption|t) }}</figcaption>{% endif %}\n  {#- a large run\'s rank page leaves out a shared spec\'s data when the columns carry all of it (every dataset\n      empty and named in them: report.js fills them in), ~75 bytes a chart on a thousand pages -#}\n  {% if not (gz_csvs is defined and gz_csvs and shared and c.columns_carry is defined and c.columns_carry(shared.data.datasets)) %}\n  <script type="application/json" class="spec">{{ (shared.data if shared else c.spec)|jsonscript }}</script>{% endif %}\n  {% if c.columns %}<script type="application/json" class="columns">{{ c.columns|jsonscript }}</script>{% endif %}\n  {% if c.step_data %}<script type="application/json" class="step-data">{{ c.step_data|jsonscript }}</script>{% endif %}\n</figure>\n{%- endmacro %}'


def test_chart_figure_equals_the_macro_it_replaced():
    """Every branch of the chart macro: a Chart or a dict, a shared spec or its own, the data left out (a large
    run's rank page) or not, a caption to escape and translate, a table, columns, per-step data, hrefs resolved."""
    from markupsafe import Markup

    from reportgen import i18n
    from reportgen.charts import Chart

    def charts():
        for caption in ("", "Step total", "<b>x</b> & 'y'", Markup("<i>m</i>")):
            for table in (None, {"dataset": "steps", "id": "rank-steps", "cols": [1, -1, 3]}):
                for columns in (None, {"steps": {"fields": ["x"], "cols": [[0.1234567891, 2]]}}):
                    for step_data in (None, {"steps": {"1": [{"a": 1}]}, "fields": ["a"]}):
                        spec = {"mark": "bar", "datasets": {"steps": [] if columns or table else [{"href": "x.html",
                                                                                                   "v": 1 / 3}]}}
                        c = Chart("c<1>", spec, caption, "canvas" if table else "svg", step_data, columns, table)
                        yield c
                        yield {"id": c.id, "spec": {"mark": "line"}, "caption": caption, "renderer": "svg",
                               "step_data": step_data, "columns": columns, "table": table}

    for lang in ("en", "zh"):
        with i18n.use(lang):
            env = jinja_env.make_env()
            old = env.from_string(_OLD_CHART_MACRO + "[{{ chart(c) }}]")
            new = env.from_string('{% from "_macros.html" import chart with context %}[{{ chart(c) }}]')
            for share in (lambda c: None, lambda c: {"key": "k&1", "data": {"datasets": (
                    c["spec"] if isinstance(c, dict) else c.spec).get("datasets", {})}}):
                for gz in ((), (True,), (False,)):
                    for c in charts():
                        extra = {"gz_csvs": gz[0]} if gz else {}
                        url = lambda target: "../" + str(target)  # noqa: E731
                        url.resolver = None
                        want = old.render(c=c, share_spec=share, url=url, **extra)
                        assert new.render(c=c, share_spec=share, url=url, **extra) == want, (lang, c, gz)


def test_esc_writes_what_escape_writes():
    from markupsafe import Markup, escape
    for v in [*_NASTY, Markup("<b>x</b>"), 10 ** 30, -7, False, "a'b", "plain"]:
        assert str(html_rows.esc(v)) == str(escape(v)), v


def test_short_number_columns_equal_the_numpy_coding():
    """A column of fewer than 16 numbers is delta-coded in Python (`_short_delta_coded`): the same column as the
    numpy path (`_delta_coded`), decimals, deltas and their types."""
    rnd = random.Random(11)
    picks = [0.25, 0.125, 1e-6, 3.0, -2.5, 0.1, 7e7, 12345.6789, 0.5, 1.5, -0.0, 1e-7, 4503599627370495.0]
    for n in range(1, 16):
        for k in range(200):
            vals = ([rnd.uniform(-1e4, 1e4) for _ in range(n)] if k % 3 == 0 else
                    [round(rnd.uniform(-1e3, 1e3), rnd.randint(0, 7)) for _ in range(n)] if k % 3 == 1 else
                    [rnd.choice(picks) for _ in range(n)])
            vals = [columnar.sig7(v) for v in vals]
            want = columnar._delta_coded(np.array(vals, dtype=np.float64), vals)
            got = columnar._short_delta_coded(list(vals), vals)
            assert json.dumps(got) == json.dumps(want), vals
            if isinstance(got, dict):
                assert all(type(d) is int for d in got["d"])


# the `csv_file` and `facts_table` macros (`_macros.html`) that `jinja_env.csv_file` and `html_rows.facts_table`
# replaced, as they were
_OLD_CSV_MACRO = ('{% macro csv_file(path, table, label=none) -%}\n'
                  '{% set path = csv_download(path, gz_csvs is defined and gz_csvs) %}\n'
                  '{% set n_rows = csv_rows(page, path) %}\n'
                  '<a class="csv-download" data-csv-for="{{ table }}" href="{{ url(path) }}" title="{{ _("Download the '
                  'full table as a CSV file (every row, numbers at full precision)") }}"{% if path.endswith(".gz") %} '
                  'download{% endif %}>{% if label %}{{ label }}{% elif n_rows is not none %}{{ _("CSV (all %(n)s '
                  'rows)", n=n_rows) }}{% else %}{{ _("CSV (every row)") }}{% endif %}{% if path.endswith(".gz") %} '
                  '{{ _("gzip-compressed") }}{% endif %}</a>\n{%- endmacro %}')
_OLD_FACTS_MACRO = ('{% macro facts_table(facts) -%}\n<table class="facts">\n{% for k, v in facts %}<tr><th>{{ (k|t) }}'
                    '</th><td>{{ (v|t) }}</td></tr>\n{% endfor %}\n</table>\n{%- endmacro %}')


def test_csv_file_and_facts_table_equal_the_macros_they_replaced():
    """Every branch of the csv_file macro (a label or none, a page whose downloads hold the file or not, a large
    run's `.csv.gz`, a path to escape) and the facts table (labels to translate and escape, numbers, none), in
    each language."""
    from markupsafe import Markup

    from reportgen import i18n
    url = lambda target: "../" + str(target)  # noqa: E731
    pages = [None, type("P", (), {"downloads": [("ranks/r.csv", ["a"], [[1], [2]]),
                                                ("ranks/r.csv.gz", ["a"], [[1]])]})()]
    facts = [[], [("Rank", "3"), ("Source folder", "a<b> & 'c'"), ("Host", Markup("<i>h</i>")), ("Device", 4),
                  ("Framework", None), ("Step trace", "Computing (ms)")]]
    for lang in ("en", "zh"):
        with i18n.use(lang):
            env = jinja_env.make_env()
            old = env.from_string(_OLD_CSV_MACRO + _OLD_FACTS_MACRO + "[{{ csv_file(p, t, label) }}]"
                                  "[{{ facts_table(facts) }}]")
            new = env.from_string('{% from "_macros.html" import csv_file, facts_table with context %}'
                                  "[{{ csv_file(p, t, label) }}][{{ facts_table(facts) }}]")
            for p in ("ranks/r.csv", "cluster/x&y.csv", "ranks/r.txt"):
                for label in (None, "", "Every <row>", Markup("<b>all</b> rows")):
                    for page in pages:
                        for gz in ((), (True,), (False,)):
                            for fs in facts:
                                args = dict(p=p, t="t<1>", label=label, page=page, url=url, facts=fs,
                                            **({"gz_csvs": gz[0]} if gz else {}))
                                want = old.render(csv_download=urls.large_csv, csv_rows=jinja_env.csv_rows, **args)
                                assert new.render(**args) == want, (lang, args)


# the `issues_table` macro (`_macros.html`) that `jinja_env.issues_table` replaced, as it was
_OLD_ISSUES_MACRO = (    '{% macro issues_table(issues, id) -%}\n'
    '{% if issues %}\n'
    '<div class="table-tools"><input type="search" placeholder="{{ _("Filter…") }}" data-filter="{{ id }}" aria-label="{{ _("Filter data-quality table") }}"></div>\n'
    '<table class="sortable" id="{{ id }}">\n'
    '<thead><tr><th>{{ _("Severity") }}</th><th>{{ _("File") }}</th><th>{{ _("Problem") }}</th></tr></thead>\n'
    '<tbody>\n'
    '{% for i in issues %}<tr class="sev-{{ i.severity }}"><td><span class="badge {{ i.severity }}">{{ (i.severity|t) }}</span></td><td><code>{{ i.file or _("(run)") }}</code></td><td>{{ (i|problem) }}</td></tr>\n'
    '{% endfor %}\n'
    '</tbody></table>\n'
    '{% else %}\n'
    '<p class="ok">{{ _("Every input file that was found could be read.") }}</p>\n'
    '{% endif %}\n'
    '{%- endmacro %}')


def test_issues_table_equals_the_macro_it_replaced():
    """No issues, issues as dicts and as objects (a file or none, texts to escape, a stored problem's code), the
    table's id to escape, in each language."""
    from markupsafe import Markup

    from reportgen import i18n
    from reportgen.model import DataIssue
    lists = [[], None, [{"severity": "warning", "file": "a<b>.csv", "problem": "could not read & skipped"},
                        {"severity": "error", "file": None, "problem": "x"},
                        {"severity": "info", "file": "", "problem": Markup("<i>kept</i>")},
                        {"severity": "warning", "file": "f", "problem": "bad", "code": "no-such-code", "params": {}}],
             [DataIssue("warning", "ASCEND_PROFILER_OUTPUT/x.csv", "missing column 'y'"),
              DataIssue("error", "", "could not read")]]
    for lang in ("en", "zh"):
        with i18n.use(lang):
            env = jinja_env.make_env()
            old = env.from_string(_OLD_ISSUES_MACRO + "[{{ issues_table(issues, id) }}]")
            new = env.from_string('{% from "_macros.html" import issues_table with context %}'
                                  "[{{ issues_table(issues, id) }}]")
            rank = env.from_string('{% set issues_table = issues_table_fn %}[{{ issues_table(issues, id) }}]')
            for issues in lists:
                for tid in ("rank-issues", "a\"b<c>"):
                    want = old.render(issues=issues, id=tid)
                    assert new.render(issues=issues, id=tid) == want, (lang, issues, tid)
                    assert rank.render(issues=issues, id=tid) == want


def test_sections_html_equals_including_each_section():
    """`sections_html` writes what `{% include s.template %}` for each section wrote, the caller's names and
    the page's passed on, a section's own `{% set %}` kept to itself."""
    from jinja2 import DictLoader

    env = jinja_env.make_env()
    env.loader = DictLoader({"_a.html": "<a>{{ s.id }}|{{ page }}|{{ f(1) }}{% set brief = s.id * 2 %}{{ brief }}</a>\n",
                             "_b.html": "{% if s.id %}<b>{{ s.id }}{{ brief is defined }}</b>{% endif %}\n\n",
                             "_c.html": ""})
    S = type("S", (), {})
    sections = []
    for name, i in (("_a.html", "x<1>"), ("_b.html", "y"), ("_c.html", ""), ("_a.html", "z"), ("_b.html", "")):
        s = S()
        s.template, s.id = name, i
        sections.append(s)
    old = env.from_string("{% set f = g %}<p>{% for s in sections %}\n{% include s.template %}\n{% endfor %}\n</p>")
    new = env.from_string("{% set f = g %}<p>{{ sections_html(sections, f=f) -}}\n</p>")
    for secs in (sections, sections[:1], []):
        want = old.render(sections=secs, page="p&q", g=lambda v: v + 1)
        assert new.render(sections=secs, page="p&q", g=lambda v: v + 1) == want


def test_ms_cells_of_floats_equal_ms_cell_per_value():
    """`fmt.ms_cells` (a column of floats at once, `html_rows._ms_column`'s common case) writes what `ms_cell`
    writes, around the 1 ms boundary, the rounding to 1,000 and the values that are not finite included."""
    from reportgen import fmt
    rnd = random.Random(11)
    values = [rnd.uniform(-3000, 3000) for _ in range(2000)] + [rnd.uniform(-1.5, 1.5) for _ in range(500)] + [
        0.0, -0.0, 1.0, -1.0, 0.9999996, -0.9999996, 0.99999, 999.9996, -999.9996, 1e-5, -1e-5, 5e-324,
        float("inf"), float("-inf"), float("nan"), 1e20, 0.5, 1234567.8915]
    assert fmt.ms_cells(values) == [fmt.ms_cell(v) for v in values]
    assert html_rows._ms_column(values) == [html_rows._ms_bare(v) for v in values]
    mixed = [1.5, None, "x<y", np.float64(2.5), 3]
    assert html_rows._ms_column(mixed) == [html_rows._ms_bare(v) for v in mixed]
