ANY_GPU=1 H200_TARGETS_DIR=/tmp/r3 timeout 540 benchmarks/h200_targets.sh dq_out   # session 38 call 3, warm after call 2
