#!/usr/bin/env bash
# session 32 scratch device call (not committed): H200 -> issue targets; other GPU -> wg128 at hd128 experiment
set -uo pipefail
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee $OUT/gpu_first.txt
if grep -q H200 $OUT/gpu_first.txt; then
    benchmarks/h200_targets.sh ${PART:-dq_out}
    exit
fi
source benchmarks/gpu_env.sh install > /dev/null
mkdir -p /tmp/t; t=$SECONDS
python3 benchmarks/pipeline_stats.py .spv/s32 --json /tmp/t/stats.json > /tmp/t/stats.txt 2>&1
echo "stats rc=$? $((SECONDS-t)) s"; grep -E "partials" /tmp/t/stats.txt | awk '{print $1, $3}' | sed 's/attention_bwd_dq_split_out__//' | column -t
V=""; for v in wg256_ch128_g2_u2_sf16_hd128 wg256_ch128_g2_u4_sf16_hd128 wg128_ch128_g2_u2_sf16_hd128 wg128_ch128_g2_u4_sf16_hd128 \
    wg128_ch64_g2_u2_sf16_hd128 wg128_ch128_g1_u2_sf16_hd128 wg256_ch64_g2_u2_sf32_hd128 wg128_ch128_g2_u2_sf32_hd128 \
    wg128_ch64_g2_u2_sf32_hd128 wg256_ch32_g1_u4_sf16_hd128 wg128_ch32_g4_u4_sf16_hd128; do V="$V --variant $v"; done
t=$SECONDS
timeout 420 python3 benchmarks/pass_breakdown.py --kernel attention_bwd_dq_split_out $V \
    --shape 128,32,8,4096 --shape 128,8,4,1024 --json /tmp/t/pb.json > /tmp/t/pb.log 2>&1
echo "pb rc=$? $((SECONDS-t)) s"; grep -v "n/a" /tmp/t/pb.log | tail -40
tar czf $OUT/t.tgz -C /tmp t
