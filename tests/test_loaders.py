"""Loaders: units, header variants, quirks and bad input (hand-computed expectations)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.host_steps import load_host_steps
from reportgen.loaders.step_trace import (load_legacy_step_trace, load_modern_step_trace,
                                          load_msprof_step_trace)
from tests.conftest import sample

LEGACY = ("step_num,start_point,end_point,total,fp_point,bp_point,iteration_interval,fp_and_bp,tail,"
          "stream_24_0_AllReduce-op3143,stream_24_0_AllReduce-op3143_start_point,stream_24_0_AllReduce-op3143_end_point\n"
          "1,61688106196804,61688109551051,3354247,61688106196804,61688109001447,0,2804643,549604,454080,61688109006157,61688109460237\n"
          "2,61688109551051,61688112916194,3365143,61688109556119,61688112367356,5068,2811237,548838,454080,61688112371861,61688112825941\n"
          "-,61688109551051,61688112916194,3365143,61688109556119,61688112367356,5068,2811237,548838,454080,61688112371861,61688112825941\n")


def _w(tmp_path: Path, name: str, text: str, newline: str = "\n") -> Path:
    p = tmp_path / name
    p.write_bytes(text.replace("\n", newline).encode())
    return p


def test_legacy_ticks_to_ms_and_stored_average(tmp_path):
    log = IssueLog(tmp_path)
    t = load_legacy_step_trace(_w(tmp_path, "step_trace_raw_6_detail_time.csv", LEGACY, "\r\n"), log)
    assert t.kind == "legacy"
    assert list(t.steps["step"]) == [1, 2]
    # 3354247 ticks of 10 ns = 33.54247 ms
    assert t.steps["total"].tolist() == pytest.approx([33.54247, 33.65143])
    assert t.steps["iteration_interval"].tolist() == pytest.approx([0.0, 0.05068])
    assert t.stored_average["fp_and_bp"] == pytest.approx(28.11237)
    assert t.stored_average["tail"] == pytest.approx(5.48838)
    assert not log.issues


def test_legacy_inference_variant(tmp_path):
    text = "step_num,start_point,end_point,total,fp_point,iteration_interval,fp\n1,0,200000,200000,100000,100000,100000\n"
    log = IssueLog(tmp_path)
    t = load_legacy_step_trace(_w(tmp_path, "step_trace_raw_0_detail_time.csv", text), log)
    assert t.steps["fp_and_bp"].tolist() == [1.0]
    assert math.isnan(t.steps["tail"].iloc[0])
    assert any("inference" in i.problem for i in log.issues)


def test_legacy_zero_average_row_is_rejected(tmp_path):
    text = ("step_num,start_point,end_point,total,fp_point,bp_point,iteration_interval,fp_and_bp,tail\n"
            "1,15490789606875,15490791977780,2370905,15490789606875,15490791973683,0,2366808,4097\n"
            "0,0,0,0,0,0,1243211,0,0\n")
    log = IssueLog(tmp_path)
    t = load_legacy_step_trace(_w(tmp_path, "step_trace_raw_1_detail_time.csv", text), log)
    assert t.stored_average is None  # total 0 < interval: not a real average
    assert t.steps["total"].tolist() == pytest.approx([23.70905])
    assert any("inconsistent" in i.problem for i in log.issues)


def test_legacy_truncated_row_is_reported_not_fatal(tmp_path):
    text = LEGACY.splitlines()
    truncated = "\n".join(text[:2]) + "\n" + text[2][:40] + "\n"
    log = IssueLog(tmp_path)
    t = load_legacy_step_trace(_w(tmp_path, "step_trace_raw_6_detail_time.csv", truncated), log)
    assert len(t.steps) == 1
    assert any("wrong number of fields" in i.problem and "line 3" in i.problem for i in log.issues)


MODERN_8_3 = ("Device_id,Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
              "Communication(Not Overlapped and Exclude Receive),Preparing\n"
              "4,13,400448.26,277649.66,0.0,277649.66,131705.28,809803.25,0,277649.66,189.0\n")
MODERN_2025 = ("Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble,"
               "Communication(Not Overlapped and Exclude Receive),Preparing\n"
               "50,8873.756\t,101963.203,4028.675,105991.878,25744.05,136581.0,0,101963.203,N/A\n")
MODERN_2024 = ("Step,Computing,Communication(Not Overlapped),Overlapped,Communication,Free,Stage,Bubble\n"
               "2,75422.22,151303.54,7129.46,158433.0,67860.8,294586.5,100\n")


@pytest.mark.parametrize("text,step,computing,total", [
    (MODERN_8_3, 13, 400.44826, 809.80325),
    (MODERN_2025, 50, 8.873756, 136.581),
    (MODERN_2024, 2, 75.42222, 294.6865),
])
def test_modern_header_variants_in_ms(tmp_path, text, step, computing, total):
    log = IssueLog(tmp_path)
    t = load_modern_step_trace(_w(tmp_path, "step_trace_time.csv", text, "\r\n"), log)
    row = t.steps.iloc[0]
    assert row["step"] == step
    assert row["computing"] == pytest.approx(computing)
    assert row["total"] == pytest.approx(total)  # Stage + Bubble
    assert not [i for i in log.issues if i.severity != "info"]


def test_modern_derives_missing_columns(tmp_path):
    t = load_modern_step_trace(_w(tmp_path, "step_trace_time.csv", MODERN_2024), IssueLog(tmp_path))
    row = t.steps.iloc[0]
    # older files lack 'Exclude Receive': Not Overlapped - Bubble
    assert row["communication_not_overlapped_exclude_receive"] == pytest.approx(151.30354 - 0.1)
    assert math.isnan(t.steps["preparing"].iloc[0])


def test_modern_na_and_empty_step(tmp_path):
    text = MODERN_2025.replace("\n50,", "\n,")
    t = load_modern_step_trace(_w(tmp_path, "step_trace_time.csv", text), IssueLog(tmp_path))
    assert t.steps["step"].isna().all()
    assert math.isnan(t.steps["preparing"].iloc[0])


@pytest.mark.parametrize("content,needle", [("", "empty"), ("Step,Foo\n1,2\n", "no Computing column")])
def test_modern_bad_files(tmp_path, content, needle):
    log = IssueLog(tmp_path)
    assert load_modern_step_trace(_w(tmp_path, "step_trace_time.csv", content), log) is None
    assert any(needle in i.problem for i in log.issues)


def test_kineto_host_steps_from_real_trace():
    d = sample("real/torch_gloo_4rank")
    p = next(d.glob("rank0.*.pt.trace.json"))
    t = load_host_steps(p, IssueLog(d))
    assert list(t.steps["step"]) == [2, 3, 4, 5, 6]
    assert t.steps["total"].iloc[0] == pytest.approx(37.161442)  # ProfilerStep#2 dur 37161.442 µs


def test_truncated_trace_keeps_what_was_read(tmp_path):
    d = sample("real/torch_gloo_4rank")
    src = next(d.glob("rank0.*.pt.trace.json")).read_bytes()
    p = tmp_path / "rank0.pt.trace.json"
    p.write_bytes(src[: int(len(src) * 0.7)])
    log = IssueLog(tmp_path)
    load_host_steps(p, log)
    assert any(i.severity == "error" and "could not be read to the end" in i.problem for i in log.issues)


def test_msprof_iterations():
    d = sample("mindinsight/msprof_raw_2rank_10iter/profiler")
    dev = next(d.glob("PROF_*/device_0"))
    t = load_msprof_step_trace(dev, IssueLog(d))
    assert list(t.steps["step"]) == list(range(1, 11))
    # Iteration 1: Iteration Time(ns) 47587810 -> 47.58781 ms; FP_BP = BP End - FP Start = 4236.1 µs
    first = t.steps.iloc[0]
    assert first["total"] == pytest.approx(47.58781)
    assert first["fp_and_bp"] == pytest.approx(4.2361, abs=1e-6)
    assert first["iteration_interval"] + first["fp_and_bp"] + first["tail"] == pytest.approx(first["total"], abs=1e-3)


def test_json_nesting_check_without_escapes_equals_the_streaming_guard():
    """The whole-file JSON reader's quick nesting check (quote parity, used when a file has no backslash) gives the
    streaming guard's answer on every input: strings with brackets, unbalanced quotes, deep and shallow nesting,
    pieces longer than the guard's 64 KB chunk."""
    import random

    from reportgen.loaders.jsonfile import _guarded_nesting_within, _nesting_within, _outside_strings

    rng = random.Random(7)
    cases = [b"", b'"', b'["]"]', b'{"a": "[[[["}', b'[' * 300 + b']' * 300, b'"' + b'[' * 300 + b'"',
             b'["' + b'x' * 70_000 + b'[[[", [[[]]]]', b'[' * 150 + b'"' + b'[' * 100_000]
    for _ in range(3000):
        n = rng.choice((5, 40, 400))
        cases.append(bytes(rng.choice(b'[]{}"a, ') for _ in range(n)))
    for raw in cases:
        outside = _outside_strings(raw)
        for limit in (1, 3, 10, 200):
            want = _guarded_nesting_within(raw, limit)
            assert _nesting_within(raw, limit) == want, (raw[:80], limit)
            assert _nesting_within(raw, limit, outside) == want, (raw[:80], limit)  # the text the reader keeps


