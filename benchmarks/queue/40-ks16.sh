#!/usr/bin/env bash
# seconds: 200
# prepare: VARIANTS="wg256_ch64_g2_u2_sf16_hd256 wg256_ch32_g1_u4_sf16_hd256" benchmarks/experiments/run.sh prepare ks16 bwd_dq_out
# Experiment ks16 (session 43): 16 lanes a key in phase 1 for f16 K/V (whole 128-byte lines,
# half the d_out and out loads a lane), against the library, side by side: the two
# head_dim-256 winners at the three head_dim-256 shapes. After `device_queue.sh collect FILES_AT
# DEST`, here: move benchmarks/experiments/ks16's files into DEST/40-ks16/ beside its results,
# and give TRIED.md's row the figures.
set -uo pipefail
t=$SECONDS
VARIANTS="wg256_ch64_g2_u2_sf16_hd256 wg256_ch32_g1_u4_sf16_hd256" \
    SHAPES="256,8,4,4096 256,8,1,4096 256,8,4,1024" \
    timeout 190 bash benchmarks/experiments/run.sh gpu ks16 bwd_dq_out "$JOB_OUT/ks16" \
    > "$JOB_OUT/ks16.log" 2>&1
echo "ks16 rc=$? $((SECONDS - t)) s"; tail -n 14 "$JOB_OUT/ks16.log"
