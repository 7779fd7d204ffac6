#!/usr/bin/env bash
# Rebuild example_reports/ from the generated example run and two real samples (when ../shared is there).
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf example_reports/example example_reports/example-zh example_reports/example-single.html example_reports/example-single.summary.json
# (--example keeps its generated run in example_reports/example-run/, shared by the three example builds and
#  replaced by each; the overview names it)
msreport --no-cache --example -o example_reports/example -q
msreport --no-cache --example -o example_reports/example-single.html --single-file -q
rm -rf example_reports/example-zh
msreport --no-cache --example -o example_reports/example-zh --lang zh -q
# a synthetic 4-stage x 8-device MindSpore pipeline run with strategy files, a slow device and an operator
# slow everywhere (the execution and strategy views)
tmp=$(mktemp -d)
python -m reportgen.synth "$tmp/pipeline" --layout mindinsight --ranks 32 --stages 4 --tp 2 --steps 6 \
    --inject slow-rank:13:compute:1.3 --inject slow-op:LayerNorm:4 >/dev/null
rm -rf example_reports/pipeline_4x8_slow_device
msreport --no-cache "$tmp/pipeline" -o example_reports/pipeline_4x8_slow_device -q
rm -rf "$tmp"
if [ -d ../shared/samples ]; then
  for case in ascend/msinsight_st_qwen3_4rank_tp1pp2dp2_level2_text mindinsight/cluster_pipeline_parallel_4rank \
      mindinsight/single_device_run2_rank1_full real/mindspore_cpu_dist4_new_graph_skew; do
    name=$(basename "$case")
    rm -rf "example_reports/$name"
    msreport --no-cache "../shared/samples/$case" -o "example_reports/$name" -q
  done
fi
# real traces recorded on an H100 (tests/data/h100): 2-rank DDP over gloo, rank 1 stalling 200 ms in backward
rm -rf example_reports/h100_ddp_gloo_stall
msreport --no-cache tests/data/h100/ddp_gloo_stall -o example_reports/h100_ddp_gloo_stall -q
echo "example_reports/ regenerated"
