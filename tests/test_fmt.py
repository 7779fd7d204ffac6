"""One formatter (`reportgen.fmt`) for every number and rank list a report shows (issue 15): hand-checked outputs
of each function, and the places that used to carry their own copy now use it."""

from __future__ import annotations

import math

import numpy as np

from reportgen import fmt


def test_table_cells():
    assert fmt.ms_cell(1234.5) == "1,234.500"
    assert fmt.ms_cell(0.0004) == "0.000400" and fmt.ms_cell(0.01234) == "0.0123" and fmt.ms_cell(0.5) == "0.500"
    assert fmt.ms_cell(0) == "0.000"
    assert fmt.ms_cell(None) == fmt.ms_cell(math.nan) == fmt.ms_cell(np.float32("nan")) == "—"
    assert fmt.ms_cell("n/a") == "n/a"  # a label in a number column is shown as it is
    assert fmt.number(1234) == "1,234" and fmt.number(2.5) == "2.50" and fmt.number("x") == "—"
    assert fmt.percent(12.345) == "12.3 %" and fmt.percent(None) == "—"
    assert fmt.share(0.1234) == "12.3 %" and fmt.share(0.1234, 2) == "12.34 %"
    assert fmt.share(None) == fmt.share(math.nan) == fmt.share("x") == "—"
    assert fmt.fixed(1234.5678) == "1,234.568" and fmt.fixed(None) == "—"
    assert fmt.signed(-2.5, 1) == "-2.5" and fmt.signed(1234.0) == "+1,234.000"
    assert fmt.signed_percent(3.21) == "+3.2 %" and fmt.signed_percent(None) == "n/a"
    assert fmt.signed_percent(None, missing="—") == "—"


def test_durations_in_sentences_take_digits_by_size():
    assert [fmt.ms(v) for v in (1234.4, 12.34, 1.234, 0.1234)] == ["1,234 ms", "12.3 ms", "1.23 ms", "123 µs"]
    assert fmt.ms(-150.0) == "-150 ms"
    # below 1 ms in µs with 3 significant digits (issue 29: not "0.002 ms"), below 1 µs in ns; rounding up to the
    # next unit stays in the larger unit
    assert [fmt.ms(v) for v in (0.0021, 0.000_5, 0.0000012, 0.9996, 99.96, 0)] == [
        "2.10 µs", "500 ns", "1.20 ns", "1.00 ms", "100 ms", "0 ms"]
    assert fmt.ms(-0.0153) == "-15.3 µs"


def test_fixed_and_signed_keep_small_values():
    assert (fmt.fixed(0.0004), fmt.fixed(0.25), fmt.fixed(0.0123, 2), fmt.fixed(0)) == ("0.000400", "0.250", "0.0123", "0.000")
    assert (fmt.signed(0.0003), fmt.signed(-0.0003), fmt.signed(0.5, 1)) == ("+0.000300", "-0.000300", "+0.5")
    assert fmt.signed(float("nan")) == fmt.fixed(None) == "—"


def test_significant_digits():
    assert [fmt.significant(v) for v in (0.000412, 0.0123, 1.234, 12.345, 1234.5, -0.5)] == [
        "0.000412", "0.0123", "1.23", "12.3", "1,234", "-0.500"]
    assert fmt.significant(0.09996) == "0.100" and fmt.significant(9.996) == "10.0"


def test_small_shares_are_not_zero():
    """A share that is not zero never reads "0.0 %" (issue 29): "<0.1 %" in English, "<0.1%" in Chinese."""
    from reportgen import i18n

    assert (fmt.share(0.0004), fmt.share(0), fmt.share(0.0006)) == ("<0.1 %", "0.0 %", "0.1 %")
    assert fmt.share(-0.0001) == ">-0.1 %" and fmt.share(0.00004, 2) == "<0.01 %"
    assert fmt.percent(0.04) == "<0.1 %" and fmt.percent(0.05) == "0.1 %"
    assert (fmt.share_text(0.0004).render("en"), fmt.share_text(0.0004).render("zh")) == ("<0.1 %", "<0.1%")
    assert fmt.share_text(0.35).render("zh") == "35.0%"
    with i18n.use("zh"):
        assert (fmt.share(0.0004), fmt.share(0.1234), fmt.percent(0.02)) == ("<0.1%", "12.3%", "<0.1%")
    assert fmt.ms(None) == fmt.ms(math.nan) == "—"