def test_json_outside_strings_of_a_large_text_equal_the_split():
    """A large text's bytes outside strings (read without a piece per string) equal the plain split's: an even and
    an odd number of quotes, strings holding brackets, digits and e's, empty strings, a text of quotes alone."""
    import random

    from reportgen.loaders.jsonfile import _DROP, _outside_strings

    rng = random.Random(3)
    cases = [b'"' * 70_001, b'""' * 40_000, b'{"a": 1}' * 12_000, b'[1, "x]"' * 12_000 + b', "tail']
    for _ in range(20):
        cases.append(bytes(rng.choice(b'[]{}"a,:.0123456789eE xyz') for _ in range(rng.randint(90_000, 120_000))))
    for raw in cases:
        assert len(raw.translate(None, _DROP)) >= 65536 or raw.count(b'"') > 60_000
        assert _outside_strings(raw) == b"".join(raw.translate(None, _DROP).split(b'"')[::2]), raw[:40]


def test_json_fast_path_numbers_equal_the_careful_reader(tmp_path):
    """A clean JSON file skips the walk over its values when its text outside strings shows every number small (no
    exponent, fewer than 19 digits in a row): the values and data-quality entries equal an independent reading
    (json.loads with hooks turning non-finite and out-of-range numbers into None) whatever the numbers, their
    neighbours (true / false / null, strings full of digits and e's) and the spacing."""
    import json
    import random

    from reportgen.loaders.jsonfile import _read_json
    from reportgen.numbers import MAX_ABS_NUMBER, MAX_INT

    def oracle(text: str):
        bad = []

        def num(s, conv):
            v = conv(s)
            if isinstance(v, float) and not math.isfinite(v) or abs(v) > (MAX_INT if conv is int else MAX_ABS_NUMBER):
                bad.append(s)
                return None
            return v
        return json.loads(text, parse_int=lambda s: num(s, int), parse_float=lambda s: num(s, float)), bad

    rng = random.Random(11)
    numbers = ["0", "-0", "17", "999999999999999999", "-999999999999999999", str(MAX_INT), str(MAX_INT + 1),
               "9223372036854775807", "12345678901234567890123", "1.5", "0.30000000000000004", "1e5", "1E-5",
               "2.5e300", "-7e18", "4611686018427387904.0", "123456789012345678.5", "1.0e+2", "2e-05", "-3.5E-7",
               "1e-400", "999999999999999999e-3"]
    atoms = numbers + ["true", "false", "null", '"e19 1234567890123456789012"', '"1e400"', '"truee"', '"E"']
    for i in range(400):
        vals = [rng.choice(atoms) for _ in range(rng.randint(1, 6))]
        sp = rng.choice(["", " ", "\n  "])
        text = "{" + f",{sp}".join(f'"k{j}e":{sp}{v}' for j, v in enumerate(vals)) + f',{sp}"l": [{sp}' + \
               f",{sp}".join(reversed(vals)) + "]}"
        p = tmp_path / f"d{i}.json"
        p.write_text(text)
        log = IssueLog(tmp_path)
        got = _read_json(p, log)
        want, bad = oracle(text)
        assert got == want, text
        assert bool(log.issues) == bool(bad), (text, [i.problem for i in log.issues])


