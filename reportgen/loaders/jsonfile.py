"""Reading whole JSON files carefully: size and nesting bounded, non-finite and out-of-range numbers read as
missing (and named), huge strings named, a clean file parsed by orjson with the same result; and the numeric
check of JSON values read by key (`check_json_numbers`)."""

from __future__ import annotations

import io
import json
import math
import os
import re
from pathlib import Path
from typing import Any, Iterable, Optional

from reportgen.dataquality import dq
from reportgen.discover.peek import read_capped
from reportgen.pools import gc_paused
from reportgen.jsonguard import CHUNK as JSON_CHUNK, DepthGuard, JsonTooDeep
from reportgen.loaders.files import MAX_JSON_BYTES, note_undecodable, open_file
from reportgen.loaders.issuelog import IssueLog
from reportgen.loaders.schema import Door, json_family, json_shape
from reportgen.loaders.screen import MAX_FIELD_CHARS
from reportgen.numbers import MAX_ABS_NUMBER, MAX_INT

MAX_JSON_DEPTH = 200  # nesting of a whole-file JSON read; profiler files nest < 10 deep


class _JsonNumbers:
    """json.load hooks: non-finite and out-of-range numbers become None and are counted."""

    def __init__(self) -> None:
        self.bad: list[str] = []

    def _note(self, s: str) -> None:
        if len(self.bad) < 3:
            self.bad.append(s[:40])
        else:
            self.bad.append("")

    def constant(self, s: str) -> None:
        self._note(s)
        return None

    def float(self, s: str) -> Optional[float]:
        try:
            v = float(s)
        except (ValueError, OverflowError):
            v = math.inf
        if not math.isfinite(v) or abs(v) > MAX_ABS_NUMBER:
            self._note(s)
            return None
        return v

    def int(self, s: str) -> Optional[int]:
        if len(s) > 20:
            self._note(s)
            return None
        v = int(s)
        if abs(v) > MAX_INT:
            self._note(s)
            return None
        return v


def read_json(path: Path, log: IssueLog, shape: bool = True) -> Any:
    """`_read_json`, and the key paths of a small document kept on `log` for the cross-rank schema check
    (`note_shape`; `shape` false: the caller notes them, or knows the document is too large to have any)."""
    data = _read_json(path, log)
    if shape:
        note_shape(path, log, data)
    return data


def note_shape(path: Path, log: IssueLog, data: Any) -> None:
    """The key paths of a small JSON document (`json_shape`), kept on `log` for the cross-rank schema check."""
    if isinstance(data, dict) and getattr(log, "shapes", None) is not None:
        shape = json_shape(data)
        if shape is not None:
            log.shapes[log.rel(path)] = shape


def _quotes(raw: bytes):
    """Positions of the quotes of an escape-free JSON text (every quote opens or closes a string), or None for a
    text with escapes, or larger than 32 MB, or shorter than MAX_FIELD_CHARS (not looked at)."""
    if len(raw) > 32 * 1024 * 1024 or len(raw) < MAX_FIELD_CHARS or b"\\" in raw:
        return None
    import numpy as np

    return np.flatnonzero(np.frombuffer(raw, dtype=np.uint8) == 0x22)


def _note_huge_string(path: Path, log: IssueLog, raw: bytes, q=None) -> None:
    """One entry when a JSON file holds a string (key or value) longer than MAX_FIELD_CHARS (a huge field). Without
    escapes every quote opens or closes a string, so the strings are the odd pieces between quotes (`_quotes`, at C
    speed); a file with escapes, or larger than 32 MB, is not looked at."""
    if q is None:
        q = _quotes(raw)
    if q is None or not len(q):
        return
    import numpy as np

    starts = q[0::2] + 1
    ends = q[1::2] if len(q) % 2 == 0 else np.append(q[1::2], len(raw))  # an odd count: the last runs to the end
    over = np.flatnonzero(ends - starts > MAX_FIELD_CHARS)
    if len(over):
        pos, n = int(starts[over[0]]), int(ends[over[0]] - starts[over[0]])
        line = raw.count(b"\n", 0, pos) + 1
        log.add(path, dq("json.string-characters-longer-than", piece=format(n, ","),
                         max_field_chars=format(MAX_FIELD_CHARS, ","), pos=format(pos, ","), line=line),
                "warning", "schema drift")


def _may_hold_huge_string(raw: bytes) -> bool:
    """False when no string of `raw` can be longer than MAX_FIELD_CHARS: every aligned stretch of half that many
    bytes holds a quote (a longer string holds a whole such stretch without one). A search per stretch (C), not an
    array of every quote's place: ~30x faster on a 1.7 MB communication.json."""
    step = MAX_FIELD_CHARS // 2
    find = raw.find
    return any(find(b'"', i, i + step) < 0 for i in range(0, len(raw) - step + 1, step))


