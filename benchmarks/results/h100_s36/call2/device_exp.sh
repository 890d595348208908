#!/usr/bin/env bash
# Session 36, call 2 (OTHER_GPU of device_call.sh): experiments/sg_lanes (subgroup_sums = 2: rows of 16 invocations at head_dim
# 128; subgroup_sums = 1 at head_dim 256, two vectors an invocation) beside the library, on
# whichever GPU comes (carrying .gl .whl .spv after run.sh prepare sg_lanes bwd_dq_out); then
# the new head_dim-256 variants checked at history 32,768 on the GPU
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
export VARIANTS="wg256_ch128_g2_u4_sf16_hd128_sg1 wg256_ch128_g2_u2_sf16_hd128 wg256_ch128_g2_u4_sf16_hd128_sg2 wg256_ch128_g4_u4_sf16_hd128_sg2 wg256_ch64_g4_u4_sf16_hd128_sg2 wg256_ch64_g2_u4_sf16_hd128_sg2 wg256_ch128_g4_u4_sf32_hd128_sg2 wg256_ch128_g4_u4_sf32_hd128 wg256_ch64_g2_u2_sf16_hd256 wg256_ch64_g2_u4_sf16_hd256_sg1 wg256_ch64_g4_u4_sf16_hd256_sg1 wg256_ch128_g2_u4_sf16_hd256_sg1 wg256_ch64_g2_u4_sf32_hd256_sg1 wg256_ch64_g2_u2_sf32_hd256"
export SHAPES="256,8,4,4096 256,8,1,4096 128,32,8,4096"
timeout 420 benchmarks/experiments/run.sh gpu sg_lanes bwd_dq_out "$OUT/sg_lanes" > "$OUT/run.log" 2>&1; echo "run rc=$?"
tail -60 "$OUT/run.log"
timeout 100 python3 -m wgslgen test --templates .spv/sg_lanes/templates --kernel attention_bwd_dq_split_out \
    --set sg=1 --set hd=256 --adapter gpu --shape head_dim=256,n_heads=8,n_kv_heads=4,history_len=32768 \
    > "$OUT/test_large.log" 2>&1; echo "test large rc=$?"; tail -n 8 "$OUT/test_large.log"
cd "$OUT" && tar czf sg_lanes.tgz sg_lanes && rm -rf sg_lanes