def test_json_numbers_small_of_a_large_text_equals_the_text_search():
    """The large-text test of `_numbers_small` (on an array) answers as the plain text search does: positive
    exponents after digits (either case, with and without +), negative ones (allowed), runs of 18, 19 and more
    digits, e's after separators, digits at both ends."""
    import random

    from reportgen.loaders.jsonfile import _numbers_small

    def plain(outside: bytes) -> bool:  # an independent reading: a regular expression over the text
        return not re.search(rb"[0-9][eE][0-9+]|[0-9]{19}", outside)

    rng = random.Random(5)
    base = b"[1.5,22,{3:4}]," * 5000  # no exponent, short numbers
    cases = [base, base + b"1e5", b"E" + base, base + b"7" * 18, base + b"7" * 19, b"9" * 19 + base,
             base[:40_000] + b"3E" + base[40_000:], base + b",e,E,true", base + b"2e-05", base + b"2E+05",
             base + b"2e+5", base[:30_000] + b"7E-300" + base[30_000:]]
    for _ in range(30):
        cases.append(bytes(rng.choice(b'[]{},:.0123456789eE+-') for _ in range(rng.randint(66_000, 80_000))))
        run = b"1" * rng.randint(15, 22)
        cases.append(base[:30_000] + run + base[30_000:])
    seen = set()
    for raw in cases:
        assert len(raw) >= 65536
        assert _numbers_small(raw) == plain(raw), raw[:40]
        seen.add(plain(raw))
    assert seen == {True, False}


