"""Data-quality problems as codes with parameters: the catalog of every problem the loaders, discovery and analysis
write, and how a coded problem is shown in a language.

A problem is written as `dq(code, **params)`: `code` is a stable slug (`<area>.<what>`, e.g. `csv.too-large`; the
area is the module family that writes it: `csv`, `json`, `file`, `trace`, a loader's name, `discover`, `layout`,
`analysis`, `report`)
listed once in `CATALOG` below with its English template (a `str.format` template with named placeholders). The
template is the catalog msgid (`reportgen/locale/*/LC_MESSAGES/messages.po`): the same lazy-message mechanism the
findings use (`reportgen.i18n.Msg`), so a coded problem is translated when a page is rendered, not when it is
written. `dq()` returns such a message; `DataIssue` (reportgen/model.py) takes it where it took English text and keeps
three things: `problem` (the English text, as `summary.json` always stored it), `code` and `params` (added to each
`data_quality` entry of `summary.json`: docs/summary-json.md).

Parameters are stored as `summary.json` can hold them: `int`, finite `float` and `str` as they are, anything else as
the text an f-string would have made of it (so the English text is exactly what the f-string wrote). A value with a
format (`{size:.1f}`) is passed already formatted, as text: the msgids stay the templates the pages matched before.

Codes are a contract like the keys of `summary.json`: `tests/dq_codes.txt` lists them and a test compares, so
renaming or dropping a code is a deliberate act (a reader of `summary.json` may filter on it). Add a code with its
template here, then run `python scripts/problem_texts.py` and translate the new msgid (README, "Languages").

Entries written as plain English text (the loaders not migrated yet, and `summary.json` files written before codes)
are still shown through `site.views.problems`, which matches the text against the templates (the fallback);
`IssueLog.add`, `Fs.note` and `DataIssue` take either form during the migration. Not coded yet: the loaders'
door (`loaders.schema`, "{n} {problem}; e.g. {example}"), kineto, gpu, timeline, dataprep, cpu_usage,
communication, operators and step_trace, and texts built away from the call (analysis.consistency's sentences,
db's inferred world group, kineto's run note).

Why these choices: one home for every problem's English (this catalog), one translation mechanism (`Msg`, as the
findings), and no page changes: the templates (and their placeholder names) are those `scripts/problem_texts.py`
read out of the f-strings, so each already had its Chinese msgstr, and a coded entry renders to exactly what the
text matching showed for it (tests/test_data_quality_codes.py checks this for every code). This module imports only
`i18n`, so every layer (discover, loaders, analysis) may write codes.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from reportgen import i18n
from reportgen.i18n import N_, Msg, Problem

CATALOG: dict[str, str] = {
    "csv.file-empty": N_("file is empty"),
    "csv.missing-columns": N_("missing column(s) {missing}; not read"),
    "csv.truncated-last-row": N_("file ends mid-row (truncated?): {df} complete row(s) read, the cut-off last row skipped"),
    "csv.wrong-field-count": N_("{n_lines} row(s) with a wrong number of fields were skipped (file truncated or corrupt?)"),
    "csv.cannot-read-file": N_("cannot read the file: {strerror}"),
    "csv.too-large": N_("file too large to read; skipped"),
    "csv.cannot-parse-header": N_("cannot parse the header: {value}"),
    "csv.cannot-parse-file": N_("cannot parse the file: {value}"),
    "csv.header-line-empty": N_("header line is empty"),
    "csv.truncated-last-row-line": N_("file ends mid-row (truncated?): {rows} complete row(s) read; the cut-off last row (line {last_short}) has a wrong number of fields and was skipped"),
    "csv.wrong-field-count-lines": N_("{bad} row(s) with a wrong number of fields (line {where}); those rows were skipped (file truncated or corrupt?)"),
    "csv.parse-error-rest-skipped": N_("line {reader}: {value}; rest of the file skipped ({rows} row(s) read)"),
    "analysis.strategy-view-failed": N_("the strategy view could not be built ({name}: {value})"),
    "analysis.execution-view-failed": N_("the execution view could not be built ({name}: {value})"),
    "analysis.efficiency-view-failed": N_("the efficiency view could not be built ({name}: {value})"),
    "analysis.expert-balance-failed": N_("the expert-parallel balance could not be computed ({name}: {value})"),
    "analysis.waits-failed": N_("the wait-for matrix could not be computed ({name}: {value})"),
    "analysis.consistency-check-failed": N_("the consistency check could not run ({name}: {value})"),
    "analysis.unmapped-link-ranks": N_("{unmapped} link record(s) name group-local ranks that could not be mapped to global ranks (ranks of the group missing from the collection, or MindInsight data without group information); they are listed with their local ranks but left out of the matrices and the graph"),
    "analysis.ranks-without-communication": N_("{missing} rank(s) have no communication data: {r}{missing2}; they are shown as 'no data', not as zero"),
    "analysis.local-rank-claimed-twice": N_("ranks {l2g} and {r} both claim local rank {loc} in communication group {gi}; links of rank {r2} in it are not mapped"),
    "analysis.local-rank-conflict": N_("group {gi}: local rank {i} is rank {l2g} by its self link but rank {g} by parallel_group_info; the self link is used"),
    "analysis.more-impossible-ranks": N_("{rest} more rank(s) with the same impossible value ({check}): {rs}"),
    "analysis.overlap-differs-from-file": N_("rank {c}: the overlap recomputed from the timeline differs from the profiler's cluster-analyse file by {c2} of the step time ({c3}); the file's values are shown"),
    "analysis.mixed-step-trace-kinds": N_("ranks {rank_list} have a different kind of step trace than the others; only their step total is compared"),
    "discover.files-without-rank-folder": N_("profiler output files without their *_ascend_pt/ms rank folder; treated as a single rank (rank 0)"),
    "discover.rank-folder-empty-skipped": N_("rank folder is empty; skipped"),
    "discover.rank-claimed-twice": N_("claims rank {rd}, as {rel} does; that one was used (its name carries the profiler's time stamp, this one's does not: a copy or a renamed folder?) and this folder was ignored"),
    "discover.no-rank-id-folder": N_("no rank id in the folder (no profiler_info_{{rank}}.json); treated as rank 0"),
    "discover.cannot-tell-which-rank": N_("cannot tell which rank this folder belongs to (no profiler_info_{{rank}}.json or rank-suffixed files); skipped"),
    "discover.world-size-disagrees": N_("the ranks' metadata disagree on the world size ({map})"),
    "discover.ranks-without-folder": N_("rank(s) {compact} have no folder for {name}"),
    "discover.newer-folder-same-launch": N_("a newer folder ({rel}) of the same launch also holds rank {rd}; this older one was ignored"),
    "discover.no-rank-rows": N_("no rank rows could be read"),
    "discover.sparse-file": N_("file is {size} long but only {size2} of it was ever written (a sparse file, most of it holes: an interrupted copy or a pre-allocated file); not read"),
    "discover.folder-holds-entries-only": N_("folder holds {entries} entries; only files with profiler output names were used"),
    "discover.symbolic-link-leads-outside": N_("symbolic link leads outside the run folder; not followed"),
    "discover.folder-cannot-listed-skipped": N_("folder cannot be listed ({strerror}); skipped"),
    "discover.symbolic-link-not-followed": N_("symbolic link {why}; not followed"),
    "discover.symbolic-link-folder-inside": N_("symbolic link to a folder inside the run ({relpath}); not followed (the folder is read where it is)"),
    "discover.symbolic-link-something-not": N_("symbolic link to something that is not a regular file; not followed"),
    "discover.cannot-examined-skipped": N_("cannot be examined ({err}); skipped"),
    "discover.folder-has-more-entries": N_("folder has more entries than msreport looks at ({n} listed); the rest were not examined"),
    "discover.folder-stands-where-profiler": N_("a folder stands where this profiler file is expected; not read"),
    "discover.not-regular-file-not": N_("{kind}, not a regular file; not read"),
    "discover.folder-holds-traces-different": N_("the folder holds traces of {jobs} different jobs (device model, world size or time base differ, or a rank traced twice); each is reported as its own run"),
    "discover.second-trace-rank-ignored": N_("a second trace for rank {rank}; ignored"),
    "discover.no-rank-trace-distributedinfo": N_("no rank in the trace (distributedInfo) or file name; skipped"),
    "discover.second-msprof-folder-rank": N_("a second msprof folder for rank {rank}; ignored"),
    "discover.ranks-missing": N_("{word} {compact} missing: {sources} show{sources2} {missing} took part, but no files of {missing2} were found; the run is reported without {missing3}"),
    "discover.folder-seen-twice-mount": N_("folder seen twice (a mount looping back into the run); read once"),
    "discover.launches": N_("this folder holds {launches} launches; each is reported as a run of its own: {name}"),
    "discover.profiler-cycles": N_("the processes in this folder were profiled in {cycles} cycles (a profiler schedule with repeat > 1); each is reported as a run of its own: {name}"),
    "layout.step-trace-from-overlap-lanes": N_("no step_trace_time.csv; computing/communication/free per step summed from the trace's Overlap Analysis lanes, as torch_npu does"),
    "layout.step-trace-from-host-steps": N_("no step_trace_time.csv; step times are host ProfilerStep durations from trace_view.json (no computing/communication split)"),
    "layout.mindspore-cpu-profiler-output": N_("MindSpore CPU profiler output: it writes no step trace, so no step times for this rank"),
    "layout.no-step-trace-msprof": N_("no step trace in the msprof database (it needs the STEP_TIME and OVERLAP_ANALYSIS tables) for this rank"),
    "layout.no-step-trace-ascend": N_("no step trace (ASCEND_PROFILER_OUTPUT/step_trace_time.csv) for this rank"),
    "layout.only-msprof-analyze-cluster": N_("only msprof-analyze's cluster-level output is present; per-rank pages show what that file holds"),
    "layout.msprof-analyze-output-found": N_("msprof-analyze output found beside the per-rank data; the per-rank files were used instead"),
    "layout.no-step-trace-raw": N_("no step_trace_raw_{rf}_detail_time.csv for rank {rf2}"),
    "layout.mindspore-gpu-output-no": N_("MindSpore GPU output: no per-operator communication file exists on GPU (hccl_raw is Ascend-only), so the Communication page is empty; the step trace's reduce columns and gpu_cluster_analyse_* give the communication time per step (Step trace and Overlap pages)"),
    "file.symbolic-link-out-run": N_("a symbolic link out of the run folder; not followed"),
    "file.not-regular-file-not": N_("{kind}, not a regular file; not read"),
    "file.bytes-not-utf-8": N_("bytes that are not UTF-8 (line {at}, byte {at2}); read as �, the text around them may be garbled"),
    "file.file-gb-larger-than": N_("file is {size} GB, larger than the {max_text_bytes} GB a text file may be; not read"),
    "file.binary-data-nul-byte": N_("binary data (NUL byte at offset {off} of {size}) in a text file; not read (file corrupt or not a CSV?)"),
    "file.no-line-break-first": N_("no line break in the first {max_line_bytes} MB; not a CSV, not read"),
    "file.cannot-read-file": N_("cannot read the file: {strerror}"),
    "file.binary-data-nul-byte-2": N_("binary data (NUL byte at offset {off}) in a text file; not read"),
    "file.file-mb-too-large": N_("file is {size} MB, too large to read whole; skipped"),
    "screen.duplicated-row-identical-earlier": N_("{dups} duplicated row(s) (identical to an earlier row: same operator and times) counted once (line {where})"),
    "screen.duplicated-row-identical-earlier-2": N_("{dup} duplicated row(s) (identical to an earlier row: same operator and times) counted once"),
    "screen.unusable-numbers": N_("{n_bad} row(s) with an unusable number skipped: {problems}"),
    "screen.unusable-numbers-more": N_("{n_bad} row(s) with an unusable number skipped: {problems} ..."),
    "json.json-nested-more-than": N_("JSON nested more than {max_json_depth} levels deep; skipped"),
    "json.non-finite-out-range": N_("{nums} non-finite or out-of-range number(s) ({shown}) read as missing"),
    "json.string-characters-longer-than": N_("a string of {piece} characters (longer than {max_field_chars}) at byte {pos} (line {line}); read as written"),
    "json.cannot-read-file": N_("cannot read the file: {strerror}"),
    "json.not-valid-json-line": N_("not valid JSON (line {lineno}, column {colno}: {msg})"),
    "json.json-nested-too-deeply": N_("JSON nested too deeply to read; skipped"),
    "json.cannot-parse-json-skipped": N_("cannot parse the JSON ({name}); skipped"),
    "json.file-empty": N_("file is empty"),
    "json.file-mb-too-large": N_("file is {size} MB, too large to read whole; skipped"),
    "trace.cut-short": N_("trace could not be read to the end ({err}: {err2}); {used}"),
    "trace.complete-event-without-usable": N_("{n} complete event(s) without a usable ts/dur (missing, text or negative) left out"),
    "trace.trace-event-non-finite": N_("{dropped} trace event(s) with a non-finite or out-of-range ts/dur left out (first: {dropped2})"),
    "trace.string-longer-than-characters": N_("a string longer than {max_field_chars} characters in the trace (a huge field; first: {huge}); read as written"),
    "guard.loader-failed": N_("could not be read ({name}: {value}); skipped"),
    "db.read-db-export": N_("read from the DB export: {what}"),
    "db.not-read": N_("not read: {why}"),
    "db.meta-data-not-valid": N_("META_DATA {name} is not valid JSON; not used"),
    "db.commanalyzermatrix-row-could-not": N_("{bad} CommAnalyzerMatrix row(s) could not be read and were skipped"),
    "db.cannot-open-database": N_("cannot open the database: {value}"),
    "db.cannot-read": N_("cannot read {what}: {value}"),
    "flops.file-empty": N_("file is empty"),
    "flops.line-too-few-fields": N_("{bad} line(s) with too few fields skipped"),
    "flops.no-step-utilisation-lines": N_("no `step, utilisation` lines found"),
    "flops.expected-json-object-flops": N_("expected a JSON object; FLOPs summary not read"),
    "flops.no-data-nodes-data": N_("no data.nodes / data.links; FLOPs scopes not read"),
    "flops.no-flops-cube-flops": N_("no FLOPs / cube_FLOPs keys; FLOPs summary not read"),
    "kineto.read": N_("Kineto traces: read distributedInfo (world size, process groups), deviceProperties, the host's ProfilerStep#N ranges (the GPU lane's copies are annotations), device kernels / copies / sets of every accelerator (2021 schema categories included), runtime launches (to map each kernel to the step that launched it, and to find the kernels a collective's host op launched), cpu_op operators (self time), gloo:* work slices, [memory] events, the input shapes of matrix multiplications, convolutions and attention and the with_flops counts (FLOPs); not read: python_function events, flow (ac2g) events, other operators' shapes and stacks"),
    "kineto.read-cpu-only": N_("Kineto traces: read distributedInfo (world size, process groups), deviceProperties, the host's ProfilerStep#N ranges (the GPU lane's copies are annotations), device kernels / copies / sets of every accelerator (2021 schema categories included), runtime launches (to map each kernel to the step that launched it, and to find the kernels a collective's host op launched), cpu_op operators (self time), gloo:* work slices, [memory] events, the input shapes of matrix multiplications, convolutions and attention and the with_flops counts (FLOPs); not read: python_function events, flow (ac2g) events, other operators' shapes and stacks. No GPU/NPU activity on any rank: the CPU is the device (computation = operators of the training thread, communication = the backend's collective work slices, gloo:*)"),
    "kineto.read-cpu-ranks": N_("Kineto traces: read distributedInfo (world size, process groups), deviceProperties, the host's ProfilerStep#N ranges (the GPU lane's copies are annotations), device kernels / copies / sets of every accelerator (2021 schema categories included), runtime launches (to map each kernel to the step that launched it, and to find the kernels a collective's host op launched), cpu_op operators (self time), gloo:* work slices, [memory] events, the input shapes of matrix multiplications, convolutions and attention and the with_flops counts (FLOPs); not read: python_function events, flow (ac2g) events, other operators' shapes and stacks. No GPU/NPU activity on rank(s) {ranks}: the CPU is the device (computation = operators of the training thread, communication = the backend's collective work slices, gloo:*)"),
    "kineto.duplicate-host-ops": N_("{k} host operator event(s) identical to an earlier one (same lane, name, start and duration: a duplicated event?); counted as written"),
    "kineto.duplicate-device-events": N_("{k} device event(s) identical to an earlier one (same lane, name, start and duration: a duplicated event?); counted as written"),
    "kineto.not-summarised": N_("trace read but could not be summarised ({err}: {err2})"),
    "kineto.steps-on-device-lane-only": N_("ProfilerStep#N marks only the device lane (gpu_user_annotation), not the host: the step windows are those marks, and device work is cut at them"),
    "kineto.kernels-not-mapped-to-steps": N_("kernels could not be mapped to steps through their launches (no correlation ids, or a step without kernels): the device time is cut at the host's ProfilerStep windows"),
    "kineto.no-profiler-steps": N_("no ProfilerStep#N markers in the trace (profiled without a schedule?): one window over the whole trace stands for the step (step id shown empty)"),
    "kineto.partial-steps": N_("step(s) {map} partial: no next step in the trace marks where the step ends on the device (its kernels may run past the trace's end); left out of the averages, spreads and the slowest step"),
    "kineto.no-collectives": N_("no collective found in the trace (NCCL/RCCL/HCCL kernels, kernels launched by a collective's host op, or gloo:* slices); no communication data for this rank"),
    "kineto.comm-by-host-op": N_("{by_op} device event(s) launched inside a collective's host op (record_param_comms / nccl:* / c10d::*) counted as communication although their names are not a collective library's (kernels only; copies and sets there stay computation): {n}"),
    "kineto.comm-by-host-op-more": N_("{by_op} device event(s) launched inside a collective's host op (record_param_comms / nccl:* / c10d::*) counted as communication although their names are not a collective library's (kernels only; copies and sets there stay computation): {n} and {max_named} more"),
    "kineto.unknown-beside-comm": N_("{beside} device event(s) of {got} unrecognised kind(s) run on the streams of the collectives and are counted as computation: {n}"),
    "kineto.unknown-beside-comm-more": N_("{beside} device event(s) of {got} unrecognised kind(s) run on the streams of the collectives and are counted as computation: {n} and {max_named} more"),
    "kineto.idle-not-computed": N_("idle time by cause not computed ({err}: {err2})"),
    "kineto.no-common-step": N_("the ranks' traces share no step ({parts}): they were not profiled together (other jobs or other profiling windows), so comparing the ranks step by step is not meaningful; profile the ranks over the same steps"),
    "kineto.collective-kinds-differ": N_("{mism} collective instance(s) have different kinds on different ranks (the ranks' traces do not record the same collectives in the same order); their wait is unknown"),
    "kineto.collective-counts-differ": N_("ranks recorded different numbers of collectives in process group(s) {map}; only instances found on two or more ranks get a wait time"),
    "memory.memory-usage-pb-profiler": N_("memory_usage_*.pb is the profiler's protobuf input: present but not read (the memory_usage_summary/details JSON files it produces carry the same data)"),
    "memory.expected-json-object-memory": N_("expected a JSON object; memory summary not read"),
    "memory.expected-json-object-keyed": N_("expected a JSON object keyed by graph id; memory details not read"),
    "metadata.expected-json-object": N_("expected a JSON object"),
    "metadata.rank-id-inside-file": N_("rank_id {rid} inside the file differs from rank {info} taken from the file name; the file name was used"),
    "metadata.parallel-group-info-not": N_("parallel_group_info is not valid JSON; parallel groups unknown"),
    "op-flops.matmul-row-wrong-number": N_("{bad} MatMul row(s) with a wrong number of fields or no readable duration; skipped"),
    "op-flops.matmul-kernel-fractal-nz": N_("{fractal} MatMul kernel(s) in a fractal (NZ) layout: their FLOPs are not computed from the shapes (not counted in MFU)"),
    "overlap.header-holds-step-trace": N_("header {header} holds step-trace columns, not overlap values (a hand-made file); not used for the overlap view"),
    "overlap.no-data-rows": N_("no data rows"),
    "overlap.row-non-numeric-times": N_("{ok} row(s) with non-numeric times skipped"),
    "overlap.no-step-windows-step": N_("no step windows in the step trace; overlap cannot be recomputed per step"),
    "overlap.step-trace-has-no": N_("the step trace has no communication (reduce) columns; no overlap to compute"),
    "overlap.timeline-does-not-cover": N_("the timeline does not cover any whole step of the step trace (different clocks or a truncated timeline); overlap not recomputed"),
    "overlap.column-not-part-overlap": N_("column(s) {map} not part of the overlap file; ignored"),
    "overlap.column-overlap-file-has": N_("{width} column(s); the overlap file has 2 (model-parallel) or 5 (pipeline)"),
    "overlap.columns-where-2-5": N_("{width} columns where 2 or 5 are expected; read by position"),
    "overlap.line-non-numeric-value": N_("line {line}: non-numeric value(s); row skipped"),
    "overlap.step-row-but-step": N_("{body} step row(s) but the step trace has {step_ids} step(s); rows are numbered 1..N"),
    "overlap.computation-pure-communication-x": N_("computation + pure communication is {ratio}x the step time from the step trace (it should be about 1x): the file does not match this run's step trace; its values are shown as written"),
    "overlap.expected-op-name-stream": N_("expected op_name, stream_id, start_time, duration columns"),
    "overlap.no-operators-timeline": N_("no operators in the timeline"),
    "overlap.no-overlap-analysis-lanes": N_("no Overlap Analysis lanes in this iteration's timeline: {whose} overlap for iteration {it} is missing"),
    "strategy.parallel-strategy-files-ranks": N_("parallel strategy files for {n} of {expected} ranks; stages are merged from the files present"),
    "strategy.no-config-object-not": N_("no 'config' object; not a parallel strategy file"),
    "strategy.parallel-type-differs-other": N_("parallel type {ptype} differs from {parallel_type} in the other files"),
    "strategy.file-name-says-rank": N_("the file name says rank {rank}, its config says rank {file_rank}; the file name is used"),
    "strategy.no-graph-object-configuration": N_("no 'graph' object; the configuration is used, no operators"),
    "strategy.operator-not-rank-graph": N_("{missing} operator(s) are not in rank {first}'s graph of the same stage; the stage graph shows rank {first2}'s operators"),
    "trace-view.duplicated-overlap-lane-slice": N_("{lanes} duplicated overlap-lane slice(s) (same lane, start and duration as an earlier one) counted once"),
    "report.execution-view-unreadable": N_("the operator timelines could not be read for the execution view ({name}: {value})"),
}


def _plain(v: Any) -> Any:
    """A parameter as summary.json stores it (and as an f-string shows it: `format(v, "")`)."""
    if type(v) in (int, str) or (type(v) is float and math.isfinite(v)):
        return v
    if isinstance(v, Msg):  # a message as a value: its English (the entry's text is English whatever the language)
        return v.en
    return format(v, "")


class Coded(Msg):
    """A data-quality problem as a code with parameters: renders the code's template in a language."""

    __slots__ = ("code",)

    def __init__(self, code: str, /, **params: Any) -> None:
        super().__init__(CATALOG[code], **{k: _plain(v) for k, v in params.items()})
        self.code = code

    def render(self, lang: Optional[str] = None) -> str:
        """The template in `lang` with the parameters put in; formatted without parameters too (a `{{` in the
        template is a brace, where `Msg` leaves a message without parameters as written). A translation that does
        not fit the parameters falls back to English, as `Msg` does."""
        text = i18n.translations(lang or i18n.current()).gettext(self.msgid)
        try:
            return text.format(**self.params)
        except (KeyError, IndexError, ValueError):
            return self.msgid.format(**self.params)

    def __repr__(self) -> str:
        return f"dq({self.code!r}, {self.params!r})"


def dq(code: str, /, **params: Any) -> Coded:
    """The problem `code` (a key of `CATALOG`) with its parameters."""
    return Coded(code, **params)


def render(code: Optional[str], params: Optional[dict], lang: Optional[str] = None) -> Optional[str]:
    """A stored coded problem (`summary.json`'s `code` and `params`) in `lang`; None when the code is not in the
    catalog (an entry written as text, or by a newer version) or its parameters do not fit the template."""
    template = CATALOG.get(code or "")
    if template is None or not isinstance(params, dict):
        return None
    try:
        template.format(**params)
    except (KeyError, IndexError, ValueError, AttributeError):
        return None
    return Coded(code, **params).render(lang)


def message(issue: Any, limit: int = 300) -> Msg:
    """An entry's problem as a message for a finding's title: through its code when it has one, else its text
    (`i18n.Problem`, shown through the site's matching); a text of `limit` characters or more is cut to fit."""
    text = issue.problem or ""
    code = getattr(issue, "code", "")
    if len(text) >= limit:
        return Problem(text[:limit - 3] + "…")
    if code in CATALOG:
        try:
            return dq(code, **issue.params)
        except (KeyError, TypeError):  # parameters that do not fit: the text as written
            pass
    return Problem(text)
