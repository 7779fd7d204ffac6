"""communication.json decoded by msgspec into typed structs: the fast path of `communication._read_modern` (issue 33).

A 1,600-operator communication.json (1.7 MB) cost ~14 ms a rank the general way: orjson into ~40,000 dicts, floats
and strings, the text scans of `jsonfile._fast_json` (nesting, numbers in range), then `communication._modern_columns`
reading them back into columns. `typed_columns(raw)` decodes the same bytes with `msgspec.json.Decoder(_DOC)`
(structs without the collector, each field typed and constrained in C) and builds the same `_OpColumns` from them.
Only the values `_modern_columns` reads are decoded (each operator's six times and its SDMA / RDMA size, time and
bandwidth); every other value (the ratios, the other transports, "Size Distribution", a field a future CANN adds) is
skipped by msgspec, its syntax checked but no object made: ~2x fewer objects to make, walk and free than decoding
every value (with the text check below: a worker's CPU ~3-4 ms a rank less on the comm shape). It is a fast path,
never a second reading: where it returns None the caller parses the bytes the general way
(`jsonfile.parse_json_bytes`, `_modern_columns`, the door checks), so every data-quality entry and number is what
that way gives. It returns columns only where that way would give the same columns with no entry at all.

What the general way checks, and why the typed decode accepts a file only where those checks pass (each with a test
in tests/test_communication_typed.py):

* every value it reads is `_Num`: a float 0 <= v < MAX_ABS_NUMBER, checked on the value as a float (a JSON integer
  is converted first: 2**62 - 1 is refused, as `_plain_column` refuses it). So none is non-finite (msgspec refuses
  `1e999`; `NaN` / `Infinity` are not JSON), beyond MAX_ABS_NUMBER / MAX_INT (the careful reader's limits),
  negative (the door's `duration` / `size` / `bandwidth` / `timestamp` kinds), a string, a boolean or null
  (except `Start Timestamp(us)`, which `_plain_column` reads as missing when null, and the optional objects below).
  The floats are bit for bit orjson's (both round correctly; a test compares random bit patterns and long mantissas);
* a value it does not read is skipped, as `_modern_columns` ignores it; what the careful reader would still name in
  it is checked on the whole text (`jsonfile.skipped_values_usable`, the checks `jsonfile._fast_json` makes): a
  number non-finite or beyond the limits (conservatively: no positive exponent anywhere, no run of 19 digits but a
  fraction's or a group id's; else the general way), nesting deeper than MAX_JSON_DEPTH, a backslash anywhere (the
  strings then cannot be told from the text: the general way); msgspec checks the syntax of what it skips (control characters, bad escapes, `NaN` refused);
* the nesting of the decoded levels is the type's (6 levels); msgspec raises RecursionError on ~10^5 levels, never
  crashes;
* invalid UTF-8 anywhere (msgspec checks the keys it decodes, not the bytes of what it skips: the whole text is
  checked, `isascii` first), a byte order mark, control characters, lone surrogates, trailing data: refused (the
  careful reader names each but the mark, which it strips);
* a duplicate key: the last value at the first key's place, as orjson and `json.loads` read it; key order kept;
* a missing time of an operator reads as -1 (`_MISSING`, a default, not constrained) and sends the file the general
  way, which names it; a missing or null SDMA / RDMA or transit figure reads as 0.0, as `_modern_columns` reads it
  (`b.get(src, 0.0)`); `Communication Bandwidth Info` null or missing reads as no transport (`or {}`; a falsy
  non-object such as 0 or [] is refused here and read the general way);
* "Total Op Info" entries are decoded (their values checked like any) and left out, as `_entries` leaves them out;
* the key paths of a small document (`json_shape`, compared across ranks) need every key: `typed_columns` gives the
  columns only when a lower bound of its shape walk's visits (`shape_over`) shows it has no shape (~890 operators
  or more). A document under MIN_TYPED_BYTES is decoded with every key typed instead (`shaped_columns`: each
  object's keys required and no other admitted, every value typed, "Size Distribution"'s keys kept: no value left
  unread, so no whole-text check but the backslash's), so that `whole_shape` lists the
  key paths `json_shape` lists (186 KB, 170 operators: ~2.7 -> ~1.3 ms a rank); a key missing or another one, or
  a value the walk would go below, sends it the general way (torch_npu's "Total Op Info" lacks keys: the general
  way, as before);
* a string longer than MAX_FIELD_CHARS is named by `jsonfile.read_json_bytes` before either way runs.

communication_matrix.json (`decode_matrix`, read by `communication._typed_links`) the same way, by the same rules:
every link a `_Link` (its three figures required and `_Num`, its transport and operator name a text, null or absent,
no other key), every level an object (a list where links are, which both readers skip, is left to the general way);
the document is small, so its key paths are noted: `matrix_shape` gives what `json_shape` gives (every key of every
object, from the structs: which optional keys a link has is kept as `UNSET`). ~70 KB: 1.5 -> 0.7 ms a rank.
"""

