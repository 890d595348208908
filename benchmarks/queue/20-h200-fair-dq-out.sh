#!/usr/bin/env bash
# seconds: 480
# needs: H200
# Issue 12's bwd_dq figures again on an H200 (h200_targets.sh dq_out: seven bwd_dq schedules
# beside bwd_dq_out's, each family with its PyTorch graphs, the largest-shape checks, targets.md;
# 376 s in session 39), after the tune before it in the queue. After `device_queue.sh collect
# FILES_AT DEST`, here: unpack DEST/20-h200-fair-dq-out/r.tgz where it is, and run
# `python3 benchmarks/targets.py DIR --bandwidth 4.3e12` over it beside session 39's call2/dkv
# and call3/fw for the whole table.
set -uo pipefail
OUT=$JOB_OUT H200_TARGETS_DIR=/tmp/fair_dq_out timeout 470 benchmarks/h200_targets.sh dq_out
