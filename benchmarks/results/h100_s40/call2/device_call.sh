#!/usr/bin/env bash
# Prepared in session 38, not run (no device time was left to start a machine). Run from the
# repository root as: bash benchmarks/results/h100_s38/next_call.sh
# On an H200, issue 12's dkv part; on any other GPU, where bwd_dkv's
# (128, 32, 8, 4096) f32 cell stands against the bytes it must write: the measured streaming
# floor of bwd_dkv, then every f32 schedule of it at that shape. Carries .gl .whl.
OTHER_GPU='t=$SECONDS; timeout 80 python3 benchmarks/stream_floor.py measure --families bwd_dkv \
    --shape 128,32,8,4096 --shape 256,8,4,4096 --adapter gpu --json $R/stream_dkv.json > $R/stream_dkv.log 2>&1;
echo "stream rc=$? $((SECONDS-t)) s"; tail -n 8 $R/stream_dkv.log;
V=""; for f in generated/attention_bwd_dkv/*_sf32*.wgsl; do v=$(basename $f .wgsl); V="$V --variant ${v#attention_bwd_dkv__}"; done;
t=$SECONDS; timeout 120 python3 benchmarks/pass_breakdown.py --kernel attention_bwd_dkv $V --shape 128,32,8,4096 \
    --adapter gpu --json $R/dkv_f32.json > $R/dkv_f32.log 2>&1;
echo "breakdown rc=$? $((SECONDS-t)) s"; grep -v "n/a" $R/dkv_f32.log | tail -n 20' \
    H200_TARGETS_DIR=/tmp/r4 timeout 290 benchmarks/h200_targets.sh dkv
