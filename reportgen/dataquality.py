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
`IssueLog.add`, `Fs.note` and `DataIssue` take either form during the migration. Every problem the code writes is coded
(the text form stays for `summary.json` files written before codes). The loaders' door (`loaders.schema.Door`) takes only codes:
a door code's template also holds `{n}` (how many) and `{example}` (the first one), which the door puts in when it
writes the entry.

Some parameters are English phrases the writer picks (the door's `why`, "not a whole number >= 0"; `whose`, "rank
3's"; consistency's `what` and `step`): they are shown as written in every language.

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
    "analysis.comm-over-step": N_("rank {rank}: {what} take {value} ms in {step}, longer than the step itself ({total} ms in {trace}): the communication file and the step trace disagree (or operators ran concurrently and are summed); shares of the step computed from these values would exceed 100 %"),
    "analysis.comm-over-step-steps": N_("rank {rank}: {what} take {value} ms in {step}, longer than the step itself ({total} ms in {trace}): the communication file and the step trace disagree (or operators ran concurrently and are summed); shares of the step computed from these values would exceed 100 % ({n_steps} steps affected; the worst shown)"),
    "analysis.wait-over-step": N_("rank {rank}: {what} of {value} ms in {step}, longer than the step itself ({total} ms in {trace}); the wait shown for this rank cannot be true"),
    "analysis.wait-over-step-steps": N_("rank {rank}: {what} of {value} ms in {step}, longer than the step itself ({total} ms in {trace}); the wait shown for this rank cannot be true ({n_steps} steps affected; the worst shown)"),
    "analysis.parts-over-step": N_("rank {rank}: {what} add up to {value} ms in {step}, more than the step ({total} ms): the parts of the step cannot all be true"),
    "analysis.parts-over-step-steps": N_("rank {rank}: {what} add up to {value} ms in {step}, more than the step ({total} ms): the parts of the step cannot all be true ({n_steps} steps affected; the worst shown)"),
    "analysis.negative-part": N_("rank {rank}: {what} is negative ({value} ms) in {step}: the file's columns contradict each other"),
    "analysis.negative-part-steps": N_("rank {rank}: {what} is negative ({value} ms) in {step}: the file's columns contradict each other ({n_steps} steps affected; the worst shown)"),
    "analysis.share-over-100": N_("rank {rank}: {what} is {value} ms per step, more than the step ({total} ms, {pct} of it): a share above 100 % cannot be true; the communication file and the step trace disagree"),
    "analysis.link-over-step": N_("rank {rank}: {what} takes {value} ms per step, more than the step of the sending rank ({total} ms, {pct} of it): the link's time and the step trace disagree, so time lost on it cannot be given as a share of the step"),
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
    "json.expected-keys-missing": N_("{n} expected key(s) {k} missing (read as missing); e.g. {example}"),
    "trace.cut-short": N_("trace could not be read to the end ({err}: {err2}); {used}"),
    "trace.complete-event-without-usable": N_("{n} complete event(s) without a usable ts/dur (missing, text or negative) left out"),
    "trace.trace-event-non-finite": N_("{dropped} trace event(s) with a non-finite or out-of-range ts/dur left out (first: {dropped2})"),
    "trace.string-longer-than-characters": N_("a string longer than {max_field_chars} characters in the trace (a huge field; first: {huge}); read as written"),
    "trace.events-not-object": N_("{odd} entr(y/ies) of the trace's event list that are not an object (first: {odd2}) left out"),
    "trace.no-events": N_("the trace holds no events: the rank's timeline is missing"),
    "trace.lane-id-missing": N_("{n} trace event(s) whose {what} is missing or not a number / name (e.g. {example}): kept, on a lane of their own"),
    "trace.lane-id-fractional": N_("{n} trace event(s) whose {what} is fractional (e.g. {example}): kept, on a lane of their own"),
    "trace.lane-id-beyond-any-id": N_("{n} trace event(s) whose {what} is beyond any id (e.g. {example}): kept, on a lane of their own"),
    "trace.lane-id-negative": N_("{n} trace event(s) whose {what} is negative (e.g. {example}): kept, on a lane of their own"),
    "trace.lane-id-text": N_("{n} trace event(s) whose {what} is text where a number belongs (e.g. {example}): kept, on a lane of their own"),
    "trace.args-value-invalid": N_("{n} trace event(s) whose args value {key} is not valid ({why}; e.g. {example}): kept as written"),
    "trace.events-without-phase-or-name": N_("{malformed} trace event(s) without a phase ('ph') or a name (the former skipped)"),
    "trace.process-name-without-name": N_("{unnamed} process_name metadata event(s) without a name (args.name): their process is not classified"),
    "trace.duplicated-events": N_("{dups} duplicated complete event(s) (same process, thread, name, start and duration as an earlier one) counted once"),
    "trace.host-ops-on-unnamed-threads": N_("{stray} host operator(s) on thread(s) the trace never names (no thread_name metadata; e.g. pid {first}, tid {first2}): a damaged pid or tid? kept, on a thread of their own"),
    "guard.loader-failed": N_("could not be read ({name}: {value}); skipped"),
    "db.read-db-export": N_("read from the DB export: {what}"),
    "db.not-read": N_("not read: {why}"),
    "db.meta-data-not-valid": N_("META_DATA {name} is not valid JSON; not used"),
    "db.commanalyzermatrix-row-could-not": N_("{bad} CommAnalyzerMatrix row(s) could not be read and were skipped"),
    "db.cannot-open-database": N_("cannot open the database: {value}"),
    "db.cannot-read": N_("cannot read {what}: {value}"),
    "db.world-group-inferred": N_("no distributed_args or parallel_group_info in META_DATA; every collective of this rank runs in one HCCL group of {size} ranks in which its local rank is its global rank, so the run is taken as pure data parallel (DP {dp}, TP 1, PP 1; DP index = rank)"),
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
    "kineto.kernels-without-launch": N_("{n} device event(s) in the step windows have no host launch in the trace ({no_id} without a correlation id, the others' id carried by no runtime launch; first: {example}): the steps are mapped through the launches (as HTA), so they count in no step's computation or communication (they last {ms} ms in all, {share} of the step windows: free time where nothing else runs)"),
    "kineto.kernels-not-mapped-to-steps": N_("kernels could not be mapped to steps through their launches (no correlation ids, or a step without kernels): the device time is cut at the host's ProfilerStep windows"),
    "kineto.no-profiler-steps": N_("no ProfilerStep#N markers in the trace (profiled without a schedule?): one window over the whole trace stands for the step (step id shown empty)"),
    "kineto.partial-steps": N_("step(s) {map} partial: no next step in the trace marks where the step ends on the device (its kernels may run past the trace's end); left out of the averages, spreads and the slowest step"),
    "kineto.no-collectives": N_("no collective found in the trace (NCCL/RCCL/HCCL kernels, kernels launched by a collective's host op, or gloo:* slices); no communication data for this rank"),
    "kineto.comm-by-host-op": N_("{by_op} device event(s) launched inside a collective's host op (record_param_comms / nccl:* / c10d::*) counted as communication although their names are not a collective library's (kernels only; copies and sets there stay computation): {n}"),
    "kineto.comm-by-host-op-more": N_("{by_op} device event(s) launched inside a collective's host op (record_param_comms / nccl:* / c10d::*) counted as communication although their names are not a collective library's (kernels only; copies and sets there stay computation): {n} and {max_named} more"),
    "kineto.unknown-beside-comm": N_("{beside} device event(s) of {got} unrecognised kind(s) run on the streams of the collectives and are counted as computation: {n}"),
    "kineto.unknown-beside-comm-more": N_("{beside} device event(s) of {got} unrecognised kind(s) run on the streams of the collectives and are counted as computation: {n} and {max_named} more"),
    "kineto.idle-not-computed": N_("idle time by cause not computed ({err}: {err2})"),
    "kineto.events-without-category": N_("{n} complete event(s) without a category ('cat' absent, empty or not text; first: {example}): Kineto writes one on every event, so their kind is unknown; left out"),
    "kineto.header-fields-missing": N_("the trace's header lacks {fields}, which Kineto writes: what they give (the rank's place in the job, its process groups, its device's model and memory) is taken from the rest of the run or left unknown"),
    "kineto.memory-events-incomplete": N_("{n} [memory] event(s) without {fields}, which the trace's other [memory] events carry (first: {example}): left out of the memory curve and peaks"),
    "kineto.no-common-step": N_("the ranks' traces share no step ({parts}): they were not profiled together (other jobs or other profiling windows), so comparing the ranks step by step is not meaningful; profile the ranks over the same steps"),
    "kineto.collective-kinds-differ": N_("{mism} collective instance(s) have different kinds on different ranks (the ranks' traces do not record the same collectives in the same order); their wait is unknown"),
    "kineto.collective-counts-differ": N_("ranks recorded different numbers of collectives in process group(s) {map}; only instances found on two or more ranks get a wait time"),
    "memory.memory-usage-pb-profiler": N_("memory_usage_*.pb is the profiler's protobuf input: present but not read (the memory_usage_summary/details JSON files it produces carry the same data)"),
    "memory.expected-json-object-memory": N_("expected a JSON object; memory summary not read"),
    "memory.expected-json-object-keyed": N_("expected a JSON object keyed by graph id; memory details not read"),
    "metadata.expected-json-object": N_("expected a JSON object"),
    "metadata.rank-id-inside-file": N_("rank_id {rid} inside the file differs from rank {info} taken from the file name; the file name was used"),
    "metadata.parallel-group-info-not": N_("parallel_group_info is not valid JSON; parallel groups unknown"),
    "metadata.global-ranks-invalid": N_("{n} rank(s) in global_ranks that are not whole numbers >= 0 (left out); e.g. {example}"),
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
    "trace-view.flow-ts-unusable": N_("{n} launch flow event(s) (host to device) without a usable ts (missing, text or negative) left out: the steps' device windows come from the other launches"),
    "trace-view.duplicated-overlap-lane-slice": N_("{lanes} duplicated overlap-lane slice(s) (same lane, start and duration as an earlier one) counted once"),
    "communication.times-not-object": N_("expected a JSON object of steps; communication times not read"),
    "communication.entries-without-time-info": N_("{bad} entr{bad2} without the expected 'Communication Time Info' were skipped"),
    "communication.no-operators": N_("no communication operators in the file"),
    "communication.matrix-not-object": N_("expected a JSON object of steps; link matrix not read"),
    "communication.matrix-no-links": N_("communication_matrix.json holds no link: {whose} links are missing"),
    "communication.bandwidth-info-not-object": N_("{n} 'Communication Bandwidth Info' that is not an object (no transport sizes read); e.g. {example}"),
    "communication.bandwidth-entry-not-object": N_("{n} {tr} bandwidth entr(y/ies) that are not an object (read as 0); e.g. {example}"),
    "communication.links-unreadable": N_("{bad} link entr{bad2} could not be read and were skipped"),
    "communication.hccl-raw-header": N_("unexpected header (need {need}); communication not read"),
    "communication.hccl-raw-bad-rows": N_("{bad} row(s) with invalid link_info / operator JSON or step (line {where}); skipped"),
    "communication.hccl-raw-no-rows": N_("no readable rows"),
    "communication.hccl-raw-average-copies-last": N_("the '-' row of this hccl_raw generation copies the last iteration instead of averaging; the average is computed from the step rows"),
    "communication.hccl-trace-no-events-list": N_("no traceEvents list; skipped"),
    "communication.msprof-hccl-not-list": N_("expected a list of trace events; skipped"),
    "communication.msprof-hccl-empty": N_("the file holds no trace events: {whose} communication in iteration {step} is missing"),
    "cpu-usage.block-not-object": N_("{n} utilisation block(s) that are not an object (not read); e.g. {example}"),
    "cpu-usage.series-lengths-differ": N_("{n} utilisation blocks whose user and sys series differ in length; e.g. {example}"),
    "cpu-usage.series-not-list": N_("{n} utilisation series that are not a list (not read); e.g. {example}"),
    "cpu-usage.not-object": N_("expected a JSON object; CPU utilisation not read"),
    "cpu-usage.keys-missing": N_("{n} expected key(s) missing (their samples read as missing); e.g. {example}"),
    "cpu-usage.op-without-id": N_("{n} op_info entr(y/ies) without an op_id (not read); e.g. {example}"),
    "cpu-usage.op-id-repeated": N_("{n} op_info entr(y/ies) repeating an earlier op_id (both kept); e.g. {example}"),
    "cpu-usage.no-samples": N_("no utilisation samples"),
    "dataprep.pipeline-columns-missing": N_("missing column(s) {missing}; pipeline not read"),
    "dataprep.pipeline-roots": N_("{n} pipeline with more than one root or a parent id below -1 (kept as written); e.g. {example}"),
    "dataprep.no-op-info": N_("no op_info list; pipeline not read"),
    "dataprep.host-queue-empty": N_("the file holds no line: {whose} host queue is missing"),
    "dataprep.host-queue-bad-lines": N_("{bad} line(s) not in the `type sub value value` form skipped"),
    "dataprep.device-queue-empty": N_("the file holds no line: {whose} device queue is missing"),
    "dataprep.queue-line-repeated": N_("{n} line(s) identical to an earlier one (kept); e.g. {example}"),
    "dataprep.queue-line-short": N_("{n} line(s) with fewer than 4 fields (read with missing values); e.g. {example}"),
    "dataprep.queue-not-number": N_("{n} value(s) that are not numbers (read as missing); e.g. {example}"),
    "dataprep.queue-negative": N_("{n} negative time stamp(s) or size(s) (kept as written); e.g. {example}"),
    "dataprep.queue-end-before-start": N_("{n} line(s) whose end is before their start (kept as written); e.g. {example}"),
    "dataprep.file-ends-mid-line": N_("{n} file ends mid-line (truncated?); the last line read as it is; e.g. {example}"),
    "dataprep.summary-columns-missing": N_("missing Operation / Avg. time columns; not read"),
    "dataprep.summary-no-operators": N_("the summary holds no operator (no op_ids): {whose} data-pipeline summary is missing"),
    "dataprep.summary-value-not-list": N_("{n} per-operator value(s) that are not a list (not read); e.g. {example}"),
    "dataprep.summary-list-length": N_("{n} per-operator list(s) whose length differs from op_ids' (not read); e.g. {example}"),
    "dataprep.summary-value-null": N_("{n} per-operator value(s) that are null (read as missing); e.g. {example}"),
    "gpu.header-unexpected": N_("unexpected header (need {need}); not read"),
    "operators.types-from-names": N_("the profiler recorded no operator types (Type is N/A, as torch_npu writes at Level0); the types shown are read from the operator names"),
    "operators.type-header": N_("unexpected header ({header}); need op_type|kernel_type, execution_time|total_time, execution_frequency, percent; not read"),
    "operators.detail-type-header": N_("unexpected header ({header}); need full_op_name|full_kernel_name and op_type|kernel_type; operator types taken from the names"),
    "operators.detail-header": N_("unexpected header ({header}); need full_op_name|full_kernel_name and execution_time|task_duration; not read"),
    "operators.no-rows": N_("no operator rows found"),
    "operators.aicpu-header": N_("unexpected header ({header}); need op_type|kernel_type and total_time; not read"),
    "operators.host-cpu-type-header": N_("unexpected header ({header}); host CPU operator types not read"),
    "operators.host-cpu-detail-header": N_("unexpected header ({header}); host CPU operators not read"),
    "operators.kernel-rows-no-duration": N_("{bad} kernel row(s) without a readable duration; skipped"),
    "step-trace.no-step-num": N_("no step_num column; not a step-trace file"),
    "step-trace.columns-missing": N_("missing column(s) {missing}; step trace not read"),
    "step-trace.expected-columns-missing": N_("{n} expected column(s) {c} missing (read as missing); e.g. {example}"),
    "step-trace.comm-column-unpaired": N_("{n} communication column(s) without their _start_point / _end_point partner (not read); e.g. {example}"),
    "step-trace.average-row-labelled-0": N_("average row is labelled '0' instead of '-'; read as the stored average"),
    "step-trace.step-not-number": N_("line {line}: step number {label} is not a number; row skipped"),
    "step-trace.line-non-numeric": N_("line {line}: non-numeric value(s); row skipped"),
    "step-trace.phases-disagree-points": N_("{n} step row(s) whose phases disagree with the row's own time points (kept as written); e.g. {example}"),
    "step-trace.average-row-inconsistent": N_("the stored average row is inconsistent (step total is zero or smaller than its step interval); the mean of the step rows is used instead"),
    "step-trace.no-rows": N_("no step rows"),
    "step-trace.inference": N_("inference step trace: forward time only, no tail"),
    "step-trace.no-computing-column": N_("no Computing column; not a step_trace_time.csv"),
    "step-trace.unknown-columns": N_("unknown column(s) ignored: {unknown}"),
    "step-trace.phase-columns-missing": N_("expected column(s) {lost} missing: {whose} step phases under them are read as missing"),
    "step-trace.computing-not-number": N_("line {line}: Computing is not a number; row skipped"),
    "step-trace.negative-time": N_("line {line}: negative time in {negative}; row skipped"),
    "step-trace.db-table-unreadable": N_("cannot read table StepTraceTime: {value}"),
    "step-trace.db-table-empty": N_("table StepTraceTime has no rows"),
    "step-trace.several-models": N_("step traces of {by_model} models found; model {model} (most iterations) was used"),
    "step-trace.msprof-no-iteration-time": N_("msprof step_trace files hold no 'Iteration Time' events"),
    "step-trace.cluster-columns-missing": N_("expected columns Type, Index and Computing"),
    "step-trace.rank-index-not-number": N_("line {line}: rank index {cells} is not a number; row skipped"),
    "timeline.trace-too-large": N_("trace is {out} MB; linked for download but not summarised here (the step trace carries the same computing/communication totals)"),
    "timeline.ts-text-and-number": N_("'ts' written as text in {ts_kinds} complete event(s) and as a number in {ts_kinds2}: one writer writes one or the other (read as numbers)"),
    "timeline.unnamed-process": N_("{stray} complete event(s) in process(es) the trace never names (pid {p}; no process_name metadata): a damaged pid? counted by their name alone"),
    "schema.value-read-as-missing": N_("{n} value(s) read as missing ({why}); e.g. {example}"),
    "schema.value-kept-as-written": N_("{n} value(s) kept as written ({why}); e.g. {example}"),
    "schema.entry-without-key": N_("{n} entr(y/ies) without the expected key {key} (read as missing); e.g. {example}"),
    "schema.value-null": N_("{n} value(s) read as missing (null where a number belongs); e.g. {example}"),
    "schema.text-in-number-column": N_("{n} value(s) in {name} that are text, not a number (read as missing); e.g. {example}"),
    "schema.step-repeated": N_("{n} {name} value(s) on more than one row (the same step twice; every row kept); e.g. {example}"),
    "schema.row-without-value": N_("{n} row(s) dropped: no value in {name} (empty or a null mark); e.g. {example}"),
    "schema.rows-dropped-bad-value": N_("{n} row(s) dropped: {name} {why}; e.g. {example}"),
    "schema.values-missing-bad-value": N_("{n} value(s) read as missing: {name} {why}; e.g. {example}"),
    "schema.header-only": N_("{schema} has a header and no rows: {whose} {schema2} are missing"),
    "schema.every-row-rejected": N_("every row of {schema} ({before}) was rejected: {whose} {schema2} are missing"),
    "schema.huge-cell": N_("a cell of {found} characters (longer than {max_cell_chars}) in column {found2}; read as written"),
    "schema.null-mark": N_("{n} value(s) written as a null mark in {name} (read as missing); e.g. {example}"),
    "schema.duplicate-rows-counted-once": N_("{dups} exact duplicate row(s) (every column identical to an earlier row) counted once; e.g. data row {dups2}"),
    "schema.duplicate-rows-kept": N_("{dups} exact duplicate row(s) (every column identical to an earlier row) kept; e.g. data row {dups2}"),
    "schema.keys-lacked": N_("rank {r}'s file lacks key(s) every other rank's copy has ({lost}): a key dropped or renamed? the values under it were not read for this rank"),
    "schema.keys-added": N_("rank {r}'s file has key(s) no other rank's copy has ({extra}): a key dropped or renamed? the values under it were not read for this rank"),
    "schema.keys-lacked-and-added": N_("rank {r}'s file lacks key(s) every other rank's copy has ({lost}) and has key(s) no other rank's copy has ({extra}): a key dropped or renamed? the values under it were not read for this rank"),
    "report.separate-runs": N_("{n} separate runs found; reported separately"),
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
