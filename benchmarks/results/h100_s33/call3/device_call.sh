#!/usr/bin/env bash
# Session 33, call 3 (the H100 of call 2, still warm): the dq_out part on it, for figures
# to compare within the call (not the H200 targets); carrying .gl .whl
ANY_GPU=1 timeout 560 benchmarks/h200_targets.sh dq_out
