#!/usr/bin/env bash
# seconds: 320
# prepare: VARIANTS="wg256_ch64_g2_u2_sf16_hd256 wg128_ch128_g2_u2_sf16_hd128 wg256_ch128_g2_u2_sf16_hd128" benchmarks/experiments/run.sh prepare k_mid bwd_dq_out
# Experiment k_mid (session 42): the u2 winners' late phase-3 K rows issued right after phase 1,
# against the library, side by side. After `device_queue.sh collect FILES_AT DEST`, here: move
# benchmarks/experiments/k_mid's files into DEST/30-k-mid/ beside its results, and give
# TRIED.md's row the figures.
set -u
rc=0
VARIANTS="wg256_ch64_g2_u2_sf16_hd256" SHAPES="256,8,4,4096 256,8,1,4096 256,8,4,1024" \
    bash benchmarks/experiments/run.sh step k_mid bwd_dq_out "$JOB_OUT/hd256" 150 || rc=1
VARIANTS="wg128_ch128_g2_u2_sf16_hd128 wg256_ch128_g2_u2_sf16_hd128" SHAPES="128,32,8,4096" \
    bash benchmarks/experiments/run.sh step k_mid bwd_dq_out "$JOB_OUT/hd128" 150 || rc=1
exit $rc