def test_json_huge_string_precheck_never_hides_one():
    """The quick test before the huge-string note (a quote in every aligned half-limit stretch) is False only where
    no string is longer than MAX_FIELD_CHARS: strings of the limit and one more, at every offset, unterminated at the
    end, long runs outside strings (these only cost the exact check)."""
    from reportgen.loaders.jsonfile import _may_hold_huge_string, _quotes
    from reportgen.loaders.screen import MAX_FIELD_CHARS

    def huge(raw: bytes) -> bool:  # the exact test (`_note_huge_string`)
        q = _quotes(raw)
        if q is None or not len(q):
            return False
        ends = list(q[1::2]) + ([len(raw)] if len(q) % 2 else [])
        return any(e - (s + 1) > MAX_FIELD_CHARS for s, e in zip(q[0::2], ends))

    small = b'{"a": "' + b"x" * 1000 + b'"}, '
    cases = []
    for n in (MAX_FIELD_CHARS - 1, MAX_FIELD_CHARS, MAX_FIELD_CHARS + 1, 3 * MAX_FIELD_CHARS):
        for pad in (0, 1, 7, MAX_FIELD_CHARS // 2 - 1, MAX_FIELD_CHARS // 2 + 3):
            cases.append(b" " * pad + b'["' + b"y" * n + b'"]' + small * 70)
            cases.append(small * 70 + b" " * pad + b'["' + b"y" * n)  # unterminated: runs to the end
    cases.append(b"[" + b"1," * 80_000 + b"1]")  # a long stretch without a quote, outside strings
    cases.append(small * 200)
    for raw in cases:
        if huge(raw):
            assert _may_hold_huge_string(raw), len(raw)
    assert not _may_hold_huge_string(small * 200) and _may_hold_huge_string(cases[-2])


def test_json_shape_equals_a_walk_of_every_value():
    """`json_shape` (its early stops, the count-only pass past half the cap, the paths reused between sibling
    objects) answers as a plain walk of the whole document does: every path, or None past the visit cap or the
    path limit. Documents around both limits, lists of objects, keys with digits, nesting past 6 levels."""
    import random
    import re

    from reportgen.loaders.schema import json_shape

    def plain(data, limit):
        paths, visits, stack = set(), 1, [(data, "", 0)]
        while stack:
            v, p, depth = stack.pop()
            if depth > 6:
                continue
            if isinstance(v, dict):
                visits += len(v)
                for k, x in v.items():
                    q = (f"{p}." if p else "") + ("*" if re.search(r"\d", str(k)) else str(k))
                    paths.add(q)
                    if isinstance(x, (dict, list)):
                        stack.append((x, q, depth + 1))
            else:
                for x in v[:50]:
                    if isinstance(x, (dict, list)):
                        visits += 1
                        stack.append((x, p + "[]", depth + 1))
        return None if visits > 20 * limit or len(paths) > limit else frozenset(paths)

    rng = random.Random(9)

    def doc(depth: int, width: int, budget: list):
        budget[0] -= 1
        if depth > 8 or budget[0] < 0 or rng.random() < 0.2:
            return rng.choice([1, 2.5, "x", None, True])
        if rng.random() < 0.25:
            return [doc(depth + 1, width, budget) for _ in range(rng.randint(0, 60))]
        keys = [rng.choice(["a", "b", "c", f"op{rng.randint(0, 9)}", "d", "e"]) for _ in range(rng.randint(1, width))]
        return {k: doc(depth + 1, width, budget) for k in keys}

    seen = set()
    for i in range(120):
        limit = rng.choice([3, 10, 40, 400])
        budget = [rng.choice([50, 400, 4000, 12000])]  # (objects made: around the visit cap of each limit)
        data = {f"k{j % 7}" if i % 2 else f"k{'abcdefg'[j % 7]}": doc(1, rng.randint(2, 9), budget)
                for j in range(rng.randint(1, 12))}
        got = json_shape(data, limit)
        assert got == plain(data, limit)
        seen.add(got is None)
    assert seen == {True, False}
    assert json_shape([1, 2]) is None
    # sibling objects under `*` keys (communication_matrix.json's links): 3 + 6 n values, around half the cap
    # (8,000: the count-only pass) and the cap itself
    for n in (666, 667, 1332, 1333, 5000):
        data = {"step1": {"collective": {f"op{i}": {"a": 1, "b": [{"x": 2}], "c": 3} for i in range(n)}}}
        got = json_shape(data)
        assert got == plain(data, 400)
        assert (got is None) == (n >= 1333)
