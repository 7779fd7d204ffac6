"""Old home of the loaders' shared readers, kept only as re-exports so that branches written against it still
import: new code imports from the module of the concern (nothing in `reportgen` imports this module;
tests/test_architecture.py checks). Remove once no branch in flight needs it.

    issuelog: IssueLog                     files: open_file, regular_file, read_text, run_root, text guards
    screen: number_problem, screen_rows     tables: read_csv_rows, read_frame, read_typed
    jsonfile: read_json, check_json_numbers traces: trace_events, trace_cut, open_binary (files)
"""

from __future__ import annotations

from reportgen.loaders.files import (  # noqa: F401
    MAX_JSON_BYTES, MAX_LINE_BYTES, MAX_TEXT_BYTES, GUARD_AFTER_BYTES, NotRegularFile, note_undecodable, nul_offset,
    open_binary, open_file, read_text, regular_file, run_root, undecodable_at,
    guard_after as _guard_after, tail_cut as _tail_cut, text_guard as _text_guard)
from reportgen.loaders.issuelog import IssueLog  # noqa: F401
from reportgen.loaders.jsonfile import (  # noqa: F401
    MAX_JSON_DEPTH, check_json_numbers, read_json, _fast_json, _guarded_nesting_within, _MISS, _nesting_within,
    _read_json)
from reportgen.loaders.screen import (  # noqa: F401
    BAD_TOKENS, FEW_CELLS, MAX_FIELD_CHARS, number_problem, screen_frame, screen_rows,
    DURATION_RE as _DURATION, NUMBER_RE as _NUMBER, NUMERIC_HEADER_RE as _NUMERIC_HEADER, STAMP_RE as _STAMP,
    numeric_by_header as _numeric_by_header)
from reportgen.loaders.tables import read_csv_rows, read_frame, read_typed, typed_from_frame  # noqa: F401
from reportgen.loaders.traces import TRACE_ERRORS, note_unusable_events, trace_cut, trace_events  # noqa: F401
from reportgen.numbers import MAX_ABS_NUMBER, MAX_INT, NA_TOKENS, clean_cell, to_float, to_int  # noqa: F401
