#!/usr/bin/env bash
# Session 10 call 3: history-32768 tests of the tables' best variants; second-pass ablations;
# DCOLS/COMBINE_COLS 16 (exp/templates) beside the library's 32.
R=${1:?}; T0=$(date +%s); el(){ echo "T+$(( $(date +%s)-T0 ))s"; }
S=head_dim=256,n_heads=8,n_kv_heads=4,history_len=32768
for x in "ch=64 g=2 u=2" "ch=32 g=1 u=4"; do set -- $x
  python3 -m wgslgen test --kernel attention_bwd_dq_split --set wg=256 --set e=4 --set $1 --set $2 --set $3 --set s=f16 --set s=f32 --shape $S --adapter gpu --timeout 120 2>&1 | tail -1
done
python3 -m wgslgen test --kernel attention_bwd_dq_split --set wg=256 --set e=4 --set ch=128 --set g=2 --set u=4 --set s=f16 --shape $S --adapter gpu 2>&1 | tail -1
python3 -m wgslgen test --kernel attention_bwd_dq_split --set wg=256 --set e=4 --set ch=128 --set g=1 --set u=2 --set s=f32 --shape $S --adapter gpu 2>&1 | tail -1
for x in "ch=64 g=2 u=2" "ch=32 g=1 u=4" "ch=128 g=2 u=2"; do set -- $x
  python3 -m wgslgen test --kernel attention_split --set wg=256 --set e=3 --set $1 --set $2 --set $3 --set s=f16 --set s=f32 --shape $S,pos=32767,window=0 --adapter gpu --timeout 120 2>&1 | tail -1
done
python3 -m wgslgen test --kernel attention_bwd_dkv --set wg=64 --set wg=128 --set v=4 --set s=f16 --set s=f32 --shape $S --adapter gpu --timeout 120 2>&1 | tail -1
el
for root in . exp; do
  ab=(); [ $root = . ] && ab=(--ablate part-hits --ablate empty)
  timeout 200 python3 $root/benchmarks/pass_breakdown.py --kernel attention_bwd_dq_split --variant wg256_ch64_g2_u2_e4_sf16 --shape 256,8,4,4096 --shape 256,8,1,4096 --variant wg256_ch32_g1_u4_e4_sf16 --shape 256,8,4,1024 "${ab[@]}" --json $R/pb_dq_${root/./lib}.json | grep -v adapter; el
  timeout 150 python3 $root/benchmarks/pass_breakdown.py --kernel attention_split --variant wg256_ch32_g1_u4_e3_sf16 --shape 256,8,4,1024 --variant wg256_ch64_g2_u2_e3_sf16 --shape 256,8,1,4096 "${ab[@]}" --json $R/pb_fw_${root/./lib}.json | grep -v adapter; el
done
