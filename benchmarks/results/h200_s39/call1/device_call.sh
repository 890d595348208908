#!/usr/bin/env bash
# Session 39 call 1: on an H200 the dq_out part (_out never timed there); otherwise session 38's
# prepared bwd_dkv f32 work (benchmarks/results/h100_s38/next_call.sh), its floor now the write
# floor (one pass writing d_k and d_v), after every head_dim-256 _out schedule timed at one KV head (never tuned there; the benchmark's
# fixed schedules are the 4-KV-head winners) into a db of its own.
OTHER_GPU='cp tuning/results.jsonl tuning/selection.json $R/ &&
t=$SECONDS; timeout 130 python3 -m wgslgen tune --kernel attention_bwd_dq_split_out --set hd=256 \
    --shape head_dim=256,n_heads=8,n_kv_heads=1,history_len=4096 --time 70s --adapter gpu \
    --db $R/results.jsonl --selection $R/selection.json > $R/tune_kv1.log 2>&1;
echo "tune kv1 rc=$? $((SECONDS-t)) s"; tail -n 12 $R/tune_kv1.log;
t=$SECONDS; timeout 100 python3 benchmarks/stream_floor.py measure --families bwd_dkv \
    --shape 128,32,8,4096 --shape 256,8,4,4096 --adapter gpu --json $R/stream_dkv.json > $R/stream_dkv.log 2>&1;
echo "stream rc=$? $((SECONDS-t)) s"; tail -n 8 $R/stream_dkv.log;
V=""; for f in generated/attention_bwd_dkv/*_sf32*.wgsl; do v=$(basename $f .wgsl); V="$V --variant ${v#attention_bwd_dkv__}"; done;
t=$SECONDS; timeout 120 python3 benchmarks/pass_breakdown.py --kernel attention_bwd_dkv $V --shape 128,32,8,4096 \
    --adapter gpu --json $R/dkv_f32.json > $R/dkv_f32.log 2>&1;
echo "breakdown rc=$? $((SECONDS-t)) s"; grep -v "n/a" $R/dkv_f32.log | tail -n 20' \
    H200_TARGETS_DIR=/tmp/r1 timeout 560 benchmarks/h200_targets.sh dq_out
