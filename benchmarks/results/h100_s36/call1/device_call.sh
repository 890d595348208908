#!/usr/bin/env bash
# Session 36, call 1: issue 12's dq_out part on an H200; on any other GPU (OTHER_GPU) the
# subgroup_sums variants, whose rendered comment was fixed (records stale), are checked at
# (128, 32, 8, 32768) and re-tuned at the two head_dim-128 tune shapes (committed records
# copied and pruned first, so only the eight sg1 variants are measured). Carries .gl .whl.
OTHER_GPU='cp tuning/results.jsonl tuning/selection.json $R/ &&
python3 -m wgslgen db prune --db $R/results.jsonl &&
{ timeout 100 python3 -m wgslgen test --kernel attention_bwd_dq_split_out --set sg=1 --adapter gpu \
    --shape head_dim=128,n_heads=32,n_kv_heads=8,history_len=32768 > $R/test_large.log 2>&1;
  echo "test large rc=$?"; tail -3 $R/test_large.log; } &&
timeout 200 python3 -m wgslgen tune --kernel attention_bwd_dq_split_out --set hd=128 \
    --shape head_dim=128,n_heads=32,n_kv_heads=8,history_len=4096 \
    --shape head_dim=128,n_heads=8,n_kv_heads=4,history_len=1024 --time 50s --adapter gpu \
    --db $R/results.jsonl --selection $R/selection.json' benchmarks/h200_targets.sh dq_out
