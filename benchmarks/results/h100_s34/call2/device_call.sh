#!/usr/bin/env bash
# Session 34, call 2: the dq_out part on an H200; on any other GPU, where the head_dim-128 f16
# time of bwd_dq_out's tuned schedule goes (passes in sequence, K/V hits), carrying .gl .whl
OTHER_GPU='for V in wg128_ch128_g2_u2_sf16_hd128 wg256_ch128_g2_u2_sf16_hd128; do
  timeout 200 python3 benchmarks/pass_breakdown.py --kernel attention_bwd_dq_split_out --variant $V \
    --shape 128,32,8,4096 --adapter gpu --in-sequence --json $R/seq_$V.json \
    --ablate k-hits@partials,v-hits@partials --ablate stub@partials --ablate stub@finalize \
    --ablate k-hits@partials,v-hits@partials,o-hits@partials,p-hits@partials,no-barriers@partials,skip-ds-stores@partials
done' timeout 570 benchmarks/h200_targets.sh dq_out
