#!/usr/bin/env bash
# Session 34, call 1: the dq_out part on an H200; on any other GPU, experiments fit16k and g4_u2
# (carrying .gl .whl .spv; .spv/fit16k and .spv/g4_u2 prepared with the VARIANTS below)
OTHER_GPU='export SHAPES=128,32,8,4096
VARIANTS="wg256_ch128_g4_u4_sf16_hd128 wg256_ch128_g4_u4_sf32_hd128 wg128_ch128_g4_u4_sf32_hd128 wg128_ch128_g4_u4_sf16_hd128" \
    timeout 260 benchmarks/experiments/run.sh gpu fit16k bwd_dq_out $R/fit16k; a=$?
VARIANTS="wg256_ch128_g4_u2_sf16_hd128 wg256_ch128_g4_u2_sf32_hd128 wg256_ch128_g4_u4_sf16_hd128 wg256_ch128_g4_u4_sf32_hd128 wg256_ch128_g2_u2_sf16_hd128" \
    timeout 260 benchmarks/experiments/run.sh gpu g4_u2 bwd_dq_out $R/g4_u2; b=$?
echo "fit16k rc=$a g4_u2 rc=$b"; exit $((a + b))' \
    timeout 570 benchmarks/h200_targets.sh dq_out
