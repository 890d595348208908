#!/usr/bin/env bash
# Session 33, call 1 (an H100 came): run as
#   OTHER_GPU='bash device_call.sh' benchmarks/h200_targets.sh dq_out   (carrying .gl .whl .spv)
# od_shares through experiments/run.sh, then longer chunks at head_dim 128 with the chunk
# axis and the `chunk * group` constraint opened in a copy of the templates.
set -u
mkdir -p $R/big
t=$SECONDS; timeout 330 benchmarks/experiments/run.sh gpu od_shares bwd_dq_out $R/od > $R/od.log 2>&1
echo "od rc=$? $((SECONDS-t)) s"; tail -32 $R/od.log
copy=$(mktemp -d); cp -r benchmarks wgslgen pyproject.toml templates $copy/
sed -i 's/values = \[32, 64, 128\]/values = [32, 64, 128, 256]/; s/"chunk \* group <= 256",/"chunk * group <= 512",/' \
    $copy/templates/attention_bwd_dq_split_out/kernel.toml
V=""; for v in wg256_ch128_g2_u2_sf16_hd128 wg256_ch256_g2_u2_sf16_hd128 wg256_ch256_g2_u4_sf16_hd128 \
    wg256_ch128_g4_u4_sf16_hd128 wg256_ch64_g4_u4_sf16_hd128 wg256_ch256_g1_u2_sf16_hd128 \
    wg256_ch64_g2_u2_sf32_hd128 wg256_ch256_g2_u2_sf32_hd128 wg256_ch128_g4_u4_sf32_hd128; do V="$V --variant $v"; done
t=$SECONDS; timeout 220 python3 $copy/benchmarks/pass_breakdown.py --kernel attention_bwd_dq_split_out $V \
    --shape 128,32,8,4096 --shape 128,8,4,1024 --json $R/big/pb.json > $R/big/pb.log 2>&1
echo "big rc=$? $((SECONDS-t)) s"; grep -v "n/a" $R/big/pb.log | tail -24
