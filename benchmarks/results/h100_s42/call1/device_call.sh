#!/usr/bin/env bash
# Session 42, call 1 (kind nvidia-h100-x1 after nvidia-h200 gave no machine; carried .gl .whl .spv),
# after, here: VARIANTS="wg256_ch64_g2_u2_sf16_hd256 wg256_ch32_g1_u4_sf16_hd256" benchmarks/experiments/run.sh prepare no_clamp bwd_dq_out
bash benchmarks/results/h100_s41/next_call.sh 2>&1 | tail -80