from __future__ import annotations

from itertools import chain, compress, repeat
from operator import attrgetter, is_not, methodcaller
from typing import Annotated, Dict, List, Optional, Union

import msgspec
import numpy as np

from reportgen.loaders.jsonfile import skipped_values_usable
from reportgen.loaders.schema import _DYNAMIC, MAX_SHAPE_PATHS, shape_over
from reportgen.numbers import MAX_ABS_NUMBER

_Num = Annotated[float, msgspec.Meta(ge=0, lt=MAX_ABS_NUMBER)]
_MISSING = -1.0  # a required time that is absent (not a value `_Num` admits)
MIN_TYPED_BYTES = 256 * 1024  # a smaller file has a shape (or is cheap): not tried here


class _Times(msgspec.Struct, gc=False):
    start: Optional[_Num] = msgspec.field(default=None, name="Start Timestamp(us)")
    elapse: _Num = msgspec.field(default=_MISSING, name="Elapse Time(ms)")
    transit: _Num = msgspec.field(default=_MISSING, name="Transit Time(ms)")
    wait: _Num = msgspec.field(default=_MISSING, name="Wait Time(ms)")
    sync: _Num = msgspec.field(default=_MISSING, name="Synchronization Time(ms)")
    idle: _Num = msgspec.field(default=_MISSING, name="Idle Time(ms)")


class _Transport(msgspec.Struct, gc=False):
    size: _Num = msgspec.field(default=0.0, name="Transit Size(MB)")
    time: _Num = msgspec.field(default=0.0, name="Transit Time(ms)")
    bandwidth: _Num = msgspec.field(default=0.0, name="Bandwidth(GB/s)")  # (not read; checked, as the door does)


class _Transports(msgspec.Struct, gc=False):
    sdma: Optional[_Transport] = msgspec.field(default=None, name="SDMA")
    rdma: Optional[_Transport] = msgspec.field(default=None, name="RDMA")


class _Op(msgspec.Struct, gc=False):
    times: _Times = msgspec.field(name="Communication Time Info")
    transports: Optional[_Transports] = msgspec.field(default=None, name="Communication Bandwidth Info")


_NONE = _Transport()  # a transport that is absent or null: its figures 0.0
_NONES = _Transports()  # no transport object (null or absent)
_DOC = Dict[str, Dict[str, Dict[str, _Op]]]  # step -> collective | p2p -> operator -> its figures
_DECODER = msgspec.json.Decoder(_DOC)
_REFUSED = (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError, RecursionError, ValueError,
            MemoryError, OverflowError)
_TIMES = (("communication_ms", attrgetter("elapse")), ("transit_ms", attrgetter("transit")),
          ("wait_ms", attrgetter("wait")), ("sync_ms", attrgetter("sync")), ("idle_ms", attrgetter("idle")))
_TRANSPORTS = ((attrgetter("sdma"), "sdma_mb", "sdma_ms"), (attrgetter("rdma"), "rdma_mb", "rdma_ms"))
_SIZE, _TIME = attrgetter("size"), attrgetter("time")


def decode(raw: bytes) -> Optional[dict]:
    """`raw` as `_DOC`, or None where msgspec refuses it (anything the types do not admit)."""
    try:
        return _DECODER.decode(raw)
    except _REFUSED:
        return None


def typed_columns(raw: bytes, step_of_key, op_kind, columns_type):
    """The operators of a communication.json document (`raw`) as `columns_type` (`communication._OpColumns`: step,
    op, group, kind, values, start_us), the columns `_modern_columns` makes of the same document, when the general
    way would read every value as it is and name nothing, and the document has no shape (see the module); else None
    (read it the general way). `step_of_key` and `op_kind`: communication's (one reading of steps and kinds)."""
    if len(raw) < MIN_TYPED_BYTES:
        return None
    doc = decode(raw)
    if not doc:
        return None
    got = columns_of(doc, raw, step_of_key, op_kind, columns_type)
    if got is None or not shape_over(got[1]):  # a shape to note: the general way (it needs the dicts)
        return None
    return got[0]


