#!/usr/bin/env bash
# Session 35, call 2: issue 12's dq_out figures on an H200; on any other GPU instead: experiment
# sg_sums2 (sg_sums with D after the first K/V loads and the key slots' sums halved per shuffle)
# at (128, 32, 8, 4096), the register counts of sg_sums, and ablations of sg_sums2's wg128 (carrying .gl .whl .spv)
export OTHER_GPU='
export SHAPES=128,32,8,4096
VARIANTS="wg128_ch128_g2_u2_sf16_hd128 wg256_ch128_g2_u2_sf16_hd128_sg1 wg256_ch128_g2_u4_sf16_hd128_sg1 wg128_ch128_g2_u2_sf16_hd128_sg1 wg128_ch128_g2_u4_sf16_hd128_sg1 wg128_ch64_g2_u2_sf16_hd128_sg1 wg256_ch128_g4_u4_sf32_hd128 wg128_ch128_g2_u2_sf32_hd128_sg1 wg256_ch128_g2_u2_sf32_hd128_sg1" \
    timeout 300 benchmarks/experiments/run.sh gpu sg_sums2 bwd_dq_out $R/sg_sums2; echo "sg_sums2 rc=$?"
python3 benchmarks/pipeline_stats.py .spv/sg_sums/changed/attention_bwd_dq_split_out --only "sg1$" > $R/stats_sg_sums.txt 2>&1
C=$(mktemp -d); cp -r benchmarks wgslgen pyproject.toml $C/; cp -r .spv/sg_sums2/templates $C/templates
for v in wg128_ch128_g2_u2_sf16_hd128_sg1 wg128_ch128_g2_u2_sf16_hd128; do
    timeout 120 python3 $C/benchmarks/pass_breakdown.py --kernel attention_bwd_dq_split_out --variant $v --shape=128,32,8,4096 \
        --ablate k-hits,v-hits --ablate no-barriers --ablate skip-ds-stores --in-sequence --json $R/ablate_$v.json; echo "ablate $v rc=$?"
done'
benchmarks/h200_targets.sh dq_out
