#!/usr/bin/env bash
# seconds: 110
# prepare: VARIANTS="wg256_ch64_g2_u2_sf16_hd256" benchmarks/experiments/run.sh prepare k_mid_ks16 bwd_dq_out
# Experiment k_mid_ks16 (session 43): k_mid and ks16 together on the head_dim-256 winner at the
# two history-4096 shapes, after each alone (jobs 30 and 40). After `device_queue.sh collect
# FILES_AT DEST`, here: move benchmarks/experiments/k_mid_ks16's files into DEST/50-k-mid-ks16/
# beside its results.
set -u
rc=0
VARIANTS="wg256_ch64_g2_u2_sf16_hd256" SHAPES="256,8,4,4096 256,8,1,4096" \
    bash benchmarks/experiments/run.sh step k_mid_ks16 bwd_dq_out "$JOB_OUT/hd256" 100 || rc=1
exit $rc
