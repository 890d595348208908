#!/usr/bin/env bash
# seconds: 260
# prepare: VARIANTS="wg256_ch64_g2_u2_sf16_hd256 wg256_ch32_g1_u4_sf16_hd256 wg128_ch64_g2_u2_sf16_hd128" benchmarks/experiments/run.sh prepare ks16 bwd_dq_out
# Experiment ks16 (session 43): 16 lanes a key in phase 1 for f16 K/V (whole 128-byte lines,
# half the d_out and out loads a lane), against the library, side by side: the two
# head_dim-256 winners at the three head_dim-256 shapes, then the head_dim-128 schedule it
# changes that came closest to the winners there (wg128_ch64_g2_u2: 16.55 µs against 15.52 in
# the H100's tune at (128, 32, 8, 4096)). After `device_queue.sh collect FILES_AT DEST`, here:
# move benchmarks/experiments/ks16's files into DEST/40-ks16/ beside its results, and give
# TRIED.md's row the figures.
set -u
rc=0
VARIANTS="wg256_ch64_g2_u2_sf16_hd256 wg256_ch32_g1_u4_sf16_hd256" \
    SHAPES="256,8,4,4096 256,8,1,4096 256,8,4,1024" \
    bash benchmarks/experiments/run.sh step ks16 bwd_dq_out "$JOB_OUT/hd256" 190 || rc=1
VARIANTS="wg128_ch64_g2_u2_sf16_hd128" SHAPES="128,32,8,4096" \
    bash benchmarks/experiments/run.sh step ks16 bwd_dq_out "$JOB_OUT/hd128" 60 || rc=1
exit $rc
