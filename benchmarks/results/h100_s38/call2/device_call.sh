#!/usr/bin/env bash
# Session 38 call 2: on an H200, issue 12's dq_out part; on any other GPU, attention_bwd_dq_split_out
# re-tuned (experiments/fin8 landed: every _out variant's text changed, its records are stale)
# at its head_dim-256 tune shapes and the two head_dim-128 ones. Carries .gl .whl.
OTHER_GPU='cp tuning/results.jsonl tuning/selection.json $R/ &&
t=$SECONDS; timeout 150 python3 -m wgslgen tune --kernel attention_bwd_dq_split_out --set wg=256 --set hd=256 \
    --time 50s --adapter gpu --db $R/results.jsonl --selection $R/selection.json > $R/tune_hd256.log 2>&1;
echo "tune hd256 rc=$? $((SECONDS-t)) s"; tail -n 12 $R/tune_hd256.log;
t=$SECONDS; timeout 300 python3 -m wgslgen tune --kernel attention_bwd_dq_split_out --set hd=128 \
    --shape head_dim=128,n_heads=32,n_kv_heads=8,history_len=4096 \
    --shape head_dim=128,n_heads=8,n_kv_heads=4,history_len=1024 --time 90s --adapter gpu \
    --db $R/results.jsonl --selection $R/selection.json > $R/tune_hd128.log 2>&1;
echo "tune hd128 rc=$? $((SECONDS-t)) s"; tail -n 12 $R/tune_hd128.log' benchmarks/h200_targets.sh dq_out