def test_rank_lists():
    assert fmt.ranks([5]) == "rank 5"
    assert fmt.ranks([1, 2, 3]) == "ranks 1, 2, 3"
    assert fmt.ranks(list(range(10)), limit=3) == "ranks 0, 1, 2 and 7 more"
    assert fmt.rank_list(list(range(14))) == "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 and 2 more"
    assert fmt.joined(["a", "b", "c"], 2) == "a, b, … (3 in all)"
    assert fmt.compact_ranks([0, 1, 2, 3, 5, 8, 9]) == "0–3, 5, 8–9"
    assert fmt.compact_ranks([]) == "none"


def test_one_compact_ranges_helper_for_every_spelling():
    """fmt.number_runs is the one implementation: the pages' "0–3, 5", compare.json's group keys "0-3,5",
    discovery's "0-3, 5" and the overlap loader's step ranges all come from it."""
    from reportgen.discover.runs import compact as discover_text

    assert fmt.number_runs([4, 5, 6, 9, 11, 12]) == ["4–6", "9", "11–12"]
    assert fmt.number_runs([]) == [] and fmt.number_runs([7]) == ["7"]
    assert fmt.compact_ranks([1, 2, 3, 12], None, dash="-", sep=",", empty="") == "1-3,12"  # compare.json's keys
    assert fmt.compact_ranks([], None, dash="-", sep=",", empty="") == ""
    assert discover_text({5, 3, 2, 1, 9}) == "1-3, 5, 9" and discover_text([]) == ""
    assert fmt.compact_ranks(range(0, 60, 2)).endswith(", … (30 in all)")  # 24 runs, then the count


def test_the_old_homes_use_it():
    from reportgen.rules import base
    from reportgen.site.render import html_rows, jinja_env

    assert (base.fmt_ms, base.fmt_pct, base.fmt_ranks) == (fmt.ms, fmt.share_text, fmt.ranks)
    # the finding texts' percentage is rendered in the language of the text: "35.0 %" / "35.0%"
    p = base.fmt_pct(0.35)
    assert (p.render("en"), p.render("zh"), base.fmt_pct(None)) == ("35.0 %", "35.0%", "—")
    env = jinja_env.make_env()
    assert (env.filters["ms"], env.filters["pct"], env.filters["pct1"], env.filters["num"]) == (
        fmt.ms_cell, fmt.percent, fmt.share, fmt.number)
    assert str(html_rows.ms_cells([1.5, None])) == '<td class="num">1.500</td><td class="num">—</td>'
    assert str(html_rows.num_cell(0.25, fmt="ratio")) == '<td class="num">25.0 %</td>'
    assert str(html_rows.num_cell(1234.5, badge="slow")) == ('<td class="num" data-v="1234.5">1,234.500 '
                                                            '<span class="badge slow">slow</span></td>')


def test_ms_cell_under_one_ms_is_significant_digits():
    """A cell under 1 ms is `significant(v, 3)` (its fast path, Python's "#.3g" from 0.0001 up, writes the same:
    around the powers of ten and the rounding edges too)."""
    import random

    rnd = random.Random(7)
    values = [m * 10.0 ** e for e in range(-6, 1) for m in (1, 9.995, 9.9949999, 9.99951, 9.9995, 1.0005, 2.675, 5)]
    values += [math.nextafter(v, t) for v in list(values) for t in (0, 1)]
    values += [rnd.uniform(-1, 1) * 10 ** rnd.uniform(-5, 0) for _ in range(20000)]
    values += [round(v, k) for v in values[-2000:] for k in (3, 4, 5)]
    for v in values + [-v for v in values]:
        if v != 0 and -1 < v < 1:
            assert fmt.ms_cell(v) == fmt.significant(v, 3), repr(v)
