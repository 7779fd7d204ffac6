"""The names profiler output uses: folder and file name patterns of every family, and the file families the loaders
ask for (`RankFiles.first(family)`). Loaders for new inputs add their names here (one entry each)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from pathlib import Path

    from reportgen.discover.runs import RankFiles

ASCEND_DIR_RE = re.compile(r"_ascend_(pt|ms)$")
ASCEND_DIR_NAME_RE = re.compile(r"^(?P<host>.+?)_(?P<pid>\d+)_(?P<ts>\d{14,17})_ascend_(pt|ms)$")

# File families. Loaders for new inputs add their names here (one entry each).
# MindInsight flat-folder files: <family>_<rank>[<suffix>].<ext>
LEGACY_FAMILIES = (
    "step_trace_raw", "hccl_raw", "flops_summary", "flops_scope", "flops_utilization_step", "flops",
    "memory_usage_summary", "memory_usage_details", "memory_usage", "minddata_pipeline_raw",
    "minddata_pipeline_summary", "aicore_intermediate", "aicpu_intermediate", "profiler_info",
    "parallel_strategy", "framework_raw", "output_timeline_data", "ascend_timeline_display",
    "ascend_timeline_summary", "timeline_display", "timeline_summary", "pipeline_profiling",
    "device_queue_profiling", "dataset_iterator_profiling", "minddata_aicpu", "minddata_cpu_utilization",
    "output_op_compute_time_detail", "output_op_compute_time", "cpu_op_type_info", "cpu_op_detail_info",
    "dynamic_shape_info", "gpu_op_type_info", "gpu_op_detail_info", "gpu_activity_data",
    "gpu_timeline_display", "gpu_timeline_summary", "output_format_data_hwts", "output_data_preprocess_aicpu",
    "min_cycle_counter", "dataset", "cpu_ms_memory_record", "minddata_getnext_profiling",
)
LEGACY_SUFFIXES = ("_detail_time", "_type", "_detail")
LEGACY_EXTS = ("csv", "json", "txt", "pb")
LEGACY_FILE_RE = re.compile(
    r"^(?P<family>" + "|".join(sorted(LEGACY_FAMILIES, key=len, reverse=True)) + r")_(?P<rank>\d+)"
    r"(?P<suffix>" + "|".join(LEGACY_SUFFIXES) + r")?\.(?P<ext>" + "|".join(LEGACY_EXTS) + r")$"
)
CLUSTER_ANALYSE_RE = re.compile(
    r"^(?:ascend|gpu)_cluster_analyse_(?P<mode>[a-z-]+)_(?P<stages>\d+)_(?P<size>\d+)_(?P<rank>\d+)\.csv$"
)
FRAMEWORK_RANK_RE = re.compile(r"_(\d+)\.(csv|txt)$")
KINETO_RE = re.compile(r"\.pt\.trace\.json(\.gz)?$")
# Files of ASCEND_PROFILER_OUTPUT (every file there is listed under its own name; these mark a bare folder).
MODERN_FILES = (
    "step_trace_time.csv", "kernel_details.csv", "op_statistic.csv", "trace_view.json",
    "communication.json", "communication_matrix.json", "api_statistic.csv", "operator_details.csv",
    "memory_record.csv", "operator_memory.csv", "npu_module_mem.csv", "l2_cache.csv", "dataset.csv",
    "analysis.db", "data_preprocess.csv", "static_op_mem.csv",
)
RANK_META_FILES = ("profiler_info.json", "profiler_metadata.json")
CLUSTER_FILES = ("cluster_communication.json", "cluster_communication_matrix.json", "communication_group.json")




PROFILER_DB_RE = re.compile(r"^ascend_(pytorch|mindspore)_profiler(?:_(\d+))?\.db$")
MSPROF_DB_RE = re.compile(r"^msprof_.*\.db$")
# Any name a profiler gives a data file: a data-file extension, or msprof's `info.json.N` / `start_info.N`. A folder
# named like this stands where a file was (fuzz sweep: a folder in place of `ascend_pytorch_profiler_0.db`,
# `cpu_framework_0.txt` or a PROF_* `hccl_0_2_2.json` was skipped with nothing in data quality).
FILE_LIKE_RE = re.compile(r"\.(csv|json|db|db-wal|db-shm|db-journal|txt|trace|gz)$|"
                          r"^(info\.json|start_info|end_info|sample\.json)\.\d+$", re.I)


def mindinsight_file(name: str) -> bool:
    """A MindInsight flat-folder file (`<family>_<rank>...`) or a cluster-analyse overlap file."""
    return bool(LEGACY_FILE_RE.match(name) or CLUSTER_ANALYSE_RE.match(name))


def expected_name(name: str) -> bool:
    """A name profiler output uses for a file (so a folder or pipe by that name is a damaged file)."""
    return bool(name in MODERN_FILES or name in RANK_META_FILES or name in CLUSTER_FILES
                or name == "cluster_step_trace_time.csv" or LEGACY_FILE_RE.match(name)
                or CLUSTER_ANALYSE_RE.match(name) or KINETO_RE.search(name)
                or re.match(r"^profiler_info_\d+\.json$", name) or PROFILER_DB_RE.match(name)
                or MSPROF_DB_RE.match(name) or FILE_LIKE_RE.search(name))



def legacy_family(name: str) -> Optional[str]:
    """`minddata_pipeline_raw_0.csv` -> `minddata_pipeline_raw.csv` (the key MindInsight-style files are listed under)."""
    m = LEGACY_FILE_RE.match(name)
    return m.group("family") + (m.group("suffix") or "") + "." + m.group("ext") if m else None


def add_legacy_family(rf: "RankFiles", p: "Path") -> None:
    """MindSpore 2.3+ also writes MindInsight-style `*_{rank}` files (MindData, CPU operators, memory)."""
    fam = legacy_family(p.name)
    if fam is not None:
        rf.add(fam, p)
