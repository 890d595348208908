#!/usr/bin/env bash
# Session 33, call 4 (an H100 came): the driver's register counts of `_out`'s 21 head_dim-128,
# chunk-128 schedules (SPIR-V from `wgslgen transpile --kernel attention_bwd_dq_split_out
# --set hd=128 --set ch=128 --to spv --out .spv/s33`, carried):
OTHER_GPU='python3 benchmarks/pipeline_stats.py .spv/s33 --json $R/stats.json > $R/stats.txt 2>&1' \
    timeout 300 benchmarks/h200_targets.sh dkv