def columns_of(doc: dict, raw: bytes, step_of_key, op_kind, columns_type, transports: tuple = (_TRANSPORTS, None)
               ) -> Optional[tuple]:
    """(the columns, a lower bound of the values `json_shape` visits) of `doc` (`decode(raw)`; or `_WHOLE_DECODER`'s
    with `transports` `_WHOLE_TRANSPORTS`: how an operator's SDMA and RDMA are read and what stands for no transport
    object, the bound then unused), or None where the general way would name something or read another value (see
    the module)."""
    getters, no_transports = transports
    steps: list = []
    kinds: list = []
    names: list = []
    ops: list = []
    visits = 1 + len(doc)  # `json_shape`'s count: the top object's keys, ...
    for skey, per_kind in doc.items():
        step = step_of_key(skey)
        visits += len(per_kind)  # ... each step's, each kind's, ...
        for kind, opmap in per_kind.items():
            visits += len(opmap)  # ... each operator's (and "Total Op Info"'s), ...
            n = len(ops)
            for name, op in opmap.items():
                if not name.startswith("Total Op Info"):
                    names.append(name)
                    ops.append(op)
            steps += [step] * (len(ops) - n)
            kinds += [kind] * (len(ops) - n)
    if not ops or not (raw.isascii() or _utf8(raw)):
        return None
    if not (b"\\" not in raw if no_transports is not None else skipped_values_usable(raw)):
        return None  # (a document decoded whole, `_WholeOp`, has no value left unread: only escapes are refused)
    n = len(ops)
    times = [o.times for o in ops]
    per_op = [o.transports or (_NONES if no_transports is None else no_transports) for o in ops]
    values: dict[str, np.ndarray] = {}
    for col, get in _TIMES:
        a = np.fromiter(map(get, times), dtype=float, count=n)
        if not (a >= 0).all():  # a time missing (`_MISSING`)
            return None
        values[col] = a
    start = np.array([t.start for t in times], dtype=float)  # None -> NaN, as `_plain_column(missing_ok=True)`
    # ... and at least each operator's "Communication Time Info" and its five times, its bandwidth object and that
    # object's SDMA and RDMA
    visits += 6 * n + sum(1 for o in ops if o.transports is not None)
    for tr, size_col, time_col in getters:
        got = list(map(tr, per_op))
        visits += n - got.count(None)
        got = [x or _NONE for x in got]  # (absent or null: 0.0, as `_modern_columns`)
        values[size_col] = np.fromiter(map(_SIZE, got), dtype=float, count=n)
        values[time_col] = np.fromiter(map(_TIME, got), dtype=float, count=n)
    bases, _, groups = (list(x) for x in zip(*[name.partition("@") for name in names]))
    kinds = [k if k in ("p2p", "collective") else op_kind(b) for k, b in zip(kinds, bases)]
    return columns_type(steps, bases, groups, kinds, values, start), visits


def _utf8(raw: bytes) -> bool:
    """`raw` is valid UTF-8 (msgspec checks the keys it decodes, not the bytes of a value it skips)."""
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# --- communication_matrix.json ---------------------------------------------------------------------------------


