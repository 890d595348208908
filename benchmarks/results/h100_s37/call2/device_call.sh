#!/usr/bin/env bash
# Session 37 call 2: issue 12's dq_out part (bwd_dq and bwd_dq_out schedules side by side, with
# PyTorch's graphs and the floor, every timed variant checked at its largest shape) on whatever
# GPU comes (ANY_GPU=1: an H200 gives the targets, another GPU figures within the call).
# The tar runs even if the part is cut short. Carries .gl .whl.
ANY_GPU=1 H200_TARGETS_DIR=/tmp/r timeout 550 benchmarks/h200_targets.sh dq_out
echo "h200_targets rc=$?"
tar czf "$OUT/r.tgz" -C /tmp r
