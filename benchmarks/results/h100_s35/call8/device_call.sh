#!/usr/bin/env bash
# Session 35, call 8: bwd_dq_out's subgroup_sums = 1 variants (landed this session) checked on
# the GPU at the spec's test shapes and at (128, 32, 8, 32768), then tuned at the two head_dim-128
# tune shapes with the committed records copied (only the new variants are measured; carrying .gl .whl)
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
source benchmarks/gpu_env.sh install > /dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
timeout 130 python3 -m wgslgen test --kernel attention_bwd_dq_split_out --set sg=1 --adapter gpu --json \
    > "$OUT/test_small.json" 2> "$OUT/test_small.err"; echo "test small rc=$?"
timeout 100 python3 -m wgslgen test --kernel attention_bwd_dq_split_out --set sg=1 --adapter gpu --json \
    --shape head_dim=128,n_heads=32,n_kv_heads=8,history_len=32768 > "$OUT/test_large.json" 2> "$OUT/test_large.err"; echo "test large rc=$?"
cp tuning/results.jsonl tuning/selection.json "$OUT/"
timeout 170 python3 -m wgslgen tune --kernel attention_bwd_dq_split_out --set hd=128 \
    --shape head_dim=128,n_heads=32,n_kv_heads=8,history_len=4096 \
    --shape head_dim=128,n_heads=8,n_kv_heads=4,history_len=1024 --time 50s --adapter gpu \
    --db "$OUT/results.jsonl" --selection "$OUT/selection.json" > "$OUT/tune.log" 2>&1; echo "tune rc=$?"
tail -25 "$OUT/tune.log"
