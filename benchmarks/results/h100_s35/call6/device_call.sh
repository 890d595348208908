#!/usr/bin/env bash
# Session 35, call 6: issue 12's dq_out figures on an H200; on any other GPU instead: experiment
# sg_rows (rows of 32 invocations read whole K/V rows, sums by subgroup shuffles) at
# (128, 32, 8, 4096), and its best schedule's K/V ablation (carrying .gl .whl .spv)
export OTHER_GPU='
export SHAPES=128,32,8,4096
VARIANTS="wg128_ch128_g2_u2_sf16_hd128 wg256_ch128_g2_u2_sf16_hd128_sg1 wg128_ch128_g2_u2_sf16_hd128_sg1 wg256_ch64_g2_u2_sf16_hd128_sg1 wg128_ch64_g2_u2_sf16_hd128_sg1 wg256_ch128_g1_u2_sf16_hd128_sg1 wg256_ch128_g4_u4_sf32_hd128 wg256_ch128_g2_u2_sf32_hd128_sg1 wg128_ch64_g2_u2_sf32_hd128_sg1" \
    timeout 330 benchmarks/experiments/run.sh gpu sg_rows bwd_dq_out $R/sg_rows; echo "sg_rows rc=$?"
C=$(mktemp -d); cp -r benchmarks wgslgen pyproject.toml $C/; cp -r .spv/sg_rows/templates $C/templates
for v in wg256_ch128_g2_u2_sf16_hd128_sg1 wg128_ch128_g2_u2_sf16_hd128_sg1; do
    timeout 80 python3 $C/benchmarks/pass_breakdown.py --kernel attention_bwd_dq_split_out --variant $v --shape=128,32,8,4096 \
        --ablate v-hits@partials --ablate k-hits@partials,v-hits@partials --json $R/ablate_$v.json; echo "ablate $v rc=$?"
done'
benchmarks/h200_targets.sh dq_out