class _Link(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    """One link of communication_matrix.json: the three figures `_link_columns` reads (required: a link without one
    is read link by link), its transport and (a sample's) operator name: a text, null or absent (`UNSET`: the key
    paths of the document name the keys present)."""

    size: _Num = msgspec.field(name="Transit Size(MB)")
    time: _Num = msgspec.field(name="Transit Time(ms)")
    bandwidth: _Num = msgspec.field(name="Bandwidth(GB/s)")
    transport: Union[str, None, msgspec.UnsetType] = msgspec.field(default=msgspec.UNSET, name="Transport Type")
    op_name: Union[str, None, msgspec.UnsetType] = msgspec.field(default=msgspec.UNSET, name="Op Name")


_MATRIX_DECODER = msgspec.json.Decoder(Dict[str, Dict[str, Dict[str, Dict[str, _Link]]]])
_REQUIRED = ("Transit Size(MB)", "Transit Time(ms)", "Bandwidth(GB/s)")


def decode_matrix(raw: bytes) -> Optional[dict]:
    """communication_matrix.json's bytes as {step: {collective | p2p: {key: {"src-dst": _Link}}}}, or None where
    the general way could read anything else or name anything (see `matrix_shape` and the module: the same rules as
    communication.json's, every value of the document a typed field, nothing skipped unread)."""
    try:
        doc = _MATRIX_DECODER.decode(raw)
    except _REFUSED:
        return None
    return doc if doc else None


def _path_key():
    """A function writing a key as `json_shape` writes it in a path (`*` where it holds a digit), each distinct key
    looked at once."""
    norm: dict = {}

    def key(k: str) -> str:
        got = norm.get(k)
        if got is None:
            got = norm[k] = "*" if _DYNAMIC.search(k) else k
        return got

    return key


def matrix_shape(doc: dict, limit: int = MAX_SHAPE_PATHS) -> Optional[frozenset]:
    """`schema.json_shape` of the document `doc` was decoded from (`decode_matrix`): the key paths of its objects
    (a key holding a digit written `*`), None past `limit` paths or 20 x `limit` values visited. The walk's count
    is each object's keys (every level is an object: no list, nothing below a link's fields)."""
    out: set = set()
    key = _path_key()
    visits = 1 + len(doc) + sum(map(len, doc.values()))  # the top object's keys, each step's
    seen: set = set()  # (a link object's path, which optional keys it has): its keys' paths added once
    unset = msgspec.UNSET
    for p2, ops in _kinds(doc, key, out):
        visits += len(ops)
        for okey, links in ops.items():
            p3 = f"{p2}.{key(okey)}"
            out.add(p3)
            visits += len(links)
            for lk, li in links.items():
                has_t, has_o = li.transport is not unset, li.op_name is not unset
                visits += 3 + has_t + has_o
                k = key(lk)
                sig = (p3, k, has_t, has_o)
                if sig in seen:
                    continue
                seen.add(sig)
                p4 = f"{p3}.{k}"
                out.add(p4)
                out.update(f"{p4}.{f}" for f in _REQUIRED)
                if has_t:
                    out.add(f"{p4}.Transport Type")
                if has_o:
                    out.add(f"{p4}.Op Name")
            if len(out) > limit or visits > 20 * limit:
                return None
    if len(out) > limit or visits > 20 * limit:
        return None
    return frozenset(out)


def _kinds(doc: dict, key, out: set):
    """(the path, the object) of each step's kind (collective | p2p) of a communication document, the steps' and
    the kinds' paths added to `out` (the two levels above the operators both typed walks share)."""
    for skey, kinds in doc.items():
        p1 = key(skey)
        out.add(p1)
        for kind, ops in kinds.items():
            p2 = f"{p1}.{key(kind)}"
            out.add(p2)
            yield p2, ops


# --- a small communication.json: every key typed, so that its key paths are known as well -----------------------


_Finite = Annotated[float, msgspec.Meta(gt=-MAX_ABS_NUMBER, lt=MAX_ABS_NUMBER)]  # what the careful reader names
# nothing in (an integer is converted first: within MAX_INT too)


class _WholeTimes(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    """An operator's "Communication Time Info" as the profiler writes it, every key required (a key missing or
    another one: the general way, which names what it has to)."""

    start: Optional[_Num] = msgspec.field(name="Start Timestamp(us)")
    elapse: _Num = msgspec.field(name="Elapse Time(ms)")
    transit: _Num = msgspec.field(name="Transit Time(ms)")
    wait: _Num = msgspec.field(name="Wait Time(ms)")
    sync: _Num = msgspec.field(name="Synchronization Time(ms)")
    idle: _Num = msgspec.field(name="Idle Time(ms)")
    wait_ratio: _Finite = msgspec.field(name="Wait Time Ratio")
    sync_ratio: _Finite = msgspec.field(name="Synchronization Time Ratio")


class _WholeTransport(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    """A transport of "Communication Bandwidth Info" as the profiler writes it, every key required; "Size
    Distribution"'s values lists of numbers (the key paths stop above them)."""

    size: _Num = msgspec.field(name="Transit Size(MB)")
    time: _Num = msgspec.field(name="Transit Time(ms)")
    bandwidth: _Num = msgspec.field(name="Bandwidth(GB/s)")
    large: _Finite = msgspec.field(name="Large Packet Ratio")
    sizes: Dict[str, List[_Finite]] = msgspec.field(name="Size Distribution")


class _WholeOp(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    times: _WholeTimes = msgspec.field(name="Communication Time Info")
    transports: Union[Dict[str, Optional[_WholeTransport]], None, msgspec.UnsetType] = msgspec.field(
        default=msgspec.UNSET, name="Communication Bandwidth Info")


_WHOLE_DECODER = msgspec.json.Decoder(Dict[str, Dict[str, Dict[str, _WholeOp]]])
_WHOLE_TRANSPORTS = (((methodcaller("get", "SDMA"), "sdma_mb", "sdma_ms"),
                      (methodcaller("get", "RDMA"), "rdma_mb", "rdma_ms")), {})
_OP_KEYS = ("Communication Time Info", *(f"Communication Time Info.{k}" for k in (
    "Start Timestamp(us)", "Elapse Time(ms)", "Transit Time(ms)", "Wait Time(ms)", "Synchronization Time(ms)",
    "Idle Time(ms)", "Wait Time Ratio", "Synchronization Time Ratio")))
_TRANSPORT_KEYS = ("Transit Size(MB)", "Transit Time(ms)", "Bandwidth(GB/s)", "Large Packet Ratio",
                   "Size Distribution")
_SIZES = attrgetter("sizes")


def shaped_columns(raw: bytes, step_of_key, op_kind, columns_type) -> Optional[tuple]:
    """(the columns `typed_columns` gives, the key paths `json_shape` gives) of a communication.json document
    smaller than MIN_TYPED_BYTES (`raw`), decoded with every key typed (`_WholeOp`: a key missing, another key, or
    another kind of value sends the file the general way); None: read it the general way. The columns are
    `columns_of`'s, by its rules for the values it reads; every other value is typed too (a number within the
    careful reader's limits, `_Finite`; "Size Distribution"'s values lists of them), so none is left unread and the
    whole text's checks (`skipped_values_usable`) are not needed: only a backslash is refused, as there."""
    if len(raw) >= MIN_TYPED_BYTES:
        return None
    try:
        doc = _WHOLE_DECODER.decode(raw)
    except _REFUSED:
        return None
    if not doc:
        return None
    got = columns_of(doc, raw, step_of_key, op_kind, columns_type, _WHOLE_TRANSPORTS)
    return None if got is None else (got[0], whole_shape(doc))


def whole_shape(doc: dict, limit: int = MAX_SHAPE_PATHS) -> Optional[frozenset]:
    """`schema.json_shape` of the document `doc` was decoded from (`_WHOLE_DECODER`): its key paths (a key holding
    a digit written `*`), None past `limit` paths or 20 x `limit` values visited. The walk's count is each object's
    keys down to "Size Distribution"'s (their values, 7 levels down, are not visited). The operators of a step and
    kind are taken together per path (their names written alike: all of them, as a rule), at C speed: an operator's
    objects have fixed keys, so only its transports' names and "Size Distribution"'s keys vary."""
    out: set = set()
    key = _path_key()
    visits = 1 + len(doc) + sum(map(len, doc.values()))  # the top object's keys, each step's
    for p2, ops in _kinds(doc, key, out):
        visits += len(ops)
        found = list(map(_DYNAMIC.search, ops))  # (operator names hold digits, as a rule: each its own name)
        if found and all(found):
            groups: dict = {"*": list(ops.values())}
        else:
            groups = {}
            for k, op in zip(map(key, ops), ops.values()):
                groups.setdefault(k, []).append(op)
        for k, members in groups.items():
            visits += _operators_shape(f"{p2}.{k}", members, key, out)
        if len(out) > limit or visits > 20 * limit:
            return None
    return frozenset(out)


def _operators_shape(p: str, ops: list, key, out: set) -> int:
    """The key paths below operators `ops` (`_WholeOp`s whose path is `p`) added to `out`; the values `json_shape`
    visits below them returned."""
    out.add(p)
    out.update(f"{p}.{k}" for k in _OP_KEYS)
    trs = [op.transports for op in ops]
    present = [tr for tr in trs if tr is not msgspec.UNSET]
    visits = 9 * len(ops) + len(present)  # each operator's key(s), its times' 8 keys
    if not present:
        return visits
    out.add(f"{p}.Communication Bandwidth Info")
    objects = [tr for tr in present if tr]  # (null or empty: no transport)
    visits += sum(map(len, objects))
    names = list(chain.from_iterable(objects))  # every transport's name and value, in the same order
    values = list(chain.from_iterable(map(dict.values, objects)))
    for n in set(names):
        out.add(f"{p}.Communication Bandwidth Info.{key(n)}")
    if None in values:  # a null transport: its key, no object
        real = list(map(is_not, values, repeat(None)))
        names, values = list(compress(names, real)), list(compress(values, real))
    sizes = list(map(_SIZES, values))
    visits += 5 * len(values) + sum(map(len, sizes))
    for n in set(names):
        q = f"{p}.Communication Bandwidth Info.{key(n)}"
        out.update(f"{q}.{k}" for k in _TRANSPORT_KEYS)
    filled, named = list(filter(None, sizes)), list(compress(names, sizes))  # the non-empty Size Distributions
    for n in set(named):
        q = f"{p}.Communication Bandwidth Info.{key(n)}.Size Distribution"
        out.update(f"{q}.{key(k)}" for k in set().union(*compress(filled, map(n.__eq__, named))))
    return visits


__all__ = ["decode", "columns_of", "typed_columns", "MIN_TYPED_BYTES", "decode_matrix", "matrix_shape",
           "shaped_columns", "whole_shape"]