def _read_json(path: Path, log: IssueLog) -> Any:
    """Read a whole JSON file; return None with an issue on any problem. Non-finite (`NaN`, `Infinity`) and
    out-of-range numbers (`1e400`, 30-digit integers) become None with an entry; nesting deeper than the parser
    allows, or a file too large, is named and skipped."""
    raw = read_json_bytes(path, log)
    return None if raw is None else parse_json_bytes(path, log, raw)


def read_json_bytes(path: Path, log: IssueLog) -> Optional[bytes]:
    """The first half of `_read_json`: the file's bytes (None, named, when it is empty, too large or unreadable),
    a string longer than MAX_FIELD_CHARS named. A typed reader (`communication_typed`) decodes them itself and
    hands them to `parse_json_bytes` when it refuses them, so that the file is read once and named once."""
    try:
        with open_file(path, "rb", root=log.root) as f:
            size = os.fstat(f.fileno()).st_size
            if size == 0:
                log.add(path, dq("json.file-empty"), "error")
                return None
            if size > MAX_JSON_BYTES:
                log.add(path, dq("json.file-mb-too-large", size=format(size / 1e6, ".0f")), "warning")
                return None
            raw = read_capped(f, MAX_JSON_BYTES)
    except OSError as e:
        log.add(path, dq("json.cannot-read-file", strerror=e.strerror or e), "error")
        return None
    if _may_hold_huge_string(raw):
        _note_huge_string(path, log, raw)
    return raw


def parse_json_bytes(path: Path, log: IssueLog, raw: bytes) -> Any:
    """The second half of `_read_json`: `raw` (from `read_json_bytes`) parsed, what is wrong with it named."""
    fast = _fast_json(raw)  # a clean file: orjson (C), the same values; anything odd: the careful path below
    if fast is not _MISS:
        return fast
    nums = _JsonNumbers()
    note_undecodable(path, log, raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw)
    try:
        text = raw.decode("utf-8-sig", errors="replace")
        del raw
        data = json.loads(text, parse_constant=nums.constant, parse_float=nums.float, parse_int=nums.int)
    except json.JSONDecodeError as e:
        log.add(path, dq("json.not-valid-json-line", lineno=e.lineno, colno=e.colno, msg=e.msg), "error")
        return None
    except RecursionError:
        log.add(path, dq("json.json-nested-too-deeply"), "error")
        return None
    except (MemoryError, ValueError) as e:
        log.add(path, dq("json.cannot-parse-json-skipped", name=type(e).__name__), "error")
        return None
    if _depth_exceeds(data, MAX_JSON_DEPTH):
        log.add(path, dq("json.json-nested-more-than", max_json_depth=MAX_JSON_DEPTH), "error")
        return None
    if nums.bad:
        shown = ", ".join(repr(b) for b in nums.bad if b)
        log.add(path, dq("json.non-finite-out-range", nums=len(nums.bad), shown=shown))
    return data


_MISS = object()


