#!/usr/bin/env bash
# Session 37 call 1: issue 12's dq_out part on an H200; on any other GPU, sg2 checked at
# (128, 32, 8, 32768) and tuned at the two head_dim-128 tune shapes, then experiments/sg_lanes8 and sg_kb4.
# Carries .gl .whl .spv.
OTHER_GPU='cp tuning/results.jsonl tuning/selection.json $R/ &&
{ timeout 60 python3 -m wgslgen test --kernel attention_bwd_dq_split_out --set sg=2 --adapter gpu \
    --shape head_dim=128,n_heads=32,n_kv_heads=8,history_len=32768 > $R/test_large.log 2>&1;
  echo "test large rc=$?"; tail -n 4 $R/test_large.log; } &&
timeout 120 python3 -m wgslgen tune --kernel attention_bwd_dq_split_out --set hd=128 \
    --shape head_dim=128,n_heads=32,n_kv_heads=8,history_len=4096 \
    --shape head_dim=128,n_heads=8,n_kv_heads=4,history_len=1024 --time 50s --adapter gpu \
    --db $R/results.jsonl --selection $R/selection.json;
echo "tune rc=$?";
VARIANTS="wg256_ch128_g2_u4_sf16_hd128_sg3 wg256_ch128_g2_u4_sf16_hd128_sg2 wg256_ch128_g2_u4_sf32_hd128_sg3 wg256_ch128_g2_u4_sf32_hd128_sg2" \
    SHAPES="128,32,8,4096" timeout 200 benchmarks/experiments/run.sh gpu sg_lanes8 bwd_dq_out $R/sg_lanes8;
echo "sg_lanes8 rc=$?";
VARIANTS="wg256_ch128_g2_u2_sf16_hd128_sg2 wg256_ch128_g4_u2_sf16_hd128_sg1 wg256_ch128_g4_u4_sf16_hd128_sg1 wg256_ch128_g2_u2_sf32_hd128_sg2 wg256_ch128_g4_u2_sf32_hd128_sg1" \
    SHAPES="128,32,8,4096" timeout 170 benchmarks/experiments/run.sh gpu sg_kb4 bwd_dq_out $R/sg_kb4;
echo "sg_kb4 rc=$?"' benchmarks/h200_targets.sh dq_out
