"""Readers of one profiler family's files each (only this package reads input files). Every problem becomes a
data-quality entry (`issuelog.IssueLog`), never an exception.

Shared readers, one concern a module: `files` (opening safely, text guards), `screen` (usable numbers, rows to
drop), `tables` (the careful CSV readers) with `arrow_csv` (their pyarrow fast path), `jsonfile` (whole JSON
files), `traces` (streamed Chrome / Kineto traces), `guard` and `safe` (the safety net around each entry point).
Which of them a layout reads, per rank and per run, is `reportgen.layouts`.
"""
