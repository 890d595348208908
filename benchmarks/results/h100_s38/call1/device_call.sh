#!/usr/bin/env bash
# Session 38 call 1: issue 12's dq_out part on an H200; on any other GPU, experiments/fin8
# (the _out finalize summing 8 chunk partials a batch). Carries .gl .whl .spv/fin8.
OTHER_GPU='VARIANTS="wg256_ch64_g2_u2_sf16_hd256 wg256_ch32_g1_u4_sf16_hd256 wg256_ch64_g2_u2_sf32_hd256 wg128_ch128_g2_u2_sf16_hd128" \
    timeout 300 benchmarks/experiments/run.sh gpu fin8 bwd_dq_out $R/fin8;
echo "fin8 rc=$?"' benchmarks/h200_targets.sh dq_out
