"""The typed fast path of a trace read whole (`traces.trace_batches(path, log, typed=True)`): the file's bytes decoded
by msgspec into `TraceEvent`s (gc-free structs of the fields a trace event has) instead of orjson's dicts: ~3x
faster, and the screening's type test is the decoder's.

The path reads only what the existing one (orjson whole, else the ijson stream: `traces._whole`) reads to the same
values: `typed_events` returns None -- and the file goes the existing way, so every data-quality entry, number and
exception stays what it is -- unless msgspec decodes every byte of the document into the schema below. The schema
is closed (`forbid_unknown_fields`: an event with a key outside `FIELDS` is refused), every value is a scalar (an
object only as `args`, whose values are scalars or lists / objects three levels deep at most: Kineto's "Input Dims"
of a tensor list), so the decoder skips nothing and nothing nests deeper than six levels: what the two parsers
could read differently in a skipped or deep part does not arise. A trace up to TYPED_MAX_BYTES is read so (the
dict path's bound, `traces.FAST_MAX_BYTES`, is lower: above it the dict path streams, which the typed path reads
to the same values). The differences checked, each with a test in tests/test_trace_typed.py that fails if the fast path
disagrees:

* duplicate keys (in an event or in its args): the last wins in both (msgspec as orjson's dict);
* an integer beyond int64 (2^63 or more in magnitude, -2^63 too: yajl refuses it, orjson reads it, msgspec reads
  it as an int where orjson gives a float past 2^64): refused by the schema's bound (`I64`), so the existing path
  (its digit-run scan, then the stream) decides;
* NaN / Infinity, 1e400 (orjson refuses, msgspec refuses or calls it out of range): refused;
* a lone surrogate escape ("\\ud800"), bytes that are not UTF-8 (msgspec checks every string it decodes, and it
  decodes every string: nothing is skipped), control characters in a string, a cut-off file, trailing bytes:
  refused;
* nesting (orjson refuses past 1,024 levels, msgspec has no bound of its own in a skipped or an `Any` part): no
  part is skipped and the schema holds six levels (list, event, args, three of a value's lists or objects):
  deeper nesting is refused at the seventh;
* an entry of the event list that is not an object, a field of another type (a list as a name, true as a ts), a
  ts or dur the screening leaves out (beyond +-2^62, `traces._usable`): refused (the existing path counts and
  names them), so a typed batch needs no screening;
* a BOM (skipped by both readers: the decoder is given the bytes after it), gzip (the bytes are those `_whole`
  read); a scalar document: not decoded here;
* a document that is an object (Kineto's `{"schemaVersion": .., "traceEvents": [...], "traceName": ..}`), where
  the stream picks the events by their path ("traceEvents.item") and parses the rest: read when "traceEvents" is
  written once as plain text (a second copy, or a spelling with an escape, would give the stream more events: the
  existing path), its value is the list, and every other top-level value decodes into six levels of JSON (each
  byte checked as strictly as the events': text, numbers and nesting the stream refuses refuse the file);
* floats: both parsers round correctly (the tests compare hard cases); "-0" is the int 0, "-0.0" the float -0.0,
  "1E5" a float, in both.

A `TraceEvent` answers `get(key)` as the event's dict would (`dict.get`: None for an absent or a null field; the
schema is closed, so a key outside it was absent), so readers that take events one at a time read either kind; a
batch's columns (`trace_batch.Events.col`) are read by a list comprehension a field.

A reader whose traces are usually plain (the timeline summary: torch_npu's and MindSpore's trace_view.json) asks for
`PlainEvent`s (`typed_events(plain=True)`): the schema narrowed where the door tests each event (a phase of the
format's, name text, lane ids whole numbers >= 0), so a batch of them needs none of those tests (`Events.plain`); a
list with any other event is decoded again as `TraceEvent`s (the MindInsight timelines' text tids: at their first
event).
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, Optional, Union

import msgspec

from reportgen.numbers import MAX_ABS_NUMBER, MAX_INT
from reportgen.pools import gc_paused

I64 = Annotated[int, msgspec.Meta(ge=-(2 ** 63 - 1), le=2 ** 63 - 1)]  # what yajl reads (the stream's parser)
Scalar = Union[str, I64, float, bool, None]
# a ts / dur the screening keeps (`traces._usable`: text, null, a number within range; a bool or a number beyond
# refuses the file, which the dict path then screens and names)
Time = Union[str, Annotated[int, msgspec.Meta(ge=-MAX_INT, le=MAX_INT)],
             Annotated[float, msgspec.Meta(ge=-MAX_ABS_NUMBER, le=MAX_ABS_NUMBER)], None]


def _nested(levels: int):
    """A JSON value that nests at most `levels` lists / objects below it (0: a scalar)."""
    t = Scalar
    for _ in range(levels):
        t = Union[str, I64, float, bool, None, list[t], dict[str, t]]
    return t


# an args value: a scalar, or lists / objects three levels deep at most (Kineto's "Input Dims" of a tensor list:
# [[[2, 3], [2, 3]], [4]]; MindSpore's {"input_0": {"shape": ..}})
Arg = _nested(3)
HEADER_VALUE = _nested(6)  # a top-level value beside "traceEvents" (distributedInfo.pg_config[i].ranks: 4 levels)


class TraceEvent(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    """One Chrome-trace event with the keys torch_npu / MindSpore / Kineto write (a key outside them refuses the
    file)."""

    ph: Scalar = None
    name: Scalar = None
    pid: Scalar = None
    tid: Scalar = None
    ts: Time = None
    dur: Time = None
    cat: Scalar = None
    id: Scalar = None
    bp: Scalar = None
    s: Scalar = None  # an instant event's scope (Kineto: "t", "p", "g")
    args: Optional[dict[str, Arg]] = None

    def get(self, key: str):
        """`dict.get(event, key)` of the event this struct was decoded from."""
        return getattr(self, key) if key in FIELDS else None


LaneId = Annotated[int, msgspec.Meta(ge=0, le=2 ** 63 - 1)]
# The phase one of the Chrome trace format's (duration, complete, instant, counter, async, flow, sample, object,
# metadata, memory dump, mark, clock sync, context): decoded as the one object of each (no string an event: passes
# over the phases compare and count references on ~30 objects, not on 20,000 freshly made).
Phase = Literal["B", "E", "X", "i", "I", "C", "b", "n", "e", "S", "T", "p", "F", "s", "t", "f", "P", "N", "O", "D",
                "M", "V", "v", "R", "c", "(", ")"]
# A `TraceEvent` of the usual kind, which the door reads without a test (`TraceDoor.judge_plain`): its phase one of
# the format's, its name text, its lane ids whole numbers >= 0 (within int64), none of them absent or null. The same
# schema, closed, narrowed: an event it refuses is a `TraceEvent` (`typed_events(plain=True)`). Its fields in
# TraceEvent's order (the order a trace writes them: the decoder finds each key at the next field; a subclass would
# move the narrowed ones last, ~3 % slower).
_NARROW = {"ph": Phase, "name": str, "pid": LaneId, "tid": LaneId}
# ... and the binding point and an instant's scope, where written, the format's ("e"; "g", "p", "t"): one object each
_KNOWN = {"bp": Optional[Literal["e"]], "s": Optional[Literal["g", "p", "t"]]}
PlainEvent = msgspec.defstruct(
    "PlainEvent", [(f.name, _NARROW[f.name]) if f.name in _NARROW else (f.name, _KNOWN.get(f.name, f.type), f.default)
                   for f in msgspec.structs.fields(TraceEvent)],
    namespace={"get": TraceEvent.get, "__doc__": "A `TraceEvent` of the usual kind (`_NARROW`)."},
    kw_only=True, gc=False, forbid_unknown_fields=True, module=__name__)
TYPED_EVENTS = (TraceEvent, PlainEvent)


FIELDS = frozenset(TraceEvent.__struct_fields__)
_DECODER = msgspec.json.Decoder(list[TraceEvent])
_PLAIN = msgspec.json.Decoder(list[PlainEvent])
_TOP = msgspec.json.Decoder(dict[str, msgspec.Raw])  # an object's values, as their bytes (decoded one by one below)
_HEADER = msgspec.json.Decoder(HEADER_VALUE)
_WS = b" \t\r\n"
_KEY = b'"traceEvents'
_ESCAPED_ASCII = re.compile(rb"\\u00[2-7][0-9a-fA-F]")  # a printable ASCII character written as \u00XX
# The typed path reads a trace of up to this many bytes (gunzipped) whole, beyond `traces.FAST_MAX_BYTES` (the dict
# path's bound): its events take ~3.3x the file (85 MB for the A100 sample's 25.8 MB: gc-free structs, args as
# dicts; orjson's dicts 4x), the bytes 1x while they are decoded (measured: the A100 sample's three Kineto passes
# peak at 260 MB RSS against 162 MB streamed): a 128 MB trace costs its reader ~500 MB over the interpreter's ~160
# MB -- a loading worker, and the main process while it reads the execution view's ranks one at a time. A larger
# or refused one goes the existing way (above FAST_MAX_BYTES: streamed).
TYPED_MAX_BYTES = 128 * 1024 * 1024


def typed_events(data: bytes, start: int, plain: bool = False) -> Optional[list]:
    """The events of a trace (from byte `start`: after a BOM) as `TraceEvent`s, or None when msgspec does not read
    every byte of it into the schema (the caller then reads it the existing way). The trace is a JSON list, or an
    object (Kineto's `{"schemaVersion": .., "traceEvents": [...], ...}`) whose key "traceEvents" is written once, as
    plain text (no escape in the document that spells an ASCII letter: the stream, which picks the events by their
    path, would read a second spelling of the key too), holds the list, and whose other values are JSON of six
    levels at most (each decoded, as strictly as the events: nothing is skipped). `plain`: a list whose every event
    is a `PlainEvent` comes as `PlainEvent`s (their columns then need no test: `is_plain`), else as `TraceEvent`s
    (an event `PlainEvent` refuses stops its decoding: the list is decoded again)."""
    view = memoryview(data)[start:] if start else data
    first = bytes(view[:64]).lstrip(_WS)[:1]
    try:
        with gc_paused():
            if first == b"[":
                if plain:
                    try:
                        return _PLAIN.decode(view)
                    except msgspec.ValidationError:  # (an event of another kind: decoded as TraceEvents)
                        pass
                return _DECODER.decode(view)
            if first != b"{" or data.count(_KEY) != 1 or (b"\\u00" in data and _ESCAPED_ASCII.search(data)):
                return None
            top = _TOP.decode(view)
            raw = top.pop("traceEvents", None)
            if raw is None or bytes(memoryview(raw)[:1]) != b"[":  # (Raw starts at the value's first byte)
                return None
            for v in top.values():
                _HEADER.decode(v)
            return _DECODER.decode(raw)
    except Exception:  # noqa: BLE001 -- ValidationError, DecodeError, UnicodeDecodeError, RecursionError: the
        return None  # existing path decides


def is_plain(events: list) -> bool:
    """True when `events` (one decoder's) are `PlainEvent`s: each one's ph a phase of the format's, its name text,
    its pid and tid whole numbers from 0 to 2^63 - 1 (an empty list: False)."""
    return bool(events) and type(events[0]) is PlainEvent
