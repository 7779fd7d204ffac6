#!/usr/bin/env bash
# Rebuild example_reports/ from the generated example run and two real samples (when ../shared is there).
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf example_reports/example example_reports/example-single.html example_reports/example-single.summary.json
msreport --example -o example_reports/example -q
msreport --example -o example_reports/example-single.html --single-file -q
if [ -d ../shared/samples ]; then
  for case in ascend/msinsight_st_qwen3_4rank_tp1pp2dp2_level2_text mindinsight/cluster_pipeline_parallel_4rank \
      mindinsight/single_device_run2_rank1_full real/mindspore_cpu_dist4_new_graph_skew; do
    name=$(basename "$case")
    rm -rf "example_reports/$name"
    msreport "../shared/samples/$case" -o "example_reports/$name" -q
  done
fi
echo "example_reports/ regenerated"
