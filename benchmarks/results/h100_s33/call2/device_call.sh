#!/usr/bin/env bash
# Session 33, call 2 (an H100 came), run as OTHER_GPU='bash device_call.sh' benchmarks/h200_targets.sh dq_out:
# _out's head_dim-128 re-tune (its new variants), then 128 keys of four heads in bwd_dq (no out) and at one KV head
set -u
mkdir -p $R/tune $R/g4
cp tuning/results.jsonl tuning/selection.json $R/tune/
t=$SECONDS; timeout 240 python3 -m wgslgen tune --kernel attention_bwd_dq_split_out --set hd=128 \
    --shape head_dim=128,n_heads=32,n_kv_heads=8,history_len=4096 \
    --shape head_dim=128,n_heads=8,n_kv_heads=4,history_len=1024 --time 50s --adapter gpu \
    --db $R/tune/results.jsonl --selection $R/tune/selection.json > $R/tune/tune.log 2>&1
echo "tune rc=$? $((SECONDS-t)) s"; tail -30 $R/tune/tune.log
copy=$(mktemp -d); cp -r benchmarks wgslgen pyproject.toml templates $copy/
sed -i 's/"chunk \* group <= 256",/"chunk * group <= 512",/' $copy/templates/attention_bwd_dq_split/kernel.toml
V=""; for v in wg256_ch64_g2_u2_e4_sf32_hd128 wg256_ch128_g4_u4_e4_sf32_hd128 wg256_ch128_g2_u4_e4_sf16_hd128 \
    wg256_ch128_g4_u4_e4_sf16_hd128; do V="$V --variant $v"; done
t=$SECONDS; timeout 90 python3 $copy/benchmarks/pass_breakdown.py --kernel attention_bwd_dq_split $V \
    --shape 128,32,8,4096 --json $R/g4/dq.json > $R/g4/dq.log 2>&1
echo "dq g4 rc=$? $((SECONDS-t)) s"; grep -v "n/a" $R/g4/dq.log | tail -6
V=""; for v in wg256_ch64_g2_u2_sf16_hd256 wg256_ch64_g4_u4_sf16_hd256 wg256_ch128_g4_u4_sf16_hd256 \
    wg256_ch64_g2_u2_sf32_hd256 wg256_ch64_g4_u4_sf32_hd256 wg256_ch128_g4_u4_sf32_hd256; do V="$V --variant $v"; done
t=$SECONDS; timeout 100 python3 benchmarks/pass_breakdown.py --kernel attention_bwd_dq_split_out $V \
    --shape 256,8,1,4096 --json $R/g4/out_kv1.json > $R/g4/out_kv1.log 2>&1
echo "out kv1 rc=$? $((SECONDS-t)) s"; grep -v "n/a" $R/g4/out_kv1.log | tail -8