def _fast_json(raw: bytes) -> Any:
    """`raw` parsed by orjson when the careful reader would return the same value with no entry: valid UTF-8,
    standard JSON, every number finite and in range, nesting within MAX_JSON_DEPTH. Else `_MISS`."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency; the careful path still works without it
        return _MISS
    outside = _outside_strings(raw)
    if not _nesting_within(raw, MAX_JSON_DEPTH, outside):  # orjson crashes the process (SIGSEGV) on ~100,000 levels
        return _MISS
    try:
        with gc_paused():  # the parse makes no cycle (a collection costs up to 25 % of it in a process that holds much)
            data = orjson.loads(raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw)
    except (orjson.JSONDecodeError, RecursionError, MemoryError):
        return _MISS
    if not isinstance(data, (dict, list)):
        return _MISS if _unusable(data) else data
    if outside is not None and _numbers_small(outside):  # every number in range, seen in the text (C speed)
        return data
    return data if _numbers_usable(data) else _MISS


# what `_outside_strings` keeps: quotes (to find the strings), brackets (nesting), and what a number's size shows
_DROP = bytes(b for b in range(256) if b not in b'"[]{},:.0123456789eE+-')
_DIGITS_TO_0 = bytes(0x30 if 0x30 <= b <= 0x39 else 0x65 if b == 0x45 else b for b in range(256))  # and E -> e


def _outside_strings(raw: bytes) -> Optional[bytes]:
    """The brackets, separators and numbers of an escape-free JSON document outside its strings, the rest dropped
    (every quote opens or closes a string, exactly as a JSON parser reads it, so the pieces between odd and even
    quotes are the strings); None when `raw` holds a backslash. What is kept: `"[]{},:.+-`, digits, `e` and `E`."""
    if b"\\" in raw:
        return None
    kept = raw.translate(None, _DROP)
    if len(kept) < 65536:
        return b"".join(kept.split(b'"')[::2])
    # a large text: the same bytes without a piece object per string (communication.json: 4x faster)
    import numpy as np

    a = np.frombuffer(kept, dtype=np.uint8)
    q = np.flatnonzero(a == 0x22)
    # the kept and dropped stretches alternate: [0, q0) kept, [q0, q1] dropped (the string and its quotes), (q1, q2)
    # kept... (an odd count: the last string runs to the end); one mask by np.repeat (2x the running xor's speed)
    bounds = np.empty(len(q) + 2, dtype=np.intp)
    bounds[0], bounds[-1] = 0, len(a)
    bounds[1:-1] = q
    bounds[2:-1:2] += 1
    keep = np.zeros(len(bounds) - 1, dtype=bool)
    keep[0::2] = True
    return a[np.repeat(keep, np.diff(bounds))].tobytes()


def _numbers_small(outside: bytes) -> bool:
    """True when no number of a valid JSON document whose text outside strings is `outside` (`_outside_strings`) can
    be out of range: no exponent but negative ones (a digit, `e` / `E`, then a digit or `+`: the `e` of `true` /
    `false` follows a separator or a bracket in valid JSON) and no run of 19 digits but after a `.` (a fraction's
    digits, as Python writes 0.00011791870367106104, never make a number large), so every number is below
    1e18 < MAX_ABS_NUMBER, MAX_INT (a negative exponent only makes it smaller: `2e-05`) and finite. False only
    means "look at the values" (`_numbers_usable`)."""
    if len(outside) < 65536:
        z = outside.translate(_DIGITS_TO_0)
        return b"0e0" not in z and b"0e+" not in z and (b"0" * 19 not in z or _LONG_RUN.search(z) is None)
    # a large text: the same test on an array (`in` crawls through a text of many digits: 3x slower)
    return not _large_number_in(outside, b".")


def _large_number_in(text: bytes, after: bytes) -> bool:
    """Whether `text` (JSON, or its text outside strings) may hold a number out of range: a positive exponent (a
    digit, `e` / `E`, then a digit or `+`) or a run of 19 digits not right after one of the bytes `after` (`.`: a
    fraction's digits). By numpy on the bytes: places that start a run of 2, 4, 8, 16, then 19 (16 + 3) digits,
    each an AND of two shifted copies (no array of every run's ends)."""
    import numpy as np

    a = np.frombuffer(text, dtype=np.uint8)
    digit = (a - np.uint8(0x30)) < 10  # (wraps below 0x30)
    if (digit[:-2] & ((a[1:-1] | 0x20) == 0x65) & (digit[2:] | (a[2:] == 0x2B))).any():
        return True
    run = digit
    for width, step in ((2, 1), (4, 2), (8, 4), (16, 8), (19, 3)):
        run = run[:-step] & run[step:]
        if not run.any():
            return False
    at = np.flatnonzero(run)
    at = at[(at == 0) | ~digit[at - 1]]  # each run's first place
    return bool((at == 0).any()) or not bool(np.isin(a[at - 1], np.frombuffer(after, dtype=np.uint8)).all())


_LONG_RUN = re.compile(rb"(?:^|[^.0])0{19}")  # (digits written 0) a run of 19 not after a `.`: an integer part


def _numbers_usable(data: Any) -> bool:
    """No number in `data` (orjson's output: NaN cannot occur, overflow to inf can) is non-finite or beyond
    MAX_ABS_NUMBER / MAX_INT: an explicit stack with exact type tests (bool is not int here), no call per value."""
    lim_f, lim_i = MAX_ABS_NUMBER, MAX_INT
    stack = [data]
    pop, push = stack.pop, stack.append
    while stack:
        v = pop()
        for x in (v.values() if type(v) is dict else v):
            t = type(x)
            if t is float:
                if not -lim_f <= x <= lim_f:  # False for NaN and inf too
                    return False
            elif t is int:
                if not -lim_i <= x <= lim_i:
                    return False
            elif t is dict or t is list:
                push(x)
    return True


def skipped_values_usable(raw: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """For a decoder that skipped values of the valid JSON text `raw` unread (`communication_typed`): True only
    where the careful reader would name nothing in them, the checks `_fast_json` makes before it trusts orjson
    (`_numbers_small`, `_nesting_within`), made on the whole text by numpy without the text outside strings
    (`_outside_strings`: ~2x the time on a 1.7 MB communication.json). No backslash (else False: the strings
    cannot be told from the quotes); the brackets outside strings nest at most `limit` deep (exact: the quotes
    and brackets alone, a bracket outside a string after an even count of quotes); and no number can be out of
    range, told conservatively from the digits of the whole text, strings included: no positive exponent (a
    digit, `e` / `E`, then a digit or `+`) and no run of 19 digits but after a `.` (a fraction's) or an `@` (no
    number follows an `@`: a group id in an operator's name, `hcom_allReduce__586_3_1@14695312458125335735`)."""
    if b"\\" in raw:
        return False
    import numpy as np

    marks = np.frombuffer(raw.translate(None, _NOT_MARKS), dtype=np.uint8)  # quotes and brackets, in order
    at = np.flatnonzero(marks != 0x22)  # the brackets: before the j-th, j brackets and at[j] - j quotes
    if len(at) > limit:  # (fewer brackets: within it)
        at = at[((at - np.arange(len(at))) & 1) == 0]  # outside strings (an even count of quotes before)
        if len(at) and int(np.cumsum(np.where((marks[at] | 0x20) == 0x7B, 1, -1)).max()) > limit:  # [ { ] }
            return False
    return not _large_number_in(raw, b".@")


_NOT_MARKS = bytes(b for b in range(256) if b not in b'"[]{}')


def _nesting_within(raw: bytes, limit: int, outside: Optional[bytes] = None) -> bool:
    """True when the brackets of `raw` (outside strings) never nest deeper than `limit` (C-speed count). `outside`:
    `_outside_strings(raw)` when the caller has it."""
    if b"\\" not in raw:
        # no escapes: every quote opens or closes a string, exactly as a JSON parser reads it (up to where it
        # fails), so the brackets between even and odd quotes are the ones outside strings (4x the guard's speed)
        outside = (b"".join(raw.translate(None, _NOT_MARKS).split(b'"')[::2]) if outside is None
                   else outside.translate(None, _NOT_MARKS))
        if outside.count(b"[") + outside.count(b"{") <= limit:
            return True
        import numpy as np

        a = np.frombuffer(outside, dtype=np.uint8)
        return int(np.cumsum(np.where((a == 0x5B) | (a == 0x7B), 1, -1)).max()) <= limit
    return _guarded_nesting_within(raw, limit)


def _guarded_nesting_within(raw: bytes, limit: int) -> bool:
    """`_nesting_within` for any bytes (escapes too): the streaming guard's count, chunk by chunk."""
    guard = DepthGuard(io.BytesIO(raw), limit)
    try:
        while guard.read(JSON_CHUNK):
            pass
    except JsonTooDeep:
        return False
    return True


def _unusable(x: Any) -> bool:
    """A JSON number the careful reader would turn into None (non-finite, out of range)."""
    if isinstance(x, float):
        return not math.isfinite(x) or abs(x) > MAX_ABS_NUMBER
    return isinstance(x, int) and not isinstance(x, bool) and abs(x) > MAX_INT


def _depth_exceeds(data: Any, limit: int) -> bool:
    stack = [(data, 1)]
    while stack:
        v, d = stack.pop()
        if d > limit:
            return True
        if isinstance(v, dict):
            stack.extend((x, d + 1) for x in v.values() if isinstance(x, (dict, list)))
        elif isinstance(v, list):
            stack.extend((x, d + 1) for x in v if isinstance(x, (dict, list)))
    return False


def check_json_numbers(path: Path, log: IssueLog, data: Any, keys: Iterable[str],
                       required: Iterable[str] = ()) -> None:
    """The numeric normaliser for JSON values read by key, by the family's schema (`schema.JSON_SCHEMAS`, found
    by file name; a key it does not list is a number >= 0): a value under one of `keys` that is not a usable
    number (text, a boolean, null, a negative or out-of-range value) gets an entry naming the file, the key and
    the value (the loader reads it as missing), and a `required` key that is absent is named (schema drift)."""
    if not isinstance(data, dict):
        return
    fam = json_family(path)
    door = Door(log, path)
    for k in keys:
        if k in data:
            door.field(data, k, "top level", fam)
    missing = [k for k in required if k not in data]
    if missing:
        door.note(dq("json.expected-keys-missing", k=", ".join(repr(k) for k in missing)), "top level",
                  "warning", "schema drift")
    door.close()
