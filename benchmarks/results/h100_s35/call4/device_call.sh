#!/usr/bin/env bash
# Session 35, call 4: issue 12's dq_out figures on an H200; on any other GPU instead: experiment
# wg128_hd256 (128 threads for bwd_dq_out at head_dim 256) at the three head_dim-256 fair shapes
# (carrying .gl .whl .spv)
export OTHER_GPU='VARIANTS="wg256_ch64_g2_u2_sf16_hd256 wg256_ch32_g1_u4_sf16_hd256 wg128_ch64_g2_u2_sf16_hd256 wg128_ch32_g2_u4_sf16_hd256 wg128_ch32_g1_u4_sf16_hd256 wg128_ch64_g1_u2_sf16_hd256 wg128_ch128_g2_u2_sf16_hd256 wg256_ch64_g2_u2_sf32_hd256 wg128_ch64_g2_u2_sf32_hd256" \
    SHAPES="256,8,4,4096 256,8,4,1024 256,8,1,4096" timeout 540 benchmarks/experiments/run.sh gpu wg128_hd256 bwd_dq_out $R/wg128_hd256'
benchmarks/h200_targets.sh dq_out
