#!/usr/bin/env bash
# Session 34, call 3 (491 device seconds left: too few for dq_out's ~400 s and a start): the dkv
# part on an H200 (~150 s); on any other GPU, experiments/g4_ch64_u2 (carrying .gl .whl .spv;
# .spv/g4_ch64_u2 prepared with the VARIANTS below)
OTHER_GPU='VARIANTS="wg256_ch64_g4_u2_sf16_hd128 wg128_ch64_g4_u2_sf16_hd128 wg256_ch64_g4_u4_sf16_hd128 wg128_ch128_g2_u2_sf16_hd128" \
    SHAPES=128,32,8,4096 timeout 240 benchmarks/experiments/run.sh gpu g4_ch64_u2 bwd_dq_out $R/g4c' \
    timeout 300 benchmarks/h200_targets.sh dkv
