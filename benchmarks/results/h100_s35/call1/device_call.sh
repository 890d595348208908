#!/usr/bin/env bash
# Session 35, call 1: issue 12's dq_out figures on an H200; on any other GPU, experiment sg_sums
# (subgroup sums in bwd_dq_out's partials pass) at (128, 32, 8, 4096) instead (carrying .gl .whl .spv)
export OTHER_GPU='export VARIANTS="wg128_ch128_g2_u2_sf16_hd128 wg256_ch128_g2_u2_sf16_hd128_sg1 wg256_ch128_g2_u4_sf16_hd128_sg1 wg128_ch128_g2_u2_sf16_hd128_sg1 wg256_ch64_g2_u2_sf16_hd128_sg1 wg256_ch128_g1_u2_sf16_hd128_sg1 wg256_ch128_g4_u4_sf32_hd128 wg256_ch128_g2_u2_sf32_hd128_sg1 wg256_ch64_g2_u4_sf32_hd128_sg1" SHAPES=128,32,8,4096; timeout 420 benchmarks/experiments/run.sh gpu sg_sums bwd_dq_out $R/sg_sums'
benchmarks/h200_targets.sh dq_out
