#!/usr/bin/env bash
# Run in session 37 (with two experiments after it): ../h100_s37/call1/device_call.sh and its output.
# Session 36, prepared and not run (no device started): issue 12's dq_out part on an H200; on any other GPU, the new
# subgroup_sums = 2 variants checked at (128, 32, 8, 32768), then
# tuned at the two head_dim-128 tune shapes (committed records copied: only they are measured).
# Carries .gl .whl.
OTHER_GPU='cp tuning/results.jsonl tuning/selection.json $R/ &&
{ timeout 60 python3 -m wgslgen test --kernel attention_bwd_dq_split_out --set sg=2 --adapter gpu \
    --shape head_dim=128,n_heads=32,n_kv_heads=8,history_len=32768 > $R/test_large.log 2>&1;
  echo "test large rc=$?"; tail -n 4 $R/test_large.log; } &&
timeout 120 python3 -m wgslgen tune --kernel attention_bwd_dq_split_out --set hd=128 \
    --shape head_dim=128,n_heads=32,n_kv_heads=8,history_len=4096 \
    --shape head_dim=128,n_heads=8,n_kv_heads=4,history_len=1024 --time 50s --adapter gpu \
    --db $R/results.jsonl --selection $R/selection.json' benchmarks/h200_targets.sh dq_out
