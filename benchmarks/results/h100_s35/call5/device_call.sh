#!/usr/bin/env bash
# Session 35, call 5: V's loads against K's in bwd_dq_out's best schedules (ablations v-hits
# and k-hits apart), on whichever GPU comes (carrying .gl .whl)
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
source benchmarks/gpu_env.sh install > /dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/gpu.txt"
B="python3 benchmarks/pass_breakdown.py --kernel attention_bwd_dq_split_out"
A="--ablate v-hits@partials --ablate k-hits@partials --ablate k-hits@partials,v-hits@partials"
timeout 150 $B --variant wg128_ch128_g2_u2_sf16_hd128 --shape=128,32,8,4096 $A --json "$OUT/kv_hd128.json"
timeout 200 $B --variant wg256_ch64_g2_u2_sf16_hd256 --shape=256,8,4,4096 --shape=256,8,1,4096 $A --json "$OUT/kv_hd256.json"
